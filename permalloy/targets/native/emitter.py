"""
The host program as one LLVM function over torch's C shim.

    i32 @host(ptr %words, ptr %results, i32 %threads, ptr %kernels, ptr %callback)

`words` holds one 64-bit word per argument of the buffer-level function: a
tensor's `_cdata`, whose address is then a borrowed handle of it (`shim`),
or an index argument's value. `results` receives an owned handle of each
returned tensor. `kernels` holds the addresses of the launched kernels'
entries (CPU) or CUDA functions (GPU), in the order of
`NativeHostSource.addresses`, and `callback` is the function that runs, in
Python, the ops the shim has no function for (`Callback`); so the module
holds no address of this process.

Each op of the function becomes a few shim calls, as the Python host
program's line does: `buffer.alloc` is `aoti_torch_empty_strided` on the
device of the first tensor argument, `buffer.view` is
`aoti_torch__reinterpret_tensor` of the view's root buffer, `buffer.copy`
is `aoti_torch_copy_`, `buffer.launch` passes the operands' data pointers
to a CPU kernel's entry or, for a Triton kernel, each of its launches to
the driver's `cuLaunchKernel`, the matrix products whose result the
program allocates (`extern_into_call`) are the shim's `mm_out`, `bmm_out`
and `addmm_out`, convolutions its `convolution` and their gradients its
`convolution_backward`, an extern whose call runs permalloy's own
kernels by a plan (attention) allocates the plan's tensors and launches its
kernels as a Triton kernel's are launched, and one whose first call
dispatched one fused ATen op (torch's fused attention, `RecordedCall`) calls
that op's shim function. An argument whose
strides differ from its buffer's is copied into a tensor of the buffer's
layout first.

The handles the program makes live in stack slots, one per value, released
after the value's last use and, on every path out of the function, any
left. The result is 0, `STATUS_ZERO_DIVISOR` when a kernel met an integer
division by zero, `STATUS_CALLBACK` when an op run in Python raised, or
`STATUS_SHIM + i` when a shim function failed at op `i` of the function
(counted from 1; 0 is the arguments' layouts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from llvmlite import ir
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation, SSAValue

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.dtypes import torch_dtype
from permalloy.targets.externs import extern_into_call
from permalloy.targets.externs.calls import PlannedCall
from permalloy.targets.externs.library import addmm_scales
from permalloy.targets.externs.recorded import CopyArgument, InputArgument, RecordedCall, ViewArgument
from permalloy.targets.host import ON_CPU_ATTR, UPDATED_ATTR, argument_attribute, extern_symbols, index_argument_symbol
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.exprs import emit_expr
from permalloy.targets.llvm.types import I32, I64, PTR
from permalloy.targets.native.shim import SHIM_FUNCTIONS, Shim
from permalloy.targets.workspace import KeptWorkspace, WorkspacePool

STATUS_ZERO_DIVISOR = 1
STATUS_CALLBACK = 2
STATUS_SHIM = 3

ENTRY = "permalloy_host"

_TYPES = {"ptr": PTR, "i8": ir.IntType(8), "i32": I32, "i64": I64, "f64": ir.DoubleType()}
_NULL = ir.Constant(PTR, None)
KERNEL = ir.FunctionType(I32, [PTR, PTR, I32])
"""A kernel's entry: data pointers, symbol values, thread count -> status."""
CALLBACK = ir.FunctionType(I32, [I64, PTR, PTR, PTR])
"""The callback: op index, input handles, result handles, symbol values -> status."""
_PARAMETER_TYPES = {
    "i": I32, "I": I32, "l": I64, "K": I64, "b": ir.IntType(8), "B": ir.IntType(8),
    "h": ir.IntType(16), "H": ir.IntType(16), "f": ir.FloatType(), "d": ir.DoubleType(),
}  # fmt: skip
"""The type of each static-launcher code of a scalar kernel parameter."""

_UNDEFINED = "aoti_torch_new_uninitialized_tensor"
"""The shim function that makes an undefined tensor's handle."""
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
    kernel: Any = None
    """For a launch, its compiled kernel, called with the launch's tensors
    and the values of `symbols`."""
    fallback: bool = False
    """Whether it runs only where the native path does not apply (a launch
    on tensors of other alignments than the first call's)."""


def result_stride_symbols(op: buf.ExternOp) -> set[sympy.Symbol]:
    """The symbols of the strides of an extern's results (its results'
    layout fixes read them)."""
    return {s for r in op.results for e in buf.buffer_type(r).strides.data for s in e.free_symbols}


@dataclass
class NativeHostSource:
    """A native host program's LLVM IR and what calling it needs."""

    source: str
    arguments: list[str]
    """For each argument of the function: "tensor" or "index"."""
    results: int
    addresses: list[int]
    """The `kernels` table the program is called with: kernel entries and CUDA functions."""
    kept: list[Any]
    """The compiled kernels those addresses belong to, kept alive with the program."""
    callbacks: list[Callback]
    operations: list[str]
    """What a failure's position names: the arguments' layouts, then the
    function's ops by name."""
    workspace: WorkspacePool | None = None
    """The pool of the allocations kept between calls (`targets.workspace`),
    whose handles a call passes in its `workspace` argument, in order."""


@dataclass
class _Value:
    """A tensor value's handle in the program, and its slot where owned."""

    handle: ir.Value
    slot: ir.Value | None


@dataclass
class NativeHostEmitter:
    """The state of emitting one native host program.

    `launches` gives, for each `buffer.launch` of the function, its compiled
    kernel and the symbols it takes. A CPU kernel has an `address`, its entry
    `i32 (ptr data, ptr symbols, i32 threads)`; a Triton kernel has
    `native_launches()`, its CUDA functions and their parameters once a
    first call launched it, which the program launches with the driver's
    `cuLaunchKernel` where the tensors are on the device and have the
    alignments of that call, and through a callback elsewhere."""

    function: func.FuncOp
    launches: dict[Operation, tuple[Any, list[str]]]
    shim: Shim
    entry: str = ENTRY
    """The name of the module's entry function."""
    device: str = "cpu"
    """The device type the program computes on, which names the shim's library functions."""
    triple: str = ""
    workspace: KeptWorkspace | None = None
    """The allocations the program keeps between calls (CPU programs,
    `targets.workspace`): their handles come in the `workspace` argument."""
    values: dict[SSAValue, _Value] = field(default_factory=dict)
    roots: dict[SSAValue, SSAValue] = field(default_factory=dict)
    symbols: dict[str, ir.Value] = field(default_factory=dict)
    addresses: list[int] = field(default_factory=list)
    """The `kernels` table: kernel entries and CUDA functions, in order."""
    kept: list[Any] = field(default_factory=list)
    """The compiled kernels whose code the addresses point into."""
    callbacks: list[Callback] = field(default_factory=list)
    slots: list[ir.Value] = field(default_factory=list)
    constant_arrays: dict[tuple[int, ...], ir.GlobalVariable] = field(default_factory=dict)
    argument_copies: dict[SSAValue, ir.Value] = field(default_factory=dict)
    """The slot of each tensor argument's copy in its buffer's layout (null
    where the argument had that layout)."""
    pointer_views: dict[SSAValue, tuple[SSAValue, ir.Value]] = field(default_factory=dict)
    """Views that only launches read (`_pointer_views`): no tensor of their
    own, their data pointer their root's plus the offset in bytes given
    here; a call that needs a handle makes one for that op."""
    temporary_slots: list[ir.Value] = field(default_factory=list)
    """Handles made for the op being emitted, released after it."""
    updated: dict[SSAValue, ir.Value] = field(default_factory=dict)
    """The handle of each argument the program writes (`ptensor.updated`):
    its copy, where it has one, is copied back into it at the end (and kept
    until then)."""

    def emit(self) -> NativeHostSource:
        self.module = ir.Module(name="permalloy_host")
        if self.triple:
            self.module.triple = self.triple
        self._declare_shim()
        signature = ir.FunctionType(I32, [PTR, PTR, I32, PTR, CALLBACK.as_pointer(), PTR])
        self.llvm_function = ir.Function(self.module, signature, self.entry)
        self.words, self.results, self.threads, self.kernel_table, self.callback, self.workspace_words = (
            self.llvm_function.args
        )
        self.cg = CodeGen(self.module, self.llvm_function)
        self.status = self.cg.alloca(I32, init=I32(0), name="status")
        self.cleanup = self.llvm_function.append_basic_block("cleanup")
        self.last_use = _last_uses(self.function)
        self.pointer_only = _pointer_views(self.function)
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
        pool = self.workspace.pool if self.workspace is not None else None
        return NativeHostSource(
            str(self.module), arguments, results, self.addresses, self.kept, self.callbacks, operations, pool
        )

    # -- shim, slots and checks ------------------------------------------------

    def _declare_shim(self) -> None:
        self.shim_functions: dict[str, ir.Function] = {}
        self._shim_function("aoti_torch_delete_tensor_object")
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
        b.call(self._shim_function("aoti_torch_delete_tensor_object"), [handle])
        b.store(_NULL, slot)
        b.branch(done)
        b.position_at_end(done)
        b.ret_void()
        self.release = release

    def _shim_function(self, name: str) -> ir.Function:
        """The shim function `name`, declared on first use; the process must have it."""
        function = self.shim_functions.get(name)
        if function is None:
            if name not in self.shim.addresses:
                raise NativeHostUnsupported(f"this process has no {name}")
            result, parameters = SHIM_FUNCTIONS[name]
            kind = ir.FunctionType(_TYPES[result], [_TYPES[p] for p in parameters])
            function = self.shim_functions[name] = ir.Function(self.module, kind, name)
        return function

    def _call(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        return self.cg.builder.call(self._shim_function(name), list(args))

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
        if value in self.pointer_views:
            return self._view_handle(value)
        entry = self.values[value]
        if entry.slot is None:
            return entry.handle
        return self.cg.builder.load(entry.slot, typ=PTR)

    def _int64_array(self, values: Sequence[ir.Value]) -> ir.Value:
        """An array of the values: a constant of the module where all are
        constants (one per distinct array), else a stack array filled here."""
        if all(isinstance(v, ir.Constant) for v in values):
            key = tuple(int(v.constant) for v in values)
            array = self.constant_arrays.get(key)
            if array is None:
                kind = ir.ArrayType(I64, max(len(key), 1))
                array = ir.GlobalVariable(self.module, kind, f"sizes{len(self.constant_arrays)}")
                array.linkage = "private"
                array.global_constant = True
                array.initializer = ir.Constant(kind, list(key) or [0])
                self.constant_arrays[key] = array
            return array
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
                symbol = index_argument_symbol(self.function, position)
                if symbol is not None and symbol not in self.symbols:
                    self.symbols[symbol] = b.load(word, typ=I64)
            elif isinstance(arg.type, buf.BufferType):
                kinds.append("tensor")
                if self.device != "cpu" and argument_attribute(self.function, position, ON_CPU_ATTR) is not None:
                    raise NativeHostUnsupported("a CPU tensor argument of a GPU program")
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
        for position, (arg, word) in enumerate(zip(args, words)):
            if isinstance(arg.type, buf.BufferType):
                self._conform_argument(arg, word)
                self.roots[arg] = arg
                if argument_attribute(self.function, position, UPDATED_ATTR) is not None:
                    self.updated[arg] = word
        return kinds

    def _conform_argument(self, arg: SSAValue, word: ir.Value) -> None:
        """The argument itself where its strides are its buffer's, else a copy
        of it in its buffer's layout (owned), made by `permalloy_conform`."""
        b = self.cg.builder
        layout = buf.buffer_type(arg)
        sizes = self._int64_array(self._exprs(layout.sizes))
        strides = self._int64_array(self._exprs(layout.strides.data))
        slot = self._new_slot()
        status = b.call(self._conform_function(), [word, I64(len(layout.sizes)), sizes, strides, slot])
        self._check(status, STATUS_SHIM + self.index)
        copied = b.load(slot, typ=PTR)
        handle = b.select(b.icmp_unsigned("==", copied, _NULL), word, copied)
        self.values[arg] = _Value(handle, None)
        self.argument_copies[arg] = slot

    def _conform_function(self) -> ir.Function:
        """`i32 permalloy_conform(ptr handle, i64 ndim, ptr sizes, ptr strides,
        ptr slot)`: where the tensor's strides differ from `strides`, a new
        tensor of `sizes` and `strides`, its dtype and device, holding a copy of
        it, in `slot`; the status of the shim's calls."""
        existing = self.module.globals.get("permalloy_conform")
        if existing is not None:
            return existing
        kind = ir.FunctionType(I32, [PTR, I64, PTR, PTR, PTR])
        function = ir.Function(self.module, kind, "permalloy_conform")
        function.linkage = "internal"
        handle, ndim, sizes, strides, slot = function.args
        entry, loop, differs, copy, done = (function.append_basic_block(n) for n in ("entry", "loop", "next", "copy", "done"))
        b = ir.IRBuilder(entry)
        actual_slot, dtype, device_type, device_index = b.alloca(PTR), b.alloca(I32), b.alloca(I32), b.alloca(I32)
        b.call(self._shim_function("aoti_torch_get_strides"), [handle, actual_slot])
        actual = b.load(actual_slot, typ=PTR)
        b.branch(loop)
        b.position_at_end(loop)
        dim = b.phi(I64)
        dim.add_incoming(I64(0), entry)
        b.cbranch(b.icmp_signed("<", dim, ndim), differs, done)
        b.position_at_end(differs)
        have = b.load(b.gep(actual, [dim], source_etype=I64), typ=I64)
        want = b.load(b.gep(strides, [dim], source_etype=I64), typ=I64)
        dim.add_incoming(b.add(dim, I64(1)), differs)
        b.cbranch(b.icmp_signed("!=", have, want), copy, loop)
        b.position_at_end(copy)
        b.call(self._shim_function("aoti_torch_get_dtype"), [handle, dtype])
        b.call(self._shim_function("aoti_torch_get_device_type"), [handle, device_type])
        b.call(self._shim_function("aoti_torch_get_device_index"), [handle, device_index])
        made = b.call(
            self._shim_function("aoti_torch_empty_strided"),
            [ndim, sizes, strides, b.load(dtype, typ=I32), b.load(device_type, typ=I32), b.load(device_index, typ=I32), slot],
        )
        failed = function.append_basic_block("failed")
        fill = function.append_basic_block("fill")
        b.cbranch(b.icmp_signed("!=", made, I32(0)), failed, fill)
        b.position_at_end(failed)
        b.ret(made)
        b.position_at_end(fill)
        b.ret(b.call(self._shim_function("aoti_torch_copy_"), [b.load(slot, typ=PTR), handle, I32(0)]))
        b.position_at_end(done)
        b.ret(I32(0))
        return function

    def _strides_differ(self, handle: ir.Value, expected: Sequence[ir.Value]) -> ir.Value:
        """Whether the tensor's strides differ from `expected` in some dimension."""
        b = self.cg.builder
        strides = self.cg.alloca(PTR)
        self._call("aoti_torch_get_strides", [handle, strides])
        strides = b.load(strides, typ=PTR)
        differs = ir.Constant(ir.IntType(1), 0)
        for dim, stride in enumerate(expected):
            actual = b.load(b.gep(strides, [I64(dim)], source_etype=I64), typ=I64)
            differs = b.or_(differs, b.icmp_signed("!=", actual, stride))
        return differs

    def _symbol_array(self) -> None:
        """Every bound symbol's value in one array, which callbacks read. On a
        GPU, only graphs of constant sizes: a Triton kernel's launches, grids
        and configuration are the first call's, at its sizes."""
        if self.device != "cpu" and self.symbols:
            raise NativeHostUnsupported("a GPU program of symbolic sizes")
        self.symbol_positions = {name: position for position, name in enumerate(self.symbols)}
        self.symbol_array = self._int64_array(list(self.symbols.values()))

    def _device(self) -> None:
        """The device type and index allocations go to: the first tensor
        argument's, else the CPU."""
        b = self.cg.builder
        if not self.tensor_words:
            if self.device != "cpu":
                raise NativeHostUnsupported("a GPU program without tensor arguments")
            self.device_type, self.device_index = I32(self.shim.device_codes["cpu"]), I32(0)
            return
        device_type, device_index = self.cg.alloca(I32), self.cg.alloca(I32)
        self._call("aoti_torch_get_device_type", [self.tensor_words[0], device_type])
        self._call("aoti_torch_get_device_index", [self.tensor_words[0], device_index])
        self.device_type, self.device_index = b.load(device_type, typ=I32), b.load(device_index, typ=I32)
        if self.device == "cuda":
            stream = self.cg.alloca(PTR)
            self._checked("aoti_torch_get_current_cuda_stream", [self.device_index, stream])
            self.stream = b.load(stream, typ=PTR)

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
        if self.workspace is not None and value in self.workspace.positions:
            position = self.workspace.positions[value]
            word = self.cg.builder.gep(self.workspace_words, [I64(position)], source_etype=I64)
            self.values[value] = _Value(word, None)
            return
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

    def _table_position(self, address: int, owner: Any) -> int:
        """The position of `address` in the `kernels` table, added if new."""
        if address not in self.addresses:
            self.addresses.append(address)
            self.kept.append(owner)
        return self.addresses.index(address)

    def _data_pointers(self, operands: Sequence[SSAValue]) -> ir.Value:
        """An array of the operands' data pointers."""
        b = self.cg.builder
        pointers = self.cg.alloca(PTR, count=max(len(operands), 1))
        for i, operand in enumerate(operands):
            place = b.gep(pointers, [I64(i)], source_etype=PTR)
            if operand in self.pointer_views:
                root, offset = self.pointer_views[operand]
                self._call("aoti_torch_get_data_ptr", [self.handle(root), place])
                b.store(b.gep(b.load(place, typ=PTR), [offset], source_etype=ir.IntType(8)), place)
            else:
                self._call("aoti_torch_get_data_ptr", [self.handle(operand), place])
        return pointers

    def _emit_launch(self, op: buf.LaunchOp) -> None:
        compiled, symbols = self.launches[op]
        if getattr(compiled, "address", None) is not None:
            self._emit_cpu_launch(op, compiled, symbols)
        elif hasattr(compiled, "native_launches"):
            self._emit_cuda_launch(op, compiled, symbols)
        else:
            raise NativeHostUnsupported("a kernel without a native launch")

    def _emit_cpu_launch(self, op: buf.LaunchOp, compiled: Any, symbols: list[str]) -> None:
        b = self.cg.builder
        position = self._table_position(compiled.address, compiled)
        pointers = self._data_pointers([*op.inputs, *op.outputs])
        values = self._int64_array([self.symbols[s] for s in symbols])
        entry = b.load(b.gep(self.kernel_table, [I64(position)], source_etype=PTR), typ=KERNEL.as_pointer())
        status = b.call(entry, [pointers, values, self.threads])
        self._check(status, STATUS_ZERO_DIVISOR)

    def _emit_cuda_launch(self, op: buf.LaunchOp, compiled: Any, symbols: list[str]) -> None:
        """The compiled kernel's CUDA functions launched with the driver where
        the call's device and the tensors' 16-byte alignments are the first
        call's (Triton specialized the binaries for them), else the kernel's
        Python launch, called back."""
        operands = [*op.inputs, *op.outputs]
        found = compiled.native_launches()
        if found is None:
            self._emit_callback(op, operands, [], Callback(op, len(operands), self._symbol_positions(symbols), compiled))
            return
        key, temporaries, launches = found
        b = self.cg.builder
        data, called_back, done = self._direct_or_called_back(operands, int(key[0]), key[1 + len(symbols) :])
        scratch = []
        for elements, dtype in temporaries:
            slot = self._new_slot()
            data.append(self._empty((int(elements),), (1,), dtype, slot))
            scratch.append(slot)
        products = any(step[0] == "product" for step in launches)
        handles = [self.handle(o) for o in operands] + [b.load(slot, typ=PTR) for slot in scratch] if products else []
        for step in launches:
            if step[0] == "product":
                self._emit_library_product(handles, step[1], step[2])
                continue
            grid, (_, function, launch), values = step
            self._launch_cuda_function(grid, function, launch, values, data, compiled)
        for slot in scratch:
            b.call(self.release, [slot])
        b.branch(done)
        b.position_at_end(called_back)
        callback = Callback(op, len(operands), self._symbol_positions(symbols), compiled, fallback=True)
        self._emit_callback(op, operands, [], callback)
        b.branch(done)
        b.position_at_end(done)

    def _emit_library_product(self, handles: list[ir.Value], function: str, views: tuple) -> None:
        """A step of a matrix-product kernel's library path: views of the
        kernel's tensors and temporaries (`handles`; offsets from each one's
        own), the shim's product into the first, and their handles released."""
        slots = []
        for (_, position), sizes, strides, offset in views:
            slot = self._new_slot()
            self._checked(
                "aoti_torch__reinterpret_tensor",
                [handles[position], I64(len(sizes)), self._int64_array([I64(int(v)) for v in sizes]),
                 self._int64_array([I64(int(v)) for v in strides]), I64(int(offset)), slot],
            )  # fmt: skip
            slots.append(slot)
        b = self.cg.builder
        self._checked(f"aoti_torch_{self.device}_{function}", [b.load(slot, typ=PTR) for slot in slots])
        for slot in slots:
            b.call(self.release, [slot])

    def _launch_cuda_function(
        self, grid: int | tuple[int, ...], function: int, launch: Any, values: tuple, data: list[ir.Value], owner: Any
    ) -> None:
        """One `cuLaunchKernel` of a static launch (`StaticLaunch`) on a grid
        of programs (x, or x, y and z): each passed parameter's value in a
        stack slot, null scratch pointers last."""
        b = self.cg.builder
        x, y, z = (*grid, 1, 1)[:3] if isinstance(grid, tuple) else (grid, 1, 1)
        passed = [values[p] for p in launch.positions]
        parameters = self.cg.alloca(PTR, count=max(len(passed) + launch.scratch, 1))
        for j, (value, code) in enumerate(zip(passed, launch.types, strict=True)):
            if isinstance(value, tuple):
                kind, constant = I64, data[value[1]]
            else:
                kind = _PARAMETER_TYPES.get(code)
                if kind is None:
                    raise NativeHostUnsupported(f"a kernel parameter of type code {code!r}")
                constant = ir.Constant(kind, float(value) if code in "fd" else int(value))
            slot = self.cg.alloca(kind)
            b.store(constant, slot)
            b.store(slot, b.gep(parameters, [I64(j)], source_etype=PTR))
        for k in range(launch.scratch):
            slot = self.cg.alloca(PTR)
            b.store(_NULL, slot)
            b.store(slot, b.gep(parameters, [I64(len(passed) + k)], source_etype=PTR))
        position = self._table_position(function, owner)
        cuda_function = b.load(b.gep(self.kernel_table, [I64(position)], source_etype=PTR), typ=PTR)
        status = self._call(
            "cuLaunchKernel",
            [cuda_function, I32(int(x)), I32(int(y)), I32(int(z)), I32(32 * launch.warps), I32(1), I32(1),
             I32(launch.shared), self.stream, parameters, _NULL],
        )  # fmt: skip
        self._check(status, STATUS_SHIM + self.index)

    def _symbol_positions(self, names: Sequence[str]) -> list[tuple[sympy.Symbol, int]]:
        return [(sympy.Symbol(name), self.symbol_positions[name]) for name in names]

    def _emit_view(self, op: buf.ViewOp) -> None:
        layout = buf.buffer_type(op.result)
        root = self.roots[op.source]
        self.roots[op.result] = root
        if op.result in self.pointer_only:
            (offset,) = self._exprs([layout.offset.expr])
            itemsize = torch_dtype(layout.element_type).itemsize
            self.pointer_views[op.result] = (root, self.cg.builder.mul(offset, I64(itemsize)))
            return
        self._reinterpret(root, layout, self._owned(op.result))

    def _reinterpret(self, root: SSAValue, layout: buf.BufferType, slot: ir.Value) -> None:
        """A handle in `slot` of the view of `root`'s memory with `layout`."""
        sizes = self._int64_array(self._exprs(layout.sizes))
        strides = self._int64_array(self._exprs(layout.strides.data))
        (offset,) = self._exprs([layout.offset.expr])
        self._checked("aoti_torch__reinterpret_tensor", [self.handle(root), I64(len(layout.sizes)), sizes, strides, offset, slot])

    def _view_handle(self, value: SSAValue) -> ir.Value:
        """A handle of a pointer-only view, made here for the op being
        emitted (a launch's Python fallback) and released after it."""
        root, _ = self.pointer_views[value]
        slot = self._new_slot()
        self._reinterpret(root, buf.buffer_type(value), slot)
        self.temporary_slots.append(slot)
        return self.cg.builder.load(slot, typ=PTR)

    def _emit_extern(self, op: buf.ExternOp) -> None:
        for result in op.results:
            self.roots[result] = result
        if self._emit_product(op) or self._emit_convolution(op) or self._emit_convolution_backward(op):
            return
        if self._emit_planned(op) or self._emit_recorded(op):
            return
        callback = Callback(op, len(op.inputs), self._callback_symbols(op))
        self._emit_callback(op, list(op.inputs), list(op.results), callback)

    def _emit_planned(self, op: buf.ExternOp) -> bool:
        """An extern whose call ran permalloy's kernels by a plan on the first
        call (`PlannedCall`): the plan's results and zeroed temporaries
        allocated and its launches made with the driver where the call's
        device and its inputs' 16-byte alignments are the first call's (the
        binaries were compiled for them), else its Python call, called back;
        False where the call recorded no plan."""
        found = self.launches.get(op)
        recorded = found[0].native_launches() if found is not None and isinstance(found[0], PlannedCall) else None
        if recorded is None or len(recorded.aligned) != len(op.inputs) or len(recorded.results) != len(op.results):
            return False
        if recorded.temporaries and "cuMemsetD8Async" not in self.shim.addresses:
            return False
        call = found[0]
        inputs = list(op.inputs)
        slots = [self._owned(result) for result in op.results]  # filled on either path
        data, called_back, done = self._direct_or_called_back(inputs, recorded.device, recorded.aligned)
        for allocation, slot in zip(recorded.results, slots, strict=True):
            data.append(self._empty(allocation.sizes, allocation.strides, allocation.dtype, slot))
        scratch = []
        for allocation in recorded.temporaries:
            slot = self._new_slot()
            pointer = self._empty(allocation.sizes, allocation.strides, allocation.dtype, slot)
            size = I64(allocation.storage_elements * allocation.dtype.itemsize)
            status = self._call("cuMemsetD8Async", [pointer, ir.Constant(ir.IntType(8), 0), size, self.stream])
            self._check(status, STATUS_SHIM + self.index)
            scratch.append(slot)
            data.append(pointer)
        for grid, (_, function, launch), values in recorded.steps:
            self._launch_cuda_function(grid, function, launch, values, data, call)
        self._conform_or_call_back(op, slots, scratch, called_back, done)
        return True

    def _emit_recorded(self, op: buf.ExternOp) -> bool:
        """An extern whose first call dispatched one ATen op the shim has a
        function for (`RecordedCall`): that function called with the recorded
        arguments where the call's device and its inputs' 16-byte alignments
        are the first call's, else its Python call, called back; False where
        the call recorded no such op, or the extern's sizes are symbolic (the
        recorded views' sizes are the first call's)."""
        found = self.launches.get(op)
        if found is None or not isinstance(found[0], RecordedCall) or self._callback_symbols(op):
            return False
        recorded = found[0].recorded
        if recorded is None and self.device == "cpu":  # built before the first call: a trial call records it
            recorded = found[0].record([_zeros(buf.buffer_type(value)) for value in op.inputs])
        if recorded is None or len(recorded.aligned) != len(op.inputs) or len(recorded.results) != len(op.results):
            return False
        name = f"aoti_torch_{self.device}_{recorded.name}"
        undefined = ("Tensor", None) in recorded.arguments  # a tensor the op takes undefined, as a handle
        if name not in self.shim.addresses or (undefined and _UNDEFINED not in self.shim.addresses):
            return False
        inputs = list(op.inputs)
        slots = [self._owned(result) for result in op.results]  # filled on either path
        _, called_back, done = self._direct_or_called_back(inputs, recorded.device, recorded.aligned)
        made: list[ir.Value] = []  # handles made for the call (views, copies, results it does not use)
        arguments = []
        for kind, value in recorded.arguments:
            arguments += self._recorded_argument(kind, value, inputs, made)
        for position, kind in enumerate(recorded.returns):
            if position in recorded.results:
                arguments.append(slots[recorded.results.index(position)])
            elif kind == "Tensor":
                made.append(self._new_slot())
                arguments.append(made[-1])
            else:
                arguments.append(self.cg.alloca(I64))
        self._checked(name, arguments)
        self._conform_or_call_back(op, slots, made, called_back, done)
        return True

    def _conform_or_call_back(
        self, op: buf.ExternOp, slots: list[ir.Value], made: list[ir.Value], called_back: ir.Block, done: ir.Block
    ) -> None:
        """End an extern's direct path (`_direct_or_called_back`): release the
        handles it made, give each result in `slots` its planned layout; then
        fill its `called_back` path, the extern's Python call with its results
        into `slots`; both go on at `done`."""
        b = self.cg.builder
        for slot in made:
            b.call(self.release, [slot])
        for result, slot in zip(op.results, slots, strict=True):
            self._conform_result(result, slot)
        b.branch(done)
        b.position_at_end(called_back)
        inputs = list(op.inputs)
        callback = Callback(op, len(inputs), self._callback_symbols(op), fallback=True)
        self._emit_callback(op, inputs, list(op.results), callback, slots)
        b.branch(done)
        b.position_at_end(done)

    def _recorded_argument(
        self, kind: str, value: Any, inputs: list[SSAValue], made: list[ir.Value]
    ) -> list[ir.Value]:
        """A recorded op's argument as its shim function takes it
        (`shim.SCHEMA_TYPES`): an input's handle, a view or a copy of it made
        here or an undefined tensor's (each made one's slot added to `made`,
        released after the call); an optional one through a pointer to its handle,
        null for None; a list of bools as an array of `i32`s and its length."""
        b = self.cg.builder
        if kind == "List[bool]":
            array = self.cg.alloca(I32, count=max(len(value), 1))
            for position, flag in enumerate(value):
                b.store(I32(int(flag)), b.gep(array, [I64(position)], source_etype=I32))
            return [array, I64(len(value))]
        return [self._recorded_scalar_or_tensor(kind, value, inputs, made)]

    def _recorded_scalar_or_tensor(
        self, kind: str, value: Any, inputs: list[SSAValue], made: list[ir.Value]
    ) -> ir.Value:
        """`_recorded_argument` of a single value."""
        b = self.cg.builder
        if isinstance(value, InputArgument | ViewArgument | CopyArgument) or (value is None and kind == "Tensor"):
            slot = self._recorded_tensor(value, inputs, made)
            return slot if kind == "Optional[Tensor]" else b.load(slot, typ=PTR)
        if value is None:
            return _NULL
        if kind == "bool":
            return I32(int(value))
        if kind in ("int", "SymInt"):
            return I64(int(value))
        number = ir.Constant(ir.DoubleType(), float(value))
        if kind == "float":
            return number
        slot = self.cg.alloca(ir.DoubleType())  # an optional float, through a pointer
        b.store(number, slot)
        return slot

    def _recorded_tensor(
        self, value: InputArgument | ViewArgument | CopyArgument | None, inputs: list[SSAValue], made: list[ir.Value]
    ) -> ir.Value:
        """A slot holding the handle of a recorded op's tensor argument: an
        input's, or one made here (added to `made`): a view of an input, a
        copy of it, or an undefined tensor (`None`: a backward's unused
        sequence offsets)."""
        if isinstance(value, InputArgument):
            slot = self.cg.alloca(PTR)
            self.cg.builder.store(self.handle(inputs[value.position]), slot)
            return slot
        slot = self._new_slot()
        made.append(slot)
        if isinstance(value, ViewArgument):
            self._checked(
                "aoti_torch__reinterpret_tensor",
                [self.handle(inputs[value.position]), I64(len(value.sizes)),
                 self._int64_array([I64(v) for v in value.sizes]), self._int64_array([I64(v) for v in value.strides]),
                 I64(value.offset), slot],
            )  # fmt: skip
        elif isinstance(value, CopyArgument):
            source = inputs[value.position]
            self._empty(value.sizes, value.strides, torch_dtype(buf.buffer_type(source).element_type), slot)
            self._checked("aoti_torch_copy_", [self.cg.builder.load(slot, typ=PTR), self.handle(source), I32(0)])
        else:
            self._checked(_UNDEFINED, [slot])
        return slot

    def _direct_or_called_back(
        self, operands: Sequence[SSAValue], device: int, aligned: Sequence[bool]
    ) -> tuple[list[ir.Value], ir.Block, ir.Block]:
        """The operands' data pointers (integers), and a branch to launches
        made directly, where the builder is left, if the call's device and
        each operand's 16-byte alignment are the first call's (`device`,
        `aligned`: the binaries were compiled for them), else to the
        `called_back` block returned; both paths are to end in `done`."""
        b = self.cg.builder
        pointers = self._data_pointers(operands)
        data = [b.ptrtoint(b.load(b.gep(pointers, [I64(i)], source_etype=PTR), typ=PTR), I64) for i in range(len(operands))]
        same = b.icmp_signed("==", self.device_index, I32(device))
        for value, was_aligned in zip(data, aligned, strict=True):
            is_aligned = b.icmp_signed("==", b.and_(value, I64(15)), I64(0))
            same = b.and_(same, is_aligned if was_aligned else b.not_(is_aligned))
        direct = self.llvm_function.append_basic_block(f"direct{self.index}")
        called_back = self.llvm_function.append_basic_block(f"called_back{self.index}")
        done = self.llvm_function.append_basic_block(f"launched{self.index}")
        b.cbranch(same, direct, called_back)
        b.position_at_end(direct)
        return data, called_back, done

    def _empty(self, sizes: Sequence[int], strides: Sequence[int], dtype: Any, slot: ir.Value) -> ir.Value:
        """A new tensor of these sizes, strides and element type on the
        program's device, in `slot`; its data pointer as an integer."""
        code = self.shim.dtype_code(dtype)
        if code is None:
            raise NativeHostUnsupported(f"a tensor of dtype {dtype}")
        self._checked(
            "aoti_torch_empty_strided",
            [I64(len(sizes)), self._int64_array([I64(int(v)) for v in sizes]),
             self._int64_array([I64(int(v)) for v in strides]), I32(code), self.device_type, self.device_index, slot],
        )  # fmt: skip
        b = self.cg.builder
        pointer = self.cg.alloca(PTR)
        self._call("aoti_torch_get_data_ptr", [b.load(slot, typ=PTR), pointer])
        return b.ptrtoint(b.load(pointer, typ=PTR), I64)

    def _emit_callback(
        self,
        op: Operation,
        inputs: Sequence[SSAValue],
        results: Sequence[SSAValue],
        callback: Callback,
        slots: Sequence[ir.Value] = (),
    ) -> None:
        """Run `callback` in Python: new handles of `inputs` go to it, the
        handles it gives back become `results` (in `slots` where given)."""
        b = self.cg.builder
        handles = self.cg.alloca(PTR, count=max(len(inputs), 1))
        for i, value in enumerate(inputs):
            self._checked("aoti_torch_new_tensor_handle", [self.handle(value), b.gep(handles, [I64(i)], source_etype=PTR)])
        outputs = self.cg.alloca(PTR, count=max(len(results), 1))
        for i in range(len(results)):
            b.store(_NULL, b.gep(outputs, [I64(i)], source_etype=PTR))
        status = b.call(self.callback, [I64(len(self.callbacks)), handles, outputs, self.symbol_array])
        for i, result in enumerate(results):
            slot = slots[i] if slots else self._owned(result)
            b.store(b.load(b.gep(outputs, [I64(i)], source_etype=PTR), typ=PTR), slot)
        self.callbacks.append(callback)
        self._check(status, STATUS_CALLBACK)

    def _callback_symbols(self, op: buf.ExternOp) -> list[tuple[sympy.Symbol, int]]:
        """The symbols of the extern's sizes (its call's) and of its results'
        strides (its results' layout fixes'), with their positions."""
        strides = {s for s in result_stride_symbols(op) if s.name in self.symbols}
        symbols = sorted(set(extern_symbols(op)) | strides, key=lambda s: s.name)
        return [(s, self.symbol_positions[s.name]) for s in symbols]

    def _emit_product(self, op: buf.ExternOp) -> bool:
        """A matrix product through the shim, into its last input where it is
        marked so, else into a result the program allocates in its planned
        layout; False for other ops and for layouts the library would not
        write as they are (`extern_into_call`)."""
        product = _PRODUCTS.get(type(op.library_op))
        if product is None or extern_into_call(op) is None:
            return False
        (result,) = op.results
        name = f"aoti_torch_{self.device}_{product}"
        operands = self._library_operands(op)
        if op.writes_last_input:  # into a buffer the program planned (`plan-memory`)
            out = self.handle(op.inputs[-1])
        else:
            self._allocate(result)
            out = self.handle(result)
        scales = []
        if isinstance(op.library_op, pt.AddmmOp):
            beta, alpha = addmm_scales(op.library_op)
            scales = [ir.Constant(ir.DoubleType(), beta), ir.Constant(ir.DoubleType(), alpha)]
        self._checked(name, [out, *operands, *scales])
        return True

    def _geometry_arguments(self, op: pt.ConvolutionOp | pt.ConvolutionBackwardOp) -> list[ir.Value]:
        """A convolution's geometry as the shim takes it: stride, padding and
        dilation (each an array and its length), transposed, output padding
        (an array and its length) and groups."""
        stride, padding, dilation, transposed, output_padding, groups = pt.convolution_geometry(op)
        arguments = []
        for values in (stride, padding, dilation):
            arguments += [self._int64_array([I64(v) for v in values]), I64(len(values))]
        padding_array = self._int64_array([I64(v) for v in output_padding])
        return [*arguments, I32(int(transposed)), padding_array, I64(len(output_padding)), I64(groups)]

    def _library_operands(self, op: buf.ExternOp) -> list[ir.Value]:
        """The handles of the library op's operands, in its order."""
        return [self.handle(value) for value in op.library_inputs()]

    def _emit_convolution(self, op: buf.ExternOp) -> bool:
        """A convolution through the shim, its result given its planned layout
        as the Python host program gives it; False for other ops, and for a
        depthwise convolution run by permalloy's kernel (its Python call)."""
        if not isinstance(op.library_op, pt.ConvolutionOp) or pt.ConvolutionOp.TILE in op.library_op.attributes:
            return False
        b = self.cg.builder
        x, weight, *bias = self._library_operands(op)
        bias_slot = self.cg.alloca(PTR)
        b.store(bias[0] if bias else _NULL, bias_slot)
        (result,) = op.results
        slot = self._owned(result)
        self._checked(
            f"aoti_torch_{self.device}_convolution",
            [x, weight, bias_slot if bias else _NULL, *self._geometry_arguments(op.library_op), slot],
        )
        self._conform_result(result, slot)
        return True

    def _emit_convolution_backward(self, op: buf.ExternOp) -> bool:
        """A convolution's gradients through the shim: the masked-in ones
        become the results, each given its planned layout; False for other ops
        (and where this process's libtorch has no such shim function, or
        permalloy's depthwise kernel computes the weight's gradient, which
        leaves the op to a callback)."""
        name = f"aoti_torch_{self.device}_convolution_backward"
        if not isinstance(op.library_op, pt.ConvolutionBackwardOp) or name not in self.shim.addresses:
            return False
        if pt.ConvolutionBackwardOp.WEIGHT_BLOCK in op.library_op.attributes:
            return False
        b = self.cg.builder
        grad_output, x, weight = self._library_operands(op)
        mask = [int(m) for m in op.library_op.output_mask.data]
        mask_array = self.cg.alloca(I32, count=len(mask))
        for position, wanted in enumerate(mask):
            b.store(I32(wanted), b.gep(mask_array, [I64(position)], source_etype=I32))
        results = iter(op.results)
        slots = [self._owned(next(results)) if wanted else self._new_slot() for wanted in mask]
        self._checked(
            name,
            [grad_output, x, weight, _NULL, I64(0), *self._geometry_arguments(op.library_op),
             mask_array, I64(len(mask)), *slots],
        )  # fmt: skip
        for wanted, slot in zip(mask, slots):
            if not wanted:  # an undefined tensor's handle, or none
                b.call(self.release, [slot])
        for result in op.results:
            self._conform_result(result, self.values[result].slot)
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
            differs = self._strides_differ(handle, expected)
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
        for arg, word in self.updated.items():
            copied = b.load(self.argument_copies[arg], typ=PTR)
            back = self.llvm_function.append_basic_block(f"copy_back{arg.index}")
            done = self.llvm_function.append_basic_block(f"copied_back{arg.index}")
            b.cbranch(b.icmp_unsigned("==", copied, _NULL), done, back)
            b.position_at_end(back)
            self._checked("aoti_torch_copy_", [word, copied, I32(0)])
            b.branch(done)
            b.position_at_end(done)
        for i, value in enumerate(op.arguments):
            self._checked("aoti_torch_new_tensor_handle", [self.handle(value), b.gep(self.results, [I64(i)], source_etype=PTR)])
        b.branch(self.cleanup)

    def _release_after(self, op: Operation) -> None:
        """Release the handles made for `op` and those whose last use it is."""
        for slot in self.temporary_slots:
            self.cg.builder.call(self.release, [slot])
        self.temporary_slots.clear()
        for value in self.last_use.get(op, ()):
            slot = self.values[value].slot if value in self.values else None
            if slot is None and value not in self.updated:
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


def _zeros(layout: buf.BufferType) -> torch.Tensor:
    """A CPU tensor of zeros with the sizes, strides and element type of a
    buffer of constant sizes."""
    sizes = [int(size) for size in layout.sizes]
    strides = [int(stride) for stride in layout.strides.data]
    tensor = torch.empty_strided(sizes, strides, dtype=torch_dtype(layout.element_type))
    tensor.untyped_storage().fill_(0)  # all its memory: a broadcast layout cannot be written through
    return tensor


def _reads(op: Operation, roots: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """The tensor values whose handles `op` reads."""
    if isinstance(op, buf.LaunchOp):
        operands = [*op.inputs, *op.outputs]
        # a pointer-only view's root must outlive the view's launches
        return [*operands, *(roots[v] for v in operands if v in roots and roots[v] is not v)]
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


def _pointer_views(function: func.FuncOp) -> set[SSAValue]:
    """The views whose every use is an operand of a launch, a free, or the
    source of another view (which the program takes of the root): a launch
    needs only their data pointer, so the program makes no tensor for them."""
    views = set()
    for op in function.body.block.ops:
        if isinstance(op, buf.ViewOp) and all(
            isinstance(use.operation, buf.LaunchOp | buf.DeallocOp | buf.ViewOp) for use in op.result.uses
        ):
            views.add(op.result)
    return views
