"""
Affine forms of index expressions: how an address moves with one loop variable.

An address (an element offset, `sum(index_k * stride_k)` over a tensor's
layout) is *affine* in a loop variable when it is `rest + coefficient * var`
with `rest` free of the variable and `coefficient` an expression of size
symbols only. Every layout decision reads these forms: which dimensions walk
memory as one (`collapse`), along which variable a load is contiguous
(`unit_stride`), which loads of a vector of a variable are gathers
(`gathered`), and how a load reads (`load_form`).

    split_affine(16 * d0 + d1 + 3, d0)   ->  (d1 + 3, 16)
    split_affine(d0 floordiv 2, d0)      ->  None
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from permalloy.dialects.loop import LoadOp
from permalloy.dialects.sym import symbol_kind


def split_affine(expr: sympy.Expr, var: sympy.Symbol) -> tuple[sympy.Expr, sympy.Expr] | None:
    """
    `(rest, coefficient)` with `expr == rest + coefficient * var`, both free of
    `var` and the coefficient a function of size symbols only; None when `expr`
    is not of that form (floordiv or mod of `var`, products of indices).
    """
    expr = sympy.expand(expr)
    rest, dependent = expr.as_independent(var, as_Add=True)
    if dependent == 0:
        return rest, sympy.Integer(0)
    coefficient = dependent.as_coefficient(var)
    if coefficient is None or coefficient.has(var):
        return None
    if any(symbol_kind(s) != "s" for s in coefficient.free_symbols):
        return None
    return rest, coefficient


def unit_stride(address: sympy.Expr, var: sympy.Symbol) -> bool:
    """Whether consecutive values of `var` read consecutive elements at `address`."""
    split = split_affine(address, var)
    return split is not None and split[1] == 1


def gathered(address: sympy.Expr, var: sympy.Symbol) -> bool:
    """Whether a vector of consecutive values of `var` reads `address` with a
    gather: it depends on `var`, but not with a unit stride."""
    return var in address.free_symbols and not unit_stride(address, var)


def is_affine(expr: sympy.Expr) -> bool:
    """Whether `expr` is affine in every loop variable it names and names no index value."""
    symbols = expr.free_symbols
    if any(symbol_kind(s) == "v" for s in symbols):
        return False
    return all(split_affine(expr, s) is not None for s in symbols if symbol_kind(s) in "dr")


@dataclass(frozen=True)
class LoadForm:
    """The form of a load's indices."""

    affine: bool
    """Every index is affine in the loop variables (no floordiv or mod of them)."""
    gather: bool
    """Some index goes through index values computed in the body."""
    masked: bool
    """The load happens only where its mask holds."""


def load_form(load: LoadOp) -> LoadForm:
    """How `load` reads: affine indices, through index values, under a mask."""
    indices = list(load.indices.data)
    return LoadForm(all(is_affine(sympy.sympify(i)) for i in indices), bool(load.index_values), load.mask is not None)
