"""
Converters of the scatters: scatter of a source or a value (where
permalloy's decomposition into a select does not apply), scatter_add, scatter_reduce (and scatter with a
`reduce` argument, index_reduce), index_put. torch's `mean` is a sum and a
count of the values landing on each element (one more with `include_self`),
divided where the count is not zero (with floor division for integers, as
torch's kernel).
"""

from __future__ import annotations

import torch
from torch import fx
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import BinaryKind, ComparePredicate, ScatterKind, TensorType
from permalloy.lowering.import_fx.common import argument, normalize_dim
from permalloy.lowering.import_fx.context import ImportContext
from permalloy.lowering.import_fx.data_movement import index_tensors

aten = torch.ops.aten

REDUCTIONS = {
    "sum": ScatterKind.SUM,
    "add": ScatterKind.SUM,
    "prod": ScatterKind.PROD,
    "multiply": ScatterKind.PROD,
    "amax": ScatterKind.MAX,
    "amin": ScatterKind.MIN,
}
"""torch's names of the reductions, as scatter kinds (`mean` apart)."""


def scatter(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """scatter.src / scatter.value(x, dim, index, src or value): where several
    entries land on one element, which one it keeps is unspecified."""
    target = ctx.tensor(node.args[0])
    result = ctx.result_type(node)
    if ptensor.is_bool(result.element_type):
        return ctx.decline("scatter of booleans")
    dim = normalize_dim(node.args[1], max(ptensor.tensor_type(target).rank, 1))
    index = ctx.tensor(node.args[2])
    if isinstance(node.args[3], fx.Node):
        source = ctx.cast(ctx.tensor(node.args[3]), result.element_type)
    else:
        source = _filled(ctx, node.args[3], ptensor.tensor_type(index).with_element_type(result.element_type))
    return ctx.emit(ptensor.ScatterOp(target, index, source, dim, result))


def scatter_add(ctx: ImportContext, node: fx.Node) -> SSAValue:
    source = ctx.tensor(node.args[0])
    dim = normalize_dim(node.args[1], ptensor.tensor_type(source).rank)
    result = ctx.result_type(node)
    updates = ctx.cast(ctx.tensor(node.args[3]), result.element_type)
    return ctx.emit(
        ptensor.ScatterAddOp(source, ctx.tensor(node.args[2]), updates, dim, result)
    )


def _scatter_reduce(
    ctx: ImportContext,
    node: fx.Node,
    index: SSAValue,
    source: SSAValue,
    dim: int,
    reduce: str,
    include_self: bool,
) -> SSAValue | None:
    """`node`'s result as a scatter of `source` at `index` along `dim` into its input."""
    result = ctx.result_type(node)
    if ptensor.is_bool(result.element_type):
        return None
    target = ctx.tensor(node.args[0])
    source = ctx.cast(source, result.element_type)
    if reduce == "mean":
        return _mean(ctx, target, index, source, dim, include_self, result)
    kind = REDUCTIONS.get(reduce)
    if kind is None:
        return None
    return ctx.emit(ptensor.ScatterReduceOp(kind, target, index, source, dim, include_self, result))


def _mean(
    ctx: ImportContext,
    target: SSAValue,
    index: SSAValue,
    source: SSAValue,
    dim: int,
    include_self: bool,
    result: TensorType,
) -> SSAValue:
    """The sum over the count of values (input included or not), where the
    count is not zero; the input elsewhere."""
    element = result.element_type
    total = ctx.emit(ptensor.ScatterReduceOp(ScatterKind.SUM, target, index, source, dim, include_self, result))
    index_type = ptensor.tensor_type(index)
    ones = _filled(ctx, 1, index_type.with_element_type(element))
    counts_init = _filled(ctx, 1 if include_self else 0, result)
    counts = ctx.emit(ptensor.ScatterReduceOp(ScatterKind.SUM, counts_init, index, ones, dim, True, result))
    zero = ctx.full(0, element)
    empty = ctx.emit(ptensor.CompareOp(ComparePredicate.EQ, counts, zero, result.with_element_type(IntegerType(1))))
    divisor = ctx.emit(ptensor.WhereOp(empty, ctx.full(1, element), counts, result))
    division = BinaryKind.DIV if ptensor.is_float(element) else BinaryKind.FLOORDIV
    return ctx.emit(ptensor.BinaryOp(division, total, divisor, result))


def _filled(ctx: ImportContext, number: int, result: TensorType) -> SSAValue:
    """A tensor of `result`'s type holding `number` everywhere (a broadcast scalar)."""
    scalar = ctx.full(number, result.element_type)
    return ctx.emit(ptensor.ExpandOp(scalar, result))


def scatter_reduce(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """scatter_reduce.two(x, dim, index, src, reduce, include_self=True)."""
    rank = ptensor.tensor_type(ctx.tensor(node.args[0])).rank
    dim = normalize_dim(node.args[1], max(rank, 1))
    include_self = bool(argument(node, 5, "include_self", True))
    return _scatter_reduce(
        ctx, node, ctx.tensor(node.args[2]), ctx.tensor(node.args[3]), dim, node.args[4], include_self
    )


def scatter_with_reduce(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """scatter.reduce / scatter.value_reduce(x, dim, index, src or value,
    reduce="add" or "multiply"): the input's elements take part."""
    rank = ptensor.tensor_type(ctx.tensor(node.args[0])).rank
    dim = normalize_dim(node.args[1], max(rank, 1))
    index = ctx.tensor(node.args[2])
    reduce = argument(node, 4, "reduce", None)
    if isinstance(node.args[3], fx.Node):
        source = ctx.tensor(node.args[3])
    else:
        element = ctx.result_type(node).element_type
        source = _filled(ctx, node.args[3], ptensor.tensor_type(index).with_element_type(element))
    return _scatter_reduce(ctx, node, index, source, dim, reduce, True)


def index_reduce(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """index_reduce(x, dim, index, source, reduce, include_self=True): a
    scatter_reduce whose index is the 1-D index broadcast along the source's
    other dimensions."""
    source = ctx.tensor(node.args[3])
    source_type = ptensor.tensor_type(source)
    dim = normalize_dim(node.args[1], max(source_type.rank, 1))
    index = ctx.tensor(node.args[2])
    index_type = ptensor.tensor_type(index)
    if index_type.rank > 1:
        return None
    if source_type.rank == 0:  # a 0-d input and source: an index of one entry
        index = ctx.emit(ptensor.ReshapeOp(index, index_type.with_shape([])))
    else:
        column = [1] * source_type.rank
        column[dim] = index_type.sizes[0] if index_type.rank else 1
        index = ctx.emit(ptensor.ReshapeOp(index, index_type.with_shape(column)))
        index = ctx.emit(ptensor.ExpandOp(index, index_type.with_shape(source_type.sizes)))
    include_self = bool(argument(node, 5, "include_self", True))
    return _scatter_reduce(ctx, node, index, source, dim, node.args[4], include_self)


def index_put(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """index_put(x, indices, values, accumulate)."""
    found = index_tensors(ctx, node.args[1])
    if found is None:
        return None
    result = ctx.result_type(node)
    values = ctx.operand(node.args[2], result.element_type)
    accumulate = bool(argument(node, 3, "accumulate", False))
    return ctx.emit(
        ptensor.IndexPutOp(ctx.tensor(node.args[0]), *found, values, accumulate, result)
    )


CONVERTERS: dict = {
    aten.scatter.src: scatter,
    aten.scatter.value: scatter,
    aten.scatter_add.default: scatter_add,
    aten.scatter_reduce.two: scatter_reduce,
    aten.scatter.reduce: scatter_with_reduce,
    aten.scatter.value_reduce: scatter_with_reduce,
    aten.index_reduce.default: index_reduce,
    aten.index_put.default: index_put,
    aten._unsafe_index_put.default: index_put,
}
"""Converters by ATen overload."""
