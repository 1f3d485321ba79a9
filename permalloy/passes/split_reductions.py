"""The `split-reductions` pass."""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float16Type, ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from permalloy.analysis.affine import unit_stride
from permalloy.dialects import loop
from permalloy.dialects.ptensor import ReduceKind, TensorType
from permalloy.dialects.ptensor import SymListAttr
from permalloy.dialects.sym import SymExprAttr, symbol

SPLITTABLE_KINDS = frozenset(
    {ReduceKind.SUM, ReduceKind.PROD, ReduceKind.MAX, ReduceKind.MIN, ReduceKind.ANY, ReduceKind.ALL}
)
"""Kinds whose partial results combine with the same kind (arg kinds need positions)."""


@dataclass(frozen=True)
class SplitPlan:
    """How a reduction splits: its first `promoted` reduction dimensions become
    parallel dimensions of the partial reduction, and the next one, when
    `factor` > 1, splits into `factor` parallel chunks of `chunk` elements."""

    promoted: int
    factor: int
    chunk: int

    @property
    def split_rank(self) -> int:
        """The parallel dimensions the partial reduction adds, in front."""
        return self.promoted + (1 if self.factor > 1 else 0)


@dataclass(frozen=True)
class SplitReductionsPass(ModulePass):
    """
    Splits reductions that have few results and long reductions into two: a
    partial reduction, parallel over chunks of the reduction domain as well as
    over the results, then a short reduction of the partial results.

    A GPU runs a reduction as one program per block of results, so a sum of a
    whole tensor, or the column sums of a weight's gradient, would occupy a few
    programs and leave the rest of the device idle (a program covers a block
    of results: many columns of a column sum). The partial reduction gives at
    least `min-programs` results (parallel points) in all: leading
    reduction dimensions become parallel dimensions, and the next one splits
    into equal chunks of at least `min-chunk` elements when its static size
    allows. The partial results keep the result's element type (half
    precisions are left alone: their partial sums would round). The new
    dimensions come first, so that fusion does not regroup the two stages into
    one program per result.

    A reduction over the height and width of an image (the last two
    dimensions of a rank-4 value read whole) splits from `image-min-length`
    reduced elements: layout planning may give the image channels-last
    memory, where one program reduces a block of contiguous channels over
    every position, and a batch's few channels then make few programs.

    A reduction of fewer results splits from fewer reduced elements when its
    points (results times reduced elements) reach `min-points` and each chunk
    can keep `min-chunk` of them: batch-norm statistics and gradients over a
    channels-last batch (256 channels over 32 x 14 x 14) or a layer norm's
    weight gradient over a few thousand tokens would otherwise run as a
    handful of programs, each a long walk through memory.

    A reduction along rows, every load walking its last index with the
    innermost reduction index, of at least `min-rows` results is left whole
    (but not one over an image, which layout planning may make channels-last):
    the GPU runs it as a program per row (or a few rows), already enough
    programs, and whole rows keep it in one kernel with the sibling
    reductions and the pointwise work of its rows (a layer norm and its
    gradient over a few thousand tokens).

    Expects the output of `convert-ptensor-to-loop`; sizes must be static.
    Reductions with at least `max-results` results, or fewer than
    `min-length` (`image-min-length`) reduced elements and fewer than
    `min-points` points, and argmax/argmin, are left as they are.

    Before:
    ```
    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4096, 8], f32>) over [4096] -> !ptensor.tensor<[8], f32> {
      %v = loop.load %a[r0, d0] : f32
      loop.yield %v : f32
    }
    ```
    After (`min-programs=1024 min-chunk=16 min-length=1024`):
    ```
    %p = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4096, 8], f32>) over [32] -> !ptensor.tensor<[128, 8], f32> {
      %v = loop.load %a[d0 * 32 + r0, d1] : f32
      loop.yield %v : f32
    }
    %s = loop.reduce sum ins(%b = %p : !ptensor.tensor<[128, 8], f32>) over [128] -> !ptensor.tensor<[8], f32> {
      %v = loop.load %b[r0, d0] : f32
      loop.yield %v : f32
    }
    ```
    """

    name = "split-reductions"

    max_results: int = 16384
    min_length: int = 16384
    min_programs: int = 16384
    min_chunk: int = 256
    image_min_length: int = 1024
    min_points: int = 1 << 20
    min_rows: int = 1024

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for reduce in [o for o in op.walk() if isinstance(o, loop.ReduceOp)]:
            plan = self.plan(reduce)
            if plan is not None:
                split_reduction(reduce, plan)

    def plan(self, reduce: loop.ReduceOp) -> SplitPlan | None:
        """How to split `reduce`, or None to leave it whole."""
        result_type = reduce.result.type
        assert isinstance(result_type, TensorType)
        sizes = result_type.static_sizes()
        reduced = [int(s) if s.is_Integer else None for s in reduce.reduction_sizes]
        if (
            reduce.kind.data not in SPLITTABLE_KINDS
            or isinstance(result_type.element_type, Float16Type | BFloat16Type)
            or sizes is None
            or None in reduced
        ):
            return None
        results = math.prod(sizes)
        length = math.prod(reduced)
        min_length = self.image_min_length if reduces_image(reduce) else self.min_length
        many_points = results * length >= self.min_points and length >= 2 * self.min_chunk
        if results >= self.max_results or (length < min_length and not many_points):
            return None
        if results >= self.min_rows and reduces_along_rows(reduce) and not reduces_image(reduce):
            return None
        wanted = -(-self.min_programs // max(results, 1))
        promoted, parallel = 0, 1
        # Whole leading dimensions while they fit in what is wanted, keeping a chunk.
        while (
            promoted < len(reduced) - 1
            and parallel * reduced[promoted] <= wanted
            and length // (parallel * reduced[promoted]) >= self.min_chunk
        ):
            parallel *= reduced[promoted]
            promoted += 1
        factor, chunk = 1, reduced[promoted]
        if parallel < wanted:
            rest = length // (parallel * reduced[promoted])
            for candidate in range(2, reduced[promoted] + 1):
                if reduced[promoted] % candidate:
                    continue
                if (reduced[promoted] // candidate) * rest < self.min_chunk:
                    break
                factor = candidate
                if parallel * candidate >= wanted:
                    break
            chunk = reduced[promoted] // factor
        if promoted == 0 and factor == 1:
            return None
        return SplitPlan(promoted, factor, chunk)


def reduces_along_rows(reduce: loop.ReduceOp) -> bool:
    """Whether every load of `reduce` that the reduction walks reads its last
    index at the innermost reduction index (plus parallel terms): each result
    reduces contiguous elements of a row-major operand."""
    reduction = [symbol(f"r{j}") for j in range(len(reduce.reduction_sizes))]
    innermost = reduction[-1]
    walked = 0
    for load in (o for o in reduce.body.walk() if isinstance(o, loop.LoadOp)):
        indices = list(load.indices.data)
        if not any(r in i.free_symbols for i in indices for r in reduction):
            continue
        walked += 1
        last = indices[-1] if indices else sympy.Integer(0)
        if not unit_stride(last, innermost) or any(r in last.free_symbols for r in reduction[:-1]):
            return False
        if any(innermost in i.free_symbols for i in indices[:-1]):
            return False
    return walked > 0


def reduces_image(reduce: loop.ReduceOp) -> bool:
    """Whether `reduce` reduces over the last two dimensions of a rank-4
    input: every load of it ends with the two reduction indices."""
    if len(reduce.reduction_sizes) != 2:
        return False
    spatial = [symbol("r0"), symbol("r1")]
    loads = [o for o in reduce.body.walk() if isinstance(o, loop.LoadOp)]
    return any(
        len(load.indices.data) == 4 and list(load.indices.data[2:]) == spatial for load in loads
    )


def split_reduction(reduce: loop.ReduceOp, plan: SplitPlan) -> None:
    """Replace `reduce` by its partial reduction and the reduction of the partials."""
    result_type = reduce.result.type
    assert isinstance(result_type, TensorType)
    reduced = list(reduce.reduction_sizes)
    rank, added = len(result_type.sizes), plan.split_rank
    substitution: dict[sympy.Symbol, sympy.Expr] = {
        symbol(f"d{i}"): symbol(f"d{added + i}") for i in range(rank)
    }
    for j in range(plan.promoted):
        substitution[symbol(f"r{j}")] = symbol(f"d{j}")
    first_kept = plan.promoted
    if plan.factor > 1:
        substitution[symbol(f"r{first_kept}")] = (
            symbol(f"d{first_kept}") * plan.chunk + symbol("r0")
        )
        kept = [plan.chunk, *reduced[first_kept + 1 :]]
        for j in range(first_kept + 1, len(reduced)):
            substitution[symbol(f"r{j}")] = symbol(f"r{j - first_kept}")
        split_sizes = [*reduced[: plan.promoted], plan.factor]
    else:
        kept = reduced[first_kept:]
        for j in range(first_kept, len(reduced)):
            substitution[symbol(f"r{j}")] = symbol(f"r{j - first_kept}")
        split_sizes = reduced[: plan.promoted]

    partial_type = TensorType([*split_sizes, *result_type.sizes], result_type.element_type)
    body = reduce.body.clone()
    for op in body.walk():
        if isinstance(op, loop.LoadOp):
            indices = [sympy.expand(e.xreplace(substitution)) for e in op.indices.data]
            op.properties["indices"] = SymListAttr(indices)
        elif isinstance(op, loop.IndexOp):
            op.properties["expr"] = SymExprAttr(sympy.expand(op.expr.expr.xreplace(substitution)))
    partial = loop.ReduceOp(reduce.kind.data, reduce.inputs, kept, partial_type, body)

    block = Block(arg_types=[partial_type])
    element = loop.scalar_type(result_type.element_type)
    indices = [symbol(f"r{j}") for j in range(added)] + [symbol(f"d{i}") for i in range(rank)]
    load = loop.LoadOp(block.args[0], indices, element)
    block.add_ops([load, loop.YieldOp(load.result)])
    combined = loop.ReduceOp(reduce.kind.data, [partial.result], split_sizes, result_type, Region(block))
    Rewriter.replace_op(reduce, [partial, combined], [combined.result])
