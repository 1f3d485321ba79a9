"""
`_pull_multiples` splits an index into a divisor's multiples and the rest.
For an integer divisor and integer-valued terms it takes each term's
coefficient apart (`sym.split_multiples`) without sympy's rational
functions; this checks that path against the general one (`sympy.cancel`
of each term) on random indices, and that other indices still take the
general path.
"""

from __future__ import annotations

import random

import pytest
import sympy

from permalloy.dialects.sym import FloorDiv, parallel_index, split_multiples
from permalloy.lowering import index_algebra
from permalloy.lowering.index_algebra import _pull_multiples


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
    fast = split_multiples(sympy.expand(base), divisor)
    assert fast is not None
    assert _pull_multiples(base, sympy.Integer(divisor)) == fast
    assert tuple(sympy.expand(part) for part in fast) == _general(base, sympy.Integer(divisor))
    quotient, rest = fast
    assert sympy.expand(divisor * quotient + rest - base) == 0


def test_other_indices_take_the_general_path() -> None:
    d0, d1 = parallel_index(0), parallel_index(1)
    n = sympy.Symbol("s0", integer=True, positive=True)
    x = sympy.Symbol("x", real=True)
    assert split_multiples(x + 4 * d1, 4) is None  # a term that is not integer-valued
    assert _pull_multiples(x + 4 * d1, sympy.Integer(4)) == (d1, x)
    assert _pull_multiples(8 * n * d0 + d1, 4 * n) == (2 * d0, d1)  # a symbolic divisor


def test_integer_valued_terms_that_are_not_polynomials_are_multiples_too() -> None:
    """`8 * max(d0, d1)` is a multiple of 4 whatever the maximum is."""
    d0, d1 = parallel_index(0), parallel_index(1)
    maximum = sympy.Max(d0, d1)
    assert _pull_multiples(maximum * 8 + 1, sympy.Integer(4)) == (2 * maximum, 1)
