"""
What to generate for a kernel, decided before any source is written.

A kernel's loop ops become *stages*, run in order, gathered into *groups*.
The stages of a group share rows: its programs each take a block of rows
(the leading parallel dimensions every stage has, which later stages read
only at their own row) and run every stage on them in turn. Each stage works
on a 2-D tile `[rows, inner]`: `inner` is the reduction domain of a
reduction, the remaining parallel dimensions of a pointwise op (nothing for
a per-row value). Groups that cannot share rows run one after the other, as
separate launches, and pass values through temporaries.

Modes of a group:
    flat    one pointwise stage, 1-D tiles over its flattened domain
    tiled   one pointwise stage, 2-D tiles `[rows, inner]` over a grid of both,
            for transposes (one access contiguous along rows, another along inner)
    rows    reductions and pointwise stages sharing rows (a lone reduction's
            rows are its whole parallel domain)

A stage whose result is one value per row (a reduction, a per-row pointwise
op) and that later stages of its group read at their own row keeps that value
in registers (`keeps_register`); everything else read later goes through
memory (an output, or a temporary the launcher allocates) after a barrier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.ir import Attribute, BlockArgument, SSAValue

from permalloy.dialects.buffer import BufferType, KernelOp, YieldOp, contiguous_strides
from permalloy.dialects.loop import IndexOp, LoadOp, LoopOp, ReduceOp
from permalloy.dialects.ptensor import ReduceKind, TensorType, sizes_equal
from permalloy.dialects.sym import parallel_index, reduction_index
from permalloy.targets import kernel_symbols
from permalloy.targets.triton.collapse import Axis, collapse
from permalloy.targets.triton.exprs import split_affine
from permalloy.targets.triton.types import UnsupportedKernelError, memory_dtype

FLAT, TILED, ROWS = "flat", "tiled", "rows"
PERSISTENT_LIMIT = 4096
"""The largest inner extent a stage holds in one block (a persistent reduction).
On an H100, softmax and layer norm over rows of 4096 move 2.45 TB/s looped in
chunks and 3.0 TB/s (a copy's bandwidth) in one block."""


@dataclass(frozen=True)
class TensorRef:
    """A tensor the kernel addresses: its parameter name, element type and layout."""

    name: str
    element: Attribute
    sizes: tuple[sympy.Expr, ...]
    strides: tuple[sympy.Expr, ...]

    @property
    def dtype(self) -> str:
        return memory_dtype(self.element)

    def address(self, indices: Sequence[sympy.Expr]) -> sympy.Expr:
        return sympy.expand(sum((i * s for i, s in zip(indices, self.strides)), sympy.Integer(0)))

    def extent(self) -> sympy.Expr:
        """One past the largest element offset (0 for an empty tensor)."""
        return sympy.expand(sum(((n - 1) * s for n, s in zip(self.sizes, self.strides)), sympy.Integer(1)))


@dataclass
class Stage:
    """One loop op of a kernel and how it runs inside its group."""

    position: int
    op: LoopOp
    outputs: list[TensorRef] = field(default_factory=list)
    sources: dict[SSAValue, TensorRef | int] = field(default_factory=dict)
    """Each body argument: the tensor it reads, or the stage whose register holds it."""
    register_reads: set[LoadOp] = field(default_factory=set)
    inner: Axis = field(default_factory=lambda: Axis([]))
    substitution: dict[sympy.Symbol, sympy.Expr] = field(default_factory=dict)
    row_rank: int = 0
    """How many leading parallel dimensions are the rows of its group."""
    keeps_register: bool = False
    barrier: bool = False
    block: int | None = None
    """The static block of the inner axis when it fits in one (persistent), else None."""

    @property
    def is_reduce(self) -> bool:
        return isinstance(self.op, ReduceOp)

    @property
    def kind(self) -> ReduceKind | None:
        return self.op.kind.data if isinstance(self.op, ReduceOp) else None

    @property
    def result_type(self) -> TensorType:
        t = self.op.result.type
        assert isinstance(t, TensorType)
        return t

    def load_address(self, load: LoadOp) -> sympy.Expr:
        source = self.sources[load.source]
        assert isinstance(source, TensorRef)
        return sympy.expand(source.address(load.indices.data).xreplace(self.substitution))

    def output_address(self, tensor: TensorRef) -> sympy.Expr:
        indices = [parallel_index(i) for i in range(self.result_type.rank)]
        return sympy.expand(tensor.address(indices).xreplace(self.substitution))

    def index_expr(self, op: IndexOp) -> sympy.Expr:
        return sympy.expand(op.expr.expr.xreplace(self.substitution))

    def memory_loads(self) -> list[LoadOp]:
        return [o for o in self.op.body.block.ops if isinstance(o, LoadOp) and o not in self.register_reads]

    def pinned(self) -> set[sympy.Symbol]:
        return {s for o in self.op.body.block.ops if isinstance(o, IndexOp) for s in o.expr.expr.free_symbols}


@dataclass
class Group:
    """Stages run by one launch, sharing the rows each program takes."""

    mode: str
    rows: Axis
    stages: list[Stage]
    row_rank: int

    @property
    def looped(self) -> bool:
        """Whether some stage walks its inner axis in RBLOCK chunks."""
        return self.mode == TILED or any(s.inner.dims and s.block is None for s in self.stages)

    @property
    def widest_block(self) -> int:
        return max((s.block or 1 for s in self.stages), default=1)

    @property
    def outer(self) -> bool:
        """Whether its reductions read along rows (column sums): more of their
        loads walk the innermost row dimension than the innermost inner one."""
        if self.mode != ROWS or not self.rows.dims:
            return False
        row = self.rows.dims[-1][0]
        along_rows = along_inner = 0
        for stage in self.stages:
            if not stage.is_reduce or not stage.inner.dims:
                continue
            inner = stage.inner.dims[-1][0]
            for load in stage.memory_loads():
                address = stage.load_address(load)
                along_rows += _unit_stride(address, row)
                along_inner += _unit_stride(address, inner)
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
    signature = kernel.function_type
    num_in, num_out = len(signature.inputs.data), len(signature.outputs.data)
    if len(layouts) != num_in + num_out:
        raise UnsupportedKernelError(
            f"kernel @{kernel.sym_name.data} takes {num_in} inputs and {num_out} outputs, got {len(layouts)} layouts"
        )
    inputs = [_ref(f"in{i}", layouts[i]) for i in range(num_in)]
    outputs = [_ref(f"out{j}", layouts[num_in + j]) for j in range(num_out)]
    terminator = kernel.body.block.last_op
    assert isinstance(terminator, YieldOp)
    destinations: dict[SSAValue, list[TensorRef]] = {}
    for value, ref in zip(terminator.values, outputs):
        if isinstance(value, BlockArgument):
            raise UnsupportedKernelError("a kernel that returns one of its arguments has no loop to emit")
        destinations.setdefault(value, []).append(ref)
    ops = [op for op in kernel.body.block.ops if op is not terminator]
    for op in ops:
        if not isinstance(op, LoopOp):
            raise UnsupportedKernelError(f"the Triton target expects loop ops in a kernel body, got {op.name}")
    stages = [Stage(i, op, list(destinations.get(op.result, []))) for i, op in enumerate(ops)]
    partition = _partition(stages)
    for members, rank in partition:
        for stage in members:
            stage.row_rank = rank
    arguments: dict[SSAValue, TensorRef] = dict(zip(kernel.body.block.args, inputs))
    temporaries: list[TensorRef] = []
    for members, _ in partition:
        _bind_sources(members, stages, arguments, temporaries)
    groups = [_plan_group(members, rank) for members, rank in partition]
    plan = KernelPlan(kernel, name, inputs, outputs, temporaries, kernel_symbols(kernel, layouts), groups, 32, [])
    _index_width(plan)
    return plan


def _ref(name: str, layout: BufferType) -> TensorRef:
    return TensorRef(name, layout.element_type, tuple(layout.sizes), tuple(layout.strides.data))


# -- grouping ---------------------------------------------------------------------


def _partition(stages: list[Stage]) -> list[tuple[list[Stage], int]]:
    """Consecutive stages that share rows, greedily, with their row rank."""
    groups: list[tuple[list[Stage], int]] = []
    current: list[Stage] = []
    rank = 0
    for stage in stages:
        joined = _row_rank(current + [stage]) if current else None
        if joined is not None:
            current.append(stage)
            rank = joined
            continue
        if current:
            groups.append((current, rank))
        current, rank = [stage], stage.result_type.rank
    if current:
        groups.append((current, rank))
    return groups


def _row_rank(members: list[Stage]) -> int | None:
    """The most leading dimensions `members` can share as rows, or None."""
    ranks = [m.result_type.rank for m in members]
    if min(ranks) == 0:
        return None
    sizes = [m.result_type.sizes for m in members]
    common = 0
    while common < min(ranks) and all(sizes_equal(s[common], sizes[0][common]) for s in sizes):
        common += 1
    for k in range(common, 0, -1):
        if all(_fits(m, k) for m in members) and _row_local(members, k):
            return k
    return None


def _fits(stage: Stage, k: int) -> bool:
    """A reduction computes one value per row: its other parallel sizes are 1."""
    return not stage.is_reduce or all(s == 1 for s in stage.result_type.sizes[k:])


def _row_local(members: list[Stage], k: int) -> bool:
    produced = {m.op.result for m in members}
    rows = [parallel_index(i) for i in range(k)]
    for member in members:
        for argument, value in zip(member.op.body.block.args, member.op.inputs):
            if value not in produced:
                continue
            for use in argument.uses:
                load = use.operation
                if not isinstance(load, LoadOp) or list(load.indices.data[:k]) != rows:
                    return False
    return True


def _bind_sources(
    group: list[Stage], stages: list[Stage], arguments: dict[SSAValue, TensorRef], temporaries: list[TensorRef]
) -> None:
    """Decide, for each body argument of the group's stages, where its values come from."""
    by_result = {s.op.result: s for s in stages}
    in_group = {s.op.result for s in group}
    for stage in group:
        for argument, value in zip(stage.op.body.block.args, stage.op.inputs):
            producer = by_result.get(value)
            if producer is None:
                stage.sources[argument] = arguments[value]
                continue
            loads = [u.operation for u in argument.uses]
            if value in in_group and _per_row(producer) and all(_at_own_row(load, stage) for load in loads):
                producer.keeps_register = True
                stage.register_reads.update(loads)  # type: ignore[arg-type]
                stage.sources[argument] = producer.position
                continue
            if value in in_group:
                stage.barrier = True
            stage.sources[argument] = _memory_of(producer, temporaries)


def _per_row(stage: Stage) -> bool:
    """Whether a stage computes one value per row of its group."""
    return all(s == 1 for s in stage.result_type.sizes[stage.row_rank :])


def _at_own_row(load, stage: Stage) -> bool:
    if not isinstance(load, LoadOp) or load.index_values or load.mask is not None:
        return False
    k = stage.row_rank
    indices = list(load.indices.data)
    return indices[:k] == [parallel_index(i) for i in range(k)] and all(i == 0 for i in indices[k:])


def _memory_of(producer: Stage, temporaries: list[TensorRef]) -> TensorRef:
    if not producer.outputs:
        sizes = tuple(producer.result_type.sizes)
        ref = TensorRef(f"tmp{len(temporaries)}", producer.result_type.element_type, sizes, contiguous_strides(sizes))
        temporaries.append(ref)
        producer.outputs.append(ref)
    return producer.outputs[0]


# -- axes ----------------------------------------------------------------------------


def _addresses(stage: Stage) -> list[sympy.Expr]:
    loads = [stage.load_address(load) for load in stage.memory_loads()]
    return loads + [stage.output_address(t) for t in stage.outputs]


def _plan_group(members: list[Stage], rank: int) -> Group:
    if len(members) == 1 and not members[0].is_reduce:
        return _plan_pointwise(members[0])
    sizes = members[0].result_type.sizes
    rows = collapse(
        [(parallel_index(i), sizes[i]) for i in range(rank)],
        [a for m in members for a in _addresses(m)],
        {s for m in members for s in m.pinned()},
    )
    for stage in members:
        stage.substitution = dict(rows.substitution)
        extra = stage.result_type.sizes[rank:]
        if stage.is_reduce:
            stage.substitution.update({parallel_index(i + rank): sympy.Integer(0) for i in range(len(extra))})
            dims = [(reduction_index(j), size) for j, size in enumerate(stage.op.reduction_sizes)]
        else:
            dims = [(parallel_index(i + rank), size) for i, size in enumerate(extra)]
        inner = collapse(dims, _addresses(stage), stage.pinned())
        stage.substitution.update(inner.substitution)
        if stage.is_reduce and not inner.dims:
            inner = Axis([(reduction_index(0), sympy.Integer(1))], inner.substitution)
        stage.inner = inner
        stage.block = _static_block(inner)
    return Group(ROWS, rows, members, rank)


def _static_block(axis: Axis) -> int | None:
    if not axis.dims:
        return None
    numel = axis.numel
    if numel.is_Integer and int(numel) <= PERSISTENT_LIMIT:
        return 1 << max(int(numel) - 1, 0).bit_length()
    return None


def _plan_pointwise(stage: Stage) -> Group:
    """A lone pointwise stage: 1-D tiles, or 2-D ones for a transposed access."""
    sizes = stage.result_type.sizes
    axis = collapse([(parallel_index(i), s) for i, s in enumerate(sizes)], _addresses(stage), stage.pinned())
    stage.substitution = dict(axis.substitution)
    split = _transposed_split(axis, _addresses(stage))
    if split is None:
        stage.inner = Axis([])
        return Group(FLAT, axis, [stage], len(sizes))
    rows, inner = Axis(axis.dims[:split], {}), Axis(axis.dims[split:], {})
    stage.inner = inner
    return Group(TILED, rows, [stage], len(sizes))


def _transposed_split(axis: Axis, addresses: list[sympy.Expr]) -> int | None:
    """Where to split the dimensions into rows and inner for 2-D tiles: after
    the innermost dimension that some access walks contiguously, when another
    access walks the last dimension contiguously."""
    if len(axis.dims) < 2:
        return None
    last = axis.dims[-1][0]
    contiguous_last = any(_unit_stride(a, last) for a in addresses)
    best = None
    for j, (var, size) in enumerate(axis.dims[:-1]):
        if size.is_Integer and int(size) < 8:
            continue
        if any(_unit_stride(a, var) and not _unit_stride(a, last) for a in addresses):
            best = j
    if best is None or not contiguous_last:
        return None
    return best + 1


def _unit_stride(address: sympy.Expr, var: sympy.Symbol) -> bool:
    split = split_affine(address, var)
    return split is not None and split[1] == 1


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
