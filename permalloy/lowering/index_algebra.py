"""
Index algebra for view elimination.

A view maps an index of its result to an index of its input. Composing these
maps from a reader down to the tensor that owns the data gives the index
expression of the reader's load. Reshapes introduce `floordiv` and `mod`, which
`simplify_index` removes again when the ranges of the loop indices allow it, so
that a reshape of a reshape, or a reshape of a permute, reads with the simplest
expression there is. A reshape of static sizes maps each group of dimensions
whose sizes have equal products on its own (`reshape_groups`): a split
dimension reads a sum of its parts and needs no simplifying, where the row-major
position of the whole index made every dimension a `floordiv` and `mod` of all
of them (a patch gather of six dimensions took `materialize-views` 0.46 s).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import sympy

from permalloy.dialects.ptensor import (
    AsStridedOp,
    ExpandOp,
    PermuteOp,
    ReshapeOp,
    SelectOp,
    SliceOp,
    SqueezeOp,
    TensorType,
    UnsqueezeOp,
)
from permalloy.dialects.sym import FloorDiv, IntegerMod, split_multiples, symbol_kind
from xdsl.ir import Operation

Index = tuple[sympy.Expr, ...]


def row_major_strides(sizes: Sequence[sympy.Expr]) -> list[sympy.Expr]:
    """Strides, in elements, of a dense row-major tensor of `sizes`."""
    strides: list[sympy.Expr] = []
    running: sympy.Expr = sympy.Integer(1)
    for size in reversed(sizes):
        strides.append(running)
        running = running * size
    return list(reversed(strides))


def linearize(index: Sequence[sympy.Expr], sizes: Sequence[sympy.Expr]) -> sympy.Expr:
    """The row-major position of `index` in a tensor of `sizes`."""
    return sympy.expand(
        sum((i * s for i, s in zip(index, row_major_strides(sizes))), sympy.Integer(0))
    )


def delinearize(flat: sympy.Expr, sizes: Sequence[sympy.Expr]) -> Index:
    """The index of row-major position `flat` in a tensor of `sizes`. An empty
    tensor has no positions: its index is all zeros (never read), where
    dividing by its strides would divide by zero.

    Building the `floordiv` and `mod` terms costs sympy most of a reshape's
    lowering; the layers of a model repeat the same reshapes, so the result
    is remembered per (position, sizes)."""
    return _delinearize(sympy.sympify(flat), tuple(sympy.sympify(s) for s in sizes))


def integer_mod(value: sympy.Expr, divisor: sympy.Expr) -> sympy.Expr:
    """`Mod(value, divisor)` of integer expressions, which stays one: where
    sympy's evaluation would take a common factor out of a size expression
    (`Mod(d0 * k**2, k)` as `k * Mod(d0 * k**2 / k, 1)`, with `k` a `floordiv`
    it cannot tell is an integer), it is `0` if `divisor` divides `value`
    and the Mod unevaluated otherwise."""
    result = IntegerMod(value, divisor)
    if _is_integer_expression(result):
        return result
    if _is_integral_polynomial(sympy.cancel(value / divisor)):
        return sympy.Integer(0)
    return IntegerMod(value, divisor, evaluate=False)


def _is_integer_expression(expr: sympy.Expr) -> bool:
    """Whether `expr` has no fraction in it (no negative power, no
    non-integer rational)."""
    return not any(
        (node.is_Pow and node.exp.is_negative) or (node.is_Rational and not node.is_Integer)
        for node in sympy.preorder_traversal(expr)
    )


@functools.lru_cache(maxsize=1 << 12)
def _delinearize(flat: sympy.Expr, sizes: tuple[sympy.Expr, ...]) -> Index:
    if any(size == 0 for size in sizes):
        return tuple(sympy.Integer(0) for _ in sizes)
    result: list[sympy.Expr] = []
    for position, stride in enumerate(row_major_strides(sizes)):
        quotient = FloorDiv(flat, stride)
        result.append(quotient if position == 0 else integer_mod(quotient, sizes[position]))
    return tuple(result)


def reshape_input_index(index: Index, result_sizes: Sequence[sympy.Expr], sizes: Sequence[sympy.Expr]) -> Index:
    """The index of a reshape's input of `sizes` that `index` of its result
    of `result_sizes` reads: group by group where static sizes fall into
    groups of equal products (`reshape_groups`), so that a split dimension
    reads the linear combination of its parts and a merged one the
    `floordiv` and `mod` of its own index alone; through the row-major
    position of the whole index otherwise."""
    groups = reshape_groups(result_sizes, sizes)
    if groups is None:
        return delinearize(linearize(index, result_sizes), sizes)
    source: list[sympy.Expr] = []
    for results, inputs in groups:
        flat = linearize(index[results.start : results.stop], result_sizes[results.start : results.stop])
        source.extend(delinearize(flat, sizes[inputs.start : inputs.stop]))
    return tuple(source)


def reshape_groups(result_sizes: Sequence[sympy.Expr], sizes: Sequence[sympy.Expr]) -> list[tuple[range, range]] | None:
    """Consecutive dimensions of a reshape's result and input whose sizes
    have equal products, the smallest such groups in order; None where a
    size is symbolic or zero (the whole index is then one group)."""
    if not all(isinstance(v, (int, sympy.Integer)) and int(v) > 0 for v in (*result_sizes, *sizes)):
        return None
    result_sizes, sizes = [int(v) for v in result_sizes], [int(v) for v in sizes]
    groups = []
    i = j = 0
    while i < len(result_sizes) or j < len(sizes):
        start_i, start_j = i, j
        result_product = input_product = 1
        if i < len(result_sizes):
            result_product, i = result_sizes[i], i + 1
        if j < len(sizes):
            input_product, j = sizes[j], j + 1
        while result_product != input_product:
            if result_product < input_product and i < len(result_sizes):
                result_product, i = result_product * result_sizes[i], i + 1
            elif input_product < result_product and j < len(sizes):
                input_product, j = input_product * sizes[j], j + 1
            else:
                return None
        groups.append((range(start_i, i), range(start_j, j)))
    return groups


def view_input_index(op: Operation, index: Index) -> Index:
    """The index of a view's input that its result's `index` reads."""
    source_type = op.operands[0].type
    result_type = op.results[0].type
    assert isinstance(source_type, TensorType) and isinstance(result_type, TensorType)
    sizes = source_type.sizes
    if isinstance(op, PermuteOp):
        source_index: list[sympy.Expr] = [sympy.Integer(0)] * len(index)
        for position, dim in enumerate(op.dims.data):
            source_index[dim] = index[position]
        return tuple(source_index)
    if isinstance(op, ExpandOp):
        offset = result_type.rank - source_type.rank
        return tuple(
            sympy.Integer(0) if size == 1 else index[offset + k]
            for k, size in enumerate(sizes)
        )
    if isinstance(op, SliceOp):
        dim = op.dim.value.data
        step = op.step.value.data
        changed = list(index)
        changed[dim] = op.start.expr + index[dim] * step
        return tuple(changed)
    if isinstance(op, SelectOp):
        dim = op.dim.value.data
        return (*index[:dim], op.index.expr, *index[dim:])
    if isinstance(op, SqueezeOp):
        result = list(index)
        for dim in op.dims.data:
            result.insert(dim, sympy.Integer(0))
        return tuple(result)
    if isinstance(op, UnsqueezeOp):
        dim = op.dim.value.data
        return (*index[:dim], *index[dim + 1 :])
    if isinstance(op, ReshapeOp):
        return reshape_input_index(index, result_type.sizes, sizes)
    if isinstance(op, AsStridedOp):
        flat = op.offset.expr + sum(
            (i * s for i, s in zip(index, op.strides.data)), sympy.Integer(0)
        )
        return delinearize(sympy.expand(flat), sizes)
    raise TypeError(f"{op.name} is not a view")


def broadcast_index(
    operand_sizes: Sequence[sympy.Expr], result_index: Index
) -> Index:
    """The index of a broadcast operand read at `result_index` of the result."""
    offset = len(result_index) - len(operand_sizes)
    return tuple(
        sympy.Integer(0) if size == 1 else result_index[offset + k]
        for k, size in enumerate(operand_sizes)
    )


# ---------------------------------------------------------------------------
# Simplification with ranges
# ---------------------------------------------------------------------------

Bounds = Mapping[sympy.Symbol, sympy.Expr]
"""The largest value of each loop index (its size minus one)."""


def _upper_bound(expr: sympy.Expr, bounds: Bounds) -> sympy.Expr | None:
    """An upper bound of a non-negative expression, or None if unknown."""
    expr = sympy.expand(expr)
    if expr.is_Integer:
        return expr
    if expr.is_Symbol:
        if expr in bounds:
            return bounds[expr]
        return None if symbol_kind(expr) != "s" else expr
    if expr.is_Add:
        total: sympy.Expr = sympy.Integer(0)
        for term in expr.args:
            bound = _upper_bound(term, bounds)
            if bound is None:
                return None
            total = total + bound
        return total
    if expr.is_Mul:
        coefficient, rest = expr.as_coeff_Mul()
        if coefficient < 0:
            return None
        factors = sympy.Mul.make_args(rest)
        result: sympy.Expr = coefficient
        for factor in factors:
            bound = _upper_bound(factor, bounds)
            if bound is None:
                return None
            result = result * bound
        return result
    if isinstance(expr, sympy.Mod):
        return expr.args[1] - 1
    if isinstance(expr, FloorDiv):
        bound = _upper_bound(expr.args[0], bounds)
        return None if bound is None else FloorDiv(bound, expr.args[1])
    return None


def _is_nonnegative(expr: sympy.Expr, bounds: Bounds) -> bool:
    """Whether `expr >= 0` can be shown term by term: each term a nonnegative
    coefficient times loop indices, sizes, and `mod`s and `floordiv`s by
    nonnegative divisors (a `floordiv`'s base nonnegative too: `(d2 - 13)
    floordiv 2` is negative for small `d2`)."""
    expr = sympy.expand(expr)
    if expr.is_Integer:
        return int(expr) >= 0
    terms = sympy.Add.make_args(expr)
    for term in terms:
        coefficient, rest = term.as_coeff_Mul()
        if coefficient < 0:
            return False
        for factor in sympy.Mul.make_args(rest):
            if isinstance(factor, FloorDiv):
                if not (_is_nonnegative(factor.args[0], bounds) and _is_nonnegative(factor.args[1], bounds)):
                    return False
            elif isinstance(factor, sympy.Mod):
                if not _is_nonnegative(factor.args[1], bounds):
                    return False
            elif not factor.is_Symbol:
                return False
            elif factor not in bounds and symbol_kind(factor) != "s":
                return False
    return True


def _provably_less(lhs: sympy.Expr, rhs: sympy.Expr) -> bool:
    """Whether `lhs < rhs` for every positive value of the size symbols."""
    difference = sympy.expand(rhs - lhs)
    if difference.is_Integer:
        return int(difference) > 0
    return bool(difference.is_positive)


def _gcd(values: Sequence[sympy.Expr]) -> sympy.Expr:
    result = values[0]
    for value in values[1:]:
        result = sympy.gcd(result, value)
    return sympy.Abs(result) if result.is_Integer else result


def _factor_split(
    base: sympy.Expr, divisor: sympy.Expr, bounds: Bounds
) -> tuple[sympy.Expr, sympy.Expr, sympy.Expr] | None:
    """
    Write `base` as `factor * high + low` where `factor` divides `divisor` and
    `0 <= low < factor`, with the largest such factor found by moving the terms
    of smallest range into `low`. Returns (factor, high, low) or None.
    """
    terms = list(sympy.Add.make_args(sympy.expand(base)))
    terms.sort(key=lambda t: _sort_key(t, bounds))
    for split in range(len(terms) + 1):
        low = sympy.Add(*terms[:split])
        high_terms = terms[split:]
        factor = _gcd([divisor, *high_terms]) if high_terms else divisor
        if factor == 1 and split < len(terms):
            continue
        if split and not _is_nonnegative(low, bounds):
            continue
        if split:
            bound = _upper_bound(low, bounds)
            if bound is None or not _provably_less(bound, factor):
                continue
        high = sympy.expand(sympy.Add(*high_terms) / factor)
        return factor, high, low
    return None


def _sort_key(term: sympy.Expr, bounds: Bounds) -> tuple[int, str]:
    bound = _upper_bound(term, bounds) if _is_nonnegative(term, bounds) else None
    if bound is not None and bound.is_Integer:
        return (0, f"{int(bound):020d}")
    return (1, str(term))


def always_below(expr: sympy.Expr, limit: sympy.Expr, bounds: Bounds) -> bool:
    """Whether `expr < limit` at every point of the domain."""
    bound = _upper_bound(expr, bounds)
    return bound is not None and _provably_less(bound, limit)


def always_nonnegative(expr: sympy.Expr, bounds: Bounds) -> bool:
    """Whether `expr >= 0` at every point of the domain."""
    return _is_nonnegative(expr, bounds)


def _below(expr: sympy.Expr, limit: sympy.Expr, bounds: Bounds) -> bool:
    """Whether 0 <= expr < limit for every point of the domain."""
    if not _is_nonnegative(expr, bounds):
        return False
    bound = _upper_bound(expr, bounds)
    return bound is not None and _provably_less(bound, limit)


def _is_integral_polynomial(expr: sympy.Expr) -> bool:
    """Whether `expr` is a polynomial with integer coefficients in its
    symbols and its `floordiv` and `mod` terms (integers too)."""
    if sympy.denom(expr) != 1:
        return False
    if not expr.free_symbols:
        return bool(expr.is_Integer)
    generators = [*expr.free_symbols, *expr.atoms(FloorDiv, sympy.Mod)]
    if not expr.is_polynomial(*generators):
        return False
    return all(c.is_Integer for c in sympy.Poly(expr, *generators).coeffs())


@functools.lru_cache(maxsize=1 << 14)
def _pull_multiples(
    base: sympy.Expr, divisor: sympy.Expr
) -> tuple[sympy.Expr, sympy.Expr]:
    """Split `base` into `divisor * quotient + rest`, taking the terms of `base`
    that are exact multiples of `divisor` into the quotient."""
    if divisor.is_Integer and divisor > 0:
        # integer-valued terms: a term is a multiple where its coefficient is
        split = split_multiples(sympy.expand(base), int(divisor))
        if split is not None:
            return split
    whole = sympy.cancel(base / divisor)
    if _is_integral_polynomial(whole):  # a product expanded into terms no one of which is a multiple
        return sympy.expand(whole), sympy.Integer(0)
    quotient: sympy.Expr = sympy.Integer(0)
    rest: sympy.Expr = sympy.Integer(0)
    for term in sympy.Add.make_args(sympy.expand(base)):
        ratio = sympy.cancel(term / divisor)
        if _is_integral_polynomial(ratio):
            quotient = quotient + ratio
        else:
            rest = rest + term
    return sympy.expand(quotient), sympy.expand(rest)


def _simplify_floordiv(base: sympy.Expr, divisor: sympy.Expr, bounds: Bounds):
    quotient, base = _pull_multiples(base, divisor)
    if quotient != 0:
        return quotient + _simplify_floordiv(base, divisor, bounds)
    if _below(base, divisor, bounds):
        return sympy.Integer(0)
    split = _factor_split(base, divisor, bounds)
    if split is None:
        return FloorDiv(base, divisor)
    factor, high, _ = split
    rest = sympy.cancel(divisor / factor)
    if rest == 1:
        return high
    if factor == 1:
        return FloorDiv(high, rest)
    return _simplify_floordiv(high, rest, bounds)


def _simplify_mod(base: sympy.Expr, divisor: sympy.Expr, bounds: Bounds):
    _, base = _pull_multiples(base, divisor)
    if base == 0:
        return sympy.Integer(0)
    if _below(base, divisor, bounds):
        return base
    split = _factor_split(base, divisor, bounds)
    if split is None:
        return integer_mod(base, divisor)
    factor, high, low = split
    rest = sympy.cancel(divisor / factor)
    if rest == 1:
        return low
    high_mod = integer_mod(high, rest) if factor == 1 else _simplify_mod(high, rest, bounds)
    return sympy.expand(factor * high_mod + low)


def simplify_index(expr: sympy.Expr, bounds: Bounds) -> sympy.Expr:
    """
    Simplify an index expression given the largest value of each loop index:
    `(d0 * 8 + d1) floordiv 8` is `d0` and `(d0 * 8 + d1) mod 8` is `d1` when
    `d1 <= 7`. Innermost `floordiv`/`mod` are simplified first.

    The result depends only on the expression and the bounds of its symbols, so
    it is remembered per such pair: the layers of a model repeat the same views,
    and their index expressions are simplified once.
    """
    expr = sympy.sympify(expr)
    if expr.is_Atom:
        return expr
    relevant = tuple(sorted(
        ((s, bounds[s]) for s in expr.free_symbols if s in bounds), key=lambda b: b[0].name
    ))
    return _simplify_index_under(expr, relevant)


@functools.lru_cache(maxsize=1 << 14)
def _simplify_index_under(
    expr: sympy.Expr, bounds: tuple[tuple[sympy.Symbol, sympy.Expr], ...]
) -> sympy.Expr:
    """`simplify_index` with the bounds of `expr`'s symbols as a hashable tuple."""
    return _simplify_index(expr, dict(bounds))


def _simplify_index(expr: sympy.Expr, bounds: Bounds) -> sympy.Expr:
    if expr.is_Atom:
        return expr
    arguments = [_simplify_index(a, bounds) for a in expr.args]
    if isinstance(expr, FloorDiv):
        return _simplify_floordiv(arguments[0], arguments[1], bounds)
    if isinstance(expr, sympy.Mod):
        return _simplify_mod(arguments[0], arguments[1], bounds)
    return sympy.expand(expr.func(*arguments))


def domain_bounds(
    parallel_sizes: Sequence[sympy.Expr], reduction_sizes: Sequence[sympy.Expr] = ()
) -> dict[sympy.Symbol, sympy.Expr]:
    """The bounds of `d<i>` and `r<j>` for a loop domain."""
    from permalloy.dialects.sym import parallel_index, reduction_index

    bounds: dict[sympy.Symbol, sympy.Expr] = {}
    for i, size in enumerate(parallel_sizes):
        bounds[parallel_index(i)] = sympy.sympify(size) - 1
    for j, size in enumerate(reduction_sizes):
        bounds[reduction_index(j)] = sympy.sympify(size) - 1
    return bounds
