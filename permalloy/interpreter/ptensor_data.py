"""
Reference semantics of the view and data-movement ops of ptensor.

Views may return torch views of their inputs: ptensor values are immutable,
and no implementation writes into an operand.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.interpreter import Interpreter, PythonValues
from xdsl.utils.exceptions import InterpretationError

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import PadMode
from permalloy.interpreter.ptensor_common import (
    PTensorFunctionsBase,
    scalar_value,
    tensor_impl,
    tensor_type_of,
)

Tensor = torch.Tensor


class OutOfBoundsError(InterpretationError):
    """An op reads outside its input: a slice, select or as_strided past the end."""


def pad_tensor(
    x: Tensor,
    mode: PadMode,
    low: Sequence[int],
    high: Sequence[int],
    value: float | int | bool | None,
) -> Tensor:
    """
    `ptensor.pad`. Result element `j` of a dimension reads input element
    `j - low` when it is in range; otherwise `constant` gives `value`,
    `reflect` mirrors the position at the edges (without repeating the edge)
    and `replicate` clamps it. Negative amounts crop.
    """
    if mode == PadMode.CONSTANT:
        amounts = [a for lo, hi in reversed(list(zip(low, high))) for a in (lo, hi)]
        return torch.constant_pad_nd(x, amounts, value)
    for dim, (lo, hi) in enumerate(zip(low, high)):
        if lo != 0 or hi != 0:
            index = _pad_source_index(mode, x.shape[dim], lo, hi)
            x = x.index_select(dim, index.to(x.device))
    return x


def _pad_source_index(mode: PadMode, size: int, low: int, high: int) -> Tensor:
    """The input position each result position reads along one dimension."""
    source = torch.arange(-low, size + high)
    if mode == PadMode.REPLICATE:
        if size == 0:
            raise OutOfBoundsError("replicate padding of an empty dimension")
        return source.clamp(0, size - 1)
    reflected = torch.where(source < 0, -source, source)
    reflected = torch.where(reflected >= size, 2 * (size - 1) - reflected, reflected)
    if source.numel() and (reflected.min() < 0 or reflected.max() >= size):
        raise OutOfBoundsError(
            f"reflect padding by {low} and {high} needs amounts below the "
            f"dimension's size {size}"
        )
    return reflected


def indices_by_dim(
    rank: int, dims: Sequence[int], indices: Sequence[Tensor]
) -> list[Tensor | None]:
    """The `Tensor?[]` index list of aten.index: index tensors at `dims`."""
    result: list[Tensor | None] = [None] * (max(dims) + 1)
    for dim, index in zip(dims, indices):
        result[dim] = index
    return result


def _check_range(what: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise OutOfBoundsError(f"{what} {value} is outside [{low}, {high}]")


class DataFunctions(PTensorFunctionsBase):
    """Views and data movement."""

    @tensor_impl(ptensor.ReshapeOp)
    def run_reshape(
        self, interpreter: Interpreter, op: ptensor.ReshapeOp, args: PythonValues
    ) -> PythonValues:
        return (args[0].reshape(self.shape(op.result)),)

    @tensor_impl(ptensor.PermuteOp)
    def run_permute(
        self, interpreter: Interpreter, op: ptensor.PermuteOp, args: PythonValues
    ) -> PythonValues:
        return (args[0].permute(op.dims.data),)

    @tensor_impl(ptensor.ExpandOp)
    def run_expand(
        self, interpreter: Interpreter, op: ptensor.ExpandOp, args: PythonValues
    ) -> PythonValues:
        return (args[0].expand(self.shape(op.result)),)

    @tensor_impl(ptensor.SliceOp)
    def run_slice(
        self, interpreter: Interpreter, op: ptensor.SliceOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        dim = op.dim.value.data
        start, end = self.size(op.start.expr), self.size(op.end.expr)
        _check_range("slice start", start, 0, x.shape[dim])
        _check_range("slice end", end, 0, x.shape[dim])
        step = op.step.value.data
        return (torch.ops.aten.slice.Tensor(x, dim, start, max(start, end), step),)

    @tensor_impl(ptensor.SelectOp)
    def run_select(
        self, interpreter: Interpreter, op: ptensor.SelectOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        dim, index = op.dim.value.data, self.size(op.index.expr)
        _check_range("select index", index, 0, x.shape[dim] - 1)
        return (x.select(dim, index),)

    @tensor_impl(ptensor.SqueezeOp)
    def run_squeeze(
        self, interpreter: Interpreter, op: ptensor.SqueezeOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        return (x.squeeze(op.dims.data) if op.dims.data else x,)

    @tensor_impl(ptensor.UnsqueezeOp)
    def run_unsqueeze(
        self, interpreter: Interpreter, op: ptensor.UnsqueezeOp, args: PythonValues
    ) -> PythonValues:
        return (args[0].unsqueeze(op.dim.value.data),)

    @tensor_impl(ptensor.AsStridedOp)
    def run_as_strided(
        self, interpreter: Interpreter, op: ptensor.AsStridedOp, args: PythonValues
    ) -> PythonValues:
        base = args[0].contiguous()
        sizes = self.shape(op.result)
        strides = self.bindings.values(op.strides.data)
        offset = self.size(op.offset.expr)
        if all(s > 0 for s in sizes):
            last = offset + sum((n - 1) * s for n, s in zip(sizes, strides))
            _check_range("as_strided offset", offset, 0, base.numel())
            _check_range("as_strided last element", last, 0, base.numel() - 1)
        view = base.as_strided(sizes, strides, base.storage_offset() + offset)
        return (view,)

    @tensor_impl(ptensor.CatOp)
    def run_cat(
        self, interpreter: Interpreter, op: ptensor.CatOp, args: PythonValues
    ) -> PythonValues:
        return (torch.cat(list(args), op.dim.value.data),)

    @tensor_impl(ptensor.PadOp)
    def run_pad(
        self, interpreter: Interpreter, op: ptensor.PadOp, args: PythonValues
    ) -> PythonValues:
        value = op.value
        if value is not None:
            value = scalar_value(value, tensor_type_of(op.result).element_type)
        low = [self.size(a) for a in op.low.data]
        high = [self.size(a) for a in op.high.data]
        result = pad_tensor(args[0], op.mode.data, low, high, value)
        return (result,)

    @tensor_impl(ptensor.GatherOp)
    def run_gather(
        self, interpreter: Interpreter, op: ptensor.GatherOp, args: PythonValues
    ) -> PythonValues:
        x, index = args
        return (torch.gather(x, op.dim.value.data, index),)

    @tensor_impl(ptensor.IndexOp)
    def run_index(
        self, interpreter: Interpreter, op: ptensor.IndexOp, args: PythonValues
    ) -> PythonValues:
        x, *indices = args
        index_list = indices_by_dim(x.dim(), op.dims.data, indices)
        return (torch.ops.aten.index.Tensor(x, index_list),)

    @tensor_impl(ptensor.ScatterOp)
    def run_scatter(
        self, interpreter: Interpreter, op: ptensor.ScatterOp, args: PythonValues
    ) -> PythonValues:
        x, index, source = args
        return (torch.scatter(x, op.dim.value.data, index, source),)

    @tensor_impl(ptensor.ScatterAddOp)
    def run_scatter_add(
        self, interpreter: Interpreter, op: ptensor.ScatterAddOp, args: PythonValues
    ) -> PythonValues:
        x, index, source = args
        return (torch.scatter_add(x, op.dim.value.data, index, source),)

    @tensor_impl(ptensor.ScatterReduceOp)
    def run_scatter_reduce(
        self, interpreter: Interpreter, op: ptensor.ScatterReduceOp, args: PythonValues
    ) -> PythonValues:
        x, index, source = args
        reduce = SCATTER_REDUCE_NAMES[op.kind.data]
        return (torch.scatter_reduce(x, op.dim.value.data, index, source, reduce, include_self=op.includes_self),)

    @tensor_impl(ptensor.IndexPutOp)
    def run_index_put(
        self, interpreter: Interpreter, op: ptensor.IndexPutOp, args: PythonValues
    ) -> PythonValues:
        x, *indices, values = args
        index_list = indices_by_dim(x.dim(), op.dims.data, indices)
        accumulate = op.accumulate is not None
        return (torch.ops.aten.index_put.default(x, index_list, values, accumulate),)


SCATTER_REDUCE_NAMES = {
    ptensor.ScatterKind.SUM: "sum",
    ptensor.ScatterKind.PROD: "prod",
    ptensor.ScatterKind.MAX: "amax",
    ptensor.ScatterKind.MIN: "amin",
}
"""torch's name of each kind of `ptensor.scatter_reduce`."""
