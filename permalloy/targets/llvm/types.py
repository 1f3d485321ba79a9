"""
Element types of kernels and their LLVM representation.

In registers a value of IR type `t` is an LLVM value of `register_type(t)`
(a vector of it inside vectorized loops); in memory it occupies
`memory_type(t)`. They differ for two types:

- `i1` (torch's bool) is one byte in memory: loads compare the byte with zero,
  stores zero-extend.
- `bf16` has no llvmlite type: it is held as its 16 bits (`i16`), and the few
  operations that touch it (`arith.extf`, `arith.truncf`, and float arithmetic,
  which computes in f32) convert with integer code (round to nearest even, as
  torch does).

`f16` is LLVM's `half`, converted by the hardware (F16C) where the host has it.
"""

from __future__ import annotations

from llvmlite import ir
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

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def is_float(t: Attribute) -> bool:
    return isinstance(t, Float16Type | BFloat16Type | Float32Type | Float64Type)


def is_bf16(t: Attribute) -> bool:
    return isinstance(t, BFloat16Type)


def is_half_like(t: Attribute) -> bool:
    """f16 and bf16: stored narrow, computed in f32."""
    return isinstance(t, Float16Type | BFloat16Type)


def is_unsigned(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED


def is_bool(t: Attribute) -> bool:
    return isinstance(t, IntegerType) and t.width.data == 1


def int_width(t: Attribute) -> int:
    if isinstance(t, IndexType):
        return 64
    assert isinstance(t, IntegerType), t
    return t.width.data


def register_type(t: Attribute) -> ir.Type:
    """The LLVM scalar type holding a value of IR type `t` in registers."""
    if isinstance(t, Float32Type):
        return F32
    if isinstance(t, Float64Type):
        return F64
    if isinstance(t, Float16Type):
        return F16
    if isinstance(t, BFloat16Type):
        return I16
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, IntegerType) and t.width.data in (1, 8, 16, 32, 64):
        return ir.IntType(t.width.data)
    raise UnsupportedKernelError(f"the LLVM target has no support for type {t}")


def memory_type(t: Attribute) -> ir.Type:
    """The LLVM type of one element of IR type `t` in memory."""
    return I8 if is_bool(t) else register_type(t)


def byte_size(t: ir.Type) -> int:
    """Size in bytes of a scalar LLVM type."""
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    return {F16: 2, F32: 4, F64: 8}[t]


def scalar_of(t: ir.Type) -> ir.Type:
    """The element type of a vector type, or the type itself."""
    return t.element if isinstance(t, ir.VectorType) else t


def lanes_of(value: ir.Value) -> int:
    """Number of lanes of a value: 0 for a scalar."""
    return value.type.count if isinstance(value.type, ir.VectorType) else 0


def with_lanes(t: ir.Type, lanes: int) -> ir.Type:
    """`t` as a vector of `lanes` (a scalar when lanes is 0)."""
    return ir.VectorType(t, lanes) if lanes else t


def type_suffix(t: ir.Type) -> str:
    """The suffix of an overloaded intrinsic's name for type `t`: v16f32, i64, p0."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{type_suffix(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    if isinstance(t, ir.PointerType):
        return "p0"
    return {F16: "f16", F32: "f32", F64: "f64"}[t]
