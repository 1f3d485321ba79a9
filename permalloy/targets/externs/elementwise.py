"""
Elementwise, generator, reduction and scan ops called from the host program.

A host program runs one of these with torch where its loop form does not
exist (an elementwise op with no scalar form, such as `erfinv` or an integer
`pow`), or where the op makes a tensor from nothing (constants, random
numbers). Each call is its op's torch function, chosen and given its constant
arguments at compile time; result shapes over size symbols are evaluated per
call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from xdsl.ir import Operation

from permalloy.dialects import ptensor as pt
from permalloy.dtypes import torch_dtype
from permalloy.interpreter.ptensor_common import scalar_value
from permalloy.interpreter.ptensor_elementwise import (
    BINARY_FUNCTIONS,
    COMPARE_FUNCTIONS,
    UNARY_FUNCTIONS,
    arange,
    reduce_tensor,
    scan_tensor,
)
from permalloy.targets.externs.calls import ExternCall, shape_function


def _dtype(op: Operation) -> torch.dtype:
    return torch_dtype(pt.tensor_type(op.results[0]).element_type)


def _element_type(op: Operation):
    return pt.tensor_type(op.results[0]).element_type


def _unary(op: pt.UnaryOp) -> ExternCall:
    function = UNARY_FUNCTIONS[op.kind.data]
    return lambda tensors, symbols: (function(tensors[0]),)


def _binary(op: pt.BinaryOp) -> ExternCall:
    function = BINARY_FUNCTIONS[op.kind.data]
    return lambda tensors, symbols: (function(tensors[0], tensors[1]),)


def _compare(op: pt.CompareOp) -> ExternCall:
    function = COMPARE_FUNCTIONS[op.predicate.data]
    return lambda tensors, symbols: (function(tensors[0], tensors[1]),)


def _where(op: pt.WhereOp) -> ExternCall:
    return lambda tensors, symbols: (torch.where(*tensors),)


def _cast(op: pt.CastOp) -> ExternCall:
    dtype = _dtype(op)
    return lambda tensors, symbols: (tensors[0].to(dtype),)


def _full(op: pt.FullOp) -> ExternCall:
    shape, dtype = shape_function(pt.tensor_type(op.result).sizes), _dtype(op)
    value = scalar_value(op.value, _element_type(op))
    return lambda tensors, symbols: (torch.full(shape(symbols), value, dtype=dtype),)


def _constant(op: pt.ConstantOp) -> ExternCall:
    shape, dtype = shape_function(pt.tensor_type(op.result).sizes), _dtype(op)
    values = op.value.get_values()
    return lambda tensors, symbols: (torch.tensor(values, dtype=dtype).reshape(shape(symbols)),)


def _iota(op: pt.IotaOp) -> ExternCall:
    (size,) = pt.tensor_type(op.result).sizes
    count, dtype = shape_function([size]), _dtype(op)
    start = scalar_value(op.start, _element_type(op))
    step = scalar_value(op.step, _element_type(op))
    return lambda tensors, symbols: (arange(start, step, count(symbols)[0], dtype),)


def _rand(op: pt.RandOp) -> ExternCall:
    shape, dtype = shape_function(pt.tensor_type(op.result).sizes), _dtype(op)
    uniform = op.distribution.data == pt.RandomDistribution.UNIFORM
    generate = torch.rand if uniform else torch.randn
    return lambda tensors, symbols: (generate(shape(symbols), dtype=dtype),)


def _reduce(op: pt.ReduceOp) -> ExternCall:
    kind, dims, dtype = op.kind.data, op.dims.data, _dtype(op)
    keepdim = op.keepdim is not None
    return lambda tensors, symbols: (reduce_tensor(kind, tensors[0], dims, keepdim, dtype),)


def _scan(op: pt.ScanOp) -> ExternCall:
    kind, dim, dtype = op.kind.data, op.dim.value.data, _dtype(op)
    return lambda tensors, symbols: (scan_tensor(kind, tensors[0], dim, dtype),)


ELEMENTWISE_CALLS: dict[type[Operation], Callable[[Any], ExternCall]] = {
    pt.UnaryOp: _unary,
    pt.BinaryOp: _binary,
    pt.CompareOp: _compare,
    pt.WhereOp: _where,
    pt.CastOp: _cast,
    pt.FullOp: _full,
    pt.ConstantOp: _constant,
    pt.IotaOp: _iota,
    pt.RandOp: _rand,
    pt.ReduceOp: _reduce,
    pt.ScanOp: _scan,
}
"""The elementwise, generator, reduction and scan ops' calls, by op class."""
