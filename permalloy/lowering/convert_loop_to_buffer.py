"""The `convert-loop-to-buffer` pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from permalloy.dialects import buffer as buf
from permalloy.dialects import loop
from permalloy.dialects.ptensor import VIEW_OPS, SymListAttr, TensorType, sizes_equal
from permalloy.lowering.view_layouts import view_layout
from permalloy.passes.diagnostics import check_loop_level, defined_functions

STRIDES_ATTR = "ptensor.strides"
"""Argument and result attribute giving the strides a graph input arrives with
or a graph output must have (as eager would return it); dense by default."""


@dataclass(frozen=True)
class ConvertLoopToBufferPass(ModulePass):
    """
    Turns functions of loop ops into host programs over buffers.

    Expects the output of `convert-ptensor-to-loop`. Produces:
    - function arguments and results as `!buffer.buffer` with the layouts their
      `ptensor.strides` attributes give (dense otherwise);
    - for each loop op, a module-level `buffer.kernel` holding it, a
      `buffer.alloc` for its result and a `buffer.launch`;
    - for each op left for the host (library calls, fallbacks, constants,
      random numbers, scatters), a `buffer.extern` that runs it;
    - for each remaining view, a `buffer.view` of its source's memory, or a
      dense copy first when the view cannot reinterpret that memory.

    Before:
    ```
    func.func @f(%x: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
      %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {...}
      func.return %y : !ptensor.tensor<[4], f32>
    }
    ```
    After:
    ```
    buffer.kernel @pointwise_0(%a: !ptensor.tensor<[4], f32>) -> (!ptensor.tensor<[4], f32>) {
      %y = loop.pointwise ins(%b = %a : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {...}
      buffer.yield %y : !ptensor.tensor<[4], f32>
    }
    func.func @f(%x: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
      %y = buffer.alloc : !buffer.buffer<[4], f32>
      buffer.launch @pointwise_0 ins(%x : !buffer.buffer<[4], f32>) outs(%y : !buffer.buffer<[4], f32>)
      func.return %y : !buffer.buffer<[4], f32>
    }
    ```
    """

    name = "convert-loop-to-buffer"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = _KernelNames()
        functions = [f for f in defined_functions(op) if f.parent_op() is op]
        for function in functions:
            check_loop_level(function, self.name)
        for function in functions:
            _FunctionConversion(op, function, names).run()


@dataclass
class _KernelNames:
    """Gives kernels unique names after what they compute."""

    used: set[str] = field(default_factory=set)

    def name_for(self, op: Operation) -> str:
        stem = _describe(op)
        number = len(self.used)
        name = f"{stem}_{number}"
        self.used.add(name)
        return name


def _describe(op: Operation) -> str:
    if isinstance(op, loop.FusedOp):
        return "fused_" + "_".join(dict.fromkeys(_describe(m) for m in op.members[:3]))
    if isinstance(op, loop.ReduceOp):
        return f"reduce_{op.kind.data.value}"
    if isinstance(op, loop.ScanOp):
        return f"scan_{op.kind.data.value}"
    math_ops = [o.name.split(".")[1] for o in op.walk() if o.name.startswith("math.")]
    if math_ops:
        return "pointwise_" + "_".join(dict.fromkeys(math_ops[:2]))
    return "pointwise"


def _layout_attr(attrs: ArrayAttr | None, position: int) -> SymListAttr | None:
    if attrs is None or position >= len(attrs.data):
        return None
    entry = attrs.data[position]
    if isinstance(entry, DictionaryAttr):
        value = entry.data.get(STRIDES_ATTR)
        if isinstance(value, SymListAttr):
            return value
    return None


def _tensor_type(value: SSAValue) -> TensorType:
    """The tensor type of a value, whose type may already be its buffer's."""
    value_type = value.type
    if isinstance(value_type, buf.BufferType):
        return value_type.tensor_type()
    assert isinstance(value_type, TensorType)
    return value_type


def _buffer_for(tensor: Attribute, strides: SymListAttr | None) -> Attribute:
    if not isinstance(tensor, TensorType):
        return tensor
    return buf.BufferType(
        tensor.sizes, tensor.element_type, None if strides is None else strides.data
    )


def _dense_up_to_unit_dims(layout: buf.BufferType) -> bool:
    """Whether a layout is row-major, ignoring the strides of size-1 dimensions."""
    dense = buf.contiguous_strides(layout.sizes)
    return all(
        sizes_equal(size, 1) or sizes_equal(stride, expected)
        for size, stride, expected in zip(layout.sizes, layout.strides.data, dense)
    )


def _broadcast_dims(sizes: Sequence[sympy.Expr], strides: Sequence[sympy.Expr]) -> list[int]:
    """The dimensions a layout repeats one element along (stride 0, size
    other than 1): memory there cannot be written element by element."""
    return [
        d
        for d, (size, stride) in enumerate(zip(sizes, strides))
        if sizes_equal(stride, 0) and not sizes_equal(size, 1)
    ]


class _FunctionConversion:
    """The state of converting one function: the buffer of each tensor value."""

    def __init__(self, module: ModuleOp, function: func.FuncOp, names: _KernelNames):
        self.module = module
        self.function = function
        self.names = names
        self.buffers: dict[SSAValue, SSAValue] = {}
        self.dead: list[Operation] = []
        self.result_types: list[Attribute] = []
        self.result_layouts = self._result_layouts()

    def _result_layouts(self) -> dict[int, SymListAttr]:
        layouts = {}
        for i, _ in enumerate(self.function.function_type.outputs.data):
            layout = _layout_attr(self.function.res_attrs, i)
            if layout is not None:
                layouts[i] = layout
        return layouts

    def run(self) -> None:
        block = self.function.body.block
        for i, arg in enumerate(block.args):
            layout = _layout_attr(self.function.arg_attrs, i)
            new_type = _buffer_for(arg.type, layout)
            if new_type != arg.type:
                Rewriter.replace_value_with_new_type(arg, new_type)
        for arg in block.args:
            self.buffers[arg] = arg
        returned = self._returned_positions()
        for op in list(block.ops):
            if isinstance(op, func.ReturnOp):
                self._convert_return(op)
            elif isinstance(op, loop.LoopOp | loop.FusedOp):
                self._convert_loop(op, returned)
            elif isinstance(op, VIEW_OPS):
                self._convert_view(op)
            else:
                self._convert_extern(op)
        for op in reversed(self.dead):
            op.detach()
            op.erase()
        inputs = [a.type for a in block.args]
        self.function.function_type = FunctionType.from_lists(inputs, self.result_types)

    def _returned_positions(self) -> dict[SSAValue, int]:
        terminator = self.function.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        return {v: i for i, v in enumerate(terminator.arguments)}

    def _insert(self, op: Operation, before: Operation) -> Operation:
        block = before.parent_block()
        assert block is not None
        block.insert_op_before(op, before)
        return op

    def _outline(self, op: Operation, inputs: list[SSAValue]) -> tuple[Block, Operation]:
        """A block whose arguments stand for `inputs`, holding a clone of `op`."""
        block = Block(arg_types=[_tensor_type(v) for v in inputs])
        mapping = dict(zip(inputs, block.args))
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        return block, clone

    def _convert_loop(self, op: loop.LoopOp | loop.FusedOp, returned: dict[SSAValue, int]) -> None:
        """A kernel holding the loop op (or the members of a `loop.fused`), an
        allocation per result, and the launch."""
        inputs = list(dict.fromkeys(op.operands))
        block = Block(arg_types=[_tensor_type(v) for v in inputs])
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
        if isinstance(op, loop.FusedOp):
            mapping.update(zip(op.body.block.args, [mapping[v] for v in op.inputs]))
            for member in op.members:
                clone = member.clone(value_mapper=mapping)
                block.add_op(clone)
                mapping[member.result] = clone.results[0]
            terminator = op.body.block.last_op
            assert isinstance(terminator, loop.FusedYieldOp)
            results = [mapping[v] for v in terminator.values]
        else:
            clone = op.clone(value_mapper=mapping)
            block.add_op(clone)
            results = list(clone.results)
        block.add_op(buf.YieldOp(results))
        name = self.names.name_for(op)
        kernel = buf.KernelOp(
            name,
            [_tensor_type(v) for v in inputs],
            [r.type for r in op.results],  # type: ignore[misc]
            Region(block),
        )
        self.module.body.block.insert_op_before(kernel, self.function)
        allocs = []
        for result in op.results:
            position = returned.get(result)
            layout = self.result_layouts.get(position) if position is not None else None
            if layout is not None and _broadcast_dims(result.type.sizes, layout.data):
                layout = None  # written densely; the return makes the broadcast view
            alloc = self._insert(buf.AllocOp(_buffer_for(result.type, layout)), op)  # type: ignore[arg-type]
            alloc.results[0].name_hint = result.name_hint
            allocs.append(alloc.results[0])
            self.buffers[result] = alloc.results[0]
        self._insert(buf.LaunchOp(name, [self.buffers[v] for v in inputs], allocs), op)
        self._erase(op)

    def _convert_extern(self, op: Operation) -> None:
        inputs = list(dict.fromkeys(op.operands))
        block, clone = self._outline(op, inputs)
        block.add_op(buf.YieldOp(clone.results))
        result_types = [_buffer_for(r.type, None) for r in op.results]
        extern = self._insert(
            buf.ExternOp([self.buffers[v] for v in inputs], result_types, Region(block)),  # type: ignore[arg-type]
            op,
        )
        for old, new in zip(op.results, extern.results):
            new.name_hint = old.name_hint
            self.buffers[old] = new
        self._erase(op)

    def _convert_view(self, op: Operation) -> None:
        source = self.buffers[op.operands[0]]
        source_type = source.type
        assert isinstance(source_type, buf.BufferType)
        layout = view_layout(op, source_type)
        if layout is None:
            dense = self._insert(buf.AllocOp(buf.BufferType(source_type.sizes, source_type.element_type)), op)
            self._insert(buf.CopyOp(source, dense.results[0]), op)
            source = dense.results[0]
            layout = view_layout(op, buf.buffer_type(source))
            assert layout is not None, "a view of a dense buffer is always a reinterpretation"
        view = self._insert(buf.ViewOp(source, layout), op)
        view.results[0].name_hint = op.results[0].name_hint
        self._replace(op, view.results[0])

    def _convert_return(self, op: func.ReturnOp) -> None:
        """Return each result in the layout its `ptensor.strides` asks for, or
        else dense row-major, copying when it differs (a layout repeating
        elements gets a copy of the elements it does not repeat). A returned view that is
        already dense stays a view (with its offset), aliasing its source as
        eager's would."""
        values = []
        for i, value in enumerate(op.arguments):
            result = self.buffers[value]
            wanted = self.result_layouts.get(i)
            result_type = buf.buffer_type(result)
            if wanted is None and not _dense_up_to_unit_dims(result_type):
                wanted = SymListAttr(buf.contiguous_strides(result_type.sizes))
            relayout = wanted is not None and (
                tuple(wanted.data) != tuple(result_type.strides.data)
                or result_type.offset.expr != 0
            )
            if relayout and _broadcast_dims(result_type.sizes, wanted.data):
                result = self._broadcast_result(result, wanted, op)
            elif relayout:
                relaid = self._insert(
                    buf.AllocOp(buf.BufferType(result_type.sizes, result_type.element_type, wanted.data)), op
                )
                self._insert(buf.CopyOp(result, relaid.results[0]), op)
                result = relaid.results[0]
            values.append(result)
        self._insert(func.ReturnOp(*values), op)
        self.result_types = [v.type for v in values]
        self._erase(op)

    def _broadcast_result(self, result: SSAValue, wanted: SymListAttr, before: Operation) -> SSAValue:
        """A returned result in a layout that repeats elements (stride 0, as
        an expanded tensor of eager's has): the elements it does not repeat are
        copied into a new allocation, then viewed with the wanted strides."""
        layout = buf.buffer_type(result)
        repeated = _broadcast_dims(layout.sizes, wanted.data)
        compact = [1 if d in repeated else size for d, size in enumerate(layout.sizes)]
        element = layout.element_type
        source = self._insert(
            buf.ViewOp(result, buf.BufferType(compact, element, layout.strides.data, layout.offset.expr)),
            before,
        )
        alloc = self._insert(buf.AllocOp(buf.BufferType(compact, element, wanted.data)), before)
        self._insert(buf.CopyOp(source.results[0], alloc.results[0]), before)
        view = self._insert(
            buf.ViewOp(alloc.results[0], buf.BufferType(layout.sizes, element, wanted.data)), before
        )
        return view.results[0]

    def _replace(self, op: Operation, new: SSAValue) -> None:
        self.buffers[op.results[0]] = new
        self._erase(op)

    def _erase(self, op: Operation) -> None:
        # Later ops still read this op's results until they are converted in
        # turn, so the op is erased once the whole function is converted.
        self.dead.append(op)
