"""
What `fuse-loops` decided, and why: the record a caller hands the pass to see
its decisions (`FuseLoopsPass.recording_into`).

The pass records as it decides, never after the fact: each producer inlined
into a reader, each refusal to inline with the rule that refused it
(`InliningCost` and `can_inline`), the groups that became kernels, and for
every producer and consumer left in different kernels the grouping rule that
kept them apart (`join_refusal`, or what ended the producer's kernel before
the consumer came). Each decision also goes to the `permalloy.fusion` logger
as it is made (refusals and separations at INFO, inlines at DEBUG).

Loop ops are named by their labels: the name hint of their result where it
has one (the backend names imported values after their graph nodes when it
explains a graph), else `#<n>`, their position among the function's loop ops
when the pass started. A label's origins are the labels of the loop ops
computed in it: its own and those of the producers it inlined.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from xdsl.ir import Operation

from permalloy.dialects import loop
from permalloy.dialects.sym import format_expr

LOG = logging.getLogger("permalloy.fusion")

INLINE_RULES: dict[str, str] = {
    "index-values": "the producer computes positions (loop.index) and the reader reads it through index values",
    "max-kernel-size": "the reader's body with the producer's would pass max-kernel-size ops",
    "max-recompute": "the producer is not cheap and its elements would be computed more than max-recompute times",
    "repeated-reads": "its readers would read more of the producer's inputs than "
    "computing it once and reading its result",
    "read-by-host": "the producer is not cheap and the host program or the function's results read it too",
}
"""Why a pointwise producer was not inlined into a reader, by rule name."""

GROUP_RULES: dict[str, str] = {
    "reduction-to-one-element": "a reduction to one element has no rows to share with other loop ops",
    "no-rows": "a loop op without rows (a 0-d result, a scan of a leading dimension, a scatter or a sort) runs alone",
    "different-rows": "the loop ops run over different row domains (their leading dimensions differ)",
    "long-reduction-to-one-element": "a kernel with a reduction to one element runs as one program: "
    "each member must fit one program",
    "pointwise-shapes": "pointwise ops of different shapes, or one larger than the kernel's reductions and "
    "scans, would run with less parallelism in one kernel",
    "not-row-local": "the consumer reads the producer at another row than its own",
    "reduction-parallelism": "a reduction would run in far fewer row programs in the kernel than alone "
    "(its other parallel dimensions are not rows the kernel shares)",
    "pointwise-parallelism": "a pointwise op would run in a few long row programs in the kernel, where "
    "alone it runs over all its elements in parallel (it or a member reads another elsewhere in its row)",
    "matrix-product-epilogue": "a matrix product's kernel starts with the product and takes only pointwise "
    "ops over its result's shape that read it at their own element (its epilogue)",
    "no-shared-input": "the loop op neither reads the kernel's results nor shares an input with it",
    "max-group-size": "the producer's kernel already has max-group-size loop ops",
    "host-op-between": "an op run by the host program (a library call, a fallback, a view) comes between them",
    "kernel-ended": "the producer's kernel ended before the consumer: a loop op between them did not join it",
    "grouping-off": "grouping is turned off (fuse-loops{group=false})",
}
"""Why a loop op did not join a kernel, by rule name."""


@dataclass(frozen=True)
class InlineRefusal:
    """A pointwise producer a reader did not inline (the last check of the pair)."""

    producer: str
    consumer: str
    rule: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"producer": self.producer, "consumer": self.consumer, "rule": self.rule, "detail": self.detail}


@dataclass(frozen=True)
class Separation:
    """A producer and a consumer that stayed in different kernels, and why."""

    producer: str
    consumer: str
    rule: str
    """The grouping rule (`GROUP_RULES`)."""
    detail: str
    not_inlined: InlineRefusal | None = None
    """Why a pointwise producer was not inlined into the consumer either."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "producer": self.producer,
            "consumer": self.consumer,
            "rule": self.rule,
            "detail": self.detail,
            "not_inlined": None if self.not_inlined is None else self.not_inlined.to_dict(),
        }


def describe(op: Operation) -> str:
    """A loop op in a few words: `reduce sum [8, 8] -> []`, `pointwise [4, 4]`."""
    if not isinstance(op, loop.LoopOp):
        return op.name
    sizes = "[" + ", ".join(format_expr(s) for s in op.result.type.sizes) + "]"  # type: ignore[union-attr]
    if isinstance(op, loop.ReduceOp):
        domain = "[" + ", ".join(format_expr(s) for s in (*op.parallel_sizes, *op.reduction_sizes)) + "]"
        return f"reduce {op.kind.data.value} {domain} -> {sizes}"
    if isinstance(op, loop.ScanOp):
        return f"scan {op.kind.data.value} {sizes} dim {op.scanned_dim}"
    if isinstance(op, loop.SortOp):
        order = "descending" if op.is_descending else "ascending"
        return f"sort {order} over [{format_expr(op.row_length)}] -> {sizes} dim {op.sorted_dim}"
    return f"pointwise {sizes}"


@dataclass
class FusionDecisions:
    """The decisions of one run of `fuse-loops`, as the pass makes them."""

    inlines: list[tuple[str, str]] = field(default_factory=list)
    """(consumer, producer) for each producer inlined into a consumer, in order."""
    inline_refusals: list[InlineRefusal] = field(default_factory=list)
    """Every refusal to inline, in order (a pair checked again may be refused
    again, or inlined later)."""
    groups: list[list[str]] = field(default_factory=list)
    """The labels of the loop ops of each group that became one kernel."""
    separations: list[Separation] = field(default_factory=list)
    """Each producer and consumer left in different kernels, with the rule."""
    origins: dict[str, list[str]] = field(default_factory=dict)
    """For each loop op left after the pass, by label: the labels of the loop
    ops computed in it (its own first, then those it inlined; merged for
    loop ops that share a label)."""
    _labels: dict[Operation, str] = field(default_factory=dict, repr=False)
    _origins: dict[Operation, list[str]] = field(default_factory=dict, repr=False)
    _last_refusal: dict[tuple[Operation, Operation], InlineRefusal] = field(default_factory=dict, repr=False)

    # -- the pass calls these ---------------------------------------------------

    def start(self, ops: list[Operation]) -> None:
        """Label the loop ops of a function before the pass changes it."""
        count = len(self._labels)
        for op in ops:
            if isinstance(op, loop.LoopOp) and op not in self._labels:
                hint = op.result.name_hint
                label = hint if hint is not None else f"#{count}"
                count += 1
                self._labels[op] = label
                self._origins[op] = [label]

    def label(self, op: Operation) -> str:
        return self._labels.get(op) or op.name

    def inlined(self, consumer: Operation, producer: Operation) -> None:
        self.inlines.append((self.label(consumer), self.label(producer)))
        merged = self._origins.setdefault(consumer, [self.label(consumer)])
        for origin in self._origins.get(producer, [self.label(producer)]):
            if origin not in merged:
                merged.append(origin)
        self._last_refusal.pop((producer, consumer), None)
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug(
                "inlined %s (%s) into %s (%s)",
                self.label(producer), describe(producer), self.label(consumer), describe(consumer),
            )

    def refused_inline(self, consumer: Operation, producer: Operation, rule: str, detail: str) -> None:
        refusal = InlineRefusal(self.label(producer), self.label(consumer), rule, detail)
        self.inline_refusals.append(refusal)
        self._last_refusal[(producer, consumer)] = refusal
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug(
                "did not inline %s (%s) into %s (%s): %s: %s",
                refusal.producer, describe(producer), refusal.consumer, describe(consumer), rule, detail,
            )

    def grouped(self, members: list[Operation]) -> None:
        labels = [self.label(m) for m in members]
        self.groups.append(labels)
        LOG.info("one kernel for %s", ", ".join(f"{l} ({describe(m)})" for l, m in zip(labels, members)))

    def separated(self, producer: Operation, consumer: Operation, rule: str, detail: str) -> None:
        separation = Separation(
            self.label(producer),
            self.label(consumer),
            rule,
            detail,
            self._last_refusal.get((producer, consumer)),
        )
        self.separations.append(separation)
        if LOG.isEnabledFor(logging.INFO):
            because = f"{rule}: {detail}"
            if separation.not_inlined is not None:
                because += f"; not inlined: {separation.not_inlined.rule}: {separation.not_inlined.detail}"
            LOG.info(
                "%s (%s) -> %s (%s) stay in different kernels: %s",
                separation.producer, describe(producer), separation.consumer, describe(consumer), because,
            )

    def finish(self, ops: list[Operation]) -> None:
        """Keep the origins of the loop ops left after the pass (before
        grouping wraps them), and drop the references to ops."""
        for op in ops:
            if isinstance(op, loop.LoopOp):
                # several loop ops may share a label (the ops of one graph node)
                merged = self.origins.setdefault(self.label(op), [])
                for origin in self._origins.get(op, [self.label(op)]):
                    if origin not in merged:
                        merged.append(origin)
        self._labels = {}
        self._origins = {}
        self._last_refusal = {}

    # -- reading ----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "inlines": [list(pair) for pair in self.inlines],
            "inline_refusals": [r.to_dict() for r in self.inline_refusals],
            "groups": [list(g) for g in self.groups],
            "separations": [s.to_dict() for s in self.separations],
            "origins": {k: list(v) for k, v in self.origins.items()},
        }
