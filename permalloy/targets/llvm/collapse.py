"""
Dimension collapsing: loop dimensions that every access walks as one.

Two adjacent dimensions `k, k+1` of a domain merge into one of size
`size_k * size_{k+1}` when every address the loop computes (loads and result
stores) is affine in both with `coeff_k == coeff_{k+1} * size_{k+1}`, as in any
contiguous or uniformly strided tensor: `[s0, 3]` becomes `[s0 * 3]`, so that
short rows do not each cost a masked vector chunk. Dimensions of size 1 drop
out. Dimensions that a body reads as a value (`loop.index`) stay as they are.

    before: d0 in [64], d1 in [3]      a[d0, d1] at 3 * d0 + d1
    after:  d0 in [192]                a[d0] at d0
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from permalloy.dialects.sym import symbol
from permalloy.targets.llvm.exprs import split_affine


@dataclass
class Domain:
    """Loop sizes and the expressions over loop variables that use them."""

    parallel: list[sympy.Expr]
    reduction: list[sympy.Expr]
    addresses: list[sympy.Expr]  # every address computed with the loop variables
    values: list[sympy.Expr]  # expressions read as values (loop.index)

    def pinned(self) -> set[str]:
        return {s.name for e in self.values for s in e.free_symbols}


def collapse(domain: Domain, keep_one_reduction: bool = True) -> Domain:
    """The domain with mergeable dimensions merged and size-1 dimensions removed."""
    for prefix in ("d", "r"):
        sizes = domain.parallel if prefix == "d" else domain.reduction
        k = len(sizes) - 2
        while k >= 0:
            if _mergeable(domain, prefix, sizes, k):
                domain = _merge(domain, prefix, k)
                sizes = domain.parallel if prefix == "d" else domain.reduction
            k -= 1
        minimum = 1 if prefix == "r" and keep_one_reduction and sizes else 0
        k = len(sizes) - 1
        while k >= 0 and len(sizes) > minimum:
            if sizes[k] == 1 and f"{prefix}{k}" not in domain.pinned():
                domain = _drop(domain, prefix, k)
                sizes = domain.parallel if prefix == "d" else domain.reduction
            k -= 1
    return domain


def _mergeable(domain: Domain, prefix: str, sizes: list[sympy.Expr], k: int) -> bool:
    outer, inner = f"{prefix}{k}", f"{prefix}{k + 1}"
    if {outer, inner} & domain.pinned():
        return False
    for address in domain.addresses:
        a, b = split_affine(address, symbol(outer)), split_affine(address, symbol(inner))
        if a is None or b is None:
            return False
        if sympy.expand(a[1] - b[1] * sizes[k + 1]) != 0:
            return False
    return True


def _renamed(domain: Domain, prefix: str, mapping: dict, sizes: list[sympy.Expr]) -> Domain:
    def apply(exprs):
        return [sympy.expand(e.xreplace(mapping)) for e in exprs]

    parallel, reduction = (sizes, domain.reduction) if prefix == "d" else (domain.parallel, sizes)
    return Domain(list(parallel), list(reduction), apply(domain.addresses), apply(domain.values))


def _merge(domain: Domain, prefix: str, k: int) -> Domain:
    """Dimensions k and k+1 as one dimension k; later ones move down by one."""
    sizes = domain.parallel if prefix == "d" else domain.reduction
    mapping = {symbol(f"{prefix}{k}"): sympy.Integer(0), symbol(f"{prefix}{k + 1}"): symbol(f"{prefix}{k}")}
    for j in range(k + 2, len(sizes)):
        mapping[symbol(f"{prefix}{j}")] = symbol(f"{prefix}{j - 1}")
    merged = [*sizes[:k], sympy.expand(sizes[k] * sizes[k + 1]), *sizes[k + 2 :]]
    return _renamed(domain, prefix, mapping, merged)


def _drop(domain: Domain, prefix: str, k: int) -> Domain:
    """Dimension k (of size 1) removed; later ones move down by one."""
    sizes = domain.parallel if prefix == "d" else domain.reduction
    mapping = {symbol(f"{prefix}{k}"): sympy.Integer(0)}
    for j in range(k + 1, len(sizes)):
        mapping[symbol(f"{prefix}{j}")] = symbol(f"{prefix}{j - 1}")
    return _renamed(domain, prefix, mapping, [*sizes[:k], *sizes[k + 1 :]])
