"""
Data-movement ops called from the host program: concatenation, padding,
gathers, indexing, the scatters (`scatter`, `scatter_add`, `scatter_reduce`,
`index_put`) and the sorts (`sort`, `topk`), which a host program runs with
torch where an op's lowering does not apply (a scatter the pipeline keeps for
torch's deterministic kernel, an `index_put` that assigns, a sort whose rows
are longer than the target sorts natively). Dimensions, amounts and flags
are bound at compile time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from xdsl.ir import Operation

from permalloy.dialects import ptensor as pt
from permalloy.interpreter.ptensor_common import scalar_value
from permalloy.interpreter.ptensor_data import SCATTER_REDUCE_NAMES, indices_by_dim, pad_tensor
from permalloy.targets.externs.calls import ExternCall, shape_function


def _cat(op: pt.CatOp) -> ExternCall:
    dim = op.dim.value.data
    return lambda tensors, symbols: (torch.cat(list(tensors), dim),)


def _pad(op: pt.PadOp) -> ExternCall:
    mode = op.mode.data
    low, high = shape_function(op.low.data), shape_function(op.high.data)
    value = op.value
    if value is not None:
        value = scalar_value(value, pt.tensor_type(op.result).element_type)
    return lambda tensors, symbols: (pad_tensor(tensors[0], mode, low(symbols), high(symbols), value),)


def _gather(op: pt.GatherOp) -> ExternCall:
    dim = op.dim.value.data
    return lambda tensors, symbols: (torch.gather(tensors[0], dim, tensors[1]),)


def _index(op: pt.IndexOp) -> ExternCall:
    dims, index = op.dims.data, torch.ops.aten.index.Tensor

    def call(tensors, symbols) -> tuple:
        x, *indices = tensors
        return (index(x, indices_by_dim(x.dim(), dims, indices)),)

    return call


def _scatter(op: pt.ScatterOp) -> ExternCall:
    dim = op.dim.value.data
    return lambda tensors, symbols: (torch.scatter(tensors[0], dim, tensors[1], tensors[2]),)


def _sort(op: pt.SortOp) -> ExternCall:
    dim, descending, stable = op.dim.value.data, op.is_descending, op.stable is not None

    def call(tensors, symbols) -> tuple:
        return tuple(torch.sort(tensors[0], dim=dim, descending=descending, stable=stable))

    return call


def _topk(op: pt.TopkOp) -> ExternCall:
    k, dim, largest, in_order = op.count, op.dim.value.data, op.is_largest, op.sorted is not None

    def call(tensors, symbols) -> tuple:
        return tuple(torch.topk(tensors[0], k, dim=dim, largest=largest, sorted=in_order))

    return call


def _scatter_add(op: pt.ScatterAddOp) -> ExternCall:
    dim = op.dim.value.data
    return lambda tensors, symbols: (torch.scatter_add(tensors[0], dim, tensors[1], tensors[2]),)


def _scatter_reduce(op: pt.ScatterReduceOp) -> ExternCall:
    dim, reduce, include_self = op.dim.value.data, SCATTER_REDUCE_NAMES[op.kind.data], op.includes_self

    def call(tensors, symbols) -> tuple:
        x, index, source = tensors
        return (torch.scatter_reduce(x, dim, index, source, reduce, include_self=include_self),)

    return call


def _index_put(op: pt.IndexPutOp, index_put: Callable = torch.ops.aten.index_put.default) -> ExternCall:
    dims, accumulate = op.dims.data, op.accumulate is not None

    def call(tensors, symbols) -> tuple:
        x, *indices, values = tensors
        return (index_put(x, indices_by_dim(x.dim(), dims, indices), values, accumulate),)

    return call


def _index_put_in_place(op: pt.IndexPutOp) -> ExternCall:
    return _index_put(op, torch.ops.aten.index_put_.default)


IN_PLACE_CALLS: dict[type[Operation], Callable[[Any], ExternCall]] = {pt.IndexPutOp: _index_put_in_place}
"""The in-place form of the ops an extern marked `buffer.writes_first_input` holds."""


DATA_CALLS: dict[type[Operation], Callable[[Any], ExternCall]] = {
    pt.CatOp: _cat,
    pt.PadOp: _pad,
    pt.GatherOp: _gather,
    pt.IndexOp: _index,
    pt.ScatterOp: _scatter,
    pt.ScatterAddOp: _scatter_add,
    pt.ScatterReduceOp: _scatter_reduce,
    pt.IndexPutOp: _index_put,
    pt.SortOp: _sort,
    pt.TopkOp: _topk,
}
"""The data-movement ops' calls (the scatters' and the sorts' among them), by op class."""
