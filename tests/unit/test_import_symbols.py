"""Tests of the conversion of torch's size expressions into `sym` expressions."""

from __future__ import annotations

import pytest
import sympy
from torch.utils._sympy import functions as torch_functions

from permalloy.dialects import sym
from permalloy.dialects.sym import format_expr
from permalloy.lowering.import_fx import GraphImportError
from permalloy.lowering.import_fx.symbols import SymbolTable


def dynamo_symbol(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, positive=True)


S77, S3 = dynamo_symbol("s77"), dynamo_symbol("s3")


def converted(expr) -> str:
    table = SymbolTable()
    table.convert(S77)
    table.convert(S3)
    return format_expr(table.convert(expr))


def test_symbols_are_numbered_in_order_of_appearance() -> None:
    table = SymbolTable()
    assert table.convert(S77) == sym.symbol("s0")
    assert table.convert(S3) == sym.symbol("s1")
    assert table.convert(S77) == sym.symbol("s0")
    assert table.names == {"s77": sym.symbol("s0"), "s3": sym.symbol("s1")}


def test_integers_stay_integers() -> None:
    assert SymbolTable().convert(7) == sympy.Integer(7)


@pytest.mark.parametrize(
    "expr, expected",
    [
        (2 * S77 + S3 - 1, "s0 * 2 + s1 - 1"),
        (S77 * S3, "s0 * s1"),
        (S77**2, "s0 * s0"),
        (torch_functions.FloorDiv(S77, 2), "s0 floordiv 2"),
        (torch_functions.CleanDiv(S77 * 4, 2), "s0 * 2"),
        (torch_functions.CeilDiv(S77, 3), "(s0 + 2) floordiv 3"),
        (torch_functions.CeilToInt(torch_functions.IntTrueDiv(S77, 3)), "s0 ceildiv 3"),
        (torch_functions.ModularIndexing(S77, 2, 4), "s0 floordiv 2 mod 4"),
        (torch_functions.PythonMod(S77, 3), "s0 mod 3"),
        (torch_functions.Mod(S77, 5), "s0 mod 5"),
        (torch_functions.Max(S77, S3), "max(s0, s1)"),
        (torch_functions.Min(S77, 4), "min(4, s0)"),
        (torch_functions.PowByNatural(S3, 2), "s1 * s1"),
    ],
)
def test_torch_functions_become_sym_expressions(expr, expected: str) -> None:
    assert converted(expr) == expected


def test_unbacked_symbols_are_rejected_clearly() -> None:
    unbacked = sympy.Symbol("u0", integer=True)
    with pytest.raises(GraphImportError, match="u0.*depends on tensor data"):
        SymbolTable().convert(unbacked + 1)


def test_float_size_expressions_are_rejected_clearly() -> None:
    with pytest.raises(GraphImportError, match="ToFloat"):
        SymbolTable().convert(torch_functions.ToFloat(S77))


def test_floordiv_by_an_integer_divides_exactly_divisible_sums_at_once():
    """A floordiv by an integer that divides every coefficient is the exact
    quotient; otherwise it stays, as when sympy cancels the quotient."""
    from permalloy.dialects.sym import FloorDiv

    d0, d1, s0 = sympy.symbols("d0 d1 s0", integer=True, nonnegative=True)
    assert FloorDiv(8 * d0 + 16 * d1 + 24, 8) == d0 + 2 * d1 + 3
    assert FloorDiv(8 * s0 * d0, 4) == 2 * s0 * d0
    assert FloorDiv(8 * d0 + d1, 8) == FloorDiv(8 * d0 + d1, 8, evaluate=False)
    assert FloorDiv(6 * FloorDiv(d0, 3), 2) == 3 * FloorDiv(d0, 3)
    x = sympy.Symbol("x")  # not known to be an integer: the general path, which does not divide
    assert isinstance(FloorDiv(2 * x, 2), FloorDiv)


def test_a_product_with_a_mod_by_the_same_divisor_keeps_its_mod() -> None:
    """sympy 1.14 evaluates `Mod(2 * Mod(x, 7), 7)` as `2 * Mod(x, 7)`;
    permalloy's `mod` gives the remainder, also when a substitution makes
    that product."""
    from permalloy.dialects.sym import IntegerMod, parallel_index

    d0, d1 = parallel_index(0), parallel_index(1)
    direct = IntegerMod(2 * IntegerMod(d1, 7), 7)
    substituted = IntegerMod(d0, 7).subs(d0, 2 * IntegerMod(d1, 7) + 7)
    for expr in (direct, substituted):
        assert [int(expr.subs(d1, v)) for v in range(14)] == [(2 * v) % 7 for v in range(14)]
    assert IntegerMod(d1 + 7, 7) == IntegerMod(d1, 7) and IntegerMod(14, 7) == 0
