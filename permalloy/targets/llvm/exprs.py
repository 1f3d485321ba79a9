"""
Integer expressions (sympy, from `#sym.expr`) as LLVM i64 code.

`emit_expr` evaluates an expression given the LLVM values of its symbols
(scalars, or vectors of i64 for symbols that vary across the lanes of a
vectorized loop).
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy
from llvmlite import ir

from permalloy.dialects.sym import CeilDiv, FloorDiv
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.types import I64, UnsupportedKernelError


def emit_expr(cg: CodeGen, expr: sympy.Expr, env: Mapping[str, ir.Value]) -> ir.Value:
    """The i64 value (scalar or vector) of `expr`, symbols looked up in `env`."""
    return _Emitter(cg, env).emit(sympy.sympify(expr))


class _Emitter:
    def __init__(self, cg: CodeGen, env: Mapping[str, ir.Value]):
        self.cg = cg
        self.env = env

    def emit(self, e: sympy.Expr) -> ir.Value:
        b = self.cg.builder
        if e.is_Integer:
            return I64(int(e))
        if e.is_Symbol:
            try:
                return self.env[e.name]
            except KeyError:
                raise UnsupportedKernelError(f"symbol {e.name} is unbound here") from None
        if e.is_Add:
            return self._fold(e.args, b.add)
        if e.is_Mul:
            return self._fold(e.args, b.mul)
        if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
            return self._fold([e.base] * int(e.exp), b.mul)
        if isinstance(e, FloorDiv):
            return floor_div(self.cg, *self._args(e))
        if isinstance(e, CeilDiv):
            num, den = self._args(e)
            zero = self.cg.like(num, 0)
            return b.sub(zero, floor_div(self.cg, b.sub(zero, num), den))
        if isinstance(e, sympy.Mod):
            num, den = self._args(e)
            return b.sub(num, b.mul(den, floor_div(self.cg, num, den)))
        if isinstance(e, sympy.Min | sympy.Max):
            op = "<" if isinstance(e, sympy.Min) else ">"
            values = [self.emit(a) for a in e.args]
            result = values[0]
            for v in values[1:]:
                result, v = self.cg.match(result, v)
                result = b.select(b.icmp_signed(op, result, v), result, v)
            return result
        raise UnsupportedKernelError(f"cannot translate the index expression '{e}'")

    def _args(self, e: sympy.Expr) -> list[ir.Value]:
        return self.cg.match(*(self.emit(a) for a in e.args))

    def _fold(self, args, op) -> ir.Value:
        values = [self.emit(a) for a in args]
        result = values[0]
        for v in values[1:]:
            result, v = self.cg.match(result, v)
            result = op(result, v)
        return result


def floor_div(cg: CodeGen, num: ir.Value, den: ir.Value) -> ir.Value:
    """Division rounding towards negative infinity (Python's `//`)."""
    b = cg.builder
    num, den = cg.match(num, den)
    if isinstance(den, ir.Constant) and not isinstance(den.type, ir.VectorType):
        if int(den.constant) > 0 and (int(den.constant) & (int(den.constant) - 1)) == 0:
            shift = int(den.constant).bit_length() - 1
            return b.ashr(num, I64(shift))
    quotient = b.sdiv(num, den)
    remainder = b.srem(num, den)
    zero = cg.like(num, 0)
    inexact = b.icmp_signed("!=", remainder, zero)
    signs_differ = b.icmp_signed("<", b.xor(remainder, den), zero)
    adjust = b.and_(inexact, signs_differ)
    return b.sub(quotient, b.zext(adjust, quotient.type))
