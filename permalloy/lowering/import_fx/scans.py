"""Converters of scans: cumsum, cumprod, logcumsumexp, cummax, cummin."""

from __future__ import annotations

import torch
from torch import fx
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import ScanKind, TensorType
from permalloy.lowering.import_fx.common import Converter, argument, normalize_dim
from permalloy.lowering.import_fx.context import ImportContext

aten = torch.ops.aten


def scan_value(ctx: ImportContext, kind: ScanKind, source: SSAValue, dim: int, result: TensorType) -> SSAValue:
    """A `ptensor.scan` along `dim` (which may count from the end); a 0-d
    tensor is its own scan (and position 0 is its own position)."""
    rank = ptensor.tensor_type(source).rank
    if rank == 0:
        if kind in ptensor.SCAN_POSITION_KINDS:
            return ctx.emit(ptensor.FullOp(0, result))
        return ctx.cast(source, result.element_type)
    return ctx.emit(ptensor.ScanOp(kind, source, normalize_dim(dim, rank), result))


def scan(kind: ScanKind) -> Converter:
    """
    `kind(self, dim, *, dtype)`: cumsum and cumprod take the input in the
    result's dtype (integers and bools give int64; the `dtype` argument),
    logcumsumexp keeps its float dtype.
    """

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        result = ctx.result_type(node)
        source = ctx.cast(ctx.tensor(node.args[0]), result.element_type)
        return scan_value(ctx, kind, source, argument(node, 1, "dim"), result)

    return convert


def value_and_position(value_kind: ScanKind, position_kind: ScanKind) -> Converter:
    """cummax / cummin: (values, indices) along one dimension, two scans of the input."""

    def convert(ctx: ImportContext, node: fx.Node) -> tuple[SSAValue, SSAValue]:
        source = ctx.tensor(node.args[0])
        dim = argument(node, 1, "dim")
        values = scan_value(ctx, value_kind, source, dim, ctx.result_type(node, 0))
        positions = scan_value(ctx, position_kind, source, dim, ctx.result_type(node, 1))
        return values, positions

    return convert


CONVERTERS: dict = {
    aten.cumsum.default: scan(ScanKind.SUM),
    aten.cumprod.default: scan(ScanKind.PROD),
    aten.logcumsumexp.default: scan(ScanKind.LOGSUMEXP),
    aten.cummax.default: value_and_position(ScanKind.MAX, ScanKind.ARGMAX),
    aten.cummin.default: value_and_position(ScanKind.MIN, ScanKind.ARGMIN),
}
"""Converters by ATen overload."""
