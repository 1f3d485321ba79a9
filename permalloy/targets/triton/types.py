"""
Element types of loop IR as Triton types, and typed constants.

Bodies compute on signless integers (`ui8` memory is read as `i8`), so a
tensor's *memory* type and its *value* type can differ: `memory_dtype` is what
`tl.load` gives and `tl.store` takes, `value_dtype` what body ops compute on.
"""

from __future__ import annotations

import math

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

from permalloy.analysis.kernel import UnsupportedKernelError  # noqa: F401 - the name every module here raises


_FLOATS = {Float16Type: "tl.float16", BFloat16Type: "tl.bfloat16", Float32Type: "tl.float32", Float64Type: "tl.float64"}


def value_dtype(t: Attribute) -> str:
    """The Triton dtype a body value of type `t` has (signless integers)."""
    for cls, name in _FLOATS.items():
        if isinstance(t, cls):
            return name
    if isinstance(t, IndexType):
        return "tl.int64"
    if isinstance(t, IntegerType):
        return f"tl.int{t.width.data}"
    raise UnsupportedKernelError(f"the Triton target has no type for {t}")


def memory_dtype(t: Attribute) -> str:
    """The Triton dtype of a tensor element in memory (unsigned stays unsigned)."""
    if isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED:
        return f"tl.uint{t.width.data}"
    return value_dtype(t)


def is_float_dtype(dtype: str) -> bool:
    return dtype.startswith("tl.float") or dtype == "tl.bfloat16"


def is_bool_dtype(dtype: str) -> bool:
    return dtype == "tl.int1"


def int_width(dtype: str) -> int:
    """The width of an integer dtype (`tl.int8` -> 8)."""
    return int(dtype.removeprefix("tl.uint").removeprefix("tl.int"))


def unsigned(dtype: str) -> str:
    """The unsigned integer dtype of the same width."""
    return f"tl.uint{int_width(dtype)}"


def float_width(dtype: str) -> int:
    return 16 if dtype in ("tl.float16", "tl.bfloat16") else int(dtype.removeprefix("tl.float"))


def float_constant(value: float, dtype: str) -> str:
    """A typed float constant; non-finite values are spelled `float("-inf")`
    and the like, which Triton's compiler and its interpreter both read.
    Negative zero is a product (Triton 3.6 makes every zero fill positive)."""
    if value == 0 and math.copysign(1.0, value) < 0:
        return f"(tl.full([], -1.0, {dtype}) * 0.0)"
    if math.isfinite(value):
        return f"tl.full([], {value!r}, {dtype})"
    return f'tl.full([], float("{value!r}"), {dtype})'


def int_constant(value: int, dtype: str) -> str:
    """A typed integer constant (i1 from its lowest bit)."""
    if dtype == "tl.int1":
        return f"tl.full([], {value & 1}, tl.int1)"
    width = int_width(dtype)
    value &= (1 << width) - 1
    if value >= 1 << (width - 1):
        value -= 1 << width
    return f"tl.full([], {value}, {dtype})"


def identity_value(dtype: str, which: str) -> str:
    """A typed constant: `zero`, `one`, `lowest` or `highest` of `dtype`."""
    if which in ("zero", "one"):
        number = 0 if which == "zero" else 1
        return float_constant(float(number), dtype) if is_float_dtype(dtype) else int_constant(number, dtype)
    if is_float_dtype(dtype):
        return float_constant(-math.inf if which == "lowest" else math.inf, dtype)
    if dtype.startswith("tl.uint"):
        width = int_width(dtype)
        return f"tl.full([], {0 if which == 'lowest' else (1 << width) - 1}, {dtype})"
    width = int_width(dtype)
    return int_constant(-(1 << (width - 1)) if which == "lowest" else (1 << (width - 1)) - 1, dtype)


TORCH_DTYPES = {
    "tl.float16": "torch.float16",
    "tl.bfloat16": "torch.bfloat16",
    "tl.float32": "torch.float32",
    "tl.float64": "torch.float64",
    "tl.int1": "torch.bool",
    "tl.int8": "torch.int8",
    "tl.uint8": "torch.uint8",
    "tl.int16": "torch.int16",
    "tl.int32": "torch.int32",
    "tl.int64": "torch.int64",
}
"""The torch dtype of each memory dtype, for temporaries the launcher allocates."""


def is_unsigned(t: Attribute) -> bool:
    """Whether an element type is an unsigned integer (`ui8`)."""
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED
