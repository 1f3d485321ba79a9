"""
Dimension splitting: loop dimensions that addresses divide.

A reshape read through a permute leaves `floordiv` and `mod` of one loop
dimension in the addresses of the op that reads it: a copy from windows
`[3072, 3, 49, 32]` into `[288, 50176]` loads

    in[(d0 floordiv 96) * 1024 + d1 floordiv 49, d0 floordiv 32 mod 3, d1 mod 49, d0 mod 32]

No access is affine in `d0` or `d1`, so nothing can tell along which of them
each access walks memory: a kernel over such a domain reads one tensor with a
stride of 32 elements and the GPU moves a quarter of its bandwidth.

`split_dims` splits each dimension at the divisors that divide it, so that
every address becomes affine in the parts: `d0 = 96 * d2 + 32 * d3 + d4` and
`d1 = 49 * d5 + d6` with `d2 < 3, d3 < 3, d4 < 32, d5 < 1024, d6 < 49`, where
the load reads `in[d2 * 1024 + d5, d3, d6, d4]`. The layout decisions
(`memory_order`, `collapse`, which access is contiguous along which part)
then work on the parts as on any dimensions, and merge those that every
access walks as one again.

A dimension splits at divisors `p1 < p2 < ... < pm` of its size, each
dividing the next; where the divisors do not form such a chain, where a
dimension is read as a value, or where an address stays non-affine in the
parts, nothing splits.

    split_dims([(d0, 6)], [d0 floordiv 3 + 4 * (d0 mod 3)], 1)
      -> parts [(d1, 2), (d2, 3)], d0 = 3 * d1 + d2, addresses [d1 + 4 * d2]
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import sympy

from permalloy.analysis.affine import split_affine
from permalloy.dialects.sym import FloorDiv, parallel_index
from permalloy.lowering.index_algebra import simplify_index


@dataclass(frozen=True)
class Split:
    """The parts of a domain's dimensions and what each split one stands for."""

    dims: list[tuple[sympy.Symbol, sympy.Expr]]
    """The dimensions after splitting, outer to inner: the parts of a split
    dimension in its place, outermost part first."""
    substitution: dict[sympy.Symbol, sympy.Expr]
    """Each split dimension as the sum of its parts times their strides."""
    bounds: dict[sympy.Symbol, sympy.Expr]
    """The largest value of each part, for simplifying addresses."""
    applied: dict[sympy.Expr, sympy.Expr] = field(default_factory=dict, repr=False, compare=False)
    """What `apply` gave for each expression: a kernel's planning resolves
    the same addresses several times."""

    def apply(self, expr: sympy.Expr) -> sympy.Expr:
        """`expr` over the parts, its `floordiv` and `mod` of them simplified."""
        if not self.substitution:
            return expr
        expr = sympy.sympify(expr)
        if expr not in self.applied:
            self.applied[expr] = simplify_index(sympy.expand(expr.xreplace(self.substitution)), self.bounds)
        return self.applied[expr]


def split_dims(
    dims: Sequence[tuple[sympy.Symbol, sympy.Expr]],
    addresses: Sequence[sympy.Expr],
    first_free: int,
    pinned: Iterable[sympy.Symbol] = (),
) -> Split | None:
    """
    Split the dimensions `dims` that `addresses` divide into parts named
    `d<first_free>, d<first_free + 1>, ...`; None when no dimension splits or
    some address stays non-affine in the parts. `pinned` dimensions (read as
    values) never split. The result depends on the arguments alone, and the
    repeated layers of a model plan the same kernels: it is remembered, and
    the same `Split` is returned for the same arguments (read, never changed).
    """
    return _split_dims(
        tuple((var, sympy.sympify(size)) for var, size in dims),
        tuple(sympy.sympify(a) for a in addresses),
        first_free,
        frozenset(pinned),
    )


@functools.lru_cache(maxsize=1 << 10)
def _split_dims(
    dims: tuple[tuple[sympy.Symbol, sympy.Expr], ...],
    addresses: tuple[sympy.Expr, ...],
    first_free: int,
    pinned: frozenset[sympy.Symbol],
) -> Split | None:
    out: list[tuple[sympy.Symbol, sympy.Expr]] = []
    substitution: dict[sympy.Symbol, sympy.Expr] = {}
    bounds: dict[sympy.Symbol, sympy.Expr] = {}
    fresh = first_free
    for var, size in dims:
        points = None if var in pinned else _split_points(var, sympy.sympify(size), addresses)
        if not points:
            out.append((var, size))
            continue
        edges = [sympy.sympify(size), *reversed(points), sympy.Integer(1)]
        parts = []
        for outer, inner in zip(edges, edges[1:]):
            part = parallel_index(fresh)
            fresh += 1
            extent = sympy.cancel(outer / inner)
            parts.append((part, inner, extent))
            bounds[part] = extent - 1
        substitution[var] = sympy.Add(*(stride * part for part, stride, _ in parts))
        out.extend((part, extent) for part, _, extent in parts)
    if not substitution:
        return None
    split = Split(out, substitution, bounds)
    parts = list(bounds)
    for address in addresses:
        rewritten = split.apply(address)
        if rewritten.has(FloorDiv, sympy.Mod) and any(
            split_affine(rewritten, part) is None for part in parts
        ):
            return None
    return split


def _split_points(var: sympy.Symbol, size: sympy.Expr, addresses: Sequence[sympy.Expr]) -> list[sympy.Integer]:
    """The divisors at which `addresses` cut `var`, increasing, each dividing
    the next and the last dividing `size`; empty when they do not chain."""
    points: set[int] = set()
    for address in addresses:
        for node in sympy.preorder_traversal(address):
            if isinstance(node, FloorDiv | sympy.Mod):
                base, divisor = node.args
                unit = _unit(base, var)
                if unit is not None and divisor.is_Integer and int(divisor) > 1:
                    points.add(unit * int(divisor))
    ordered = sorted(points)
    chain = [1, *ordered]
    if any(high % low for low, high in zip(chain, chain[1:])):
        return []
    if ordered and not sympy.cancel(size / ordered[-1]).is_integer:
        return []
    if ordered and sympy.expand(size - ordered[-1]) == 0:
        ordered = ordered[:-1]
    return [sympy.Integer(p) for p in ordered]


def _unit(expr: sympy.Expr, var: sympy.Symbol) -> int | None:
    """How many steps of `var` one step of `expr` takes, where `expr` walks
    `var` with coefficient 1 (plus other terms) or is a `floordiv` of such an
    expression; None otherwise."""
    if var not in expr.free_symbols:
        return None
    affine = split_affine(expr, var)
    if affine is not None:
        return 1 if affine[1] == 1 else None
    terms = sympy.Add.make_args(sympy.expand(expr))
    dependent = [t for t in terms if var in t.free_symbols]
    if len(dependent) == 1 and isinstance(dependent[0], FloorDiv):
        base, divisor = dependent[0].args
        inner = _unit(base, var)
        if inner is not None and divisor.is_Integer:
            return inner * int(divisor)
    return None
