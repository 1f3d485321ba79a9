"""
Data-movement ops called from the host program: concatenation, padding,
gathers, indexing and the scatters (`scatter_add`, `scatter_reduce`,
`index_put`), which a host program runs with torch where an op's lowering does
not apply (a scatter the pipeline keeps for torch's deterministic kernel, an
`index_put` that assigns). Dimensions, amounts and flags are bound at compile
time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from xdsl.ir import Operation

from permalloy.dialects import ptensor as pt
from permalloy.interpreter.ptensor_common import scalar_value
from permalloy.interpreter.ptensor_data import SCATTER_REDUCE_NAMES, indices_by_dim, pad_tensor
from permalloy.targets.externs.calls import ExternCall


def _cat(op: pt.CatOp) -> ExternCall:
    dim = op.dim.value.data
    return lambda tensors, symbols: (torch.cat(list(tensors), dim),)


def _pad(op: pt.PadOp) -> ExternCall:
    mode, low, high = op.mode.data, op.low.data, op.high.data
    value = op.value
    if value is not None:
        value = scalar_value(value, pt.tensor_type(op.result).element_type)
    return lambda tensors, symbols: (pad_tensor(tensors[0], mode, low, high, value),)


def _gather(op: pt.GatherOp) -> ExternCall:
    dim = op.dim.value.data
    return lambda tensors, symbols: (torch.gather(tensors[0], dim, tensors[1]),)


def _index(op: pt.IndexOp) -> ExternCall:
    dims, index = op.dims.data, torch.ops.aten.index.Tensor

    def call(tensors, symbols) -> tuple:
        x, *indices = tensors
        return (index(x, indices_by_dim(x.dim(), dims, indices)),)

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


def _index_put(op: pt.IndexPutOp) -> ExternCall:
    dims, accumulate = op.dims.data, op.accumulate is not None
    index_put = torch.ops.aten.index_put.default

    def call(tensors, symbols) -> tuple:
        x, *indices, values = tensors
        return (index_put(x, indices_by_dim(x.dim(), dims, indices), values, accumulate),)

    return call


DATA_CALLS: dict[type[Operation], Callable[[Any], ExternCall]] = {
    pt.CatOp: _cat,
    pt.PadOp: _pad,
    pt.GatherOp: _gather,
    pt.IndexOp: _index,
    pt.ScatterAddOp: _scatter_add,
    pt.ScatterReduceOp: _scatter_reduce,
    pt.IndexPutOp: _index_put,
}
"""The data-movement ops' calls, by op class."""
