"""
Rows: the leading parallel dimensions that loop ops of one kernel share.

Loop ops that read each other's results only *at their own row* (the leading
indices of every such load are the reader's own `d0, d1, ...`) can run row by
row together: each row goes through all of them before the next row starts,
so what a reader needs is always computed already, in the same program or
thread, and a value per row (a reduction's) can stay in registers. This is
the one rule behind fusion's grouping (`fusion_grouping.joins` asks it for
rank 1), the Triton target's programs per block of rows (`row_groups`), and,
on the addresses of collapsed loop nests, the LLVM target's shared row loops
(`same_row`).

    %s = loop.reduce sum ins(%x = %a) over [16] -> [4]    { load %x[d0, r0] }
    %y = loop.pointwise ins(%t = %s) -> [4, 16]           { load %t[d0] }
    reads_at_own_row(%y, %s, 1) -> True;  row_groups -> [[%s, %y] with rank 1]

A scan (`loop.scan`) shares the dimensions before its scanned one as rows,
and runs in a group with other ops only when those are all its other
dimensions (its last dimension is scanned): a program or thread then scans
whole rows. It writes whole rows, never one value per row. A sort
(`loop.sort`) and a scatter (`loop.scatter`) are groups of their own: a
sort's rows are its whole parallel domain, each sorted as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sympy
from xdsl.ir import SSAValue

from permalloy.analysis.affine import load_form, split_affine
from permalloy.dialects.loop import LoadOp, LoopOp, ReduceOp, ScanOp, ScatterOp, SortOp
from permalloy.dialects.ptensor import TensorType, sizes_equal
from permalloy.dialects.sym import parallel_index, symbol_kind


def result_sizes(op: LoopOp) -> list[sympy.Expr]:
    """The sizes of a loop op's result: its parallel domain."""
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    return list(result_type.sizes)


def leading_rows(op: LoopOp) -> sympy.Expr | None:
    """The size of a loop op's leading dimension (its rows), None for a scalar
    result, a scan of another than its last dimension, or of its only one
    (which shares no rows: `scans_rows`), a scatter (whose points write
    anywhere in its result, so that it shares rows with nothing) or a sort
    (which its targets run on whole rows of its own)."""
    sizes = result_sizes(op)
    if not sizes or isinstance(op, ScatterOp | SortOp) or (isinstance(op, ScanOp) and not 0 < op.scanned_dim == len(sizes) - 1):
        return None
    return sizes[0]


def loads_of(reader: LoopOp, value: SSAValue) -> list | None:
    """The ops that use `value` in `reader`'s body (through the body arguments
    bound to it), or None when one of them is not a load."""
    uses = []
    for argument, operand in zip(reader.body.block.args, reader.inputs):
        if operand != value:
            continue
        for use in argument.uses:
            if not isinstance(use.operation, LoadOp):
                return None
            uses.append(use.operation)
    return uses


def at_own_row(load: LoadOp, rank: int) -> bool:
    """Whether a load's first `rank` indices are the reader's own `d0, ..., d<rank-1>`."""
    indices = list(load.indices.data)
    return len(indices) >= rank and indices[:rank] == [parallel_index(i) for i in range(rank)]


def reads_at_own_row(reader: LoopOp, value: SSAValue, rank: int) -> bool:
    """Whether every read of `value` in `reader` is a load at reader's own row."""
    loads = loads_of(reader, value)
    return loads is not None and all(at_own_row(load, rank) for load in loads)


def reads_one_value_per_row(load: LoadOp, rank: int) -> bool:
    """Whether a load reads, at its own row, the one element a per-row value
    has there: an affine load at `[d0, ..., d<rank-1>, 0, ...]`."""
    form = load_form(load)
    if form.gather or form.masked or not at_own_row(load, rank):
        return False
    return all(index == 0 for index in list(load.indices.data)[rank:])


def per_row(op: LoopOp, rank: int) -> bool:
    """Whether a loop op computes one value per row of rank `rank` (a scan
    never does: it writes whole rows)."""
    return not isinstance(op, ScanOp) and all(size == 1 for size in result_sizes(op)[rank:])


def scans_rows(op: LoopOp, rank: int) -> bool:
    """Whether a loop op, if a scan, scans whole rows of rank `rank`: its
    scanned dimension is its last one and every other one is a row."""
    return not isinstance(op, ScanOp) or op.scanned_dim == rank == op.parallel_rank


def row_rank(members: Sequence[LoopOp]) -> int | None:
    """
    The most leading dimensions `members` can share as rows, or None: sizes
    equal in every member, a reduction computing one value per row, a scan
    scanning whole rows, and every read of a member's result at its
    reader's own row.
    """
    shapes = [result_sizes(m) for m in members]
    shortest = min(len(shape) for shape in shapes)
    if shortest == 0 or any(isinstance(m, ScatterOp | SortOp) for m in members):
        return None
    common = 0
    while common < shortest and all(sizes_equal(shape[common], shapes[0][common]) for shape in shapes):
        common += 1
    produced = [m.result for m in members]
    for rank in range(common, 0, -1):
        if not all(per_row(m, rank) for m in members if isinstance(m, ReduceOp)):
            continue
        if not all(scans_rows(m, rank) for m in members):
            continue
        if all(reads_at_own_row(m, value, rank) for m in members for value in produced):
            return rank
    return None


@dataclass
class RowGroup:
    """Consecutive loop ops that share their leading `rank` dimensions as rows."""

    members: list[LoopOp]
    rank: int


def row_groups(ops: Sequence[LoopOp]) -> list[RowGroup]:
    """
    The loop ops of a kernel, in order, in maximal runs that share rows
    (greedily: an op joins the current run when the run with it has a row
    rank); an op that shares rows with nothing is a group of its own, whose
    rows are its whole parallel domain.
    """
    groups: list[RowGroup] = []
    for op in ops:
        if groups:
            rank = row_rank([*groups[-1].members, op])
            if rank is not None:
                groups[-1].members.append(op)
                groups[-1].rank = rank
                continue
        groups.append(RowGroup([op], 0 if isinstance(op, ScatterOp) else op.parallel_rank))
    return groups


def same_row(
    read: sympy.Expr,
    written: sympy.Expr,
    row_vars: Sequence[sympy.Symbol],
    read_bounds: Mapping[sympy.Symbol, sympy.Expr],
    written_bounds: Mapping[sympy.Symbol, sympy.Expr],
) -> bool:
    """
    Whether the address `read`, for any value of the row variables, addresses
    only what the address `written` wrote with the same values: both affine
    in each row variable with the same coefficient, and what is left of
    `read` without them either what is left of `written`, or, where that is
    one dense run (one variable with coefficient 1), within the run. The
    other variables range up to their `read_bounds` and `written_bounds`.

    A 3 x 3 window at `6 * d1 + d2 - 7` over rows written at `6 * d1 + d2`
    (`d2 < 6`) reads the row before: its remainder `d2 - 7` leaves `[0, 5]`.
    """
    for var in row_vars:
        a, b = split_affine(read, var), split_affine(written, var)
        if a is None or b is None or sympy.expand(a[1] - b[1]) != 0:
            return False
    zeros = {var: 0 for var in row_vars}
    rest_read = sympy.expand(sympy.sympify(read).xreplace(zeros))
    rest_written = sympy.expand(sympy.sympify(written).xreplace(zeros))
    if sympy.expand(rest_read - rest_written) == 0:
        return True
    run = _dense_run(rest_written, written_bounds)
    span = _interval(rest_read, read_bounds)
    if run is None or span is None:
        return False
    low, high = span
    return bool(sympy.expand(low - run[0]).is_nonnegative) and bool(sympy.expand(run[1] - high).is_nonnegative)


def _dense_run(rest: sympy.Expr, bounds: Mapping[sympy.Symbol, sympy.Expr]) -> tuple[sympy.Expr, sympy.Expr] | None:
    """The first and last element `rest` covers when it is one variable with
    coefficient 1 plus a constant (every element in between written), else None."""
    variables = [v for v in rest.free_symbols if v in bounds]
    unbounded = [v for v in rest.free_symbols if v not in bounds and symbol_kind(v) != "s"]
    if len(variables) != 1 or unbounded:
        return None
    (var,) = variables
    affine = split_affine(rest, var)
    if affine is None or affine[1] != 1 or var in affine[0].free_symbols:
        return None
    return affine[0], sympy.expand(affine[0] + bounds[var])


def _interval(expr: sympy.Expr, bounds: Mapping[sympy.Symbol, sympy.Expr]) -> tuple[sympy.Expr, sympy.Expr] | None:
    """The smallest and largest value of an affine `expr` whose loop variables
    range from 0 to their `bounds`; None where it is not affine in them, a
    variable has no bound, or a coefficient's sign is unknown."""
    low = high = sympy.Integer(0)
    rest = sympy.expand(expr)
    for var in sorted(rest.free_symbols, key=lambda s: s.name):
        if symbol_kind(var) == "s":
            continue
        if var not in bounds:
            return None
        affine = split_affine(rest, var)
        if affine is None:
            return None
        rest, coefficient = affine
        reach = sympy.expand(coefficient * bounds[var])
        if coefficient.is_nonnegative:
            high = high + reach
        elif coefficient.is_nonpositive:
            low = low + reach
        else:
            return None
    return sympy.expand(low + rest), sympy.expand(high + rest)
