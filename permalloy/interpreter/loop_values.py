"""
How the loop interpreter holds scalar values: one torch tensor per SSA value,
holding that value at every point of the iteration domain (or a tensor that
broadcasts to it).

The dtype of a tensor follows the arith type of its value:

    i1          torch.bool
    i8 ... i64  torch.int8 ... torch.int64 (signless: the bits, read as signed)
    index       torch.int64
    f16 ... f64 torch.float16, torch.bfloat16, torch.float32, torch.float64

Signless integers are kept as signed torch integers of their width; an op that
reads them as unsigned widens them to int64 first (`as_unsigned`), and every
integer result is wrapped back to its width (`wrap`), so that arithmetic wraps
around as two's complement, as arith's does.
"""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError

from permalloy.dtypes import torch_dtype

Tensor = torch.Tensor

_INT_DTYPES = {
    1: torch.bool,
    8: torch.int8,
    16: torch.int16,
    32: torch.int32,
    64: torch.int64,
}

_FLOAT_DTYPES: dict[type[Attribute], torch.dtype] = {
    Float16Type: torch.float16,
    BFloat16Type: torch.bfloat16,
    Float32Type: torch.float32,
    Float64Type: torch.float64,
}


def scalar_dtype(scalar_type: Attribute) -> torch.dtype:
    """The torch dtype that holds values of an arith scalar type."""
    if isinstance(scalar_type, IndexType):
        return torch.int64
    if isinstance(scalar_type, IntegerType):
        width = scalar_type.width.data
        if width not in _INT_DTYPES:
            raise InterpretationError(f"integers of width {width} are not supported")
        return _INT_DTYPES[width]
    dtype = _FLOAT_DTYPES.get(type(scalar_type))
    if dtype is None:
        raise InterpretationError(f"scalar type {scalar_type} is not supported")
    return dtype


def width_of(scalar_type: Attribute) -> int:
    """The bit width of an integer or index type (index is 64 bits wide)."""
    if isinstance(scalar_type, IndexType):
        return 64
    assert isinstance(scalar_type, IntegerType), f"{scalar_type} is not an integer"
    return scalar_type.width.data


def is_unsigned(element_type: Attribute) -> bool:
    """Whether an element type is an unsigned integer (ui8)."""
    return (
        isinstance(element_type, IntegerType)
        and element_type.signedness.data == Signedness.UNSIGNED
    )


def as_signed(x: Tensor) -> Tensor:
    """Integer bits read as a signed number, in int64 (i1 true is -1)."""
    if x.dtype == torch.bool:
        return -x.to(torch.int64)
    return x.to(torch.int64)


def as_unsigned(x: Tensor) -> Tensor:
    """
    Integer bits read as an unsigned number, in int64. For 64-bit values this
    is only possible when they are non-negative as signed numbers.
    """
    if x.dtype == torch.bool:
        return x.to(torch.int64)
    if x.dtype == torch.int64:
        if bool((x < 0).any()):
            raise InterpretationError(
                "unsigned 64-bit values of 2**63 or more are not supported"
            )
        return x
    bits = torch.iinfo(x.dtype).bits
    return x.to(torch.int64) & ((1 << bits) - 1)


def wrap(x: Tensor, scalar_type: Attribute) -> Tensor:
    """An int64 tensor wrapped to the width of an integer type (two's complement)."""
    dtype = scalar_dtype(scalar_type)
    if dtype == torch.bool:
        return (x & 1) != 0
    return x.to(dtype)


def load_view(x: Tensor) -> Tensor:
    """A tensor's elements as a loop body holds them: uint8 as int8 bits."""
    if x.dtype == torch.uint8:
        return x.view(torch.int8)
    return x


def store_as(x: Tensor, element_type: Attribute) -> Tensor:
    """Values of a body, in scalar dtype, as elements of `element_type`."""
    dtype = torch_dtype(element_type)
    if x.dtype == dtype:
        return x
    if dtype == torch.uint8 and x.dtype == torch.int8:
        return x.view(torch.uint8)
    raise InterpretationError(
        f"a body value of dtype {x.dtype} cannot be stored as {element_type}"
    )


def check_dtype(x: Tensor, scalar_type: Attribute, what: str) -> Tensor:
    """`x`, after checking that its dtype holds `scalar_type`."""
    expected = scalar_dtype(scalar_type)
    if x.dtype != expected:
        raise InterpretationError(
            f"{what} gave a value of dtype {x.dtype} for type {scalar_type} "
            f"({expected})"
        )
    return x
