"""
`_pull_multiples` splits an index into a divisor's multiples and the rest.
For an integer divisor and integer coefficients it takes each term's
coefficient apart without sympy's rational functions; this checks that
path against the general one (`sympy.cancel` of each term) on random
indices, and that other indices still take the general path.
"""

from __future__ import annotations

import random

import pytest
import sympy

from permalloy.dialects.sym import FloorDiv, parallel_index
from permalloy.lowering import index_algebra
from permalloy.lowering.index_algebra import _pull_integer_multiples, _pull_multiples


def _general(base: sympy.Expr, divisor: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
    """The general path of `_pull_multiples`, whatever the divisor."""
    whole = sympy.cancel(base / divisor)
    if index_algebra._is_integral_polynomial(whole):
        return sympy.expand(whole), sympy.Integer(0)
    quotient, rest = sympy.Integer(0), sympy.Integer(0)
    for term in sympy.Add.make_args(sympy.expand(base)):
        ratio = sympy.cancel(term / divisor)
        if index_algebra._is_integral_polynomial(ratio):
            quotient += ratio
        else:
            rest += term
    return sympy.expand(quotient), sympy.expand(rest)


def _random_index(generator: random.Random) -> sympy.Expr:
    d = [parallel_index(i) for i in range(4)]
    atoms = [*d, FloorDiv(d[0], 7), sympy.Mod(d[1], 6), d[2] * d[3], d[0] ** 2]
    terms = [generator.choice([1, 2, 3, 4, 6, 8, 12, 48, 96, 1024]) * generator.choice(atoms) for _ in range(4)]
    return sympy.Add(*terms, generator.choice([0, 1, 5, 32, 64]))


@pytest.mark.parametrize("seed", range(40))
def test_integer_multiples_agree_with_the_general_path(seed: int) -> None:
    generator = random.Random(seed)
    base = _random_index(generator)
    divisor = generator.choice([2, 3, 4, 8, 16, 32, 96])
    fast = _pull_integer_multiples(base, divisor)
    assert fast is not None
    assert tuple(sympy.expand(part) for part in fast) == _general(base, sympy.Integer(divisor))
    quotient, rest = fast
    assert sympy.expand(divisor * quotient + rest - base) == 0


def test_other_indices_take_the_general_path() -> None:
    d0, d1 = parallel_index(0), parallel_index(1)
    n = sympy.Symbol("s0", integer=True, positive=True)
    assert _pull_integer_multiples(d0 / 2 + 4 * d1, 4) is None  # a rational coefficient
    assert _pull_integer_multiples(sympy.Max(d0, d1) * 8, 4) is None  # not a monomial
    assert _pull_multiples(8 * n * d0 + d1, 4 * n) == (2 * d0, d1)  # a symbolic divisor
    maximum = sympy.Max(d0, d1)
    assert _pull_multiples(maximum * 8 + 1, sympy.Integer(4)) == (0, maximum * 8 + 1)  # not a polynomial
