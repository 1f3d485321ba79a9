"""
Converters of the sorts: sort (argsort and msort reach the importer as
sorts, through torch's decompositions), topk, and kthvalue as the last of
a topk of the k smallest. A 0-d input is its own sort, at position 0.
"""

from __future__ import annotations

import sympy
import torch
from torch import fx
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor
from permalloy.lowering.import_fx.common import argument, normalize_dim
from permalloy.lowering.import_fx.context import ImportContext

aten = torch.ops.aten


def _unsorted(ctx: ImportContext, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """The values and positions of a 0-d input: itself, and 0."""
    values = ctx.tensor(node.args[0])
    return values, ctx.emit(ptensor.FullOp(0, ctx.result_type(node, 1)))


def sort(ctx: ImportContext, node: fx.Node) -> tuple[SSAValue, SSAValue]:
    """`sort(self, dim=-1, descending=False)` and `sort.stable(self, *,
    stable, dim=-1, descending=False)`."""
    source = ctx.tensor(node.args[0])
    rank = ptensor.tensor_type(source).rank
    if rank == 0:
        return _unsorted(ctx, node)
    stable_overload = node.target is aten.sort.stable
    dim = argument(node, 1, "dim", -1) if not stable_overload else node.kwargs.get("dim", -1)
    descending = argument(node, 2, "descending", False) if not stable_overload else node.kwargs.get("descending", False)
    stable = bool(node.kwargs.get("stable", False)) if stable_overload else False
    op = ptensor.SortOp(source, normalize_dim(dim, rank), bool(descending), stable, ctx.result_type(node, 0))
    ctx.block.add_op(op)
    return op.values, op.indices


def _static_count(ctx: ImportContext, k, size: sympy.Expr) -> int | None:
    """`k` as a number no larger than a static `size`, or None: a symbolic
    `k`, or one out of range (torch raises, the fallback with it). Rows of
    a symbolic length are left to torch, which checks `k` at each call."""
    k = ctx.scalar(k)
    if not isinstance(k, int) or k < 0:
        return None
    if (size - k).is_number and size - k < 0:
        return None
    return k


def topk(ctx: ImportContext, node: fx.Node) -> tuple[SSAValue, SSAValue] | None:
    """`topk(self, k, dim=-1, largest=True, sorted=True)`."""
    source = ctx.tensor(node.args[0])
    source_type = ptensor.tensor_type(source)
    rank = source_type.rank
    dim = normalize_dim(argument(node, 2, "dim", -1), rank)
    size = source_type.sizes[dim] if rank else sympy.Integer(1)
    k = _static_count(ctx, node.args[1], size)
    if k is None:
        return ctx.decline("topk of a symbolic k, or one larger than the dimension")
    if rank == 0:
        return _unsorted(ctx, node) if k == 1 else ctx.decline("topk of a 0-d tensor with k = 0")
    largest = bool(argument(node, 3, "largest", True))
    in_order = bool(argument(node, 4, "sorted", True))
    op = ptensor.TopkOp(source, k, dim, largest, in_order, ctx.result_type(node, 0))
    ctx.block.add_op(op)
    return op.values, op.indices


def kthvalue(ctx: ImportContext, node: fx.Node) -> tuple[SSAValue, SSAValue] | None:
    """`kthvalue(self, k, dim=-1, keepdim=False)`: the last of the `k`
    smallest along `dim` in order (a topk; NaN largest, as torch's kthvalue)."""
    source = ctx.tensor(node.args[0])
    source_type = ptensor.tensor_type(source)
    rank = source_type.rank
    dim = normalize_dim(argument(node, 2, "dim", -1), rank)
    size = source_type.sizes[dim] if rank else sympy.Integer(1)
    k = _static_count(ctx, node.args[1], size)
    if k is None or k == 0:
        return ctx.decline("kthvalue of a symbolic k, or one outside the dimension")
    if rank == 0:
        return _unsorted(ctx, node)
    keepdim = bool(argument(node, 3, "keepdim", False))
    smallest = list(source_type.sizes)
    smallest[dim] = sympy.Integer(k)
    op = ptensor.TopkOp(source, k, dim, False, True, source_type.with_shape(smallest))
    ctx.block.add_op(op)
    results = []
    for sorted_value, index in ((op.values, 0), (op.indices, 1)):
        wanted = ctx.result_type(node, index)
        selected_sizes = [s for d, s in enumerate(source_type.sizes) if d != dim]
        selected = ptensor.TensorType(selected_sizes, wanted.element_type)
        value = ctx.emit(ptensor.SelectOp(sorted_value, dim, k - 1, selected))
        if keepdim:
            value = ctx.emit(ptensor.UnsqueezeOp(value, dim, wanted))
        results.append(value)
    return results[0], results[1]


CONVERTERS: dict = {
    aten.sort.default: sort,
    aten.sort.stable: sort,
    aten.topk.default: topk,
    aten.kthvalue.default: kthvalue,
}
"""Converters by ATen overload."""
