"""
Kernel fusion by grouping: consecutive loop ops over the same rows become one
`loop.fused`, one kernel with several outputs.

This is how a reduction's pointwise epilogue, sibling reductions over the same
domain (softmax's max and sum, layer norm's mean and variance) and independent
computations sharing inputs end up in one kernel. Legality comes from the index
expressions: a member joins a group when it reads the group's results only at
its own row (the leading index of each such load is its own `d0` over the same
size) or shares an input with a member over the same rows; a group of
pointwise ops only when they have one shape (a group runs a program per row).
Row locality is the kernel analysis's (`permalloy.analysis.rows`), which the
targets use to run a kernel's loop ops row by row. A reduction to
one element shares its kernel only when every member is short enough for
one program: a longer one is split across threads or programs.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import func
from xdsl.ir import Block, Region, SSAValue

from permalloy.analysis.rows import leading_rows, reads_at_own_row
from permalloy.dialects import loop
from permalloy.dialects.ptensor import VIEW_OPS, TensorType, shapes_equal, sizes_equal
from permalloy.dialects.sym import product


def _reads_row_locally(reader: loop.LoopOp, producer: loop.LoopOp) -> bool:
    """Whether every load of `producer`'s result in `reader` is at reader's own row."""
    return reads_at_own_row(reader, producer.result, 1)


MAX_SINGLE_PROGRAM_POINTS = 16384
"""The most points (result elements times reduced elements) a loop op may
have to share a kernel with a reduction to one element. Such a kernel runs
as one row program (one thread on a CPU, one program on a GPU); a longer
reduction to one element is split across threads or programs instead (the
LLVM target splits reductions of 32768 points and more, `split-reductions`
those of 16384 elements and more), and a longer pointwise op runs on many."""


def _reduces_everything(op: loop.LoopOp) -> bool:
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    return isinstance(op, loop.ReduceOp) and sizes_equal(result_type.numel(), 1)


def _points(op: loop.LoopOp) -> sympy.Expr:
    """The points of a loop op's iteration domain: its parallel points times its reduced elements."""
    return sympy.expand(product(op.parallel_sizes) * product(op.reduction_sizes))


def _fits_one_program(op: loop.LoopOp) -> bool:
    """Whether `op` is known to be short enough to run in a single row program."""
    points = _points(op)
    return points.is_Integer and int(points) <= MAX_SINGLE_PROGRAM_POINTS


def _splits_a_reduction(ops: Sequence[loop.LoopOp]) -> bool:
    """
    Whether grouping `ops` would keep a reduction to one element from being
    split across threads or programs, or run a long loop op in the single
    program such a reduction makes of its kernel. Short ones (a norm or a
    softmax over one row of a few thousand elements) share it.
    """
    return any(_reduces_everything(op) for op in ops) and not all(_fits_one_program(op) for op in ops)


def joins(group: Sequence[loop.LoopOp], candidate: loop.LoopOp) -> bool:
    """Whether `candidate` may run in the same kernel as `group`, row by row."""
    rows = leading_rows(candidate)
    if rows is None or any(leading_rows(m) is None or not sizes_equal(leading_rows(m), rows) for m in group):
        return False
    if _splits_a_reduction((*group, candidate)) or _parallel_only_over_rows((*group, candidate)):
        return False
    members = {m.result: m for m in group}
    reads_members = [members[v] for v in candidate.inputs if v in members]
    if reads_members:
        # over a single row (keepdim reductions of the leading dimension),
        # every read of a member is at that row, whatever its index says
        if sizes_equal(rows, 1):
            return True
        return all(_reads_row_locally(candidate, m) for m in reads_members)
    shared = {v for m in group for v in m.inputs}
    return any(v in shared for v in candidate.inputs)


def _parallel_only_over_rows(ops: Sequence[loop.LoopOp]) -> bool:
    """
    Whether pointwise ops would run with less parallelism together than
    apart: a group runs one program (or thread chunk) per row, so pointwise
    members of different shapes would each loop over the rest of their
    elements inside a row's program, where alone each runs over all its
    elements in parallel. Siblings (the query's and the key's rotary
    embedding, both reading the same cos and sin tables) and a producer with
    its reader alike: a `[3, 1, 1, 1]` mask read by a `[3, 512, 8, 768]`
    select (the gradient of a packed q/k/v projection) ran as 3 programs of 3
    million elements each. Members of one shape run as one flat loop over
    their elements; a reduction or a scan runs one program per row anyway.
    """
    if any(isinstance(op, loop.ReduceOp | loop.ScanOp) for op in ops):
        return False
    first, *others = [op.result.type.sizes for op in ops]  # type: ignore[union-attr]
    return not all(shapes_equal(first, shape) for shape in others)


def sink_views(function: func.FuncOp) -> None:
    """Move each view to just before its first user, so that views between
    loop ops (of graph inputs, or of a member's result the host reads) do not
    split groups: loop ops never read views, only host ops and returns do."""
    block = function.body.block
    for op in reversed(list(block.ops)):
        if not isinstance(op, VIEW_OPS) or not op.results[0].uses:
            continue
        users = list(dict.fromkeys(u.operation for u in op.results[0].uses))
        first = users[0]
        if len(users) > 1:  # most views have one user: no need to number the ops
            position = {o: i for i, o in enumerate(block.ops)}
            first = min(users, key=position.__getitem__)
        op.detach()
        block.insert_op_before(op, first)


def find_groups(function: func.FuncOp, max_members: int) -> list[list[loop.LoopOp]]:
    """Maximal runs of consecutive loop ops that may share a kernel."""
    groups: list[list[loop.LoopOp]] = []
    current: list[loop.LoopOp] = []
    for op in function.body.block.ops:
        if isinstance(op, loop.LoopOp) and current and len(current) < max_members and joins(current, op):
            current.append(op)
            continue
        if len(current) > 1:
            groups.append(current)
        current = [op] if isinstance(op, loop.LoopOp) else []
    if len(current) > 1:
        groups.append(current)
    return groups


def fuse_group(members: list[loop.LoopOp]) -> loop.FusedOp:
    """Replace consecutive loop ops by one `loop.fused` holding them."""
    inside = {m.result for m in members}
    inputs: list[SSAValue] = []
    for member in members:
        for value in member.inputs:
            if value not in inside and value not in inputs:
                inputs.append(value)
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
    leaving = [m.result for m in members if any(u.operation not in members for u in m.result.uses)]
    for member in members:
        clone = member.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping[member.result] = clone.results[0]
    block.add_op(loop.FusedYieldOp([mapping[v] for v in leaving]))
    fused = loop.FusedOp(inputs, [v.type for v in leaving], Region(block))
    first = members[0]
    first.parent_block().insert_op_before(fused, first)  # type: ignore[union-attr]
    for old, new in zip(leaving, fused.results):
        old.replace_all_uses_with(new)
        new.name_hint = old.name_hint
    for member in reversed(members):
        member.detach()
        member.erase()
    return fused
