"""
Size symbols: torch's sympy expressions over Dynamo's symbols, rewritten as
`sym` expressions over `s0, s1, ...`.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch
from torch.utils._sympy import functions as torch_functions

from permalloy.dialects import sym
from permalloy.lowering.import_fx.errors import GraphImportError
from permalloy.lowering.index_algebra import simplify_index


class SymbolTable:
    """
    Names Dynamo's size symbols (`s77`, `s3`) `s0, s1, ...` in the order the
    importer meets them, and converts expressions over them.
    """

    def __init__(self) -> None:
        self.names: dict[str, sympy.Symbol] = {}
        """Dynamo's symbol name -> permalloy's size symbol."""
        self.aliases: dict[sympy.Expr, sympy.Expr] = {}
        """Converted expressions -> the equal expressions the IR uses instead
        (torch's `(s0 + 1) floordiv 2` for a slice's `s0 ceildiv 2`)."""
        self._shape_env: Any = None

    def convert(self, value: int | torch.SymInt | sympy.Expr) -> sympy.Expr:
        """The `sym` expression of an int, a SymInt or a torch sympy expression."""
        if isinstance(value, bool):
            return sympy.Integer(int(value))
        if isinstance(value, int):
            return sympy.Integer(value)
        if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
            self._shape_env = self._shape_env or value.node.shape_env
            value = value.node.expr
        if self._shape_env is not None:
            value = self._shape_env.replace(value)
        converted = sympy.sympify(self._convert(sympy.sympify(value)))
        return converted.xreplace(self.aliases) if self.aliases else converted

    def equal_under_guards(self, a: sympy.Expr, b: sympy.Expr) -> bool:
        """Whether two size expressions are equal for every size this graph
        serves: Dynamo proves it from the guards it checks before each call
        (`(s0 + 1) floordiv 2 == s0 floordiv 2` once it guards that the two
        halves of `x[::2] + x[1::2]` broadcast)."""
        if self._shape_env is None:
            return False
        try:
            equal = self._shape_env._maybe_evaluate_static(  # noqa: SLF001
                sympy.Eq(self._to_torch(a), self._to_torch(b))
            )
        except Exception:  # noqa: BLE001 - an expression Dynamo cannot reason about
            return False
        return bool(equal == sympy.true)

    def _to_torch(self, expr: sympy.Expr) -> sympy.Expr:
        """One of our size expressions over Dynamo's symbols and functions."""
        ranges = getattr(self._shape_env, "var_to_range", {}) or {}
        by_name = {k.name: k for k in ranges}
        theirs = {ours: by_name.get(name) for name, ours in self.names.items()}
        expr = sympy.sympify(expr).xreplace({o: t for o, t in theirs.items() if t is not None})
        expr = expr.replace(
            lambda e: isinstance(e, sym.CeilDiv),
            lambda e: torch_functions.FloorDiv(e.args[0] + e.args[1] - 1, e.args[1]),
        )
        return expr.replace(
            lambda e: isinstance(e, sym.FloorDiv),
            lambda e: torch_functions.FloorDiv(*e.args),
        )

    def lower_bounds(self) -> dict[sympy.Symbol, int]:
        """The smallest value of each size symbol for the sizes this graph
        serves, from Dynamo's value ranges (1 where none is known)."""
        bounds: dict[sympy.Symbol, int] = {}
        ranges = getattr(self._shape_env, "var_to_range", None) or {}
        for theirs, ours in self.names.items():
            lower = next((r.lower for k, r in ranges.items() if k.name == theirs), 1)
            bounds[ours] = int(lower) if getattr(lower, "is_integer", False) else 1
        return bounds

    def alias(self, converted: sympy.Expr, expr: sympy.Expr) -> None:
        """Write `expr` wherever a later conversion gives `converted` (an
        expression equal to it for every value of the symbols, in another form)."""
        self.aliases[converted] = expr

    def symbol(self, torch_symbol: sympy.Symbol) -> sympy.Symbol:
        """permalloy's name for one of Dynamo's symbols."""
        name = torch_symbol.name
        if name.startswith("u"):
            raise GraphImportError(
                f"size '{name}' depends on tensor data (an unbacked symbol, from "
                "nonzero, item or boolean indexing); such sizes are not supported"
            )
        if not name.startswith("s"):
            raise GraphImportError(f"unsupported size symbol '{name}'")
        if name not in self.names:
            self.names[name] = sym.symbol(f"s{len(self.names)}")
        return self.names[name]

    def _convert(self, expr: sympy.Basic) -> sympy.Expr:
        if expr.is_Integer:
            return sympy.Integer(int(expr))
        if expr.is_Symbol:
            return self.symbol(expr)
        if isinstance(expr, torch_functions.CeilToInt) and isinstance(
            expr.args[0], torch_functions.IntTrueDiv
        ):
            return sym.CeilDiv(*(self._convert(a) for a in expr.args[0].args))
        args = [self._convert(a) for a in expr.args] if expr.args else []
        if expr.is_Add:
            return sympy.Add(*args)
        if expr.is_Mul:
            return sympy.Mul(*args)
        return self._convert_function(expr, args)

    def _convert_function(self, expr: sympy.Basic, args: list[sympy.Expr]):
        if isinstance(expr, sympy.Pow | torch_functions.PowByNatural):
            if args[1].is_Integer and int(args[1]) >= 0:
                return args[0] ** int(args[1])
        if isinstance(expr, torch_functions.FloorDiv | torch_functions.CleanDiv):
            return sym.FloorDiv(*args)
        if isinstance(expr, torch_functions.CeilDiv):
            return sym.CeilDiv(*args)
        if isinstance(expr, torch_functions.ModularIndexing):
            base, divisor, modulus = args
            return sym.IntegerMod(sym.FloorDiv(base, divisor), modulus)
        if isinstance(expr, torch_functions.Mod | torch_functions.PythonMod | sympy.Mod):
            return sym.IntegerMod(*args)
        if isinstance(expr, torch_functions.Max | sympy.Max):
            return sympy.Max(*args)
        if isinstance(expr, torch_functions.Min | sympy.Min):
            return sympy.Min(*args)
        if isinstance(expr, torch_functions.Identity):
            return args[0]
        raise GraphImportError(
            f"size expression '{expr}' uses {type(expr).__name__}, which permalloy "
            "cannot represent (supported: +, *, floordiv, ceildiv, mod, min, max)"
        )


def _floor_form(expr: sympy.Expr) -> sympy.Expr:
    """`expr` with each `a ceildiv b` of a positive integer `b` written as
    `(a + b - 1) floordiv b`, the form torch gives such quotients."""
    return expr.replace(
        lambda e: isinstance(e, sym.CeilDiv) and e.args[1].is_Integer and int(e.args[1]) > 0,
        lambda e: sym.FloorDiv(sympy.expand(e.args[0] + e.args[1] - 1), e.args[1]),
    )


def _integer_form(expr: sympy.Expr) -> sympy.Expr:
    """`expr` in floor form with the exact multiples of each divisor taken out
    of its quotients: `(s0 - 4) floordiv 2` is `s0 floordiv 2 - 2`."""
    return simplify_index(_floor_form(sympy.sympify(expr)), {})


def sizes_equal_as_integers(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether two size expressions are equal for every value of the symbols,
    seeing that `a ceildiv b` and `(a + b - 1) floordiv b` are one quotient,
    and so are `(a + k * b) floordiv b` and `a floordiv b + k`."""
    return sympy.simplify(_integer_form(a) - _integer_form(b)) == 0
