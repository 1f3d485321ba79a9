"""
Contractions: the `loop.reduce` form of a matrix product.

A matrix product `[..., M, K] @ [..., K, N]` is, in loop IR, a sum over `r0`
(the `K` positions) of a product of two *factors*: the left one varies with
the rows (`M`, one or several dimensions before the last) and `r0` only, the
right one with `r0` and the columns `d<p-1>` (`N`) only, and both with the
leading batch indices (those the right factor varies with). A
target that tiles it (the Triton target's matrix-product template) computes
each factor over a tile (`[BLOCK_M, BLOCK_K]` and `[BLOCK_K, BLOCK_N]`) and
multiplies the tiles; whatever fusion inlined into a factor (a cast, a scale,
a transposed read) is its *prologue*, computed in the tile.

    %p = loop.reduce sum ins(%a = %x, %b = %w) over [64] -> !ptensor.tensor<[32, 16], f32> {
      %u = loop.load %a[d0, r0] : f32          left factor: d0, r0
      %v = loop.load %b[r0, d1] : f32          right factor: r0, d1
      %m = arith.mulf %u, %v : f32
      loop.yield %m : f32
    }

`contraction(op)` recognises the form from the body's dependencies alone (no
op names of the source program), so fusion's inlining keeps it: inlining
substitutes a load by its producer's body at the load's indices, which vary
with the same loop variables.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from permalloy.dialects.loop import IndexOp, LoadOp, LoopOp, ReduceOp, YieldOp
from permalloy.dialects.ptensor import ReduceKind, TensorType
from permalloy.dialects.sym import parallel_index, reduction_index


@dataclass(frozen=True)
class Contraction:
    """A `loop.reduce` recognised as a (batched) matrix product. Its parallel
    dimensions are batch dimensions (both factors may vary with them), then
    row dimensions (the left factor's alone; several are the product's rows
    taken row-major, as one), then the column dimension, the last."""

    op: ReduceOp
    left: SSAValue
    """The left factor's value in the body (varies with batch, rows and `r0`)."""
    right: SSAValue
    """The right factor's value (varies with batch, `r0` and the column)."""
    batch_rank: int
    """How many leading dimensions are batch dimensions."""

    @property
    def rank(self) -> int:
        return self.op.parallel_rank

    @property
    def batch_indices(self) -> list[sympy.Symbol]:
        return [parallel_index(i) for i in range(self.batch_rank)]

    @property
    def row_indices(self) -> list[sympy.Symbol]:
        return [parallel_index(i) for i in range(self.batch_rank, self.rank - 1)]

    @property
    def column_index(self) -> sympy.Symbol:
        return parallel_index(self.rank - 1)

    @property
    def sizes(self) -> tuple[list[sympy.Expr], list[sympy.Expr], sympy.Expr, sympy.Expr]:
        """The batch sizes, the row sizes, then `N` and `K`."""
        parallel = list(self.op.parallel_sizes)
        return parallel[: self.batch_rank], parallel[self.batch_rank : -1], parallel[-1], self.op.reduction_sizes[0]


def cone(op: LoopOp, value: SSAValue) -> list[Operation]:
    """The ops of `op`'s body that `value` depends on, itself included, in body order."""
    needed: set[Operation] = set()
    pending = [value]
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, Operation) and owner not in needed:
            needed.add(owner)
            pending.extend(owner.operands)
    return [o for o in op.body.block.ops if o in needed]


def _dependencies(op: ReduceOp) -> dict[SSAValue, frozenset[sympy.Symbol]]:
    """The loop variables each body value varies with."""
    depends: dict[SSAValue, frozenset[sympy.Symbol]] = {}
    for body_op in op.body.block.ops:
        found: set[sympy.Symbol] = set()
        for operand in body_op.operands:
            found |= depends.get(operand, frozenset())
        if isinstance(body_op, LoadOp):
            for index in body_op.indices.data:
                found |= {s for s in index.free_symbols if s.name[0] in "dr"}
        elif isinstance(body_op, IndexOp):
            found |= {s for s in body_op.expr.expr.free_symbols if s.name[0] in "dr"}
        for result in body_op.results:
            depends[result] = frozenset(found)
    return depends


def contraction(op: Operation) -> Contraction | None:
    """`op` as a contraction: a float sum over one reduction dimension, of rank 2
    or more, whose body yields the product of a left and a right factor."""
    if not isinstance(op, ReduceOp) or op.kind.data != ReduceKind.SUM:
        return None
    result_type = op.result.type
    if not isinstance(result_type, TensorType) or result_type.element_type.name not in ("f32", "f16", "bf16"):
        return None
    if len(op.reduction_sizes) != 1 or op.parallel_rank < 2:
        return None
    terminator = op.body.block.last_op
    if not isinstance(terminator, YieldOp):
        return None
    product = terminator.value.owner
    if not isinstance(product, arith.MulfOp):
        return None
    depends = _dependencies(op)
    for left, right in ((product.lhs, product.rhs), (product.rhs, product.lhs)):
        batch_rank = _batch_rank(depends[left], depends[right], op.parallel_rank)
        if batch_rank is not None:
            return Contraction(op, left, right, batch_rank)
    return None


def _batch_rank(left: frozenset[sympy.Symbol], right: frozenset[sympy.Symbol], rank: int) -> int | None:
    """How many leading dimensions are batch dimensions when `left` and
    `right` are the factors' dependencies: those up to the last the right
    factor varies with besides the column; None when the factors do not
    multiply as matrices: the left one varies with the column or with no row,
    the right one not with the column (a reduction of products broadcast
    along the result, such as a norm's sum of squares kept as `[1, 1]`)."""
    column = parallel_index(rank - 1)
    position = reduction_index(0)
    if column in left or not right <= {parallel_index(i) for i in range(rank)} | {position}:
        return None
    right_leading = [int(s.name[1:]) for s in right - {column, position}]
    batch_rank = max(right_leading, default=-1) + 1
    rows = {parallel_index(i) for i in range(batch_rank, rank - 1)}
    if not rows or column not in right or not left & rows:
        return None
    return batch_rank
