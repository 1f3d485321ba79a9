"""The `scatter-embedding-gradients` pass."""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import broadcast_shapes

LOOKUPS_PER_ROW = 16
"""The most lookups per row of the table, on average, for which the gradient
is scattered: beyond it, rows read many times (a token-type table of two rows,
a relative-position table) make the scatter's additions to one row wait on
each other, where the library's sort sums each row's lookups once."""

SUMMED_ROWS = 8
"""The most rows of a table whose gradient is, beyond `LOOKUPS_PER_ROW`
lookups per row, a masked sum: each row sums the lookups of its index, one
pass over the output's gradient per row (a token-type table of two rows)."""

SCATTERED_ELEMENT_TYPES = (Float32Type, Float64Type)
"""Element types whose gradients are scattered. The library sums a
half-precision table's lookups in float32 and rounds once; a scatter would
round at every addition."""


def _lookups(indices: pt.TensorType) -> sympy.Expr:
    return sympy.Mul(*indices.sizes)


def _where_index(indices: SSAValue, index: SSAValue, value: SSAValue, otherwise: SSAValue) -> list[Operation]:
    """Ops giving, per lookup row, `value` where the lookup's index (of
    `indices`) equals `index` (a 0-d tensor, or one of shape `[R, 1]` beside
    flattened lookups) and `otherwise` elsewhere; the last op's result is
    that choice."""
    shape = broadcast_shapes(pt.tensor_type(indices).sizes, pt.tensor_type(index).sizes)
    hits = pt.CompareOp(pt.ComparePredicate.EQ, indices, index, pt.TensorType(shape, IntegerType(1)))
    hit_rows = pt.ReshapeOp(hits.result, pt.TensorType([*shape, 1], IntegerType(1)))
    element = pt.tensor_type(value).element_type
    chosen_shape = broadcast_shapes([*shape, 1], pt.tensor_type(value).sizes, pt.tensor_type(otherwise).sizes)
    chosen = pt.WhereOp(hit_rows.result, value, otherwise, pt.TensorType(chosen_shape, element))
    return [hits, hit_rows, chosen]


def _unpadded_gradient(op: pt.EmbeddingBackwardOp) -> tuple[list[Operation], SSAValue]:
    """Ops giving the output's gradient with the rows of lookups of the
    padding index zeroed (none where there is no padding index), and that
    gradient."""
    padding = op.padding_idx.value.data
    if padding < 0:
        return [], op.grad_output
    pad = pt.FullOp(padding, pt.tensor_type(op.indices).with_shape([]))
    zero = pt.FullOp(0.0, pt.tensor_type(op.grad_output).with_shape([]))
    chosen = _where_index(op.indices, pad.result, zero.result, op.grad_output)
    return [pad, zero, *chosen], chosen[-1].results[0]


def _rewritten(op: pt.EmbeddingBackwardOp) -> tuple[int, int] | None:
    """The table's rows and lookups where the gradient is rewritten: a float32
    or float64 table of constant sizes, not scaled by frequency."""
    result = pt.tensor_type(op.result)
    if op.scale_by_frequency is not None or not isinstance(result.element_type, SCATTERED_ELEMENT_TYPES):
        return None
    lookups, rows = _lookups(pt.tensor_type(op.indices)), result.sizes[0]
    if not (lookups.is_Integer and rows.is_Integer):
        return None
    return int(rows), int(lookups)


@dataclass(frozen=True)
class ScatterEmbeddingGradient(RewritePattern):
    """An `embedding_backward` of a table `_rewritten` takes, with at most
    `LOOKUPS_PER_ROW` lookups per row, becomes an accumulating `index_put` of
    the output's gradient into a zero table (rows at `padding_idx` adding
    zeros)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: pt.EmbeddingBackwardOp, rewriter: PatternRewriter) -> None:
        sizes = _rewritten(op)
        if sizes is None or sizes[1] > LOOKUPS_PER_ROW * sizes[0]:
            return
        result = pt.tensor_type(op.result)
        zeros = pt.FullOp(0.0, result)
        unpadding, values = _unpadded_gradient(op)
        put = pt.IndexPutOp(zeros.result, [op.indices], [0], values, True, result)
        rewriter.replace(op, [zeros, *unpadding, put], [put.result])


@dataclass(frozen=True)
class SumEmbeddingGradient(RewritePattern):
    """An `embedding_backward` of a table `_rewritten` takes, of at most
    `SUMMED_ROWS` rows looked up more than `LOOKUPS_PER_ROW` times each,
    becomes a masked sum: row `r` of the table's gradient is the sum over the
    lookups of the output's gradient where the lookup's index is `r`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: pt.EmbeddingBackwardOp, rewriter: PatternRewriter) -> None:
        sizes = _rewritten(op)
        if sizes is None or sizes[0] > SUMMED_ROWS or sizes[1] <= LOOKUPS_PER_ROW * sizes[0]:
            return
        rows, lookups = sizes
        result = pt.tensor_type(op.result)
        indices = pt.tensor_type(op.indices)
        new_ops, grad = _unpadded_gradient(op)
        flat_grad = pt.ReshapeOp(grad, result.with_shape([1, lookups, result.sizes[1]]))
        new_ops.append(flat_grad)
        flat = op.indices
        if indices.rank != 1:
            new_ops.append(flattened := pt.ReshapeOp(op.indices, indices.with_shape([lookups])))
            flat = flattened.result
        row_indices = pt.IotaOp(0, 1, indices.with_shape([rows]))
        row_column = pt.ReshapeOp(row_indices.result, indices.with_shape([rows, 1]))
        zero = pt.FullOp(0.0, result.with_shape([]))
        chosen = _where_index(flat, row_column.result, flat_grad.result, zero.result)
        summed = pt.ReduceOp(pt.ReduceKind.SUM, chosen[-1].results[0], [1], False, result)
        new_ops += [row_indices, row_column, zero, *chosen, summed]
        rewriter.replace(op, new_ops, [summed.result])


@dataclass(frozen=True)
class ScatterEmbeddingGradientsPass(ModulePass):
    """
    Turns the gradient of an embedding table (`ptensor.embedding_backward`,
    a library call) into a scatter that adds each lookup's gradient row into
    a zero table, where the table is float32 or float64, its sizes constant,
    and it is looked up at most `LOOKUPS_PER_ROW` times per row on average;
    or, for a small table looked up more often, into a masked sum.

    On a GPU the library sorts the indices and sums each row's lookups in a
    chain of a dozen kernels (a radix sort, segment offsets, partial sums);
    the scatter is one fill and one kernel of atomic additions, which fusion
    joins to the gradient's producer. A table of at most `SUMMED_ROWS` rows
    read more often (a token-type table) becomes a masked sum instead, one
    reduction reading the output's gradient once per row. Larger tables read
    many times per row keep the library call, where atomic additions to one
    row would wait on each other, and so do tables scaled by frequency and
    half-precision ones. With torch's
    deterministic algorithms on, the lowering leaves a float scatter to torch
    (`deterministic-scatters`), which sums deterministically.

    Before:
    ```
    %g = ptensor.embedding_backward %d, %i padding 0 : !ptensor.tensor<[8, 64], f32>, !ptensor.tensor<[8], i64> -> !ptensor.tensor<[100, 64], f32>
    ```
    After:
    ```
    %0 = ptensor.full 0.0 : !ptensor.tensor<[100, 64], f32>
    %1 = ptensor.full 0 : !ptensor.tensor<[], i64>
    %2 = ptensor.full 0.0 : !ptensor.tensor<[], f32>
    %3 = ptensor.compare eq %i, %1 : ... -> !ptensor.tensor<[8], i1>
    %4 = ptensor.reshape %3 : ... -> !ptensor.tensor<[8, 1], i1>
    %5 = ptensor.where %4, %2, %d : ... -> !ptensor.tensor<[8, 64], f32>
    %g = ptensor.index_put %0[%i] dims [0], %5 accumulate : ...
    ```
    """

    name = "scatter-embedding-gradients"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([ScatterEmbeddingGradient(), SumEmbeddingGradient()])
        PatternRewriteWalker(patterns, apply_recursively=False).rewrite_module(op)
