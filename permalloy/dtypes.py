"""Mapping between torch dtypes and the element types of permalloy's IR."""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

_TORCH_TO_IR: dict[torch.dtype, Attribute] = {
    torch.float16: Float16Type(),
    torch.bfloat16: BFloat16Type(),
    torch.float32: Float32Type(),
    torch.float64: Float64Type(),
    torch.bool: IntegerType(1),
    torch.int8: IntegerType(8),
    torch.uint8: IntegerType(8, Signedness.UNSIGNED),
    torch.int16: IntegerType(16),
    torch.int32: IntegerType(32),
    torch.int64: IntegerType(64),
}

_IR_TO_TORCH: dict[Attribute, torch.dtype] = {v: k for k, v in _TORCH_TO_IR.items()}


class UnsupportedDtypeError(ValueError):
    """A dtype that the IR has no element type for (complex, float8, ...)."""


def element_type(dtype: torch.dtype) -> Attribute:
    """The IR element type of a torch dtype."""
    try:
        return _TORCH_TO_IR[dtype]
    except KeyError:
        raise UnsupportedDtypeError(
            f"dtype {dtype} is not supported; supported dtypes: "
            + ", ".join(str(d) for d in _TORCH_TO_IR)
        ) from None


def torch_dtype(element: Attribute) -> torch.dtype:
    """The torch dtype of an IR element type."""
    try:
        return _IR_TO_TORCH[element]
    except KeyError:
        raise UnsupportedDtypeError(f"element type {element} has no torch dtype") from None


def is_supported(dtype: torch.dtype) -> bool:
    return dtype in _TORCH_TO_IR
