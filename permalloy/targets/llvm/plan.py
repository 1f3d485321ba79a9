"""
What to generate for a kernel, decided before any LLVM code is written.

A `KernelPlan` lists the kernel's tensors (inputs, outputs, then temporaries
for loop results that other loop ops read but the kernel does not return) and
one `StagePlan` per loop op, run in order. A stage picks one loop variable to
vectorize and nests its loops in *levels*:

    pointwise   level 0: rows (outer d's)   level 1: d_last, vectorized
    inner       level 0: rows (all d's)     levels 1..m-1: r_0..r_{m-2}   level m: r_last, vectorized
    outer       level 0: rows (outer d's)   level 1: a tile of d_last     levels 2..m+1: r_0..r_{m-1}
                level m+2: the chunks of the tile, d_last vectorized
    inner scan  level 0: rows (all d's)     level 1: r0, in order, scalar
    outer scan  level 0: rows (outer d's)   level 1: d_last, vectorized   level 2: r0, in order
    sort        level 0: rows (all d's)     level 1: r0, in order, scalar (`sorts`)

`inner` reduces along the contiguous last dimension (row sums) with vector
accumulators reduced horizontally at the end; `outer` keeps one accumulator
lane per output element (column sums) for a tile of columns (a few KiB, in
L1), walking the reduction dimension row by row so that memory is read in
long contiguous runs. A scan (`loop.scan`) walks its one reduction
dimension in order and stores every prefix: along the contiguous dimension
(`inner`, cumsum of rows) one scalar running value per row, across it
(`outer`, cumsum of columns) a vector of running values for a chunk of
columns. Every body op gets the level of the
deepest loop it depends on, so it is computed once per iteration of that loop
(loop-invariant values are hoisted by construction), and is a vector when it
depends on the vectorized variable. A load of a tensor that an earlier stage
of its group writes depends on the row loop as well, through memory: it is
never hoisted above it, even when its address names no row variable (a group
whose rows all collapsed away, as in a norm over a single row).

The facts come from the kernel analysis (`permalloy.analysis`): the tensors
and intermediates, each stage's collapsed space (size-1 dimensions taking
part in merging, so that they keep apart the rows a row loop may share), the
direction of a reduction (its mode), and `same_row` for the reads that decide
which stages share a row loop. This module maps them to loop levels and
vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.ir import Operation, SSAValue

from permalloy.analysis.affine import split_affine
from permalloy.analysis.kernel import (
    INNER,
    OUTER,
    KernelAnalysis,
    StageFacts,
    StageSpace,
    TensorLayout,
    analyze_kernel,
    reduction_direction,
    stage_space,
)
from permalloy.analysis.rows import same_row
from permalloy.dialects.buffer import BufferType, KernelOp
from permalloy.dialects.loop import IndexOp, LoadOp, LoopOp, PointwiseOp, ReduceOp, ScanOp, ScatterOp, SortOp
from permalloy.dialects.ptensor import ReduceKind, ScanKind
from permalloy.dialects.sym import product, symbol
from permalloy.lowering.index_algebra import domain_bounds
from permalloy.targets import kernel_symbols

POINTWISE = "pointwise"
SCATTER = "scatter"
SORT = "sort"
MODES = (POINTWISE, INNER, OUTER, SCATTER, SORT)
"""A stage's mode: pointwise, the direction of its reduction, a scatter's
(every domain variable in one loop level, nothing vectorized, one thread),
or a sort's (rows, then the sorted dimension in order, nothing vectorized)."""


@dataclass(frozen=True)
class Tensor(TensorLayout):
    """A tensor the kernel addresses: its layout and its slot in the pointer array."""

    slot: int = 0

    @staticmethod
    def at(slot: int, layout: TensorLayout) -> Tensor:
        return Tensor(layout.element, layout.sizes, layout.strides, slot)


@dataclass
class LoadPlan:
    """How a load reads: `uniform` (a scalar), `affine` in the vector variable, or `gather`."""

    kind: str
    address: sympy.Expr
    rest: sympy.Expr | None = None
    coefficient: sympy.Expr | None = None
    rest_level: int = -1


@dataclass
class StagePlan:
    """One loop op: its loop nest, the level of each body op, its loads."""

    op: LoopOp
    mode: str
    parallel: tuple[sympy.Expr, ...]
    reduction: tuple[sympy.Expr, ...]
    var_level: dict[str, int]
    vector_var: str
    vector_level: int
    lanes: int
    inputs: dict[SSAValue, Tensor]
    outputs: list[Tensor]
    row_written: frozenset[int] = frozenset()  # slots that earlier stages of its group write
    addresses: dict[Operation, sympy.Expr] = field(default_factory=dict)
    output_addresses: list[sympy.Expr] = field(default_factory=list)
    index_exprs: dict[Operation, sympy.Expr] = field(default_factory=dict)
    levels: dict[Operation, int] = field(default_factory=dict)
    vectors: set[Operation] = field(default_factory=set)
    loads: dict[Operation, LoadPlan] = field(default_factory=dict)

    @property
    def kind(self) -> ReduceKind | None:
        return self.op.kind.data if isinstance(self.op, ReduceOp) else None

    @property
    def scan_kind(self) -> ScanKind | None:
        return self.op.kind.data if isinstance(self.op, ScanOp) else None

    @property
    def result_elements(self) -> sympy.Expr:
        """The elements of its result: its parallel points (times its scanned
        ones, or a sort's kept positions); a scatter's points, which combine
        into its result."""
        points = product(self.parallel)
        if isinstance(self.op, SortOp):
            return points * self.op.count
        return points * product(self.reduction) if isinstance(self.op, ScanOp) else points

    @property
    def depth(self) -> int:
        """The deepest level."""
        return max(self.var_level.values(), default=0)

    def bounds(self) -> dict[sympy.Symbol, sympy.Expr]:
        """The largest value of each of its loop variables."""
        return domain_bounds(self.parallel, self.reduction)

    def row_dims(self) -> list[tuple[str, sympy.Expr]]:
        """The parallel dimensions iterated by the row loop (level 0)."""
        return [(f"d{i}", size) for i, size in enumerate(self.parallel) if self.var_level.get(f"d{i}") == 0]

    def is_vector(self, value: SSAValue) -> bool:
        owner = value.owner
        return isinstance(owner, Operation) and owner in self.vectors

    def level_of(self, value: SSAValue) -> int:
        owner = value.owner
        return self.levels.get(owner, -1) if isinstance(owner, Operation) else -1


@dataclass
class KernelPlan:
    """
    The tensors and stages of one kernel for one launch's layouts. Stages run
    in `groups`: the stages of a group share one row loop (each row goes
    through all of them before the next row starts), the groups run one after
    the other.
    """

    kernel: KernelOp
    symbols: list[str]
    num_args: int
    temporaries: list[Tensor]
    stages: list[StagePlan]
    groups: list[list[StagePlan]] = field(default_factory=list)


def plan_kernel(kernel: KernelOp, layouts: Sequence[BufferType], f32_lanes: int) -> KernelPlan:
    analysis = analyze_kernel(kernel, layouts, "LLVM")
    num_in, num_out = len(analysis.inputs), len(analysis.outputs)
    inputs = [Tensor.at(i, layout) for i, layout in enumerate(analysis.inputs)]
    outputs = [Tensor.at(num_in + j, layout) for j, layout in enumerate(analysis.outputs)]
    temporaries: list[Tensor] = []
    results: list[Tensor] = []
    stages: list[StagePlan] = []
    scan_rows = _scan_readers(analysis)
    for facts in analysis.stages:
        destinations = [outputs[j] for j in facts.returned]
        if not destinations:
            slot = num_in + num_out + len(temporaries)
            temporaries.append(Tensor.at(slot, analysis.result_layout(facts)))
            destinations = [temporaries[-1]]
        results.append(destinations[0])
        sources = {arg: (results if src.stage else inputs)[src.index] for arg, src in facts.sources.items()}
        stages.append(plan_stage(facts, sources, destinations, f32_lanes, scan_rows.get(facts.position, 0)))
    plan = KernelPlan(kernel, kernel_symbols(kernel, layouts), num_in + num_out, temporaries, stages)
    plan.groups = group_stages(stages)
    return plan


def _scan_readers(analysis: KernelAnalysis) -> dict[int, int]:
    """
    The pointwise stages that read the result of a scan of their row group,
    by position, with the group's row rank. A scan's reader reads it where it
    writes it, so its dimensions would collapse into one where the scan's
    rows stay apart; keeping its rows apart lets it share the scan's row loop
    (the epilogue of a cumsum), which reads each row back while it is in cache.
    """
    found: dict[int, int] = {}
    for members, rank in analysis.groups:
        scans = {k for k in members if analysis.stages[k].is_scan}
        for k in members:
            facts = analysis.stages[k]
            reads_scan = any(src.stage and src.index in scans for src in facts.sources.values())
            if isinstance(facts.op, PointwiseOp) and reads_scan:
                found[k] = rank
    return found


def group_stages(stages: Sequence[StagePlan]) -> list[list[StagePlan]]:
    """
    Consecutive stages that can share a row loop: `inner` reductions and
    pointwise stages over the same rows, each reading what earlier stages of the
    group produce only in the row being computed (a softmax, a layer norm).
    """
    groups: list[list[StagePlan]] = []
    for stage in stages:
        if groups and _joins(groups[-1], stage):
            _read_in_rows(stage, {t.slot for s in groups[-1] for t in s.outputs})
            groups[-1].append(stage)
        else:
            groups.append([stage])
    return groups


def _read_in_rows(stage: StagePlan, slots: set[int]) -> None:
    """
    Re-plan the levels of a stage that joins a group: loads of `slots`, which
    earlier stages of the group write row by row, stay inside the row loop.
    """
    stage.row_written = frozenset(slots)
    stage.levels.clear()
    stage.vectors.clear()
    stage.loads.clear()
    _assign_levels(stage)


def _joins(group: list[StagePlan], stage: StagePlan) -> bool:
    """Whether `stage` shares the row loop of `group`: both row-shaped
    (`inner` or pointwise), over the same rows, reading what the group writes
    only in the row being computed."""
    if any(s.mode not in (INNER, POINTWISE) for s in (*group, stage)):
        return False
    rows = [size for _, size in group[0].row_dims()]
    if [size for _, size in stage.row_dims()] != rows:
        return False
    producers = {t.slot: (a, s.bounds()) for s in group for t, a in zip(s.outputs, s.output_addresses)}
    row_vars = [symbol(f"d{i}") for i in range(len(rows))]
    bounds = stage.bounds()
    for op, address in stage.addresses.items():
        produced = producers.get(stage.inputs[op.source].slot)
        if produced is not None and not same_row(address, produced[0], row_vars, bounds, produced[1]):
            return False
    return True


def plan_stage(
    facts: StageFacts, inputs: dict[SSAValue, Tensor], outputs: list[Tensor], f32_lanes: int, row_rank: int = 0
) -> StagePlan:
    """The loop nest of one stage: its collapsed space (its leading `row_rank`
    dimensions kept apart from the others), the mode its reduction direction
    gives, the vector variable and the level of each loop variable; a
    pointwise stage iterates in the memory order of its first output."""
    op = facts.op
    pointwise = isinstance(op, PointwiseOp)
    space = stage_space(facts, inputs, outputs, True, row_rank, pointwise)  # type: ignore[arg-type]
    parallel, reduction = space.parallel, space.reduction
    if isinstance(op, ScatterOp):
        return _plan_scatter(facts, space, inputs, outputs)
    if isinstance(op, SortOp):
        return _plan_sort(facts, space, inputs, outputs)
    mode = POINTWISE if pointwise else reduction_direction(space)
    if mode == POINTWISE and not parallel:
        parallel = (sympy.Integer(1),)  # a scalar: one point, its index d0 unused
    n, m = len(parallel), len(reduction)
    var_level = {f"d{i}": 0 for i in range(n)}
    if isinstance(op, ScanOp):
        return _plan_scan(facts, space, mode, var_level, inputs, outputs, f32_lanes)
    if mode == INNER:
        var_level.update({f"r{j}": j + 1 for j in range(m)})
        vector_var = f"r{m - 1}"
    elif mode == POINTWISE:
        var_level[f"d{n - 1}"] = 1
        vector_var = f"d{n - 1}"
    else:  # a tile of d_last at level 1, the reduction loops, then d_last vectorized
        var_level.update({f"r{j}": j + 2 for j in range(m)})
        var_level[f"d{n - 1}"] = m + 2
        vector_var = f"d{n - 1}"
    lanes = f32_lanes * (2 if mode == POINTWISE else 4)
    stage = StagePlan(op, mode, parallel, reduction, var_level, vector_var, var_level[vector_var], lanes, inputs, outputs)
    stage.addresses = space.load_addresses
    stage.output_addresses = space.output_addresses
    stage.index_exprs = space.index_exprs
    _assign_levels(stage)
    return stage


def _plan_scan(
    facts: StageFacts,
    space: StageSpace,
    mode: str,
    var_level: dict[str, int],
    inputs: dict[SSAValue, Tensor],
    outputs: list[Tensor],
    f32_lanes: int,
) -> StagePlan:
    """A scan's loop nest: its scanned variable r0 after the rows, in order;
    across the contiguous dimension (`outer`), d_last vectorized around it."""
    parallel, reduction = space.parallel, space.reduction
    if mode == INNER:
        var_level["r0"] = 1
        vector_var, vector_level, lanes = "", -1, 1  # nothing is a vector
    else:
        var_level[f"d{len(parallel) - 1}"] = 1
        var_level["r0"] = 2
        vector_var, vector_level, lanes = f"d{len(parallel) - 1}", 1, f32_lanes * 2
    stage = StagePlan(facts.op, mode, parallel, reduction, var_level, vector_var, vector_level, lanes, inputs, outputs)
    stage.addresses = space.load_addresses
    stage.output_addresses = space.output_addresses
    stage.index_exprs = space.index_exprs
    _assign_levels(stage)
    return stage


def _plan_scatter(facts: StageFacts, space: StageSpace, inputs: dict[SSAValue, Tensor], outputs: list[Tensor]) -> StagePlan:
    """A scatter's loop nest: every point in order, one at a time (level 0;
    `scatters.scatter_points`), so that points landing on one element combine
    in the domain's order, as torch's CPU kernels do, with no race."""
    parallel = space.parallel or (sympy.Integer(1),)
    var_level = {f"d{i}": 0 for i in range(len(parallel))}
    stage = StagePlan(facts.op, SCATTER, parallel, (), var_level, "", -1, 1, inputs, outputs)
    stage.addresses = space.load_addresses
    stage.output_addresses = space.output_addresses
    stage.index_exprs = space.index_exprs
    _assign_levels(stage)
    return stage


def _plan_sort(facts: StageFacts, space: StageSpace, inputs: dict[SSAValue, Tensor], outputs: list[Tensor]) -> StagePlan:
    """A sort's loop nest: rows (level 0, across threads), then its sorted
    variable r0 in order (level 1), scalars (`sorts.sort_row`)."""
    parallel = space.parallel or (sympy.Integer(1),)  # a single row: d0 unused
    var_level = {f"d{i}": 0 for i in range(len(parallel))}
    var_level["r0"] = 1
    stage = StagePlan(facts.op, SORT, parallel, space.reduction, var_level, "", -1, 1, inputs, outputs)
    stage.addresses = space.load_addresses
    stage.output_addresses = space.output_addresses
    stage.index_exprs = space.index_exprs
    _assign_levels(stage)
    return stage


def _expr_level(stage: StagePlan, expr: sympy.Expr, index_values: Sequence[SSAValue] = ()) -> tuple[int, bool]:
    """(level, is vector) of an expression over loop variables, sizes and index values."""
    level, vector = -1, False
    for sym in expr.free_symbols:
        name = sym.name
        if name[0] in "dr":
            level = max(level, stage.var_level[name])
            vector |= name == stage.vector_var
        elif name[0] == "v":
            value = index_values[int(name[1:])]
            level = max(level, stage.level_of(value))
            vector |= stage.is_vector(value)
    return level, vector


def _assign_levels(stage: StagePlan) -> None:
    for op in stage.op.body.block.ops:
        level = max((stage.level_of(v) for v in op.operands), default=-1)
        vector = any(stage.is_vector(v) for v in op.operands)
        if isinstance(op, IndexOp):
            level, vector = _expr_level(stage, stage.index_exprs[op])
        elif isinstance(op, LoadOp):
            load = _plan_load(stage, op)
            stage.loads[op] = load
            address_level, address_vector = _expr_level(stage, load.address, op.index_values)
            level, vector = max(level, address_level), vector or address_vector
            if stage.inputs[op.source].slot in stage.row_written:
                level = max(level, 0)
        stage.levels[op] = level
        if vector:
            stage.vectors.add(op)


def _plan_load(stage: StagePlan, op: LoadOp) -> LoadPlan:
    address = stage.addresses[op]
    level, vector = _expr_level(stage, address, op.index_values)
    if not vector:
        return LoadPlan("uniform", address)
    split = split_affine(address, symbol(stage.vector_var))
    if split is not None:
        rest_level, rest_vector = _expr_level(stage, split[0], op.index_values)
        if not rest_vector:
            return LoadPlan("affine", address, split[0], split[1], max(rest_level, _index_values_level(stage, op)))
    return LoadPlan("gather", address)


def _index_values_level(stage: StagePlan, op: LoadOp) -> int:
    """
    The deepest level of a load's index values. Its base pointer is computed
    where they all exist, even those its address lost (an index into a
    dimension of stride 0, as in a gather from a broadcast input).
    """
    return max((stage.level_of(v) for v in op.index_values), default=-1)
