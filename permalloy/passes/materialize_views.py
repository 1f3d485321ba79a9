"""The `materialize-views` pass."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from permalloy.dialects import loop
from permalloy.dialects.ptensor import VIEW_OPS, TensorType
from permalloy.lowering.convert_loop_to_buffer import is_converted, planned_buffer
from permalloy.lowering.loop_builder import LoopBuilder
from permalloy.lowering.view_layouts import view_layout
from permalloy.passes.diagnostics import defined_functions


def _view_chain(value: SSAValue) -> tuple[SSAValue, list[Operation]]:
    """The value owning the data of the view `value`, and the views from it
    to `value` in the order they apply."""
    views: list[Operation] = []
    while isinstance(value.owner, VIEW_OPS):
        views.append(value.owner)
        value = value.owner.operands[0]
    return value, views[::-1]


def copied_by_host(value: SSAValue) -> bool:
    """Whether the host program would copy the memory of the view `value`
    before an op read it: one of the views leading to it cannot reinterpret
    the memory its source has (`view_layout`), with the layout
    `convert-loop-to-buffer` gives the value owning the data."""
    root, views = _view_chain(value)
    layout = planned_buffer(root)
    if layout is None:
        return False
    for view in views:
        layout = view_layout(view, layout)
        if layout is None:
            return True
    return False


def _host_readers(value: SSAValue) -> list[Operation]:
    """The ops reading `value` that the host program runs, the return
    included: neither loop ops (whose loads read through views) nor views."""
    return [use.operation for use in value.uses if not isinstance(use.operation, (loop.LoopOp, loop.FusedOp, *VIEW_OPS))]


def _copy_kernel(view: SSAValue) -> loop.PointwiseOp:
    """A `loop.pointwise` writing the elements of `view` densely, reading
    the value owning them through the views' index expressions."""
    view_type = view.type
    assert isinstance(view_type, TensorType)
    builder = LoopBuilder(view_type)
    element = builder.read(view, builder.parallel_indices)
    return builder.pointwise(element)


def materialize_function_views(function: func.FuncOp) -> None:
    """Give each view of `function` that its host program would copy for
    the library calls and other host ops reading it a kernel writing it
    instead."""
    for op in list(function.body.block.ops):
        if not isinstance(op, VIEW_OPS) or op.parent is None:
            continue
        view = op.results[0]
        readers = _host_readers(view)
        if not readers or not isinstance(view.type, TensorType) or not copied_by_host(view):
            continue
        copy = _copy_kernel(view)
        copy.result.name_hint = view.name_hint
        Rewriter.insert_op(copy, InsertPoint.after(op))
        for reader in readers:
            for index, operand in enumerate(reader.operands):
                if operand is view:
                    reader.operands[index] = copy.result
        _erase_unused_views(op)


def _erase_unused_views(view: Operation) -> None:
    """Erase `view` and the views leading to it that nothing reads any
    more: fusion counts a view's reading as the host program's."""
    while isinstance(view, VIEW_OPS) and not view.results[0].uses:
        source = view.operands[0]
        Rewriter.erase_op(view)
        view = source.owner  # type: ignore[assignment]


@dataclass(frozen=True)
class MaterializeViewsPass(ModulePass):
    """
    A view that a library call (or another op the host program runs, or the
    return) reads, and that cannot reinterpret the memory of the value owning
    its data, is written by a `loop.pointwise` copying it, before fusion.

    The host program would otherwise copy it with torch (`buffer.copy`,
    made by `convert-loop-to-buffer`) between the kernel writing the data and
    the call: a window partition (`reshape`, `permute`, `reshape`) before a
    linear layer, a permuted key before a batched product. As a kernel,
    fusion takes the kernel producing the data into the copy, which then
    writes the elements in the order the call reads them: one kernel and one
    round trip through memory fewer. A training graph's forward returns the
    views it saves for the backward: a saved view that a product reads too
    is the product's copy, not a second one. Views whose memory can be read
    as it is (a transposed weight, a slice) stay views, and loop ops read
    through views already.

    Before:
    ```
    %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 6], f32>) -> !ptensor.tensor<[4, 6], f32> {...}
    %t = ptensor.permute %y [1, 0] : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[6, 4], f32>
    %r = ptensor.reshape %t : !ptensor.tensor<[6, 4], f32> -> !ptensor.tensor<[24], f32>
    %z = ptensor.sort %r ...
    ```
    After:
    ```
    %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 6], f32>) -> !ptensor.tensor<[4, 6], f32> {...}
    %t = ptensor.permute %y [1, 0] : !ptensor.tensor<[4, 6], f32> -> !ptensor.tensor<[6, 4], f32>
    %r = ptensor.reshape %t : !ptensor.tensor<[6, 4], f32> -> !ptensor.tensor<[24], f32>
    %c = loop.pointwise ins(%b = %y : !ptensor.tensor<[4, 6], f32>) -> !ptensor.tensor<[24], f32> {
      %v = loop.load %b[d0 % 4, d0 floordiv 4] : f32
      loop.yield %v : f32
    }
    %z = ptensor.sort %c ...
    ```
    """

    name = "materialize-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in defined_functions(op):
            if is_converted(function):
                materialize_function_views(function)

