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
A matrix product (a contraction, `analysis.contraction`) starts a group and
takes only its epilogue: pointwise ops of its result's shape that read the
group at their own element, which the product's template computes on its
output tiles. Row locality is the kernel analysis's (`permalloy.analysis.rows`), which the
targets use to run a kernel's loop ops row by row. A reduction to
one element shares its kernel only when every member is short enough for
one program: a longer one is split across threads or programs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.dialects import func
from xdsl.ir import Block, Operation, Region, SSAValue

from permalloy.analysis.contraction import contraction
from permalloy.analysis.rows import leading_rows, reads_at_own_row, row_rank
from permalloy.dialects import loop
from permalloy.dialects.ptensor import VIEW_OPS, TensorType, shapes_equal, sizes_equal
from permalloy.dialects.sym import product
from permalloy.passes.fusion_decisions import GROUP_RULES, FusionDecisions, describe


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
    return join_refusal(group, candidate) is None


def join_refusal(
    group: Sequence[loop.LoopOp], candidate: loop.LoopOp, kernel_of: Mapping[Operation, int] | None = None
) -> str | None:
    """The rule (`fusion_decisions.GROUP_RULES`) that keeps `candidate` out
    of `group`'s kernel, or None when it joins. With `kernel_of` (the kernel
    each earlier loop op went to), results of one earlier kernel count as a
    shared input: the final sums of two sibling split reductions read two
    results of the kernel of their partial sums."""
    rows = leading_rows(candidate)
    if rows is None or any(leading_rows(m) is None for m in group):
        rowless = [op for op in (*group, candidate) if leading_rows(op) is None]
        return "reduction-to-one-element" if any(map(_reduces_everything, rowless)) else "no-rows"
    if any(not sizes_equal(leading_rows(m), rows) for m in group):
        return "different-rows"
    if not _joins_matrix_product(group, candidate):
        return "matrix-product-epilogue"
    if _splits_a_reduction((*group, candidate)):
        return "long-reduction-to-one-element"
    if _parallel_only_over_rows((*group, candidate)):
        return "pointwise-shapes"
    if _loses_reduction_parallelism((*group, candidate)):
        return "reduction-parallelism"
    if _loses_pointwise_parallelism((*group, candidate)):
        return "pointwise-parallelism"
    members = {m.result: m for m in group}
    reads_members = [members[v] for v in candidate.inputs if v in members]
    if reads_members:
        # over a single row (keepdim reductions of the leading dimension),
        # every read of a member is at that row, whatever its index says
        if sizes_equal(rows, 1):
            return None
        return None if all(_reads_row_locally(candidate, m) for m in reads_members) else "not-row-local"
    shared = {v for m in group for v in m.inputs}
    if any(v in shared for v in candidate.inputs):
        return None
    if kernel_of is not None and _kernels_read(group, kernel_of) & _kernels_read([candidate], kernel_of):
        return None
    return "no-shared-input"


def _kernels_read(ops: Sequence[loop.LoopOp], kernel_of: Mapping[Operation, int]) -> set[int]:
    """The earlier kernels whose results `ops` read."""
    return {kernel_of[v.owner] for op in ops for v in op.inputs if v.owner in kernel_of}


SIBLING_LOOKAHEAD = 32
"""How many ops past the end of a group `find_groups` looks for sibling
reductions to pull in."""


def _pull_siblings(
    current: list[loop.LoopOp],
    ops: list[Operation],
    end: int,
    max_members: int,
    kernel_of: Mapping[Operation, int],
) -> list[loop.LoopOp]:
    """
    Reductions among the `SIBLING_LOOKAHEAD` ops after `ops[end]` (the op
    that ended `current`'s group) that read an input of the group and may
    join it, moved to just before `ops[end]` (updating `ops`) so that they
    join it: every operand of each is defined before that point, and a
    reduction moved earlier only extends the life of its small result. A
    split layer norm's weight gradient and bias gradient both sum partial
    rows of the same output gradient, but the final sum of the first came
    between their partial sums and ended its kernel: each read the gradient
    on its own, in two kernels.
    """
    block = ops[end].parent_block()
    assert block is not None
    pulled: list[loop.LoopOp] = []
    stop = min(len(ops), end + 1 + SIBLING_LOOKAHEAD)
    later = set(ops[end:stop])
    inputs = {v for m in current for v in m.inputs}
    position = end + 1
    while position < stop and len(current) < max_members:
        candidate = ops[position]
        if (
            isinstance(candidate, loop.ReduceOp)
            and any(v in inputs for v in candidate.inputs)
            and not any(v.owner in later and v.owner is not candidate for v in candidate.operands)
            and join_refusal(current, candidate, kernel_of) is None
        ):
            candidate.detach()
            block.insert_op_before(candidate, ops[end])
            ops.insert(end, ops.pop(position))
            end += 1
            current.append(candidate)
            pulled.append(candidate)
            inputs.update(candidate.inputs)
        position += 1
    return pulled


def _joins_matrix_product(group: Sequence[loop.LoopOp], candidate: loop.LoopOp) -> bool:
    """Whether `candidate` may join `group` as far as matrix products go: a
    product joins no group, and a group with one takes only pointwise ops of
    the product's shape reading the group's results at their own element."""
    if contraction(candidate) is not None:
        return False
    product = next((m for m in group if contraction(m) is not None), None)
    if product is None:
        return True
    if not isinstance(candidate, loop.PointwiseOp):
        return False
    if not shapes_equal(candidate.result.type.sizes, product.result.type.sizes):  # type: ignore[union-attr]
        return False
    rank = product.parallel_rank
    return all(reads_at_own_row(candidate, m.result, rank) for m in group if m.result in candidate.inputs)


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
    their elements. A reduction or a scan runs one program per row anyway, so
    with one, pointwise members may have any shape that is no larger than
    its domain (an epilogue over its elements or its results); a larger one
    would make the row programs longer: a `[8, 512, 768]` embedding sum
    grouped with the `[8, 512]` scan of its position ids ran as 8 programs.
    """
    rowwise = [op for op in ops if isinstance(op, loop.ReduceOp | loop.ScanOp)]
    if rowwise:
        largest = [_points(op) for op in rowwise]
        return any(
            all(bool((_points(op) - most).is_positive) for most in largest)
            for op in ops
            if isinstance(op, loop.PointwiseOp)
        )
    first, *others = [op.result.type.sizes for op in ops]  # type: ignore[union-attr]
    return not all(shapes_equal(first, shape) for shape in others)


REDUCTION_PARALLELISM_LOSS = 4
"""The most times fewer row programs a reduction may run in, in a kernel,
than the points of its parallel domain it runs alone."""


def _loses_reduction_parallelism(ops: Sequence[loop.LoopOp]) -> bool:
    """
    Whether a reduction would run with far less parallelism in one kernel
    with `ops` than alone: a kernel runs one program (or thread chunk) per
    row of the dimensions its members share (`analysis.rows.row_rank`), and
    a reduction alone has one per point of its parallel domain. The partial
    sums of a split batch norm statistic, `[32, 2, 192]`, grouped with the
    `[32, 192, 28, 28]` gradient they read, shared only its 32 batch rows
    and ran as 32 programs instead of 12288. A short reduction, whose row
    programs would each do at most `MAX_SINGLE_PROGRAM_POINTS` points of it
    (a softmax down the 8 rows of 16 columns, as one program), still joins:
    one kernel is worth more there. Symbolic sizes are not judged.
    """
    reductions = [op for op in ops if isinstance(op, loop.ReduceOp)]
    if not reductions:
        return False
    rank = row_rank(ops) or 1
    rows = product(list(reductions[0].parallel_sizes)[:rank])
    for reduction in reductions:
        parallel, work = product(list(reduction.parallel_sizes)), _points(reduction)
        if not (rows.is_Integer and parallel.is_Integer and work.is_Integer):
            continue
        fewer = int(parallel) > REDUCTION_PARALLELISM_LOSS * int(rows)
        if fewer and int(work) > MAX_SINGLE_PROGRAM_POINTS * int(rows):
            return True
    return False


MIN_ROW_PROGRAMS = 1024
"""The fewest row programs a kernel may run a long pointwise member in:
enough to keep every multiprocessor of a large GPU busy several times over."""


def _loses_pointwise_parallelism(ops: Sequence[loop.LoopOp]) -> bool:
    """
    Whether a pointwise op would run in a few long row programs in one
    kernel with `ops`, where alone it runs over all its elements in
    parallel. Members of one shape run as one flat loop only when each reads
    the others at its own element; one reading another elsewhere in its row
    (a roll's gather along the second dimension of a `[16, 56, 56, 384]`
    gradient) makes the kernel run one program per row of the dimensions
    they share: 16 programs of 1.2 million elements each, 2.0 ms of a
    training step on an H200. Such a kernel is refused when it has fewer than
    `MIN_ROW_PROGRAMS` rows and a pointwise member would do more than
    `MAX_SINGLE_PROGRAM_POINTS` points in each. Symbolic sizes are not judged.
    """
    rank = row_rank(ops)
    if rank is None or not any(isinstance(op, loop.PointwiseOp) for op in ops):
        return False
    rows = product(list(ops[0].parallel_sizes)[:rank])
    if not rows.is_Integer or int(rows) >= MIN_ROW_PROGRAMS:
        return False
    for op in ops:
        points = _points(op)
        if isinstance(op, loop.PointwiseOp) and points.is_Integer:
            if int(points) > MAX_SINGLE_PROGRAM_POINTS * int(rows):
                return True
    return False


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


def hoist_row_readers(function: func.FuncOp) -> None:
    """Move each loop op that would join its last producer's group (a
    reduction's `[C]` epilogue: batch norm's weight gradient) up to just
    after that producer, past loop ops of other rows between them (the
    `[N, C, H, W]` input gradient), so that grouping, which takes
    consecutive ops, finds it there. Only an op all of whose operands are
    defined by then moves, so the order stays valid; ops after the same
    producer, hoisted or already there, keep their order."""
    block = function.body.block
    position: dict[Operation, float] = {op: i for i, op in enumerate(block.ops)}
    last_after: dict[Operation, Operation] = {}
    for op in list(block.ops):
        if not isinstance(op, loop.LoopOp):
            continue
        producers = [v.owner for v in op.inputs if isinstance(v.owner, Operation) and v.owner.parent_block() is block]
        if not producers:
            continue
        producer = max(producers, key=position.__getitem__)
        anchor = last_after.get(producer, producer)
        if not isinstance(producer, loop.LoopOp) or not joins([producer], op):
            continue
        if op.prev_op is anchor:
            last_after[producer] = op
            continue
        following = anchor.next_op
        assert following is not None  # `op` itself follows the anchor
        position[op] = (position[anchor] + position[following]) / 2
        op.detach()
        block.insert_op_after(op, anchor)
        last_after[producer] = op


def find_groups(
    function: func.FuncOp, max_members: int, decisions: FusionDecisions | None = None
) -> list[list[loop.LoopOp]]:
    """Maximal runs of consecutive loop ops that may share a kernel; each
    group, and each producer and consumer left apart with its rule, go into
    `decisions` when given."""
    groups: list[list[loop.LoopOp]] = []
    current: list[loop.LoopOp] = []
    watch = None if decisions is None else _GroupingWatch(decisions)
    kernel_of: dict[Operation, int] = {}  # the kernel (a count of groups started) of each op placed
    kernels = 0
    ops = list(function.body.block.ops)
    index = 0
    while index < len(ops):
        op = ops[index]
        if isinstance(op, loop.LoopOp) and current and len(current) < max_members:
            refusal = join_refusal(current, op, kernel_of)
            if refusal is None:
                current.append(op)
                kernel_of[op] = kernels
                if watch is not None:
                    watch.placed(op, current, None)
                index += 1
                continue
        elif isinstance(op, loop.LoopOp) and current:
            refusal = "max-group-size"
        else:
            refusal = None
        if current:
            for pulled in _pull_siblings(current, ops, index, max_members, kernel_of):
                kernel_of[pulled] = kernels
                if watch is not None:
                    watch.placed(pulled, current, None)
                index += 1
        if len(current) > 1:
            groups.append(current)
        if watch is not None:
            watch.closed(current, op, refusal)
        current = [op] if isinstance(op, loop.LoopOp) else []
        if current:
            kernels += 1
            kernel_of[op] = kernels
        if watch is not None and current:
            watch.placed(op, current, refusal)
        index += 1
    if len(current) > 1:
        groups.append(current)
    if watch is not None:
        watch.closed(current, None, None)
    return groups


@dataclass
class _GroupingWatch:
    """Which group each loop op went to, and what ended each group, for the
    decisions record of `find_groups`."""

    decisions: FusionDecisions
    group_of: dict[loop.LoopOp, int] = field(default_factory=dict)
    ended_by: dict[int, tuple[Operation | None, str | None]] = field(default_factory=dict)
    """Per group: the op that ended it and the rule that kept that op out
    (None for an op the host runs)."""
    count: int = 0

    def placed(self, op: loop.LoopOp, group: list[loop.LoopOp], refusal: str | None) -> None:
        """`op` joined `group` (refusal None) or started it after `refusal`."""
        if len(group) == 1:
            self.count += 1
        index = self.count
        self.group_of[op] = index
        for value in dict.fromkeys(op.inputs):
            producer = value.owner
            if not isinstance(producer, loop.LoopOp) or self.group_of.get(producer) == index:
                continue
            rule, detail = self._apart(producer, op, refusal)
            self.decisions.separated(producer, op, rule, detail)

    def closed(self, group: list[loop.LoopOp], by: Operation | None, refusal: str | None) -> None:
        if group:
            self.ended_by[self.group_of[group[0]]] = (by, refusal)
            if len(group) > 1:
                self.decisions.grouped(list(group))

    def _apart(self, producer: loop.LoopOp, consumer: loop.LoopOp, refusal: str | None) -> tuple[str, str]:
        group = self.group_of.get(producer)
        if group == self.count - 1 and refusal is not None and self.ended_by.get(group, (None,))[0] is consumer:
            return refusal, _group_detail(refusal, producer, consumer)
        by, why = self.ended_by.get(group, (None, None)) if group is not None else (None, None)
        if by is None:
            return "kernel-ended", "the producer is not in an earlier kernel"
        if not isinstance(by, loop.LoopOp):
            return "host-op-between", f"{by.name} runs between them"
        return "kernel-ended", f"{self.decisions.label(by)} ({describe(by)}) did not join it: {why}"


def _group_detail(rule: str, producer: loop.LoopOp, consumer: loop.LoopOp) -> str:
    """The facts behind a grouping rule for one producer and consumer."""
    if rule in ("different-rows", "no-rows", "reduction-to-one-element"):
        rows = [leading_rows(op) for op in (producer, consumer)]
        shown = ["none" if r is None else str(r) for r in rows]
        return f"rows {shown[0]} and {shown[1]}: {GROUP_RULES[rule]}"
    if rule == "long-reduction-to-one-element":
        return f"over {MAX_SINGLE_PROGRAM_POINTS} points in one program: {GROUP_RULES[rule]}"
    return GROUP_RULES[rule]


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
