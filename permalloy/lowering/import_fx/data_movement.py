"""Converters of data movement: cat, pad, gather, index (the scatters are in `scatters`)."""

from __future__ import annotations

import math

import sympy
import torch
from torch import fx
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import PadMode
from permalloy.lowering.import_fx.common import Converter, argument, normalize_dim
from permalloy.lowering.import_fx.context import ImportContext

aten = torch.ops.aten


def cat(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """cat, in the result dtype; inputs with no elements along the dimension
    (and 1-D empty ones, as torch does) are skipped."""
    result = ctx.result_type(node)
    dim = normalize_dim(argument(node, 1, "dim", 0), result.rank)
    inputs = [
        ctx.cast(ctx.tensor(t), result.element_type)
        for t in node.args[0]
        if not _is_legacy_empty(ctx.meta(t)) and not _empty_along(ctx.meta(t), dim)
    ]
    if not inputs:
        return ctx.emit(ptensor.FullOp(0, result))
    if len(inputs) == 1:
        return inputs[0]
    return ctx.emit(ptensor.CatOp(inputs, dim, result))


def _empty_along(example: torch.Tensor, dim: int) -> bool:
    """Whether a cat input has size 0 along `dim` (a constant size)."""
    size = example.shape[dim] if example.dim() > dim else None
    return isinstance(size, int) and size == 0


def _is_legacy_empty(example: torch.Tensor) -> bool:
    return example.dim() == 1 and isinstance(example.shape[0], int) and example.shape[0] == 0


def _pad_amounts(pad: list, rank: int) -> tuple[list, list] | None:
    """torch's pad list (last dimension first, low then high) as low/high
    lists, of integers or size expressions."""
    if any(not isinstance(p, int | sympy.Expr) for p in pad) or len(pad) % 2 or len(pad) > 2 * rank:
        return None
    low: list = [0] * rank
    high: list = [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return low, high


def constant_pad(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """constant_pad_nd(x, pad, value), its amounts integers or size
    expressions (a mask padded to a multiple of 16 keys)."""
    source = ctx.tensor(node.args[0])
    amounts = _pad_amounts([ctx.scalar(p) for p in node.args[1]], ptensor.tensor_type(source).rank)
    if amounts is None:
        return None
    value = ctx.scalar(argument(node, 2, "value", 0))
    result = ctx.result_type(node)
    dtype = ctx.meta(node).dtype
    if _beyond_integers(value, dtype):
        if any(not (isinstance(a, int) and a == 0) for side in amounts for a in side):
            # eager raises (the value does not fit the type), and so does the fallback
            return ctx.decline(f"the pad value {value} has no value in {dtype}")
        value = 0  # nothing is padded, so the value is never written: eager accepts it
    return ctx.emit(ptensor.PadOp(source, PadMode.CONSTANT, *amounts, value, result))


def _beyond_integers(value: object, dtype: torch.dtype) -> bool:
    """Whether `value` is a float that an integer tensor (not a boolean one)
    of `dtype` cannot hold: infinite, NaN, or outside the type's range."""
    if not isinstance(value, float) or dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return False
    limits = torch.iinfo(dtype)
    return not math.isfinite(value) or not limits.min <= value <= limits.max


def mode_pad(mode: PadMode) -> Converter:
    """reflection_padNd / replication_padNd."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
        source = ctx.tensor(node.args[0])
        amounts = _pad_amounts(list(node.args[1]), ptensor.tensor_type(source).rank)
        if amounts is None:
            return None
        return ctx.emit(ptensor.PadOp(source, mode, *amounts, None, ctx.result_type(node)))

    return convert


def gather(ctx: ImportContext, node: fx.Node) -> SSAValue:
    source = ctx.tensor(node.args[0])
    dim = normalize_dim(node.args[1], ptensor.tensor_type(source).rank)
    index = ctx.tensor(node.args[2])
    return ctx.emit(ptensor.GatherOp(source, index, dim, ctx.result_type(node)))


def index_tensors(ctx: ImportContext, indices) -> tuple[list[SSAValue], list[int]] | None:
    """The index tensors of `x[indices]` and the dimensions they index."""
    values, dims = [], []
    for position, index in enumerate(indices):
        if index is None:
            continue
        if ctx.meta(index).dtype == torch.bool:
            return None
        values.append(ctx.tensor(index))
        dims.append(position)
    return (values, dims) if values else None


def index(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """index.Tensor (`x[i, :, j]`); None entries leave a dimension whole."""
    found = index_tensors(ctx, node.args[1])
    if found is None:
        return None
    values, dims = found
    return ctx.emit(ptensor.IndexOp(ctx.tensor(node.args[0]), values, dims, ctx.result_type(node)))


def index_select(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """index_select(x, dim, index): one indexed dimension, replaced in place."""
    source = ctx.tensor(node.args[0])
    dim = normalize_dim(node.args[1], ptensor.tensor_type(source).rank)
    index_value = ctx.tensor(node.args[2])
    index_type = ptensor.tensor_type(index_value)
    if index_type.rank == 0:
        index_value = ctx.emit(ptensor.UnsqueezeOp(index_value, 0, index_type.with_shape([1])))
    return ctx.emit(ptensor.IndexOp(source, [index_value], [dim], ctx.result_type(node)))


CONVERTERS: dict = {
    aten.cat.default: cat,
    aten.constant_pad_nd.default: constant_pad,
    aten.reflection_pad1d.default: mode_pad(PadMode.REFLECT),
    aten.reflection_pad2d.default: mode_pad(PadMode.REFLECT),
    aten.reflection_pad3d.default: mode_pad(PadMode.REFLECT),
    aten.replication_pad1d.default: mode_pad(PadMode.REPLICATE),
    aten.replication_pad2d.default: mode_pad(PadMode.REPLICATE),
    aten.replication_pad3d.default: mode_pad(PadMode.REPLICATE),
    aten.gather.default: gather,
    aten.index.Tensor: index,
    aten._unsafe_index.Tensor: index,
    aten.index_select.default: index_select,
}
"""Converters by ATen overload."""
