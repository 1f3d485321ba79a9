"""
Translation of `math` ops to LLVM.

f32 exp, exp2, expm1, log, log2, log10, log1p, tanh and erf are inline
polynomials (see `polynomials`), so they vectorize. Operations with an LLVM
intrinsic that the host computes in registers (sqrt, fabs, floor, fma, ...) use
it. The others, and every f64 transcendental, call the C library's scalar
function once per lane. f16/bf16 operands compute in f32.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import Float32Type, Float64Type
from xdsl.ir import Attribute, Operation

from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.convert import from_compute, to_compute
from permalloy.targets.llvm.polynomials import F32Math
from permalloy.targets.llvm.types import F32, F64, UnsupportedKernelError

POLYNOMIAL = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "erf")

INTRINSIC = {
    "sqrt": "sqrt",
    "absf": "fabs",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "round": "round",
    "roundeven": "roundeven",
    "copysign": "copysign",
    "fma": "fma",
}

LIBM = (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "tanh", "erf",
    "erfc", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
    "cosh", "asinh", "acosh", "atanh", "cbrt",
)  # fmt: skip


def emit_math(cg: CodeGen, op: Operation, args: list[ir.Value]) -> ir.Value:
    """The value of a `math` op's result from its operands' values."""
    name = op.name.removeprefix("math.")
    if name == "absi":
        return cg.intrinsic("abs", [args[0], ir.Constant(ir.IntType(1), 0)])
    t = op.results[0].type
    values = [to_compute(cg, a, t) for a in args]
    return from_compute(cg, float_function(cg, name, values, _compute_type(t)), t)


def _compute_type(t: Attribute) -> Attribute:
    return t if isinstance(t, Float64Type) else Float32Type()


def float_function(cg: CodeGen, name: str, args: list[ir.Value], t: Attribute) -> ir.Value:
    """The math function `name` (`exp`, `log1p`, ...) of f32 or f64 operands of type `t`."""
    b = cg.builder
    is_f32 = isinstance(t, Float32Type)
    if is_f32 and name in POLYNOMIAL:
        return getattr(F32Math(cg), name)(args[0])
    if name in INTRINSIC:
        return cg.intrinsic(INTRINSIC[name], args)
    if name == "rsqrt":
        root = cg.intrinsic("sqrt", args)
        return b.fdiv(cg.like(root, 1.0), root)
    if name == "powf":
        return cg.call_per_lane("powf" if is_f32 else "pow", args, F32 if is_f32 else F64)
    if name in LIBM:
        return cg.call_per_lane(name + "f" if is_f32 else name, args, F32 if is_f32 else F64)
    raise UnsupportedKernelError(f"the LLVM target cannot translate math.{name}")
