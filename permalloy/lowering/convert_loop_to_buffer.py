"""
The `convert-loop-to-buffer` pass, as xDSL rewrite patterns.

One walk over the module, each function and then its ops in order, with a
pattern per kind of op: the function's arguments (`BufferArguments`), loop ops
(`OutlineLoop`), views (`ViewToBuffer`), the other host ops (`HostOpToExtern`)
and the return (`ReturnBuffers`). Each pattern replaces the tensor results of
its op by the buffers that hold them, so that every op after it reads buffers
(a buffer's tensor type is the type of the values it holds). The only state
the patterns share is the kernel names given so far (`KernelNames`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from permalloy.dialects import buffer as buf
from permalloy.dialects import loop
from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import VIEW_OPS, SymListAttr, TensorType, sizes_equal
from permalloy.lowering.import_fx.graph import ALIAS_ATTR, FREE_LAYOUT_ATTR, result_attribute
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
      `buffer.alloc` for its result and a `buffer.launch`; a `loop.scatter`'s
      launch writes into its init's buffer when nothing else reads it, else
      into a `buffer.copy` of it;
    - for each op left for the host (library calls, fallbacks, constants,
      random numbers, scatters kept for torch), a `buffer.extern` that runs it;
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
        for function in defined_functions(op):
            if is_converted(function):
                check_loop_level(function, self.name)
        patterns: list[RewritePattern] = [
            BufferArguments(),
            ReturnBuffers(),
            OutlineLoop(KernelNames()),
            ViewToBuffer(),
            HostOpToExtern(),
        ]
        applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
        PatternRewriteWalker(applier, apply_recursively=False).rewrite_module(op)


def is_converted(function: Operation | None) -> bool:
    """Whether the pass converts `function`: a function with a body in the
    top-level module (kernels go next to it)."""
    if not isinstance(function, func.FuncOp) or not function.body.blocks:
        return False
    module = function.parent_op()
    return isinstance(module, ModuleOp) and module.parent_op() is None


def _host_op(op: Operation) -> func.FuncOp | None:
    """The function whose host program `op` is part of, if the pass converts it."""
    function = op.parent_op()
    return function if is_converted(function) else None  # type: ignore[return-value]


@dataclass
class KernelNames:
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
    if isinstance(op, loop.ScatterOp):
        return f"scatter_{op.kind.data.value}"
    if isinstance(op, loop.SortOp):
        return "sort"
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


def _result_layout(function: func.FuncOp, position: int) -> SymListAttr | None:
    return _layout_attr(function.res_attrs, position)


def _returned_position(result: SSAValue) -> int | None:
    """The position at which the function returns `result` (the last one, if
    several), or None."""
    positions = [u.index for u in result.uses if isinstance(u.operation, func.ReturnOp)]
    return max(positions) if positions else None


@dataclass(frozen=True)
class BufferArguments(RewritePattern):
    """A function's tensor arguments become buffers, in the layouts their
    `ptensor.strides` attributes give (dense otherwise)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        if not is_converted(op):
            return
        for i, arg in enumerate(op.body.block.args):
            new_type = _buffer_for(arg.type, _layout_attr(op.arg_attrs, i))
            if new_type != arg.type:
                rewriter.replace_value_with_new_type(arg, new_type)


@dataclass(frozen=True)
class OutlineLoop(RewritePattern):
    """A kernel holding the loop op (or the members of a `loop.fused`), an
    allocation per result, and the launch."""

    names: KernelNames

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, loop.LoopOp | loop.FusedOp):
            return
        function = _host_op(op)
        if function is None:
            return
        inputs = list(dict.fromkeys(op.operands))
        name = self.names.name_for(op)
        rewriter.insert(_kernel(op, name, inputs), InsertPoint.before(function))
        if isinstance(op, loop.ScatterOp):
            self._scatter(op, name, inputs, rewriter)
            return
        allocs = []
        for result in op.results:
            alloc = rewriter.insert(buf.AllocOp(_loop_result_buffer(function, result)))  # type: ignore[arg-type]
            alloc.results[0].name_hint = result.name_hint
            allocs.append(alloc.results[0])
        rewriter.insert(buf.LaunchOp(name, inputs, allocs))
        for result, alloc in zip(op.results, allocs):
            rewriter.replace_all_uses_with(result, alloc)
        rewriter.erase(op)

    @staticmethod
    def _scatter(op: loop.ScatterOp, name: str, inputs: list[SSAValue], rewriter: PatternRewriter) -> None:
        """A scatter's kernel combines into its output: the output holds the
        init when it starts, the init's own buffer when nothing else reads
        it, else a copy."""
        output = op.init
        if not _updatable(op.init, op):
            alloc = rewriter.insert(buf.AllocOp(_buffer_for(op.result.type, None)))
            alloc.results[0].name_hint = op.result.name_hint
            rewriter.insert(buf.CopyOp(op.init, alloc.results[0]))
            output = alloc.results[0]
        rewriter.insert(buf.LaunchOp(name, inputs, [output]))
        rewriter.replace_all_uses_with(op.result, output)
        rewriter.erase(op)


def _updatable(init: SSAValue, scatter: Operation) -> bool:
    """Whether a scatter may combine into its init's buffer: an allocation,
    dense, that only the launches and copies writing it use before the
    scatter, neither the scatter's points (as a source) nor anything after
    it reads (its readers would see the scattered values)."""
    if not isinstance(init.owner, buf.AllocOp) or init in scatter.operands[:-1]:
        return False  # not an allocation, or read by the scatter's own points
    layout = buf.buffer_type(init)
    if not _dense_up_to_unit_dims(layout):
        return False
    for use in init.uses:
        user = use.operation
        if user is scatter or (isinstance(user, buf.CopyOp) and user.target is init and user.source is not init):
            continue
        if not isinstance(user, buf.LaunchOp) or init not in user.outputs or init in user.inputs:
            return False
    return True


def _kernel(op: loop.LoopOp | loop.FusedOp, name: str, inputs: list[SSAValue]) -> buf.KernelOp:
    """The kernel `name` computing `op`'s results from `inputs` (its arguments)."""
    # the body's arguments have the tensor types of the op's inputs
    tensor_types: dict[SSAValue, Attribute] = {}
    for value, argument in zip(op.operands, op.body.block.args):
        tensor_types.setdefault(value, argument.type)
    argument_types = [tensor_types.get(v) or _tensor_type(v) for v in inputs]  # a scatter's init has no body argument
    block = Block(arg_types=argument_types)
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
    return buf.KernelOp(
        name,
        argument_types,
        [r.type for r in op.results],  # type: ignore[misc]
        Region(block),
    )


@dataclass(frozen=True)
class HostOpToExtern(RewritePattern):
    """An op the host program runs (a library call, a fallback, a constant,
    random numbers, a scatter) becomes a `buffer.extern` holding it."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, (func.FuncOp, func.ReturnOp, loop.LoopOp, loop.FusedOp, *VIEW_OPS)):
            return  # other patterns' ops
        if _host_op(op) is None:
            return
        inputs = list(dict.fromkeys(op.operands))
        block = Block(arg_types=[_tensor_type(v) for v in inputs])
        clone = op.clone(value_mapper=dict(zip(inputs, block.args)))
        block.add_op(clone)
        block.add_op(buf.YieldOp(clone.results))
        result_types = [_library_result_buffer(op, i, r.type) for i, r in enumerate(op.results)]
        extern = rewriter.insert(buf.ExternOp(inputs, result_types, Region(block)))  # type: ignore[arg-type]
        for old, new in zip(op.results, extern.results):
            new.name_hint = old.name_hint
            rewriter.replace_all_uses_with(old, new)
        rewriter.erase(op)


ATTENTION_MEMORY_ORDER = (0, 2, 1, 3)
"""The memory order of a 4-d attention result `[batch, heads, tokens,
features]` as torch's fused attention kernels write it (flash, memory-efficient
and cuDNN on the GPU, flash on the CPU): token by token, each token's heads
together. The `transpose(1, 2).reshape(batch, tokens, heads * features)` that
models apply next is then a view, not a copy."""


def attention_buffer(tensor: TensorType) -> buf.BufferType:
    """A dense buffer of a 4-d `tensor` in `ATTENTION_MEMORY_ORDER`."""
    strides = buf.dense_strides_in_order(tensor.sizes, ATTENTION_MEMORY_ORDER)
    return buf.BufferType(tensor.sizes, tensor.element_type, strides)


def _library_result_buffer(op: Operation, position: int, tensor: Attribute) -> Attribute:
    """The buffer of a library op's result: dense, but attention's in the
    order its kernels write, and a torch call's in the order its `orders`
    give (the host program copies where the library gave another layout)."""
    if isinstance(op, pt.AttentionOp) and isinstance(tensor, TensorType) and tensor.rank == 4:
        return attention_buffer(tensor)
    order = op.result_order(position) if isinstance(op, pt.FallbackOp) else None
    if order is not None and isinstance(tensor, TensorType):
        strides = buf.dense_strides_in_order(tensor.sizes, order)
        return buf.BufferType(tensor.sizes, tensor.element_type, strides)
    return _buffer_for(tensor, None)


def _loop_result_buffer(function: func.FuncOp, result: SSAValue) -> Attribute:
    """The buffer of a loop op's result: in the layout the function returns
    it in, if it does (written densely where that layout repeats elements:
    the return makes the broadcast view), else dense."""
    position = _returned_position(result)
    layout = _result_layout(function, position) if position is not None else None
    if layout is not None and _broadcast_dims(result.type.sizes, layout.data):  # type: ignore[union-attr]
        layout = None
    return _buffer_for(result.type, layout)


def planned_buffer(value: SSAValue) -> buf.BufferType | None:
    """The buffer the conversion gives a value that is not a view: an
    argument's in the layout its `ptensor.strides` gives, a loop op's result
    dense (or in its returned layout), a host op's as `_library_result_buffer`
    gives it; None for a value of no tensor type or outside a converted
    function."""
    if isinstance(value, BlockArgument):
        function = value.owner.parent_op()
        if not is_converted(function):
            return None
        layout = _buffer_for(value.type, _layout_attr(function.arg_attrs, value.index))  # type: ignore[union-attr]
    elif isinstance(value.owner, loop.LoopOp | loop.FusedOp):
        function = _host_op(value.owner)
        if function is None:
            return None
        layout = _loop_result_buffer(function, value)
    else:
        assert isinstance(value, OpResult)
        layout = _library_result_buffer(value.op, value.index, value.type)
    return layout if isinstance(layout, buf.BufferType) else None


@dataclass(frozen=True)
class ViewToBuffer(RewritePattern):
    """A view becomes a `buffer.view` of its source's memory, or of a dense
    copy of it when the view cannot reinterpret that memory."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, VIEW_OPS) or _host_op(op) is None:
            return
        source = op.operands[0]
        source_type = buf.buffer_type(source)
        layout = view_layout(op, source_type)
        if layout is None:
            dense = rewriter.insert(buf.AllocOp(buf.BufferType(source_type.sizes, source_type.element_type)))
            rewriter.insert(buf.CopyOp(source, dense.results[0]))
            source = dense.results[0]
            layout = view_layout(op, buf.buffer_type(source))
            assert layout is not None, "a view of a dense buffer is always a reinterpretation"
        view = rewriter.insert(buf.ViewOp(source, layout))
        view.results[0].name_hint = op.results[0].name_hint
        rewriter.replace_all_uses_with(op.results[0], view.results[0])
        rewriter.erase(op)


@dataclass(frozen=True)
class ReturnBuffers(RewritePattern):
    """
    The function returns each result in the layout its `ptensor.strides`
    asks for, or else dense row-major, copying when it differs (a layout
    repeating elements gets a copy of the elements it does not repeat); the
    function's type becomes that of its buffers. A returned view that is
    already dense stays a view (with its offset), aliasing its source as
    eager's would; but a function argument, or a view of one, is returned
    as a copy unless its result is marked `ptensor.aliases_input` (an
    imported graph returns new memory there, as `clone` makes it).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        function = _host_op(op)
        if function is None:
            return
        values = []
        for i, result in enumerate(op.arguments):
            wanted = _result_layout(function, i)
            result_type = buf.buffer_type(result)
            if wanted is None and _returned_as_viewed(function, i, result):
                values.append(result)
                continue
            if wanted is None and not _dense_up_to_unit_dims(result_type):
                wanted = SymListAttr(buf.contiguous_strides(result_type.sizes))
            relayout = wanted is not None and (
                tuple(wanted.data) != tuple(result_type.strides.data)
                or result_type.offset.expr != 0
            )
            if not relayout and _argument_memory(result) and not _aliases_input(function, i):
                relayout = True
                wanted = wanted or SymListAttr(buf.contiguous_strides(result_type.sizes))
            if relayout and _broadcast_dims(result_type.sizes, wanted.data):  # type: ignore[union-attr]
                result = _broadcast_result(result, wanted, rewriter)  # type: ignore[arg-type]
            elif relayout:
                relaid = rewriter.insert(
                    buf.AllocOp(buf.BufferType(result_type.sizes, result_type.element_type, wanted.data))  # type: ignore[union-attr]
                )
                rewriter.insert(buf.CopyOp(result, relaid.results[0]))
                result = relaid.results[0]
            values.append(result)
        rewriter.replace(op, func.ReturnOp(*values))
        inputs = [a.type for a in function.body.block.args]
        function.function_type = FunctionType.from_lists(inputs, [v.type for v in values])
        rewriter.notify_op_modified(function)


SAVED_VIEW_SPAN = 4
"""How many times its own size the memory a saved tensor's view spans may
be, for the view to be returned as it is rather than copied: its buffer
stays alive as long as the saved tensor."""


def _returned_as_viewed(function: func.FuncOp, position: int, result: SSAValue) -> bool:
    """Whether a result of free layout (`ptensor.free_layout`: a training
    forward's tensor saved for its backward, which takes it in any layout) is
    returned in its own layout, however strided: a view of the program's
    memory (not an argument's) whose elements do not overlap, spanning at most
    `SAVED_VIEW_SPAN` times its size. Attention's query, key and value,
    slices of one projection's result, are saved as those slices."""
    if result_attribute(function, position, FREE_LAYOUT_ATTR) is None or _argument_memory(result):
        return False
    layout = buf.buffer_type(result)
    if not all(e.is_Integer for e in (*layout.sizes, *layout.strides.data)):
        return False
    dims = sorted((int(stride), int(size)) for size, stride in zip(layout.sizes, layout.strides.data) if size != 1)
    span = 1
    for stride, size in dims:
        if stride < span:
            return False  # elements overlap, or a dimension repeats one
        span += stride * (size - 1)
    elements = 1
    for _, size in dims:
        elements *= size
    return span <= SAVED_VIEW_SPAN * elements


def _argument_memory(value: SSAValue) -> bool:
    """Whether `value` is a function argument or a view of one."""
    while isinstance(value, OpResult) and isinstance(value.op, (*VIEW_OPS, buf.ViewOp)):
        value = value.op.operands[0]
    return isinstance(value, BlockArgument)


def _aliases_input(function: func.FuncOp, position: int) -> bool:
    return result_attribute(function, position, ALIAS_ATTR) is not None


def _broadcast_result(result: SSAValue, wanted: SymListAttr, rewriter: PatternRewriter) -> SSAValue:
    """A returned result in a layout that repeats elements (stride 0, as
    an expanded tensor of eager's has): the elements it does not repeat are
    copied into a new allocation, then viewed with the wanted strides. A
    repeated dimension of no elements stays empty: the result has no element
    to copy, and reading one of it would read outside its memory."""
    layout = buf.buffer_type(result)
    repeated = _broadcast_dims(layout.sizes, wanted.data)
    compact = [1 if d in repeated and not sizes_equal(size, 0) else size for d, size in enumerate(layout.sizes)]
    element = layout.element_type
    source = rewriter.insert(
        buf.ViewOp(result, buf.BufferType(compact, element, layout.strides.data, layout.offset.expr))
    )
    alloc = rewriter.insert(buf.AllocOp(buf.BufferType(compact, element, wanted.data)))
    rewriter.insert(buf.CopyOp(source.results[0], alloc.results[0]))
    view = rewriter.insert(buf.ViewOp(alloc.results[0], buf.BufferType(layout.sizes, element, wanted.data)))
    return view.results[0]
