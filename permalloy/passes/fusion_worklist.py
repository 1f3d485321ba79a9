"""
Vertical fusion driven by a worklist: which producer each reader inlines, and
when, without rescanning the function after each inline.

The decisions are those of rounds over the function's loop ops in order, each
reader inlining at most one producer per round (the first of its inputs that
`can_inline` and `InliningCost` allow), with producers that no one reads any
more erased after each round, until a round inlines nothing. A round visits
only the readers that have a candidate to check: a (reader, producer) pair is
checked once, and again only after a change that may turn a refusal into an
inline:

- the producer itself inlined something (its body changed);
- a reader of the producer inlined it, or inlined something that reads it, or
  was erased (how often its elements are read changed).

A reader's own growth never does: a refusal by kernel size stays one. So the
work grows with the number of inlines and the readers of what they touch, not
with the size of the function times the number of rounds.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Operation

from permalloy.dialects import loop
from permalloy.passes.fusion_decisions import FusionDecisions
from permalloy.passes.fusion_inlining import (
    INDEX_VALUES_REFUSAL,
    InliningCost,
    can_inline,
    inline_producer,
)


@dataclass
class InliningWorklist:
    """The state of inlining the pointwise producers of one function."""

    function: func.FuncOp
    cost: InliningCost
    decisions: FusionDecisions | None = None
    """Where each inline and each refusal is recorded, when given."""
    candidate_checks: int = 0
    """(reader, producer) pairs checked with `can_inline` and the cost rule."""
    reader_visits: int = 0
    """Times a reader was visited with candidates to check."""
    _position: dict[Operation, int] = field(default_factory=dict)
    _candidates: dict[loop.LoopOp, set[loop.PointwiseOp]] = field(default_factory=dict)
    _this_round: list[int] = field(default_factory=list)
    """Positions of the readers still to visit in this round (a heap)."""
    _queued: dict[int, loop.LoopOp] = field(default_factory=dict)
    _next_round: set[loop.LoopOp] = field(default_factory=set)
    _visiting: int = -1
    """The position of the reader being visited, -1 between rounds."""
    _maybe_dead: set[loop.PointwiseOp] = field(default_factory=set)
    """Producers that may have lost their last reader since the last erasing."""

    def run(self) -> None:
        """Inline until a round inlines nothing."""
        ops = list(self.function.body.block.ops)
        self._position = {op: i for i, op in enumerate(ops)}
        for op in ops:
            if isinstance(op, loop.LoopOp):
                for value in op.inputs:
                    if isinstance(value.owner, loop.PointwiseOp):
                        self._add_candidate(op, value.owner)
            if isinstance(op, loop.PointwiseOp):
                self._maybe_dead.add(op)
        while True:
            inlined = self._round()
            self._erase_dead()
            if not inlined:
                return

    # -- rounds ---------------------------------------------------------------

    def _round(self) -> bool:
        """Visit the readers with candidates in order; whether any inlined."""
        for reader in self._next_round:
            self._queue(reader)
        self._next_round = set()
        inlined = False
        while self._this_round:
            position = heapq.heappop(self._this_round)
            reader = self._queued.pop(position)
            self._visiting = position
            inlined |= self._visit(reader)
        self._visiting = -1
        return inlined

    def _queue(self, reader: loop.LoopOp) -> None:
        position = self._position[reader]
        if position not in self._queued:
            self._queued[position] = reader
            heapq.heappush(self._this_round, position)

    def _visit(self, reader: loop.LoopOp) -> bool:
        """Check the reader's candidates in the order of its inputs and inline
        the first one allowed; the candidates after it wait for the next round."""
        pending = self._candidates.pop(reader, set())
        if not pending:
            return False
        self.reader_visits += 1
        for position, value in enumerate(reader.inputs):
            if not pending:
                break
            producer = value.owner
            if producer not in pending:
                continue
            pending.discard(producer)  # a second input of it would get the same answer
            self.candidate_checks += 1
            assert isinstance(producer, loop.PointwiseOp)
            if can_inline(reader, producer) and self.cost.allows(producer, reader):
                if pending:
                    self._candidates.setdefault(reader, set()).update(pending)
                    self._next_round.add(reader)
                self._inline(reader, producer, position)
                return True
            if self.decisions is not None:
                self._record_refusal(reader, producer)
        return False

    def _record_refusal(self, reader: loop.LoopOp, producer: loop.PointwiseOp) -> None:
        assert self.decisions is not None
        refusal = INDEX_VALUES_REFUSAL if not can_inline(reader, producer) else self.cost.refusal(producer, reader)
        if refusal is not None:
            self.decisions.refused_inline(reader, producer, *refusal)

    def _inline(self, reader: loop.LoopOp, producer: loop.PointwiseOp, position: int) -> None:
        """Inline and say who checks what again."""
        sources = [v.owner for v in producer.inputs if isinstance(v.owner, loop.PointwiseOp)]
        if self.decisions is not None:
            self.decisions.inlined(reader, producer)
        inline_producer(reader, position)
        self._maybe_dead.add(producer)
        if isinstance(reader, loop.PointwiseOp):
            self._recheck_readers_of(reader)
        self._recheck_readers_of(producer)
        for source in dict.fromkeys(sources):
            self._recheck_readers_of(source)

    # -- candidates -----------------------------------------------------------

    def _recheck_readers_of(self, producer: loop.PointwiseOp) -> None:
        """Every loop op reading `producer` checks it again."""
        for use in producer.result.uses:
            if isinstance(use.operation, loop.LoopOp):
                self._add_candidate(use.operation, producer)

    def _add_candidate(self, reader: loop.LoopOp, producer: loop.PointwiseOp) -> None:
        self._candidates.setdefault(reader, set()).add(producer)
        if self._position[reader] > self._visiting >= 0:
            self._queue(reader)  # not visited yet in this round
        else:
            self._next_round.add(reader)

    # -- erasing --------------------------------------------------------------

    def _erase_dead(self) -> None:
        """Erase the producers no one reads, in order; the producers of an
        erased one are looked at after the next round (they come before it)."""
        dead = sorted(self._maybe_dead, key=self._position.__getitem__)
        self._maybe_dead = set()
        for producer in dead:
            if producer.result.uses:
                continue
            sources = [v.owner for v in producer.inputs if isinstance(v.owner, loop.PointwiseOp)]
            self._candidates.pop(producer, None)
            self._next_round.discard(producer)
            producer.detach()
            producer.erase()
            for source in dict.fromkeys(sources):
                self._recheck_readers_of(source)
                self._maybe_dead.add(source)

