"""
Integer expressions (sympy, from `#sym.expr`) as Triton index arithmetic.

`TritonExpr.text(expr)` writes an expression over loop variables, size symbols
and index values as Triton source, with the names `names` gives. Triton's
integer `//` and `%` truncate towards zero, so `floordiv` and `mod` use them
only where sympy proves both operands non-negative, and call the module's
`_floordiv` helper elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import sympy

from permalloy.dialects.sym import CeilDiv, FloorDiv
from permalloy.targets.triton.types import UnsupportedKernelError


def is_nonnegative(expr: sympy.Expr) -> bool:
    """Whether sympy proves `expr >= 0` (loop indices non-negative, sizes positive)."""
    return bool(sympy.sympify(expr).is_nonnegative)


class TritonExpr:
    """Writes integer expressions as Triton source, naming symbols with `names`."""

    def __init__(self, names: Mapping[str, str] | Callable[[str], str], helpers: set[str]):
        self.lookup = names if callable(names) else names.__getitem__
        self.helpers = helpers

    def text(self, expr: sympy.Expr | int) -> str:
        return self._emit(sympy.sympify(expr))

    def atom(self, expr: sympy.Expr | int) -> str:
        """The expression as an operand of `*`, `//` or `%` (parenthesized if needed)."""
        return self._atom(sympy.sympify(expr))

    def _emit(self, e: sympy.Expr) -> str:
        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            try:
                return self.lookup(e.name)
            except KeyError:
                raise UnsupportedKernelError(f"symbol {e.name} is unbound in a Triton kernel") from None
        if e.is_Add:
            return self._sum(e)
        if e.is_Mul:
            return self._product(e)
        if e.is_Pow and e.exp.is_Integer and int(e.exp) > 0:
            return "(" + " * ".join([self._atom(e.base)] * int(e.exp)) + ")"
        if isinstance(e, FloorDiv | sympy.Mod):
            return self._division(e)
        if isinstance(e, CeilDiv):
            num, den = e.args
            return f"(-{self._division(FloorDiv(-num, den))})"
        if isinstance(e, sympy.Min | sympy.Max):
            function = "tl.minimum" if isinstance(e, sympy.Min) else "tl.maximum"
            args = [self._emit(a) for a in e.args]
            result = args[0]
            for arg in args[1:]:
                result = f"{function}({result}, {arg})"
            return result
        raise UnsupportedKernelError(f"cannot write '{e}' as Triton index arithmetic")

    def _atom(self, e: sympy.Expr) -> str:
        text = self._emit(e)
        return text if e.is_Symbol or (e.is_Integer and int(e) >= 0) or _enclosed(text) else f"({text})"

    def _sum(self, e: sympy.Expr) -> str:
        terms = sorted(e.args, key=lambda t: (bool(t.as_coeff_Mul()[0].is_negative), t.is_Number, sympy.default_sort_key(t)))
        pieces: list[str] = []
        for term in terms:
            coefficient, _ = term.as_coeff_Mul()
            negative = coefficient.is_negative
            text = self._emit(-term if negative else term)
            if not pieces:
                pieces.append(f"-{text}" if negative else text)
            else:
                pieces.append(f" - {text}" if negative else f" + {text}")
        return "(" + "".join(pieces) + ")"

    def _product(self, e: sympy.Expr) -> str:
        coefficient, rest = e.as_coeff_Mul()
        if coefficient == -1:
            return f"(-{self._atom(rest)})"
        factors = [self._atom(f) for f in sympy.Mul.make_args(rest)]
        if coefficient != 1:
            factors.append(self._atom(coefficient))
        return " * ".join(factors)

    def _division(self, e: sympy.Expr) -> str:
        num, den = e.args
        operator = "//" if isinstance(e, FloorDiv) else "%"
        if is_nonnegative(num) and bool(sympy.sympify(den).is_positive):
            return f"({self._atom(num)} {operator} {self._atom(den)})"
        helper = "_floordiv" if isinstance(e, FloorDiv) else "_floormod"
        self.helpers.add(helper)
        return f"{helper}({self._emit(num)}, {self._emit(den)})"


def _enclosed(text: str) -> bool:
    """Whether `text` is one parenthesized group or one call, `(...)` or
    `f(...)`, whose first opening parenthesis closes at its end: then no
    operator binds into it (`(a // 2) * (b // 2)` starts and ends with a
    parenthesis, yet is a product)."""
    start = text.find("(")
    if start < 0 or not text.endswith(")") or not all(c.isalnum() or c in "_." for c in text[:start]):
        return False
    depth = 0
    for position in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[position], 0)
        if depth == 0:
            return position == len(text) - 1
    return False

