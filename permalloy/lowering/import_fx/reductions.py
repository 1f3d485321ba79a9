"""Converters of reductions: sum, prod, amax, amin, max/min, argmax, any, all."""

from __future__ import annotations

import torch
from torch import fx
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import ReduceKind, TensorType
from permalloy.lowering.import_fx.common import Converter, argument, normalize_dims
from permalloy.lowering.import_fx.context import ImportContext

aten = torch.ops.aten


def reduce_value(
    ctx: ImportContext,
    kind: ReduceKind,
    source: SSAValue,
    dims: list[int],
    keepdim: bool,
    result: TensorType,
) -> SSAValue:
    """A `ptensor.reduce`, or the input itself for a 0-d tensor."""
    if ptensor.tensor_type(source).rank == 0:
        return ctx.cast(source, result.element_type)
    return ctx.emit(ptensor.ReduceOp(kind, source, dims, keepdim, result))


def reduction(kind: ReduceKind, dim_index: int | None = 1) -> Converter:
    """
    `kind(self, dim, keepdim, *, dtype)` with `dim` at `dim_index` (None: the
    op reduces every dimension). The input is converted to the result dtype
    first (sum of ints gives i64; the `dtype` argument).
    """

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        result = ctx.result_type(node)
        source = ctx.tensor(node.args[0])
        rank = ptensor.tensor_type(source).rank
        dims_arg = None if dim_index is None else argument(node, dim_index, "dim")
        keepdim = False if dim_index is None else argument(node, dim_index + 1, "keepdim", False)
        dims = normalize_dims(dims_arg, rank)
        if kind in (ReduceKind.SUM, ReduceKind.PROD):
            source = ctx.cast(source, result.element_type)
        return reduce_value(ctx, kind, source, dims, bool(keepdim), result)

    return convert


def logical_reduction(kind: ReduceKind, dim_index: int | None = 1) -> Converter:
    """any / all: on the input as i1; uint8 inputs give uint8 as in torch."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        result = ctx.result_type(node)
        i1 = ctx.element_type(torch.bool)
        source = ctx.cast(ctx.tensor(node.args[0]), i1)
        rank = ptensor.tensor_type(source).rank
        dims_arg = None if dim_index is None else argument(node, dim_index, "dim")
        keepdim = False if dim_index is None else argument(node, dim_index + 1, "keepdim", False)
        dims = normalize_dims(dims_arg, rank)
        value = reduce_value(ctx, kind, source, dims, bool(keepdim), result.with_element_type(i1))
        return ctx.cast(value, result.element_type)

    return convert


def value_and_index(value_kind: ReduceKind, index_kind: ReduceKind) -> Converter:
    """max.dim / min.dim: (values, indices) along one dimension."""

    def convert(ctx: ImportContext, node: fx.Node) -> tuple[SSAValue, SSAValue]:
        source = ctx.tensor(node.args[0])
        rank = ptensor.tensor_type(source).rank
        dims = normalize_dims(node.args[1], rank)
        keepdim = bool(argument(node, 2, "keepdim", False))
        values = reduce_value(ctx, value_kind, source, dims, keepdim, ctx.result_type(node, 0))
        indices = _arg_reduce(ctx, index_kind, source, dims, keepdim, ctx.result_type(node, 1))
        return values, indices

    return convert


def _arg_reduce(ctx, kind, source, dims, keepdim, result) -> SSAValue:
    if ptensor.tensor_type(source).rank == 0:
        return ctx.emit(ptensor.FullOp(0, result))
    return ctx.emit(ptensor.ReduceOp(kind, source, dims, keepdim, result))


def arg_reduction(kind: ReduceKind) -> Converter:
    """argmax / argmin; without `dim` over the flattened input."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        source = ctx.tensor(node.args[0])
        source_type = ptensor.tensor_type(source)
        dim = argument(node, 1, "dim")
        keepdim = bool(argument(node, 2, "keepdim", False))
        result = ctx.result_type(node)
        if dim is not None:
            dims = normalize_dims(dim, source_type.rank)
            return _arg_reduce(ctx, kind, source, dims, keepdim, result)
        flat = ctx.emit(ptensor.ReshapeOp(source, source_type.with_shape([source_type.numel()])))
        index = _arg_reduce(ctx, kind, flat, [0], False, result.with_shape([]))
        if result.rank == 0:
            return index
        return ctx.emit(ptensor.ReshapeOp(index, result))

    return convert


CONVERTERS: dict = {
    aten.sum.dim_IntList: reduction(ReduceKind.SUM),
    aten.sum.default: reduction(ReduceKind.SUM, None),
    aten.prod.dim_int: reduction(ReduceKind.PROD),
    aten.prod.default: reduction(ReduceKind.PROD, None),
    aten.amax.default: reduction(ReduceKind.MAX),
    aten.amin.default: reduction(ReduceKind.MIN),
    aten.max.default: reduction(ReduceKind.MAX, None),
    aten.min.default: reduction(ReduceKind.MIN, None),
    aten.max.dim: value_and_index(ReduceKind.MAX, ReduceKind.ARGMAX),
    aten.min.dim: value_and_index(ReduceKind.MIN, ReduceKind.ARGMIN),
    aten.argmax.default: arg_reduction(ReduceKind.ARGMAX),
    aten.argmin.default: arg_reduction(ReduceKind.ARGMIN),
    aten.any.default: logical_reduction(ReduceKind.ANY, None),
    aten.any.dim: logical_reduction(ReduceKind.ANY),
    aten.any.dims: logical_reduction(ReduceKind.ANY),
    aten.all.default: logical_reduction(ReduceKind.ALL, None),
    aten.all.dim: logical_reduction(ReduceKind.ALL),
    aten.all.dims: logical_reduction(ReduceKind.ALL),
}
"""Converters by ATen overload."""
