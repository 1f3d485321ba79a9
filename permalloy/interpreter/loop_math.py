"""
`math` semantics on tensors of scalar values, for loop bodies.

Float functions are torch's functions of the same meaning, computed in the
operand's dtype. `math.round` rounds halves away from zero and
`math.roundeven` to even; `math.fma` is `a * b + c` with two roundings.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects import math as mathd
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl
from xdsl.ir import Operation

from permalloy.interpreter.loop_values import as_signed, check_dtype, width_of, wrap

Tensor = torch.Tensor


def _math_impl(op_type: type[Operation], function: Callable[..., Tensor]):
    """A math op applied as a torch function of its operands."""

    @impl(op_type)
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return (check_dtype(function(*args), op.results[0].type, op.name),)

    return run


def _int_impl(op_type: type[Operation], function: Callable[..., Tensor]):
    """A math op on integers: computed on int64 and wrapped to the width."""

    @impl(op_type)
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        result_type = op.results[0].type
        value = function(*(as_signed(a) for a in args), width_of(result_type))
        return (check_dtype(wrap(value, result_type), result_type, op.name),)

    return run


def _round_half_away(x: Tensor) -> Tensor:
    whole = torch.trunc(x)
    fraction = x - whole
    return torch.where(fraction.abs() >= 0.5, whole + torch.sign(x), whole)


def _cbrt(x: Tensor) -> Tensor:
    return torch.sign(x) * x.abs().pow(1.0 / 3.0)


def _fpowi(x: Tensor, n: Tensor) -> Tensor:
    return torch.pow(x, as_signed(n).to(x.dtype))


def _fma(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    return a * b + c


def _bits(x: Tensor, width: int) -> Tensor:
    """The bits of `x`, lowest first, along a new last dimension."""
    positions = torch.arange(width, dtype=torch.int64)
    return torch.bitwise_right_shift(x.unsqueeze(-1), positions) & 1


def _ctpop(x: Tensor, width: int) -> Tensor:
    return _bits(x, width).sum(-1)


def _ctlz(x: Tensor, width: int) -> Tensor:
    bits = _bits(x, width)
    positions = torch.arange(1, width + 1, dtype=torch.int64)
    return width - (bits * positions).amax(-1)


def _cttz(x: Tensor, width: int) -> Tensor:
    bits = _bits(x, width)
    positions = torch.arange(width, 0, -1, dtype=torch.int64)
    return width - (bits * positions).amax(-1)


def _absi(x: Tensor, width: int) -> Tensor:
    return x.abs()


def _ipowi(x: Tensor, n: Tensor, width: int) -> Tensor:
    return torch.pow(x, n)


class MathFunctions(InterpreterFunctions):
    """The ops of the math dialect."""

    run_absf = _math_impl(mathd.AbsFOp, torch.abs)
    run_acos = _math_impl(mathd.AcosOp, torch.acos)
    run_acosh = _math_impl(mathd.AcoshOp, torch.acosh)
    run_asin = _math_impl(mathd.AsinOp, torch.asin)
    run_asinh = _math_impl(mathd.AsinhOp, torch.asinh)
    run_atan = _math_impl(mathd.AtanOp, torch.atan)
    run_atanh = _math_impl(mathd.AtanhOp, torch.atanh)
    run_atan2 = _math_impl(mathd.Atan2Op, torch.atan2)
    run_cbrt = _math_impl(mathd.CbrtOp, _cbrt)
    run_ceil = _math_impl(mathd.CeilOp, torch.ceil)
    run_copysign = _math_impl(mathd.CopySignOp, torch.copysign)
    run_cos = _math_impl(mathd.CosOp, torch.cos)
    run_cosh = _math_impl(mathd.CoshOp, torch.cosh)
    run_erf = _math_impl(mathd.ErfOp, torch.erf)
    run_exp = _math_impl(mathd.ExpOp, torch.exp)
    run_exp2 = _math_impl(mathd.Exp2Op, torch.exp2)
    run_expm1 = _math_impl(mathd.ExpM1Op, torch.expm1)
    run_floor = _math_impl(mathd.FloorOp, torch.floor)
    run_fma = _math_impl(mathd.FmaOp, _fma)
    run_fpowi = _math_impl(mathd.FPowIOp, _fpowi)
    run_log = _math_impl(mathd.LogOp, torch.log)
    run_log10 = _math_impl(mathd.Log10Op, torch.log10)
    run_log1p = _math_impl(mathd.Log1pOp, torch.log1p)
    run_log2 = _math_impl(mathd.Log2Op, torch.log2)
    run_powf = _math_impl(mathd.PowFOp, torch.pow)
    run_round = _math_impl(mathd.RoundOp, _round_half_away)
    run_roundeven = _math_impl(mathd.RoundEvenOp, torch.round)
    run_rsqrt = _math_impl(mathd.RsqrtOp, torch.rsqrt)
    run_sin = _math_impl(mathd.SinOp, torch.sin)
    run_sinh = _math_impl(mathd.SinhOp, torch.sinh)
    run_sqrt = _math_impl(mathd.SqrtOp, torch.sqrt)
    run_tan = _math_impl(mathd.TanOp, torch.tan)
    run_tanh = _math_impl(mathd.TanhOp, torch.tanh)
    run_trunc = _math_impl(mathd.TruncOp, torch.trunc)
    run_absi = _int_impl(mathd.AbsIOp, _absi)
    run_ipowi = _int_impl(mathd.IPowIOp, _ipowi)
    run_ctlz = _int_impl(mathd.CountLeadingZerosOp, _ctlz)
    run_cttz = _int_impl(mathd.CountTrailingZerosOp, _cttz)
    run_ctpop = _int_impl(mathd.CtPopOp, _ctpop)
