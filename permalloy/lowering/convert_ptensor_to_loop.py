"""
The `convert-ptensor-to-loop` pass, as xDSL rewrite patterns.

One `LowerToLoop` pattern per entry of `LOWERINGS` turns a computing ptensor
op into the loop op its lowering builds; `EraseDeadView` drops the views that
no reader needs once their readers load through them. Two walks of each
function: the computing ops forwards, then the views and fills backwards.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from permalloy.dialects.ptensor import VIEW_OPS, FullOp
from permalloy.lowering.contraction_ops import CONTRACTION_LOWERINGS, stays_library
from permalloy.lowering.ptensor_to_loop_ops import LOWERINGS
from permalloy.lowering.scalar_ops import UnsupportedScalarOp
from permalloy.lowering.scatter_ops import SCATTER_LOWERINGS, order_dependent
from permalloy.lowering.sort_ops import SORT_LOWERINGS, Replacement, SortLimits, sorts_natively


@dataclass(frozen=True)
class LowerToLoop(RewritePattern):
    """An op of `op_type` becomes the loop op (or ops, the last giving the
    result; or a `Replacement` naming the value of each result) `lowering`
    builds for it; an unused one is erased, and one with no scalar form, or
    that `keep` keeps, stays for the host."""

    op_type: type[Operation]
    lowering: Callable[[Operation], Operation | list[Operation] | Replacement]
    keep: Callable[[Operation], bool] | None = None

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if type(op) is not self.op_type:
            return
        if not any(result.uses for result in op.results):
            rewriter.erase(op)
            return
        if self.keep is not None and self.keep(op):
            return
        try:
            replacement = self.lowering(op)
        except UnsupportedScalarOp:
            return  # no scalar form: the op stays, and the host runs it with torch
        if isinstance(replacement, Replacement):
            rewriter.replace(op, replacement.ops, replacement.results)
            return
        rewriter.replace(op, replacement)


@dataclass(frozen=True)
class EraseDeadView(RewritePattern):
    """A view that nothing reads any more: its readers load through it."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, VIEW_OPS) and not op.results[0].uses:
            rewriter.erase(op)


def lowering_patterns(
    fills: bool,
    deterministic_scatters: bool = False,
    sort_limits: SortLimits = SortLimits(),
    matmul_templates: bool = False,
    matmul_float32: bool = False,
) -> list[RewritePattern]:
    """The `LowerToLoop` patterns of `ptensor.full` alone, or of every other
    op (leaving the scatters whose result depends on the order their values
    combine in to the host with `deterministic_scatters`, and the sorts of
    rows outside `sort_limits`; with `matmul_templates`, the matrix products
    of half-precision tensors as contractions, and of float32 ones with
    `matmul_float32`)."""

    def keep(op_type: type[Operation]) -> Callable[[Operation], bool] | None:
        if op_type in SORT_LOWERINGS:
            return lambda op: not sorts_natively(op, sort_limits)
        if deterministic_scatters and op_type in SCATTER_LOWERINGS:
            return order_dependent
        return None

    patterns: list[RewritePattern] = [
        LowerToLoop(op_type, lowering, keep(op_type))
        for op_type, lowering in LOWERINGS.items()
        if (op_type is FullOp) == fills
    ]
    if matmul_templates and not fills:
        keep = functools.partial(stays_library, float32=matmul_float32)
        patterns += [LowerToLoop(op_type, lowering, keep) for op_type, lowering in CONTRACTION_LOWERINGS.items()]
    return patterns


@dataclass(frozen=True)
class ConvertPtensorToLoopPass(ModulePass):
    """
    Lowers the computing ptensor ops to loop ops, eliminating views.

    Expects functions of ptensor ops. Every elementwise, reduction, scan,
    generator and data-movement op (cat, pad, gather, index) becomes one
    `loop.pointwise`, `loop.reduce` or `loop.scan` whose loads read the
    tensors that own the data: a view between a producer and its reader
    becomes part of the reader's index expression (broadcasting too),
    simplified with sympy. The scatters (scatter, scatter_add,
    scatter_reduce, index_put with accumulation) become `loop.scatter` ops,
    two for a scatter_reduce without `include_self`. A sort or a topk
    becomes a `loop.sort` of positions and a `loop.pointwise` gathering the
    values, where its rows have a static length of at most
    `sort-max-length` elements of at most `sort-max-bits` bits (unsigned
    integers and booleans widened by one step); other sorts stay. Views still read by the host
    program (library calls, fallbacks, function results) stay, as do
    library, fallback, constant, rand ops, an assigning index_put, and the
    elementwise ops that have no scalar form (erfinv, integer pow), which the
    host program runs with torch. With `deterministic-scatters`, float
    scatters that sum or multiply stay too, for torch's deterministic kernels
    (the pipeline of a target whose scatters use atomics sets it when
    `torch.use_deterministic_algorithms` is on), and so does a scatter of a
    source, which keeps the last of the values landing on an element.
    With `matmul-templates` (set by the pipeline of a target with a
    matrix-product template), `ptensor.mm` and `ptensor.bmm` of
    half-precision tensors become contractions (`contraction_ops`), a
    `loop.reduce` of products that fusion gives prologues and epilogues;
    with `matmul-float32` too, float32 ones.

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

    deterministic_scatters: bool = False
    sort_max_length: int = SortLimits.max_length
    sort_max_bits: int = SortLimits.max_bits
    matmul_templates: bool = False
    matmul_float32: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        limits = SortLimits(self.sort_max_length, self.sort_max_bits)
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            _lower_function(function, self.deterministic_scatters, limits, self.matmul_templates, self.matmul_float32)


def _lower_function(
    function: func.FuncOp,
    deterministic_scatters: bool,
    sort_limits: SortLimits,
    matmul_templates: bool = False,
    matmul_float32: bool = False,
) -> None:
    """
    Computing ops in order, each reading its operands through views; then,
    walking back, the views no one reads any more and the fills, whose readers
    took the value as a constant, so that most need no loop of their own by
    then. Walking back, a view's readers are erased before it, and a fill's
    dead views before the fill.
    """
    computing = lowering_patterns(False, deterministic_scatters, sort_limits, matmul_templates, matmul_float32)
    _rewrite(function, GreedyRewritePatternApplier(computing, dce_enabled=False))
    cleanup = [EraseDeadView(), *lowering_patterns(fills=True)]
    _rewrite(function, GreedyRewritePatternApplier(cleanup, dce_enabled=False), reverse=True)


def _rewrite(function: func.FuncOp, pattern: RewritePattern, reverse: bool = False) -> None:
    """One walk over the function's ops (backwards with `reverse`): the ops a
    pattern creates are not walked again."""
    walker = PatternRewriteWalker(pattern, apply_recursively=False, walk_reverse=reverse)
    walker.rewrite_region(function.body)
