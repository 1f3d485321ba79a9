"""
Dimension collapsing: loop dimensions that every access walks as one.

Within a run of loop dimensions (the rows of a group, the inner dimensions of
a stage), two neighbours `k, k+1` merge when every address is affine in both
with `coeff_k == coeff_{k+1} * size_{k+1}`; the inner one survives with the
product of the sizes and the outer one becomes 0 in every expression.
Dimensions of size 1 become 0. Dimensions a body reads as a value
(`loop.index`) are kept. Fewer dimensions mean fewer divisions to recover
indices from a flat position.

    [d0 in 64, d1 in 3]    a[d0, d1] at 3 * d0 + d1    ->    [d1 in 192], a at d1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy

from permalloy.targets.triton.exprs import split_affine


@dataclass
class Axis:
    """Surviving dimensions, outer to inner, and what replaced the others."""

    dims: list[tuple[sympy.Symbol, sympy.Expr]]
    substitution: dict[sympy.Symbol, sympy.Expr] = field(default_factory=dict)

    @property
    def sizes(self) -> list[sympy.Expr]:
        return [size for _, size in self.dims]

    @property
    def numel(self) -> sympy.Expr:
        result = sympy.Integer(1)
        for size in self.sizes:
            result = result * size
        return sympy.expand(result)


def collapse(
    dims: Sequence[tuple[sympy.Symbol, sympy.Expr]],
    addresses: Sequence[sympy.Expr],
    pinned: set[sympy.Symbol],
) -> Axis:
    """Merge mergeable neighbours of `dims` and drop those of size 1."""
    dims = list(dims)
    substitution: dict[sympy.Symbol, sympy.Expr] = {}
    addresses = [sympy.expand(a) for a in addresses]
    for var, size in list(dims):
        if size == 1:
            substitution[var] = sympy.Integer(0)
    dims = [(v, s) for v, s in dims if v not in substitution]
    addresses = [a.xreplace(substitution) for a in addresses]
    k = len(dims) - 2
    while k >= 0:
        (outer, outer_size), (inner, inner_size) = dims[k], dims[k + 1]
        if outer not in pinned and inner not in pinned and _mergeable(addresses, outer, inner, inner_size):
            substitution[outer] = sympy.Integer(0)
            substitution = {v: sympy.expand(e.xreplace({outer: 0})) for v, e in substitution.items()}
            dims[k : k + 2] = [(inner, sympy.expand(outer_size * inner_size))]
            addresses = [sympy.expand(a.xreplace({outer: 0})) for a in addresses]
        k -= 1
    return Axis(dims, substitution)


def _mergeable(addresses: Sequence[sympy.Expr], outer: sympy.Symbol, inner: sympy.Symbol, inner_size: sympy.Expr) -> bool:
    for address in addresses:
        a, b = split_affine(address, outer), split_affine(address, inner)
        if a is None or b is None:
            return False
        if sympy.expand(a[1] - b[1] * inner_size) != 0:
            return False
    return True
