"""
Conversions between IR element types as LLVM code: float widths (with bf16
done in integer code), and the memory form of values (bool bytes).
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type
from xdsl.ir import Attribute

from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.types import (
    F32,
    I8,
    I16,
    I32,
    is_bf16,
    is_bool,
    lanes_of,
    register_type,
    with_lanes,
)


def bf16_to_f32(cg: CodeGen, bits: ir.Value) -> ir.Value:
    """Widen bf16 bits (i16) to f32: the bits become the high half."""
    b = cg.builder
    lanes = lanes_of(bits)
    wide = b.zext(bits, with_lanes(I32, lanes))
    return b.bitcast(b.shl(wide, cg.like(wide, 16)), with_lanes(F32, lanes))


def f32_to_bf16(cg: CodeGen, value: ir.Value) -> ir.Value:
    """Round f32 to bf16 bits, to nearest even; NaN becomes the quiet NaN 0x7fc0."""
    b = cg.builder
    lanes = lanes_of(value)
    bits = b.bitcast(value, with_lanes(I32, lanes))
    lsb = b.and_(b.lshr(bits, cg.like(bits, 16)), cg.like(bits, 1))
    rounded = b.add(bits, b.add(lsb, cg.like(bits, 0x7FFF)))
    narrowed = b.trunc(b.lshr(rounded, cg.like(bits, 16)), with_lanes(I16, lanes))
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.select(is_nan, cg.const(I16, 0x7FC0, lanes), narrowed)


def extend_float(cg: CodeGen, value: ir.Value, src: Attribute, dst: Attribute) -> ir.Value:
    """`arith.extf`: a float to a wider float type."""
    if is_bf16(src):
        value = bf16_to_f32(cg, value)
        src = Float32Type()
    if src == dst:
        return value
    return cg.builder.fpext(value, with_lanes(register_type(dst), lanes_of(value)))


def truncate_float(cg: CodeGen, value: ir.Value, src: Attribute, dst: Attribute) -> ir.Value:
    """`arith.truncf`: a float to a narrower float type, rounding to nearest even."""
    lanes = lanes_of(value)
    b = cg.builder
    if isinstance(dst, BFloat16Type | Float16Type) and not isinstance(src, Float32Type):
        # Through f32: f64 -> f16/bf16 has no native conversion on x86.
        value = b.fptrunc(value, with_lanes(F32, lanes))
    if is_bf16(dst):
        return f32_to_bf16(cg, value)
    return b.fptrunc(value, with_lanes(register_type(dst), lanes))


def to_compute(cg: CodeGen, value: ir.Value, t: Attribute) -> ir.Value:
    """A float of type `t` in the type arithmetic on it uses: f16/bf16 widen to f32."""
    if isinstance(t, BFloat16Type | Float16Type):
        return extend_float(cg, value, t, Float32Type())
    return value


def from_compute(cg: CodeGen, value: ir.Value, t: Attribute) -> ir.Value:
    """The inverse of `to_compute`."""
    if isinstance(t, BFloat16Type | Float16Type):
        return truncate_float(cg, value, Float32Type(), t)
    return value


def from_memory(cg: CodeGen, value: ir.Value, t: Attribute) -> ir.Value:
    """A loaded element (or vector) as its register form: bool bytes to i1."""
    if is_bool(t):
        return cg.builder.icmp_unsigned("!=", value, cg.like(value, 0))
    return value


def to_memory(cg: CodeGen, value: ir.Value, t: Attribute) -> ir.Value:
    """A value in the form it is stored: i1 to a 0/1 byte."""
    if is_bool(t):
        return cg.builder.zext(value, with_lanes(I8, lanes_of(value)))
    return value
