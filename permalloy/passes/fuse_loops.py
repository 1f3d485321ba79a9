"""The `fuse-loops` pass."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from permalloy.dialects import loop
from permalloy.passes.diagnostics import check_loop_level, defined_functions
from permalloy.passes.fusion_decisions import FusionDecisions
from permalloy.passes.fusion_grouping import find_groups, fuse_group, hoist_row_readers, sink_views
from permalloy.passes.fusion_inlining import InliningCost
from permalloy.passes.fusion_product_rows import split_product_rows
from permalloy.passes.fusion_rounding import round_read_reductions
from permalloy.passes.fusion_worklist import InliningWorklist


@dataclass(frozen=True)
class FuseLoopsPass(ModulePass):
    """
    Fuses loop ops into fewer kernels that move fewer bytes.

    Expects the output of `convert-ptensor-to-loop`. Two steps:

    1. Vertical: a `loop.pointwise` producer is inlined at the loads that read
       it, in pointwise and reduction readers alike (a reduction's prologue),
       through any index expression (views do not block it). A producer whose
       elements are read more than `max-recompute` times in all, or that is
       also read by the host program, is inlined only when it is cheap (a few
       scalar ops, no `math`; with `instruction-math=true`, both targets' rule,
       math ops of one instruction such as `sqrt` allowed); no body grows
       past `max-kernel-size` ops.
    2. Grouping: consecutive loop ops over the same rows, reading each other
       only at their own row or sharing inputs, become one `loop.fused` (one
       kernel with several outputs): a reduction with its pointwise epilogue,
       sibling reductions (softmax, layer norm), horizontal neighbours; a
       reduction a few ops after a group's end that reads one of its inputs
       and may join it is moved up into it. A
       reduction that every reader reads rounded to a narrower type first
       gets that rounding as its epilogue (`fusion_rounding.py`), so it
       stores the narrow tensor.

    `inline=false` or `group=false` turns a step off. A pass made with
    `recording_into(decisions)` records each decision, with the rule behind
    each refusal, into a `FusionDecisions` (`fusion_decisions.py`); the
    decisions are the same with or without a record.

    Before:
    ```
    %e = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8], f32> {
      %v = loop.load %a[d0, d1] : f32
      %r = math.exp %v : f32
      loop.yield %r : f32
    }
    %s = loop.reduce sum ins(%b = %e : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
      %v = loop.load %b[d0, r0] : f32
      loop.yield %v : f32
    }
    ```
    After:
    ```
    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
      %v = loop.load %a[d0, r0] : f32
      %r = math.exp %v : f32
      loop.yield %r : f32
    }
    ```
    """

    name = "fuse-loops"

    max_kernel_size: int = 96
    max_recompute: int = 2
    inline: bool = True
    group: bool = True
    max_group_size: int = 8
    instruction_math: bool = False
    decisions: FusionDecisions | None = field(default=None, init=False, compare=False, repr=False)
    """Where the decisions go: not an option of the pipeline text (see `recording_into`)."""

    def recording_into(self, decisions: FusionDecisions) -> FuseLoopsPass:
        """This pass, with the same options, recording its decisions into `decisions`."""
        recording = dataclasses.replace(self)
        object.__setattr__(recording, "decisions", decisions)  # a frozen dataclass's non-option field
        return recording

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = list(defined_functions(op))
        for function in functions:
            check_loop_level(function, self.name)
        cost = InliningCost(self.max_kernel_size, self.max_recompute, self.instruction_math)
        decisions = self.decisions
        for function in functions:
            if decisions is not None:
                decisions.start(list(function.body.block.ops))
            if self.inline:
                InliningWorklist(function, cost, decisions).run()
            if self.group:
                split_product_rows(function)
                sink_views(function)
                hoist_row_readers(function)
                round_read_reductions(function)
                if decisions is not None:
                    decisions.start(list(function.body.block.ops))
                groups = find_groups(function, self.max_group_size, decisions)
            else:
                groups = []
                if decisions is not None:
                    _record_ungrouped(function, decisions)
            if decisions is not None:
                decisions.finish(list(function.body.block.ops))
            for members in groups:
                fuse_group(members)


def _record_ungrouped(function, decisions: FusionDecisions) -> None:
    """Without grouping, every producer and consumer are apart."""
    for consumer in function.body.block.ops:
        if isinstance(consumer, loop.LoopOp):
            for value in dict.fromkeys(consumer.inputs):
                if isinstance(value.owner, loop.LoopOp):
                    decisions.separated(value.owner, consumer, "grouping-off", "fuse-loops{group=false}")
