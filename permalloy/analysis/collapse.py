"""
Dimension collapsing: loop dimensions that every access walks as one.

Within a run of loop dimensions (a stage's parallel dimensions, its reduction
dimensions, the rows of a group, the inner dimensions of a stage), dimensions
of size 1 drop out first: their index is 0 in every expression, even where a
body reads it as a value. Then, from the innermost pair outwards, two
neighbours `k, k+1` merge when every address is affine in both with
`coeff_k == coeff_{k+1} * size_{k+1}`, as in any contiguous or uniformly
strided tensor: the inner one survives with the product of the sizes and the
outer one becomes 0 in every expression. Dimensions a body reads as a value
(`loop.index`, *pinned*) never merge. Fewer dimensions mean fewer loops and
fewer divisions to recover indices from a flat position, and short rows that
do not each cost a masked vector chunk.

One choice differs between the targets: with `merge_size_one` (the LLVM
target), dimensions of size 1 take part in merging and only those left over
drop (pinned ones too: their index is 0), so that a size-1 dimension with
another stride keeps its neighbours apart (see `collapse`).

    [d0 in 64, d1 in 3]    a[d0, d1] at 3 * d0 + d1    ->    [d1 in 192], a at d1

`collapse` works on one run and keeps the names of the surviving variables;
`collapse_space` collapses a whole iteration domain (parallel, then
reduction dimensions) and renames the survivors `d0, d1, ...` and
`r0, r1, ...` in order, so that a stage's loop nest reads as its domain:

    before: d0 in [64], d1 in [3]      a[d0, d1] at 3 * d0 + d1
    after:  d0 in [192]                a[d0] at d0
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import sympy

from permalloy.analysis.affine import split_affine
from permalloy.dialects.sym import parallel_index, product, reduction_index


@dataclass
class Axis:
    """Surviving dimensions, outer to inner, and what replaced the others."""

    dims: list[tuple[sympy.Symbol, sympy.Expr]]
    substitution: dict[sympy.Symbol, sympy.Expr] = field(default_factory=dict)

    @property
    def sizes(self) -> list[sympy.Expr]:
        return [size for _, size in self.dims]

    @property
    def variables(self) -> list[sympy.Symbol]:
        return [var for var, _ in self.dims]

    @property
    def numel(self) -> sympy.Expr:
        return sympy.expand(product(self.sizes))


def collapse(
    dims: Sequence[tuple[sympy.Symbol, sympy.Expr]],
    addresses: Sequence[sympy.Expr],
    pinned: Iterable[sympy.Symbol] = (),
    keep_one: bool = False,
    merge_size_one: bool = False,
) -> Axis:
    """
    Drop the dimensions of size 1 of `dims` and merge the neighbours that
    every address walks as one. With `keep_one`, a run whose dimensions all
    have size 1 keeps its outermost one (a reduction keeps a loop).

    With `merge_size_one`, dimensions of size 1 take part in merging like any
    other, and only those left over drop (pinned ones too, their index
    being 0 where a body reads it): a size-1 dimension whose stride is not
    its neighbours' keeps them apart. The LLVM
    target collapses so: a stage over `[s0, 1, s1]` that reads a `[s0, s1]`
    tensor keeps the rows `[s0]` that its row loop shares with reductions over
    those rows, where dropping first would make it one dimension of `s0 * s1`.
    """
    pinned = set(pinned)
    dims = list(dims)
    substitution: dict[sympy.Symbol, sympy.Expr] = {}
    addresses = [sympy.expand(a) for a in addresses]
    if not merge_size_one:
        dims, addresses = _drop_size_one(dims, addresses, substitution, set(), keep_one)
    k = len(dims) - 2
    while k >= 0:
        (outer, outer_size), (inner, inner_size) = dims[k], dims[k + 1]
        if outer not in pinned and inner not in pinned and _mergeable(addresses, outer, inner, inner_size):
            substitution[outer] = sympy.Integer(0)
            dims[k : k + 2] = [(inner, sympy.expand(outer_size * inner_size))]
            addresses = [sympy.expand(a.xreplace({outer: 0})) for a in addresses]
        k -= 1
    if merge_size_one:
        dims, addresses = _drop_size_one(dims, addresses, substitution, set(), keep_one)
    return Axis(dims, substitution)


ORDERING_HINT = 128
"""The value every size symbol takes when `memory_order` compares strides: the
order only decides how fast a kernel walks memory, never what it computes."""


def memory_order(dims: Sequence[tuple[sympy.Symbol, sympy.Expr]], address: sympy.Expr) -> list[tuple[sympy.Symbol, sympy.Expr]]:
    """
    `dims` reordered so that `address` walks memory from the largest stride
    to the smallest, the order in which `collapse` merges neighbours: a
    pointwise stage writing a channels-last `[N, C, H, W]` tensor iterates
    `[N, H, W, C]`, which collapses to one dimension when its reads are
    channels-last too. Dimensions keep their order where the strides tie, and
    `dims` is returned as it is when the address is not affine in each of
    them. Size symbols are compared at `ORDERING_HINT`.
    """
    dims = list(dims)
    strides = []
    for var, _ in dims:
        split = split_affine(address, var)
        if split is None:
            return dims
        coefficient = split[1]
        hint = sympy.sympify(coefficient).xreplace({s: sympy.Integer(ORDERING_HINT) for s in coefficient.free_symbols})
        if not hint.is_number:
            return dims
        strides.append(float(hint))
    order = sorted(range(len(dims)), key=lambda i: -strides[i])
    return [dims[i] for i in order]


def _drop_size_one(
    dims: list[tuple[sympy.Symbol, sympy.Expr]],
    addresses: list[sympy.Expr],
    substitution: dict[sympy.Symbol, sympy.Expr],
    kept: set[sympy.Symbol],
    keep_one: bool,
) -> tuple[list[tuple[sympy.Symbol, sympy.Expr]], list[sympy.Expr]]:
    """`dims` without their size-1 dimensions outside `kept` (each becomes 0 in
    `substitution`), and the addresses without them."""
    dropped = [var for var, size in dims if size == 1 and var not in kept]
    if keep_one and dims and len(dropped) == len(dims):
        dropped = dropped[1:]
    zeros = {var: sympy.Integer(0) for var in dropped}
    substitution.update(zeros)
    return [(v, s) for v, s in dims if v not in zeros], [sympy.expand(a.xreplace(zeros)) for a in addresses]


def _mergeable(addresses: Sequence[sympy.Expr], outer: sympy.Symbol, inner: sympy.Symbol, inner_size: sympy.Expr) -> bool:
    for address in addresses:
        a, b = split_affine(address, outer), split_affine(address, inner)
        if a is None or b is None:
            return False
        if sympy.expand(a[1] - b[1] * inner_size) != 0:
            return False
    return True


@dataclass
class Space:
    """
    An iteration domain after collapsing: its parallel and reduction sizes,
    and the expressions over its loop variables (renamed `d0, ...`, `r0, ...`
    in order) that stand for the given ones.
    """

    parallel: tuple[sympy.Expr, ...]
    reduction: tuple[sympy.Expr, ...]
    addresses: list[sympy.Expr]
    values: list[sympy.Expr]


def collapse_space(
    parallel: Sequence[sympy.Expr],
    reduction: Sequence[sympy.Expr],
    addresses: Sequence[sympy.Expr],
    values: Sequence[sympy.Expr] = (),
    merge_size_one: bool = False,
    row_rank: int = 0,
    ordered_by: sympy.Expr | None = None,
) -> Space:
    """
    Collapse a whole domain: its parallel dimensions, then its reduction
    dimensions (a reduction keeps at least one, of size 1 when all are).
    `addresses` are every address the loops compute, `values` the
    expressions a body reads as values (`loop.index`), whose variables never
    merge; `merge_size_one` as for `collapse`. With `row_rank`, the leading
    `row_rank` parallel dimensions (rows another stage shares) and the
    others collapse apart, never into one another. With `ordered_by` (an
    address, without `row_rank`), the parallel dimensions are first put in
    the order in which it walks memory (`memory_order`): a pointwise stage
    writing a channels-last result iterates its channels innermost.
    """
    pinned = {s for e in values for s in e.free_symbols}
    dims = [(parallel_index(i), s) for i, s in enumerate(parallel)]
    if ordered_by is not None and row_rank == 0:
        dims = memory_order(dims, sympy.expand(ordered_by))
    runs = [dims[:row_rank], dims[row_rank:]] if 0 < row_rank < len(dims) else [dims]
    rows = Axis([])
    walked = list(addresses)
    for run in runs:
        part = collapse(run, walked, pinned, False, merge_size_one)
        rows = Axis(rows.dims + part.dims, {**rows.substitution, **part.substitution})
        walked = [sympy.expand(a.xreplace(part.substitution)) for a in walked]
    reduction_dims = [(reduction_index(j), s) for j, s in enumerate(reduction)]
    reduced = collapse(reduction_dims, walked, pinned, bool(reduction), merge_size_one)
    mapping: dict[sympy.Symbol, sympy.Expr] = {**rows.substitution, **reduced.substitution}
    mapping.update({var: parallel_index(i) for i, var in enumerate(rows.variables)})
    mapping.update({var: reduction_index(j) for j, var in enumerate(reduced.variables)})

    def renamed(exprs: Sequence[sympy.Expr]) -> list[sympy.Expr]:
        return [sympy.expand(sympy.sympify(e).xreplace(mapping)) for e in exprs]

    return Space(tuple(rows.sizes), tuple(reduced.sizes), renamed(addresses), renamed(values))
