"""The index a reshape's result reads in its input (`index_algebra`): group
by group where static sizes allow, the same element as the row-major
position of the whole index gives, with no `floordiv` or `mod` for a
dimension that is split."""

from __future__ import annotations

import itertools

import pytest
import sympy

from permalloy.lowering.index_algebra import delinearize, linearize, reshape_groups, reshape_input_index

RESHAPES = [
    ((2, 3, 4, 4, 5, 4), (2, 3, 16, 20)),  # a patch split
    ((40, 48), (2, 4, 5, 3, 4, 4)),  # patches merged into rows
    ((6, 1), (6,)),
    ((1, 6), (6, 1, 1)),
    ((4, 6), (6, 4)),  # no common boundary: one group
    ((2, 12, 5), (2, 3, 4, 5)),
    ((1,), (1, 1, 1)),
]


@pytest.mark.parametrize("result_sizes, sizes", RESHAPES)
def test_each_element_is_read_where_the_row_major_position_says(result_sizes, sizes):
    symbols = sympy.symbols(f"d0:{len(result_sizes)}", integer=True, nonnegative=True)
    grouped = reshape_input_index(symbols, [sympy.Integer(s) for s in result_sizes], [sympy.Integer(s) for s in sizes])
    for index in itertools.product(*(range(s) for s in result_sizes)):
        values = dict(zip(symbols, index, strict=True))
        expected = delinearize(linearize([sympy.Integer(i) for i in index], result_sizes), sizes)
        assert tuple(int(e.subs(values)) for e in grouped) == tuple(int(e) for e in expected)


def test_groups_are_the_smallest_with_equal_products():
    assert reshape_groups([2, 3, 4, 4, 5, 4], [2, 3, 16, 20]) == [
        (range(0, 1), range(0, 1)),
        (range(1, 2), range(1, 2)),
        (range(2, 4), range(2, 3)),
        (range(4, 6), range(3, 4)),
    ]
    assert reshape_groups([4, 6], [6, 4]) == [(range(0, 2), range(0, 2))]


def test_split_dimensions_read_without_floor_division():
    symbols = sympy.symbols("d0:6", integer=True, nonnegative=True)
    index = reshape_input_index(symbols, [2, 3, 4, 4, 5, 4], [2, 3, 16, 20])
    assert index == (symbols[0], symbols[1], 4 * symbols[2] + symbols[3], 4 * symbols[4] + symbols[5])


@pytest.mark.parametrize("sizes", [(sympy.Symbol("s0", positive=True, integer=True), 4), (0, 4)])
def test_symbolic_or_empty_sizes_take_the_whole_index(sizes):
    assert reshape_groups([sizes[0] * 4], list(sizes)) is None
