"""
The facts about one kernel that code generation needs, computed once for the
buffer layouts of a launch.

`analyze_kernel(kernel, layouts)` checks that a kernel can be translated at
all (a layout per argument and result, loop ops only, no result that is an
argument; `UnsupportedKernelError` otherwise) and describes it:

- its tensors: each argument's and result's layout (`TensorLayout`);
- its *stages*, one per loop op in order (`StageFacts`): where each body
  argument comes from (a kernel input or an earlier stage), at which outputs
  the kernel returns the stage's result (none: an *intermediate*, which a
  target keeps in a temporary or in registers), its loads (the form of their
  indices: `affine.load_form`), the loop variables its body reads as values;
- its *row groups* (`rows.row_groups`): consecutive stages that share leading
  dimensions as rows, with the rank of those rows;
- for any layouts of its tensors, a stage's iteration space after collapsing
  (`stage_space`): parallel and reduction domains, load and store addresses
  and `loop.index` expressions over the collapsed loop variables, and for a
  reduction its direction (`reduction_direction`): `inner` along the
  contiguous dimension (row sums), `outer` across it (column sums).

Targets map these facts to their language (the LLVM target's loop levels
and vectors, the Triton target's programs and blocks); they do not derive
them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
from xdsl.dialects.builtin import FunctionType
from xdsl.ir import Attribute, SSAValue

from permalloy.analysis.affine import gathered, unit_stride
from permalloy.analysis.collapse import Space, collapse_space
from permalloy.analysis.rows import row_groups
from permalloy.dialects.buffer import BufferType, KernelOp, YieldOp, contiguous_strides
from permalloy.dialects.loop import IndexOp, LoadOp, LoopOp, ReduceOp, ScanOp, SortOp
from permalloy.dialects.ptensor import ReduceKind, ScanKind, TensorType
from permalloy.dialects.sym import parallel_index, reduction_index

INNER, OUTER = "inner", "outer"


class UnsupportedKernelError(NotImplementedError, ValueError):
    """
    A kernel that a kernel target cannot translate, with the reason. Both
    targets raise it; it is a `NotImplementedError` (something a target does
    not implement) and a `ValueError` (a kernel it cannot take), so that a
    handler of either kind catches it.
    """


@dataclass(frozen=True)
class TensorLayout:
    """A tensor as a kernel addresses it: element type, sizes and strides in elements."""

    element: Attribute
    sizes: tuple[sympy.Expr, ...]
    strides: tuple[sympy.Expr, ...]

    @staticmethod
    def of(layout: BufferType) -> TensorLayout:
        return TensorLayout(layout.element_type, tuple(layout.sizes), tuple(layout.strides.data))

    @staticmethod
    def contiguous(element: Attribute, sizes: Sequence[sympy.Expr]) -> TensorLayout:
        """A dense row-major tensor: where a target keeps an intermediate result."""
        return TensorLayout(element, tuple(sizes), contiguous_strides(sizes))

    def address(self, indices: Sequence[sympy.Expr]) -> sympy.Expr:
        """Element offset of `indices`."""
        return sympy.expand(sum((i * s for i, s in zip(indices, self.strides)), sympy.Integer(0)))

    def extent(self) -> sympy.Expr:
        """One past the largest element offset (0 for an empty tensor)."""
        return sympy.expand(sum(((n - 1) * s for n, s in zip(self.sizes, self.strides)), sympy.Integer(1)))


@dataclass(frozen=True)
class Source:
    """Where a body argument's values come from: kernel input `index`, or the
    result of the stage at position `index`."""

    stage: bool
    index: int


@dataclass
class StageFacts:
    """One loop op of a kernel."""

    position: int
    op: LoopOp
    returned: list[int]
    """The kernel outputs its result is returned as (none for an intermediate)."""
    sources: dict[SSAValue, Source]
    """Each body argument's origin."""
    loads: list[LoadOp] = field(default_factory=list)
    index_ops: list[IndexOp] = field(default_factory=list)

    @property
    def is_reduce(self) -> bool:
        return isinstance(self.op, ReduceOp)

    @property
    def is_scan(self) -> bool:
        return isinstance(self.op, ScanOp)

    @property
    def is_sort(self) -> bool:
        return isinstance(self.op, SortOp)

    @property
    def kind(self) -> ReduceKind | ScanKind | None:
        return self.op.kind.data if isinstance(self.op, ReduceOp | ScanOp) else None

    @property
    def result_type(self) -> TensorType:
        t = self.op.result.type
        assert isinstance(t, TensorType)
        return t

    @property
    def sizes(self) -> list[sympy.Expr]:
        """The parallel domain: the result's sizes (a scan's without its scanned dimension)."""
        return list(self.op.parallel_sizes)

    @property
    def reduction_sizes(self) -> list[sympy.Expr]:
        return list(self.op.reduction_sizes)

    @property
    def intermediate(self) -> bool:
        """Whether only later stages read the result (the kernel does not return it)."""
        return not self.returned

    @property
    def pinned(self) -> set[sympy.Symbol]:
        """The loop variables the body reads as values (`loop.index`)."""
        return {s for o in self.index_ops for s in o.expr.expr.free_symbols}


@dataclass
class StageSpace:
    """A stage's iteration space after collapsing, for given tensor layouts."""

    space: Space
    load_addresses: dict[LoadOp, sympy.Expr]
    output_addresses: list[sympy.Expr]
    index_exprs: dict[IndexOp, sympy.Expr]

    @property
    def parallel(self) -> tuple[sympy.Expr, ...]:
        return self.space.parallel

    @property
    def reduction(self) -> tuple[sympy.Expr, ...]:
        return self.space.reduction


@dataclass
class KernelAnalysis:
    """The facts of one kernel for the layouts of one launch."""

    kernel: KernelOp
    inputs: list[TensorLayout]
    outputs: list[TensorLayout]
    stages: list[StageFacts]
    groups: list[tuple[list[int], int]]
    """Row groups: the positions of their stages, and their row rank."""

    @property
    def intermediates(self) -> list[StageFacts]:
        """Stages whose results the kernel does not return."""
        return [s for s in self.stages if s.intermediate]

    def result_layout(self, stage: StageFacts) -> TensorLayout:
        """Where a stage's result lives when it goes through memory: its first
        output, else a dense temporary."""
        if stage.returned:
            return self.outputs[stage.returned[0]]
        return TensorLayout.contiguous(stage.result_type.element_type, stage.result_type.sizes)


def analyze_kernel(kernel: KernelOp, layouts: Sequence[BufferType], target: str) -> KernelAnalysis:
    """The facts of `kernel` launched with buffer `layouts` (inputs then
    outputs); `target` names the kernel target in the refusals."""
    signature = kernel.function_type
    assert isinstance(signature, FunctionType)
    num_in, num_out = len(signature.inputs.data), len(signature.outputs.data)
    if len(layouts) != num_in + num_out:
        raise UnsupportedKernelError(
            f"kernel @{kernel.sym_name.data} takes {num_in} inputs and {num_out} outputs, got {len(layouts)} layouts"
        )
    terminator = kernel.body.block.last_op
    assert isinstance(terminator, YieldOp)
    arguments = {arg: i for i, arg in enumerate(kernel.body.block.args)}
    returned: dict[SSAValue, list[int]] = {}
    for j, value in enumerate(terminator.values):
        if value in arguments:
            raise UnsupportedKernelError("a kernel that returns one of its arguments has no loop to emit")
        returned.setdefault(value, []).append(j)
    ops = [op for op in kernel.body.block.ops if op is not terminator]
    for op in ops:
        if not isinstance(op, LoopOp):
            raise UnsupportedKernelError(f"the {target} target expects loop ops in a kernel body, got {op.name}")
    positions = {op.result: k for k, op in enumerate(ops)}
    stages: list[StageFacts] = []
    for k, op in enumerate(ops):
        assert isinstance(op, LoopOp)
        sources = {}
        for argument, value in zip(op.body.block.args, op.inputs):
            stage = value in positions
            sources[argument] = Source(stage, positions[value] if stage else arguments[value])
        body = list(op.body.block.ops)
        loads = [o for o in body if isinstance(o, LoadOp)]
        indexes = [o for o in body if isinstance(o, IndexOp)]
        stages.append(StageFacts(k, op, returned.get(op.result, []), sources, loads, indexes))
    groups = [([positions[m.result] for m in g.members], g.rank) for g in row_groups(ops)]  # type: ignore[arg-type]
    inputs = [TensorLayout.of(layouts[i]) for i in range(num_in)]
    outputs = [TensorLayout.of(layouts[num_in + j]) for j in range(num_out)]
    return KernelAnalysis(kernel, inputs, outputs, stages, groups)


def stage_space(
    stage: StageFacts,
    inputs: dict[SSAValue, TensorLayout],
    outputs: Sequence[TensorLayout],
    merge_size_one: bool = False,
    row_rank: int = 0,
    memory_ordered: bool = False,
) -> StageSpace:
    """
    A stage's collapsed iteration space when its body arguments read the
    tensors `inputs` and it writes its result to each of `outputs`
    (`merge_size_one` as for `collapse.collapse`, `row_rank` as for
    `collapse.collapse_space`). With `memory_ordered`, a stage without
    reduction dimensions iterates in the memory order of its first output
    (`collapse.memory_order`).
    """
    result_index = stage.op.result_index
    loads = stage.loads
    output_addresses = [t.address(result_index) for t in outputs]
    ordered = memory_ordered and bool(output_addresses) and not stage.reduction_sizes
    space = collapse_space(
        stage.sizes,
        stage.reduction_sizes,
        [inputs[o.source].address(o.indices.data) for o in loads] + output_addresses,
        [o.expr.expr for o in stage.index_ops],
        merge_size_one,
        row_rank,
        output_addresses[0] if ordered else None,
    )
    return StageSpace(
        space,
        dict(zip(loads, space.addresses)),
        space.addresses[len(loads) :],
        dict(zip(stage.index_ops, space.values)),
    )


def reduction_direction(space: StageSpace) -> str:
    """
    Whether a reduction runs `inner` (along its last reduction variable, as
    row sums do) or `outer` (along its last parallel variable, one partial
    result per output, as column sums do): the direction along which fewer of
    its loads are gathers; on a tie, `outer` when more loads are contiguous
    along the last parallel variable than along the last reduction one.
    """
    rank, reduction_rank = len(space.parallel), len(space.reduction)
    if rank == 0:
        return INNER
    addresses = list(space.load_addresses.values())
    last_d, last_r = parallel_index(rank - 1), reduction_index(reduction_rank - 1)
    gathers_d = sum(gathered(a, last_d) for a in addresses)
    gathers_r = sum(gathered(a, last_r) for a in addresses)
    if gathers_d != gathers_r:
        return OUTER if gathers_d < gathers_r else INNER
    along_d = sum(unit_stride(a, last_d) for a in addresses)
    along_r = sum(unit_stride(a, last_r) for a in addresses)
    return OUTER if along_d > along_r else INNER
