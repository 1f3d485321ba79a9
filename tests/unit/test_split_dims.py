"""Splitting loop dimensions at the divisors their addresses apply (`analysis.split_dims`)."""

from __future__ import annotations

import sympy

from permalloy.analysis.split_dims import split_dims
from permalloy.dialects.sym import FloorDiv, symbol

d0, d1, s0 = symbol("d0"), symbol("d1"), symbol("s0")


def test_windows_read_through_a_permute_split_into_affine_parts():
    window = (FloorDiv(d0, 96) * 4816896 + FloorDiv(d1, 49) * 4704 + sympy.Mod(d0, 32)
              + sympy.Mod(d1, 49) * 32 + sympy.Mod(FloorDiv(d0, 32), 3) * 1568)  # fmt: skip
    split = split_dims([(d0, 288), (d1, 50176)], [window, d0 * 50176 + d1], 2)
    assert split is not None
    parts = [symbol(f"d{i}") for i in range(2, 7)]
    assert split.dims == list(zip(parts, [3, 3, 32, 1024, 49]))
    p2, p3, p4, p5, p6 = parts
    assert split.substitution == {d0: 96 * p2 + 32 * p3 + p4, d1: 49 * p5 + p6}
    assert split.apply(window) == 4816896 * p2 + 1568 * p3 + p4 + 4704 * p5 + 32 * p6


def test_a_size_symbol_splits_when_the_divisor_divides_it():
    split = split_dims([(d0, 49 * s0)], [FloorDiv(d0, 49) + 100 * sympy.Mod(d0, 49)], 1)
    assert split is not None and split.dims == [(symbol("d1"), s0), (symbol("d2"), 49)]
    assert split_dims([(d0, s0)], [FloorDiv(d0, 49)], 1) is None


def test_divisors_that_do_not_chain_or_values_read_leave_dimensions_whole():
    assert split_dims([(d0, 12)], [FloorDiv(d0, 4) + sympy.Mod(d0, 3)], 1) is None
    assert split_dims([(d0, 12)], [FloorDiv(d0, 4)], 1, pinned={d0}) is None
    assert split_dims([(d0, 12), (d1, 5)], [d0 * 5 + d1], 2) is None
