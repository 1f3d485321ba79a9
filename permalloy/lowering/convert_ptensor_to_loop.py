"""The `convert-ptensor-to-loop` pass."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from permalloy.dialects.ptensor import VIEW_OPS, FullOp
from permalloy.lowering.ptensor_to_loop_ops import LOWERINGS
from permalloy.lowering.scalar_ops import UnsupportedScalarOp


@dataclass(frozen=True)
class ConvertPtensorToLoopPass(ModulePass):
    """
    Lowers the computing ptensor ops to loop ops, eliminating views.

    Expects functions of ptensor ops. Every elementwise, reduction, generator
    and data-movement op (cat, pad, gather, index) becomes one `loop.pointwise`
    or `loop.reduce` whose loads read the tensors that own the data: a view
    between a producer and its reader becomes part of the reader's index
    expression (broadcasting too), simplified with sympy. Views still read by
    the host program (library calls, fallbacks, function results) stay, as do
    library, fallback, constant, rand, scatter_add and index_put ops, and the
    elementwise ops that have no scalar form (erfinv, integer pow), which the
    host program runs with torch.

    Before:
    ```
    %t = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>
    %y = ptensor.unary exp %t : !ptensor.tensor<[8, 4], f32> -> !ptensor.tensor<[8, 4], f32>
    ```
    After:
    ```
    %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
      %v = loop.load %a[d1, d0] : f32
      %e = math.exp %v : f32
      loop.yield %e : f32
    }
    ```
    """

    name = "convert-ptensor-to-loop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, func.FuncOp):
                _lower_function(function)


def _lower_function(function: func.FuncOp) -> None:
    ops = list(function.body.walk())
    _lower_ops([op for op in ops if not isinstance(op, FullOp)])
    _erase_dead_views(function)
    # Fills go last: their readers took the value as a constant, so most fills
    # need no loop of their own by now.
    _lower_ops([op for op in ops if isinstance(op, FullOp)])
    _erase_dead_views(function)


def _lower_ops(ops: list[Operation]) -> None:
    for op in ops:
        lowering = LOWERINGS.get(type(op))
        if lowering is None:
            continue
        if not op.results[0].uses:
            op.detach()
            op.erase()
            continue
        try:
            replacement = lowering(op)
        except UnsupportedScalarOp:
            continue  # no scalar form: the op stays, and the host runs it with torch
        _replace(op, replacement)


def _replace(op: Operation, replacement: Operation) -> None:
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(replacement, op)
    op.results[0].replace_all_uses_with(replacement.results[0])
    replacement.results[0].name_hint = op.results[0].name_hint
    op.detach()
    op.erase()


def _erase_dead_views(function: func.FuncOp) -> None:
    for op in reversed(list(function.body.walk())):
        if isinstance(op, VIEW_OPS) and not op.results[0].uses:
            op.detach()
            op.erase()
