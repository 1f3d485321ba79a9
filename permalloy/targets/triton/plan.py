"""
What to generate for a kernel, decided before any source is written.

A kernel's loop ops become *stages*, run in order, gathered into *groups*.
The stages of a group share rows: its programs each take a block of rows
(the leading parallel dimensions every stage has, which later stages read
only at their own row) and run every stage on them in turn. Each stage works
on a 2-D tile `[rows, inner]`: `inner` is the reduction domain of a
reduction, the scanned dimension of a scan (whose other dimensions are all
rows), the row of a sort, the remaining parallel dimensions of a
pointwise op (nothing for a per-row value). Groups that cannot share rows run one after the other, as
separate launches, and pass values through temporaries.

Modes of a group:
    flat    one pointwise stage, 1-D tiles over its flattened domain
    tiled   one pointwise stage, 2-D tiles `[rows, inner]` over a grid of both,
            for transposes (one access contiguous along rows, another along inner)
    rows    reductions and pointwise stages sharing rows (a lone reduction's
            rows are its whole parallel domain; a sort is always lone, its
            row in one block, `sorts`)
    scatter one scatter stage, 1-D tiles over its flattened domain, combining
            into its output with atomics (`scatters`)
    matmul  a matrix product (`analysis.contraction`) and its pointwise
            epilogue, the whole kernel: 2-D output tiles `[BLOCK_M, BLOCK_N]`,
            the factors computed over tiles of the reduction (`matmul`)

A stage whose result is one value per row (a reduction, a per-row pointwise
op) and that later stages of its group read at their own row keeps that value
in registers (`keeps_register`); everything else read later goes through
memory (an output, or a temporary the launcher allocates) after a barrier.

The facts come from the kernel analysis (`permalloy.analysis`): the tensors,
the stages and where their inputs come from, the row groups and their rank,
which reads get one value per row, and the collapsing of rows and inner
dimensions. This module maps them to programs, blocks and registers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.ir import SSAValue

from permalloy.analysis.affine import unit_stride
from permalloy.analysis.contraction import Contraction, contraction
from permalloy.analysis.collapse import Axis, collapse, memory_order
from permalloy.analysis.kernel import StageFacts, TensorLayout, analyze_kernel
from permalloy.analysis.split_dims import Split, split_dims
from permalloy.analysis.rows import per_row, reads_one_value_per_row
from permalloy.dialects.buffer import BufferType, KernelOp
from permalloy.dialects.loop import IndexOp, LoadOp, LoopOp, PointwiseOp, ScatterOp
from permalloy.dialects.ptensor import ReduceKind, ScanKind, TensorType
from permalloy.dialects.sym import parallel_index, reduction_index
from permalloy.targets import kernel_symbols
from permalloy.targets.triton.types import memory_dtype

FLAT, TILED, ROWS, SCATTER, MATMUL = "flat", "tiled", "rows", "scatter", "matmul"
PERSISTENT_LIMIT = 4096
"""The largest inner extent a stage holds in one block (a persistent reduction).
On an H100, softmax and layer norm over rows of 4096 move 2.45 TB/s looped in
chunks and 3.0 TB/s (a copy's bandwidth) in one block."""


@dataclass(frozen=True)
class TensorRef(TensorLayout):
    """A tensor the kernel addresses: its layout and its parameter name."""

    name: str = ""

    @staticmethod
    def named(name: str, layout: TensorLayout) -> TensorRef:
        return TensorRef(layout.element, layout.sizes, layout.strides, name)

    @property
    def dtype(self) -> str:
        return memory_dtype(self.element)


@dataclass
class Stage:
    """One loop op of a kernel and how it runs inside its group."""

    facts: StageFacts
    outputs: list[TensorRef] = field(default_factory=list)
    sources: dict[SSAValue, TensorRef | int] = field(default_factory=dict)
    """Each body argument: the tensor it reads, or the stage whose register holds it."""
    register_reads: set[LoadOp] = field(default_factory=set)
    inner: Axis = field(default_factory=lambda: Axis([]))
    substitution: dict[sympy.Symbol, sympy.Expr] = field(default_factory=dict)
    split: Split | None = None
    """The parts its dimensions split into (`analysis.split_dims`), applied
    before `substitution`."""
    row_rank: int = 0
    """How many leading parallel dimensions are the rows of its group."""
    keeps_register: bool = False
    barrier: bool = False
    block: int | None = None
    """The static block of the inner axis when it fits in one (persistent), else None."""

    @property
    def position(self) -> int:
        return self.facts.position

    @property
    def op(self) -> LoopOp:
        return self.facts.op

    @property
    def is_reduce(self) -> bool:
        return self.facts.is_reduce

    @property
    def is_scan(self) -> bool:
        return self.facts.is_scan

    @property
    def is_sort(self) -> bool:
        return self.facts.is_sort

    @property
    def walks_inner(self) -> bool:
        """Whether its inner axis is a reduction domain (a reduction's, a
        scan's or a sort's) rather than parallel dimensions."""
        return self.is_reduce or self.is_scan or self.is_sort

    @property
    def is_scatter(self) -> bool:
        return isinstance(self.op, ScatterOp)

    @property
    def kind(self) -> ReduceKind | ScanKind | None:
        return self.facts.kind

    @property
    def result_type(self) -> TensorType:
        return self.facts.result_type

    def load_address(self, load: LoadOp) -> sympy.Expr:
        source = self.sources[load.source]
        assert isinstance(source, TensorRef)
        return self._resolved(source.address(load.indices.data))

    def output_address(self, tensor: TensorRef) -> sympy.Expr:
        return self._resolved(tensor.address(self.op.result_index))

    def index_expr(self, op: IndexOp) -> sympy.Expr:
        return self._resolved(op.expr.expr)

    def _resolved(self, expr: sympy.Expr) -> sympy.Expr:
        """`expr` over the dimensions this stage's loops run."""
        if self.split is not None:
            expr = self.split.apply(expr)
        return sympy.expand(expr.xreplace(self.substitution))

    def memory_loads(self) -> list[LoadOp]:
        return [o for o in self.facts.loads if o not in self.register_reads]

    def pinned(self) -> set[sympy.Symbol]:
        return self.facts.pinned


@dataclass
class Group:
    """Stages run by one launch, sharing the rows each program takes."""

    mode: str
    rows: Axis
    stages: list[Stage]
    row_rank: int
    contraction: Contraction | None = None
    """The matrix product of a `matmul` group (its first stage)."""

    @property
    def looped(self) -> bool:
        """Whether some stage walks its inner axis in RBLOCK chunks."""
        return self.mode == TILED or any(s.inner.dims and s.block is None for s in self.stages)

    @property
    def widest_block(self) -> int:
        return max((s.block or 1 for s in self.stages), default=1)

    @property
    def outer(self) -> bool:
        """Whether its reductions and scans read along rows (column sums): more
        of their loads walk the innermost row dimension than the innermost
        inner one."""
        if self.mode != ROWS or not self.rows.dims:
            return False
        row = self.rows.dims[-1][0]
        along_rows = along_inner = 0
        for stage in self.stages:
            if not (stage.is_reduce or stage.is_scan) or not stage.inner.dims:
                continue
            inner = stage.inner.dims[-1][0]
            for load in stage.memory_loads():
                address = stage.load_address(load)
                along_rows += unit_stride(address, row)
                along_inner += unit_stride(address, inner)
        return along_rows > along_inner


@dataclass
class KernelPlan:
    """The tensors and groups of one kernel for one launch's layouts."""

    kernel: KernelOp
    name: str
    inputs: list[TensorRef]
    outputs: list[TensorRef]
    temporaries: list[TensorRef]
    symbols: list[str]
    groups: list[Group]
    index_bits: int | None
    """32 or 64 when the layouts decide it, None when it depends on the sizes."""
    extents: list[sympy.Expr]

    @property
    def tensors(self) -> list[TensorRef]:
        return [*self.inputs, *self.outputs, *self.temporaries]

    @property
    def stages(self) -> list[Stage]:
        return [s for g in self.groups for s in g.stages]


def plan_kernel(kernel: KernelOp, layouts: Sequence[BufferType], name: str) -> KernelPlan:
    """Plan `kernel` for the buffer `layouts` of a launch (inputs then outputs)."""
    analysis = analyze_kernel(kernel, layouts, "Triton")
    inputs = [TensorRef.named(f"in{i}", layout) for i, layout in enumerate(analysis.inputs)]
    outputs = [TensorRef.named(f"out{j}", layout) for j, layout in enumerate(analysis.outputs)]
    stages = [Stage(facts, [outputs[j] for j in facts.returned]) for facts in analysis.stages]
    partition = [([stages[k] for k in members], rank) for members, rank in analysis.groups]
    for members, rank in partition:
        for stage in members:
            stage.row_rank = rank
    temporaries: list[TensorRef] = []
    for members, _ in partition:
        _bind_sources(members, stages, inputs, temporaries)
    template = _matmul_group(partition)
    groups = [template] if template is not None else [_plan_group(members, rank) for members, rank in partition]
    plan = KernelPlan(kernel, name, inputs, outputs, temporaries, kernel_symbols(kernel, layouts), groups, 32, [])
    _index_width(plan)
    return plan


# -- sources ----------------------------------------------------------------------


def _bind_sources(group: list[Stage], stages: list[Stage], inputs: list[TensorRef], temporaries: list[TensorRef]) -> None:
    """
    Decide, for each body argument of the group's stages, where its values
    come from: a kernel input; the register of a stage of the group that
    computes one value per row, read at the reader's own row; else the memory
    the producer writes (an output, or a temporary), after a barrier when the
    producer is in the group.
    """
    in_group = {s.position for s in group}
    for stage in group:
        for argument, source in stage.facts.sources.items():
            if not source.stage:
                stage.sources[argument] = inputs[source.index]
                continue
            producer = stages[source.index]
            uses = [u.operation for u in argument.uses]
            if (
                producer.position in in_group
                and per_row(producer.op, producer.row_rank)
                and all(isinstance(u, LoadOp) and reads_one_value_per_row(u, stage.row_rank) for u in uses)
            ):
                producer.keeps_register = True
                stage.register_reads.update(uses)  # type: ignore[arg-type]
                stage.sources[argument] = producer.position
                continue
            if producer.position in in_group:
                stage.barrier = True
            stage.sources[argument] = _memory_of(producer, temporaries)


def _memory_of(producer: Stage, temporaries: list[TensorRef]) -> TensorRef:
    if not producer.outputs:
        layout = TensorLayout.contiguous(producer.result_type.element_type, producer.result_type.sizes)
        temporaries.append(TensorRef.named(f"tmp{len(temporaries)}", layout))
        producer.outputs.append(temporaries[-1])
    return producer.outputs[0]


# -- axes ----------------------------------------------------------------------------


def _addresses(stage: Stage) -> list[sympy.Expr]:
    loads = [stage.load_address(load) for load in stage.memory_loads()]
    return loads + [stage.output_address(t) for t in stage.outputs]


def _matmul_group(partition: list[tuple[list[Stage], int]]) -> Group | None:
    """The kernel as one `matmul` group: a contraction at full rank followed by
    pointwise stages of its shape reading the group only through registers;
    None for any other kernel."""
    if len(partition) != 1:
        return None
    members, rank = partition[0]
    product = contraction(members[0].op)
    if product is None or rank != product.rank:
        return None
    sizes = members[0].op.parallel_sizes
    for stage in members[1:]:
        if not isinstance(stage.op, PointwiseOp) or stage.barrier or len(stage.op.parallel_sizes) != len(sizes):
            return None
        if any(sympy.expand(a - b) != 0 for a, b in zip(stage.op.parallel_sizes, sizes)):
            return None
    if members[0].barrier:
        return None
    return Group(MATMUL, Axis([]), members, rank, product)


def _plan_group(members: list[Stage], rank: int) -> Group:
    if members[0].is_scatter:
        return _plan_scatter(members[0])
    if len(members) == 1 and not members[0].walks_inner:
        return _plan_pointwise(members[0])
    sizes = members[0].op.parallel_sizes
    rows = collapse(
        [(parallel_index(i), sizes[i]) for i in range(rank)],
        [a for m in members for a in _addresses(m)],
        {s for m in members for s in m.pinned()},
    )
    for stage in members:
        stage.substitution = dict(rows.substitution)
        extra = stage.op.parallel_sizes[rank:]
        if stage.walks_inner:
            # a reduction's extra dimensions have size 1; a scan has none
            # (rows.scans_rows), nor a sort (a group of its own)
            stage.substitution.update({parallel_index(i + rank): sympy.Integer(0) for i in range(len(extra))})
            dims = [(reduction_index(j), size) for j, size in enumerate(stage.op.reduction_sizes)]
        else:
            dims = [(parallel_index(i + rank), size) for i, size in enumerate(extra)]
        inner = collapse(dims, _addresses(stage), stage.pinned())
        stage.substitution.update(inner.substitution)
        if stage.walks_inner and not inner.dims:
            inner = Axis([(reduction_index(0), sympy.Integer(1))], inner.substitution)
        stage.inner = inner
        stage.block = _static_block(inner)
    group = Group(ROWS, rows, members, rank)
    if group.outer:
        # Reductions along rows read each chunk of the inner axis across a
        # block of rows that is contiguous in memory: they walk it in chunks,
        # which leaves room for wide row blocks, rather than hold it whole
        # for a row or two (batch-norm statistics of a channels-last tensor
        # ran at a quarter of the bandwidth so).
        for stage in members:
            stage.block = None
    return group


def _static_block(axis: Axis) -> int | None:
    if not axis.dims:
        return None
    numel = axis.numel
    if numel.is_Integer and int(numel) <= PERSISTENT_LIMIT:
        return 1 << max(int(numel) - 1, 0).bit_length()
    return None


def _plan_pointwise(stage: Stage) -> Group:
    """A lone pointwise stage: 1-D tiles, or 2-D ones for a transposed access,
    over its domain in the memory order of its first output (a channels-last
    result is written along its channels).

    A 1-D stage whose addresses divide its dimensions (a reshape read through
    a permute) is planned again over the parts they split into
    (`analysis.split_dims`), and takes that plan when it finds the transposed
    access the divisions hid. Only then: on an H200, Swin's window copies ran
    1.3-1.4x faster tiled, while kernels that were tiled already, or stayed
    1-D, ran up to 3x slower over the parts."""
    sizes = stage.result_type.sizes
    dims = [(parallel_index(i), s) for i, s in enumerate(sizes)]
    group = _plan_pointwise_over(stage, dims, len(sizes))
    if group.mode != FLAT:
        return group
    split = split_dims(dims, _addresses(stage), len(sizes), stage.pinned())
    if split is None:
        return group
    whole = stage.substitution
    stage.split = split
    tiled = _plan_pointwise_over(stage, split.dims, len(sizes))
    if tiled.mode == TILED:
        return tiled
    stage.split, stage.substitution = None, whole  # its inner axis is empty in both 1-D plans
    return group


def _plan_pointwise_over(stage: Stage, dims: list[tuple[sympy.Symbol, sympy.Expr]], rank: int) -> Group:
    """`_plan_pointwise` over the dimensions `dims` of the stage's domain."""
    stage.substitution = {}
    if stage.outputs:
        dims = memory_order(dims, stage.output_address(stage.outputs[0]))
    axis = collapse(dims, _addresses(stage), stage.pinned())
    stage.substitution = dict(axis.substitution)
    split = _transposed_split(axis, _addresses(stage))
    if split is None:
        stage.inner = Axis([])
        return Group(FLAT, axis, [stage], rank)
    rows, inner = Axis(axis.dims[:split], {}), Axis(axis.dims[split:], {})
    stage.inner = inner
    return Group(TILED, rows, [stage], rank)


def _plan_scatter(stage: Stage) -> Group:
    """A scatter: 1-D tiles over its domain (a group of its own: it shares
    rows with nothing, `rows.row_groups`)."""
    sizes = stage.op.parallel_sizes
    axis = collapse([(parallel_index(i), s) for i, s in enumerate(sizes)], _addresses(stage), stage.pinned())
    stage.substitution = dict(axis.substitution)
    stage.inner = Axis([])
    return Group(SCATTER, axis, [stage], len(sizes))


def _transposed_split(axis: Axis, addresses: list[sympy.Expr]) -> int | None:
    """Where to split the dimensions into rows and inner for 2-D tiles: after
    the innermost dimension that some access walks contiguously, when another
    access walks the last dimension contiguously."""
    if len(axis.dims) < 2:
        return None
    last = axis.dims[-1][0]
    contiguous_last = any(unit_stride(a, last) for a in addresses)
    best = None
    for j, (var, size) in enumerate(axis.dims[:-1]):
        if size.is_Integer and int(size) < 8:
            continue
        if any(unit_stride(a, var) and not unit_stride(a, last) for a in addresses):
            best = j
    if best is None or not contiguous_last:
        return None
    return best + 1


def _index_width(plan: KernelPlan) -> None:
    """int32 index arithmetic when every offset and count fits, else int64."""
    extents = [t.extent() for t in plan.tensors]
    for group in plan.groups:
        extents.append(group.rows.numel)
        extents.extend(s.inner.numel for s in group.stages)
    extents = [sympy.expand(e) for e in extents]
    plan.extents = extents
    if all(e.is_Integer for e in extents):
        plan.index_bits = 64 if max((int(e) for e in extents), default=0) >= 2**31 else 32
    else:
        plan.index_bits = None
