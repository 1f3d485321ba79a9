"""
The host program as one LLVM function over torch's C shim.

    i32 @host(ptr %words, ptr %results, i32 %threads, ptr %kernels, ptr %callback)

`words` holds one 64-bit word per argument of the buffer-level function: a
tensor's `_cdata`, whose address is then a borrowed handle of it (`shim`),
or an index argument's value. `results` receives an owned handle of each
returned tensor. `kernels` holds the address of each launched kernel, in the
order of `NativeHostSource.kernels`, and `callback` is the function that
runs, in Python, the ops the shim has no function for (`Callback`); so the
module holds no address of this process.

Each op of the function becomes a few shim calls, as the Python host
program's line does: `buffer.alloc` is `aoti_torch_empty_strided` on the
device of the first tensor argument, `buffer.view` is
`aoti_torch__reinterpret_tensor` of the view's root buffer, `buffer.copy`
is `aoti_torch_copy_`, `buffer.launch` passes the operands' data pointers
to the kernel, and the matrix products whose dense result the program
allocates (`extern_into_call`) are the shim's `mm_out`, `bmm_out` and
`addmm_out`. An argument whose strides differ from its buffer's is copied
into a tensor of the buffer's layout first.

The handles the program makes live in stack slots, one per value, released
after the value's last use and, on every path out of the function, any
left. The result is 0, `STATUS_ZERO_DIVISOR` when a kernel met an integer
division by zero, `STATUS_CALLBACK` when an op run in Python raised, or
`STATUS_SHIM + i` when a shim function failed at op `i` of the function
(counted from 1; 0 is the arguments' layouts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
from llvmlite import ir
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IndexType
from xdsl.ir import Operation, SSAValue

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.dialects.sym import SymExprAttr, symbol_kind
from permalloy.dtypes import torch_dtype
from permalloy.targets.externs import extern_into_call
from permalloy.targets.externs.library import addmm_scales
from permalloy.targets.host import SYMBOL_ATTR
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.exprs import emit_expr
from permalloy.targets.llvm.types import I32, I64, PTR
from permalloy.targets.native.shim import SHIM_FUNCTIONS, Shim

STATUS_ZERO_DIVISOR = 1
STATUS_CALLBACK = 2
STATUS_SHIM = 3

ENTRY = "permalloy_host"

_TYPES = {"ptr": PTR, "i32": I32, "i64": I64, "f64": ir.DoubleType()}
_NULL = ir.Constant(PTR, None)
KERNEL = ir.FunctionType(I32, [PTR, PTR, I32])
"""A kernel's entry: data pointers, symbol values, thread count -> status."""
CALLBACK = ir.FunctionType(I32, [I64, PTR, PTR, PTR])
"""The callback: op index, input handles, result handles, symbol values -> status."""

_PRODUCTS = {pt.MatmulOp: "mm_out", pt.BatchMatmulOp: "bmm_out", pt.AddmmOp: "addmm_out"}
"""The library ops the shim computes into a given tensor, by op class."""


class NativeHostUnsupported(ValueError):
    """A host function a native program cannot run (the Python host runs it)."""


@dataclass
class Callback:
    """An op a native host program runs in Python: its inputs come as owned
    handles, its results go back as owned handles."""

    op: Operation
    inputs: int
    symbols: list[tuple[sympy.Symbol, int]]
    """The symbols its call binds, each with its position in the program's
    symbol array."""


@dataclass
class NativeHostSource:
    """A native host program's LLVM IR and what calling it needs."""

    source: str
    arguments: list[str]
    """For each argument of the function: "tensor" or "index"."""
    results: int
    kernels: list[Any]
    """The compiled kernels the program launches, in `kernels` order."""
    callbacks: list[Callback]
    operations: list[str]
    """What a failure's position names: the arguments' layouts, then the
    function's ops by name."""


@dataclass
class _Value:
    """A tensor value's handle in the program, and its slot where owned."""

    handle: ir.Value
    slot: ir.Value | None


@dataclass
class NativeHostEmitter:
    """The state of emitting one native host program.

    `launches` gives, for each `buffer.launch` of the function, its compiled
    kernel and the symbols it takes; `kernel_address(compiled)` the address of
    a compiled kernel's entry `i32 (ptr data, ptr symbols, i32 threads)`,
    None where it has none."""

    function: func.FuncOp
    launches: dict[Operation, tuple[Any, list[str]]]
    kernel_address: Callable[[Any], int | None]
    shim: Shim
    entry: str = ENTRY
    """The name of the module's entry function."""
    device: str = "cpu"
    """The device type the program computes on, which names the shim's library functions."""
    triple: str = ""
    values: dict[SSAValue, _Value] = field(default_factory=dict)
    roots: dict[SSAValue, SSAValue] = field(default_factory=dict)
    symbols: dict[str, ir.Value] = field(default_factory=dict)
    kernels: list[Any] = field(default_factory=list)
    kernel_slots: dict[int, int] = field(default_factory=dict)
    callbacks: list[Callback] = field(default_factory=list)
    slots: list[ir.Value] = field(default_factory=list)
    argument_copies: dict[SSAValue, ir.Value] = field(default_factory=dict)
    """The slot of each tensor argument's copy in its buffer's layout (null
    where the argument had that layout)."""

    def emit(self) -> NativeHostSource:
        self.module = ir.Module(name="permalloy_host")
        if self.triple:
            self.module.triple = self.triple
        self._declare_shim()
        signature = ir.FunctionType(I32, [PTR, PTR, I32, PTR, CALLBACK.as_pointer()])
        self.llvm_function = ir.Function(self.module, signature, self.entry)
        self.words, self.results, self.threads, self.kernel_table, self.callback = self.llvm_function.args
        self.cg = CodeGen(self.module, self.llvm_function)
        self.status = self.cg.alloca(I32, init=I32(0), name="status")
        self.cleanup = self.llvm_function.append_basic_block("cleanup")
        self.last_use = _last_uses(self.function)
        self.index = 0  # failures name the arguments' layouts, then the ops from 1
        arguments = self._bind_arguments()
        self._symbol_array()
        self._device()
        results = 0
        for index, op in enumerate(self.function.body.block.ops, start=1):
            self.index = index
            if isinstance(op, func.ReturnOp):
                results = len(op.arguments)
                self._emit_return(op)
            else:
                self._emit_op(op)
                self._release_after(op)
        self._emit_cleanup()
        operations = ["the arguments' layouts", *(op.name for op in self.function.body.block.ops)]
        return NativeHostSource(str(self.module), arguments, results, self.kernels, self.callbacks, operations)

    # -- shim, slots and checks ------------------------------------------------

    def _declare_shim(self) -> None:
        self.shim_functions = {}
        for name, (result, parameters) in SHIM_FUNCTIONS.items():
            kind = ir.FunctionType(_TYPES[result], [_TYPES[p] for p in parameters])
            self.shim_functions[name] = ir.Function(self.module, kind, name)
        release = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR]), "permalloy_release")
        release.linkage = "internal"
        entry = release.append_basic_block("entry")
        held = release.append_basic_block("held")
        done = release.append_basic_block("done")
        b = ir.IRBuilder(entry)
        (slot,) = release.args
        handle = b.load(slot, typ=PTR)
        b.cbranch(b.icmp_unsigned("==", handle, _NULL), done, held)
        b.position_at_end(held)
        b.call(self.shim_functions["aoti_torch_delete_tensor_object"], [handle])
        b.store(_NULL, slot)
        b.branch(done)
        b.position_at_end(done)
        b.ret_void()
        self.release = release

    def _call(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        return self.cg.builder.call(self.shim_functions[name], list(args))

    def _check(self, status: ir.Value, code: int) -> None:
        """Go on where `status` is 0, else leave with `code`."""
        b = self.cg.builder
        failed = self.llvm_function.append_basic_block(f"failed{self.index}")
        ok = self.llvm_function.append_basic_block(f"ok{self.index}")
        b.cbranch(b.icmp_signed("!=", status, I32(0)), failed, ok)
        b.position_at_end(failed)
        b.store(I32(code), self.status)
        b.branch(self.cleanup)
        b.position_at_end(ok)

    def _checked(self, name: str, args: Sequence[ir.Value]) -> None:
        self._check(self._call(name, args), STATUS_SHIM + self.index)

    def _new_slot(self) -> ir.Value:
        slot = self.cg.alloca(PTR, name=f"slot{len(self.slots)}")
        self.slots.append(slot)
        return slot

    def _owned(self, value: SSAValue) -> ir.Value:
        """A new slot for `value`, which the next shim call fills."""
        slot = self._new_slot()
        self.values[value] = _Value(slot, slot)
        return slot

    def handle(self, value: SSAValue) -> ir.Value:
        entry = self.values[value]
        if entry.slot is None:
            return entry.handle
        return self.cg.builder.load(entry.slot, typ=PTR)

    def _int64_array(self, values: Sequence[ir.Value]) -> ir.Value:
        array = self.cg.alloca(I64, count=max(len(values), 1))
        for position, value in enumerate(values):
            self.cg.builder.store(value, self.cg.builder.gep(array, [I64(position)], source_etype=I64))
        return array

    def _exprs(self, exprs: Sequence[sympy.Expr]) -> list[ir.Value]:
        return [emit_expr(self.cg, e, self.symbols) for e in exprs]

    # -- arguments -------------------------------------------------------------

    def _bind_arguments(self) -> list[str]:
        b = self.cg.builder
        args = list(self.function.body.block.args)
        kinds = []
        words = []
        for position, arg in enumerate(args):
            word = b.gep(self.words, [I64(position)], source_etype=I64)
            words.append(word)
            if isinstance(arg.type, IndexType):
                kinds.append("index")
                symbol = _index_symbol(self.function, position)
                if symbol is not None and symbol not in self.symbols:
                    self.symbols[symbol] = b.load(word, typ=I64)
            elif isinstance(arg.type, buf.BufferType):
                kinds.append("tensor")
            else:
                raise NativeHostUnsupported(f"an argument of type {arg.type}")
        for arg, word in zip(args, words):
            if isinstance(arg.type, buf.BufferType):
                sizes = None
                for dim, size in enumerate(arg.type.sizes):
                    if size.is_Symbol and size.name not in self.symbols:
                        if sizes is None:
                            sizes = self.cg.alloca(PTR)
                            self._call("aoti_torch_get_sizes", [word, sizes])
                            sizes = b.load(sizes, typ=PTR)
                        self.symbols[size.name] = b.load(b.gep(sizes, [I64(dim)], source_etype=I64), typ=I64)
        self.tensor_words = [w for arg, w in zip(args, words) if isinstance(arg.type, buf.BufferType)]
        for arg, word in zip(args, words):
            if isinstance(arg.type, buf.BufferType):
                self._conform_argument(arg, word)
                self.roots[arg] = arg
        return kinds

    def _conform_argument(self, arg: SSAValue, word: ir.Value) -> None:
        """The argument itself where its strides are its buffer's, else a copy
        of it in its buffer's layout (owned)."""
        b = self.cg.builder
        layout = buf.buffer_type(arg)
        expected = self._exprs(layout.strides.data)
        strides = self.cg.alloca(PTR)
        self._call("aoti_torch_get_strides", [word, strides])
        strides = b.load(strides, typ=PTR)
        differs = ir.Constant(ir.IntType(1), 0)
        for dim, stride in enumerate(expected):
            actual = b.load(b.gep(strides, [I64(dim)], source_etype=I64), typ=I64)
            differs = b.or_(differs, b.icmp_signed("!=", actual, stride))
        slot = self._new_slot()
        copy = self.llvm_function.append_basic_block(f"conform{len(self.slots)}")
        done = self.llvm_function.append_basic_block(f"conformed{len(self.slots)}")
        b.cbranch(differs, copy, done)
        b.position_at_end(copy)
        dtype, device_type, device_index = self.cg.alloca(I32), self.cg.alloca(I32), self.cg.alloca(I32)
        self._call("aoti_torch_get_dtype", [word, dtype])
        self._call("aoti_torch_get_device_type", [word, device_type])
        self._call("aoti_torch_get_device_index", [word, device_index])
        sizes = self._int64_array(self._exprs(layout.sizes))
        self._checked(
            "aoti_torch_empty_strided",
            [I64(len(expected)), sizes, self._int64_array(expected),
             b.load(dtype, typ=I32), b.load(device_type, typ=I32), b.load(device_index, typ=I32), slot],
        )  # fmt: skip
        self._checked("aoti_torch_copy_", [b.load(slot, typ=PTR), word, I32(0)])
        b.branch(done)
        b.position_at_end(done)
        copied = b.load(slot, typ=PTR)
        handle = b.select(b.icmp_unsigned("==", copied, _NULL), word, copied)
        self.values[arg] = _Value(handle, None)
        self.argument_copies[arg] = slot

    def _symbol_array(self) -> None:
        """Every bound symbol's value in one array, which callbacks read."""
        self.symbol_positions = {name: position for position, name in enumerate(self.symbols)}
        self.symbol_array = self._int64_array(list(self.symbols.values()))

    def _device(self) -> None:
        """The device type and index allocations go to: the first tensor
        argument's, else the CPU."""
        b = self.cg.builder
        if not self.tensor_words:
            self.device_type, self.device_index = I32(self.shim.device_codes["cpu"]), I32(0)
            return
        device_type, device_index = self.cg.alloca(I32), self.cg.alloca(I32)
        self._call("aoti_torch_get_device_type", [self.tensor_words[0], device_type])
        self._call("aoti_torch_get_device_index", [self.tensor_words[0], device_index])
        self.device_type, self.device_index = b.load(device_type, typ=I32), b.load(device_index, typ=I32)

    # -- ops ------------------------------------------------------------------

    def _emit_op(self, op: Operation) -> None:
        if isinstance(op, buf.AllocOp):
            self.roots[op.result] = op.result
            self._allocate(op.result)
        elif isinstance(op, buf.LaunchOp):
            self._emit_launch(op)
        elif isinstance(op, buf.ExternOp):
            self._emit_extern(op)
        elif isinstance(op, buf.ViewOp):
            self._emit_view(op)
        elif isinstance(op, buf.CopyOp):
            self._checked("aoti_torch_copy_", [self.handle(op.target), self.handle(op.source), I32(0)])
        elif isinstance(op, buf.DeallocOp):
            pass  # the buffer's handle is released after its last use, this op
        else:
            raise NativeHostUnsupported(f"the op {op.name}")

    def _allocate(self, value: SSAValue) -> None:
        layout = buf.buffer_type(value)
        code = self.shim.dtype_code(torch_dtype(layout.element_type))
        if code is None:
            raise NativeHostUnsupported(f"the element type {layout.element_type}")
        sizes = self._int64_array(self._exprs(layout.sizes))
        strides = self._int64_array(self._exprs(layout.strides.data))
        slot = self._owned(value)
        self._checked(
            "aoti_torch_empty_strided",
            [I64(len(layout.sizes)), sizes, strides, I32(code), self.device_type, self.device_index, slot],
        )

    def _emit_launch(self, op: buf.LaunchOp) -> None:
        b = self.cg.builder
        compiled, symbols = self.launches[op]
        address = self.kernel_address(compiled)
        if address is None:
            raise NativeHostUnsupported("a kernel without a native entry")
        position = self.kernel_slots.setdefault(id(compiled), len(self.kernels))
        if position == len(self.kernels):
            self.kernels.append(compiled)
        operands = [*op.inputs, *op.outputs]
        pointers = self.cg.alloca(PTR, count=len(operands))
        for i, operand in enumerate(operands):
            self._call("aoti_torch_get_data_ptr", [self.handle(operand), b.gep(pointers, [I64(i)], source_etype=PTR)])
        values = self._int64_array([self.symbols[s] for s in symbols])
        entry = b.load(b.gep(self.kernel_table, [I64(position)], source_etype=PTR), typ=KERNEL.as_pointer())
        status = b.call(entry, [pointers, values, self.threads])
        self._check(status, STATUS_ZERO_DIVISOR)

    def _emit_view(self, op: buf.ViewOp) -> None:
        layout = buf.buffer_type(op.result)
        root = self.roots[op.source]
        self.roots[op.result] = root
        sizes = self._int64_array(self._exprs(layout.sizes))
        strides = self._int64_array(self._exprs(layout.strides.data))
        (offset,) = self._exprs([layout.offset.expr])
        source = self.handle(root)
        slot = self._owned(op.result)
        self._checked("aoti_torch__reinterpret_tensor", [source, I64(len(layout.sizes)), sizes, strides, offset, slot])

    def _emit_extern(self, op: buf.ExternOp) -> None:
        for result in op.results:
            self.roots[result] = result
        if self._emit_product(op) or self._emit_convolution(op):
            return
        b = self.cg.builder
        inputs = self.cg.alloca(PTR, count=max(len(op.inputs), 1))
        for i, value in enumerate(op.inputs):
            self._checked("aoti_torch_new_tensor_handle", [self.handle(value), b.gep(inputs, [I64(i)], source_etype=PTR)])
        outputs = self.cg.alloca(PTR, count=max(len(op.results), 1))
        for i in range(len(op.results)):
            b.store(_NULL, b.gep(outputs, [I64(i)], source_etype=PTR))
        status = b.call(self.callback, [I64(len(self.callbacks)), inputs, outputs, self.symbol_array])
        for i, result in enumerate(op.results):
            slot = self._owned(result)
            b.store(b.load(b.gep(outputs, [I64(i)], source_etype=PTR), typ=PTR), slot)
        self.callbacks.append(Callback(op, len(op.inputs), self._callback_symbols(op)))
        self._check(status, STATUS_CALLBACK)

    def _callback_symbols(self, op: buf.ExternOp) -> list[tuple[sympy.Symbol, int]]:
        names = sorted(
            {
                s
                for t in (*op.operand_types, *op.result_types)
                if isinstance(t, buf.BufferType)
                for e in t.sizes
                for s in e.free_symbols
                if symbol_kind(s) == "s"
            },
            key=lambda s: s.name,
        )
        return [(s, self.symbol_positions[s.name]) for s in names]

    def _emit_product(self, op: buf.ExternOp) -> bool:
        """A matrix product into a dense result the program allocates, through
        the shim; False for other ops and layouts."""
        product = _PRODUCTS.get(type(op.library_op))
        if product is None or not op.inputs or len(op.results) != 1 or extern_into_call(op) is None:
            return False
        (result,) = op.results
        if not buf.buffer_type(result).is_contiguous():
            return False
        name = f"aoti_torch_{self.device}_{product}"
        arguments = list(op.body.block.args)
        operands = [self.handle(op.inputs[arguments.index(o)]) for o in op.library_op.operands]
        self._allocate(result)
        scales = []
        if isinstance(op.library_op, pt.AddmmOp):
            beta, alpha = addmm_scales(op.library_op)
            scales = [ir.Constant(ir.DoubleType(), beta), ir.Constant(ir.DoubleType(), alpha)]
        self._checked(name, [self.handle(result), *operands, *scales])
        return True

    def _emit_convolution(self, op: buf.ExternOp) -> bool:
        """A convolution through the shim, its result given its planned layout
        as the Python host program gives it; False for other ops."""
        if not isinstance(op.library_op, pt.ConvolutionOp):
            return False
        b = self.cg.builder
        arguments = list(op.body.block.args)
        x, weight, *bias = [self.handle(op.inputs[arguments.index(o)]) for o in op.library_op.operands]
        bias_slot = self.cg.alloca(PTR)
        b.store(bias[0] if bias else _NULL, bias_slot)
        stride, padding, dilation, transposed, output_padding, groups = pt.convolution_geometry(op.library_op)
        lists = []
        for values in (stride, padding, dilation):
            lists += [self._int64_array([I64(v) for v in values]), I64(len(values))]
        (result,) = op.results
        slot = self._owned(result)
        self._checked(
            f"aoti_torch_{self.device}_convolution",
            [x, weight, bias_slot if bias else _NULL, *lists, I32(int(transposed)),
             self._int64_array([I64(v) for v in output_padding]), I64(len(output_padding)), I64(groups), slot],
        )  # fmt: skip
        self._conform_result(result, slot)
        return True

    def _conform_result(self, value: SSAValue, slot: ir.Value) -> None:
        """Give a library call's result in `slot` its planned layout: a dense
        row-major one where torch calls it contiguous, else exactly the
        planned strides, copying into a new tensor where it differs."""
        b = self.cg.builder
        layout = buf.buffer_type(value)
        expected = self._exprs(layout.strides.data)
        handle = b.load(slot, typ=PTR)
        if layout.is_contiguous():
            flag = self.cg.alloca(ir.IntType(8))
            self._call("aoti_torch_is_contiguous", [handle, flag])
            differs = b.icmp_unsigned("==", b.load(flag, typ=ir.IntType(8)), ir.Constant(ir.IntType(8), 0))
        else:
            strides = self.cg.alloca(PTR)
            self._call("aoti_torch_get_strides", [handle, strides])
            strides = b.load(strides, typ=PTR)
            differs = ir.Constant(ir.IntType(1), 0)
            for dim, stride in enumerate(expected):
                actual = b.load(b.gep(strides, [I64(dim)], source_etype=I64), typ=I64)
                differs = b.or_(differs, b.icmp_signed("!=", actual, stride))
        copy = self.llvm_function.append_basic_block(f"relayout{self.index}")
        done = self.llvm_function.append_basic_block(f"relaid{self.index}")
        b.cbranch(differs, copy, done)
        b.position_at_end(copy)
        code = self.shim.dtype_code(torch_dtype(layout.element_type))
        if code is None:
            raise NativeHostUnsupported(f"the element type {layout.element_type}")
        fresh = self.cg.alloca(PTR)
        self._checked(
            "aoti_torch_empty_strided",
            [I64(len(expected)), self._int64_array(self._exprs(layout.sizes)), self._int64_array(expected),
             I32(code), self.device_type, self.device_index, fresh],
        )  # fmt: skip
        copied = b.load(fresh, typ=PTR)
        status = self._call("aoti_torch_copy_", [copied, b.load(slot, typ=PTR), I32(0)])
        b.call(self.release, [slot])
        b.store(copied, slot)
        b.store(_NULL, fresh)
        self._check(status, STATUS_SHIM + self.index)
        b.branch(done)
        b.position_at_end(done)

    def _emit_return(self, op: func.ReturnOp) -> None:
        b = self.cg.builder
        for i, value in enumerate(op.arguments):
            self._checked("aoti_torch_new_tensor_handle", [self.handle(value), b.gep(self.results, [I64(i)], source_etype=PTR)])
        b.branch(self.cleanup)

    def _release_after(self, op: Operation) -> None:
        """Release the handles whose last use `op` is."""
        for value in self.last_use.get(op, ()):
            slot = self.values[value].slot if value in self.values else None
            if slot is None:
                slot = self.argument_copies.get(value)
            if slot is not None:
                self.cg.builder.call(self.release, [slot])

    def _emit_cleanup(self) -> None:
        """Null every slot on entry (a failure may leave before a slot is
        filled) and release the slots left at the end."""
        start = ir.IRBuilder()
        start.position_at_start(self.llvm_function.blocks[1])
        for slot in self.slots:
            start.store(_NULL, slot)
        b = ir.IRBuilder(self.cleanup)
        for slot in self.slots:
            b.call(self.release, [slot])
        b.ret(b.load(self.status, typ=I32))


def _index_symbol(function: func.FuncOp, position: int) -> str | None:
    """The size symbol an index argument gives, if any."""
    attrs = function.arg_attrs
    if attrs is None:
        return None
    entry = attrs.data[position]
    symbol = entry.data.get(SYMBOL_ATTR) if isinstance(entry, DictionaryAttr) else None
    if isinstance(symbol, SymExprAttr) and symbol.expr.is_Symbol:
        return symbol.expr.name
    return None


def _reads(op: Operation, roots: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """The tensor values whose handles `op` reads."""
    if isinstance(op, buf.LaunchOp):
        return [*op.inputs, *op.outputs]
    if isinstance(op, buf.ExternOp):
        return list(op.inputs)
    if isinstance(op, buf.ViewOp):
        return [roots.get(op.source, op.source)]
    if isinstance(op, buf.CopyOp):
        return [op.source, op.target]
    if isinstance(op, buf.DeallocOp):
        return [op.buffer]
    if isinstance(op, func.ReturnOp):
        return list(op.arguments)
    return []


def _last_uses(function: func.FuncOp) -> dict[Operation, list[SSAValue]]:
    """For each op, the tensor values it is the last to read (or defines and
    nothing reads); the return's values are released at the end."""
    roots: dict[SSAValue, SSAValue] = {}
    last: dict[SSAValue, Operation] = {}
    for arg in function.body.block.args:
        if isinstance(arg.type, buf.BufferType):
            roots[arg] = arg
            last[arg] = None  # type: ignore[assignment]
    for op in function.body.block.ops:
        if isinstance(op, buf.ViewOp):
            roots[op.result] = roots.get(op.source, op.source)
        for value in _reads(op, roots):
            last[value] = op
        for result in op.results:
            if isinstance(result.type, buf.BufferType):
                roots.setdefault(result, result)
                last[result] = op
    by_op: dict[Operation, list[SSAValue]] = {}
    for value, op in last.items():
        if op is not None and not isinstance(op, func.ReturnOp):
            by_op.setdefault(op, []).append(value)
    return by_op
