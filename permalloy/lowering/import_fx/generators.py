"""Converters of generators: full, zeros/ones/empty, scalar_tensor, arange, rand."""

from __future__ import annotations

import math

import sympy
import torch
from torch import fx
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import RandomDistribution
from permalloy.lowering.import_fx.common import Converter, argument
from permalloy.lowering.import_fx.context import ImportContext

aten = torch.ops.aten
prims = torch.ops.prims


def filled(value_index: int | None, default: float = 0) -> Converter:
    """
    An op giving a tensor of one value: argument `value_index` (None: always
    `default`; `empty` gives zeros, a valid choice for unspecified contents).
    """

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        result = ctx.result_type(node)
        value = default if value_index is None else ctx.scalar(node.args[value_index])
        if isinstance(value, sympy.Basic):
            element = ctx.full(value, result.element_type)
            return ctx.emit(ptensor.ExpandOp(element, result))
        dtype = ctx.meta(node).dtype
        if isinstance(value, float) and not math.isfinite(value) and not dtype.is_floating_point:
            if math.isnan(value) or dtype == torch.bool:
                return ctx.decline(f"{value} has no value in {dtype}")
            value = _saturated(value, dtype)
        return ctx.emit(ptensor.FullOp(value, result))

    return convert


def _saturated(value: float, dtype: torch.dtype) -> int:
    """An infinity as the integer dtype's extreme value. torch's decompositions
    fill with -inf as the identity of max (softmax pads an empty dimension
    with it, whatever the dtype); an integer's identity of max is its minimum."""
    limits = torch.iinfo(dtype)
    return limits.max if value > 0 else limits.min


def arange(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """arange(start, end, step) with numeric start and step; its length from torch."""
    if node.target == aten.arange.default:
        start, step = 0, 1
    else:
        start = node.args[0]
        step = argument(node, 2, "step", 1)
    return _iota(ctx, node, start, step)


def _iota(ctx: ImportContext, node: fx.Node, start, step) -> SSAValue | None:
    start, step = ctx.scalar(start), ctx.scalar(step)
    if isinstance(start, sympy.Basic) or isinstance(step, sympy.Basic):
        return ctx.decline("a symbolic start or step")
    return ctx.emit(ptensor.IotaOp(start, step, ctx.result_type(node)))


def iota(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """prims.iota(length, *, start, step, ...)."""
    return _iota(ctx, node, node.kwargs["start"], node.kwargs["step"])


def random(distribution: RandomDistribution) -> Converter:
    """rand / randn and their `_like` forms, without a generator argument."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
        if node.kwargs.get("generator") is not None:
            return ctx.decline("a generator argument")
        result = ctx.result_type(node)
        if not ptensor.is_float(result.element_type):
            return ctx.decline(f"unsupported dtype {result.element_type}: random numbers are floats")
        return ctx.emit(ptensor.RandOp(distribution, result))

    return convert


CONVERTERS: dict = {
    aten.full.default: filled(1),
    aten.full_like.default: filled(1),
    aten.new_full.default: filled(2),
    aten.scalar_tensor.default: filled(0),
    aten.zeros.default: filled(None, 0),
    aten.zeros_like.default: filled(None, 0),
    aten.new_zeros.default: filled(None, 0),
    aten.ones.default: filled(None, 1),
    aten.ones_like.default: filled(None, 1),
    aten.new_ones.default: filled(None, 1),
    aten.empty.memory_format: filled(None, 0),
    aten.empty_like.default: filled(None, 0),
    aten.empty_strided.default: filled(None, 0),
    aten.new_empty.default: filled(None, 0),
    aten.arange.default: arange,
    aten.arange.start: arange,
    aten.arange.start_step: arange,
    prims.iota.default: iota,
    aten.rand.default: random(RandomDistribution.UNIFORM),
    aten.rand_like.default: random(RandomDistribution.UNIFORM),
    aten.randn.default: random(RandomDistribution.NORMAL),
    aten.randn_like.default: random(RandomDistribution.NORMAL),
}
"""Converters by ATen overload."""
