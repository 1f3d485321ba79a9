"""
What Dynamo made of a case under a backend: how many graphs it captured and
where it broke the program into several, read off Dynamo's counters around the
backend's compile and checks. The same count for every backend, so that a
graph break is never charged to one compiler and not another.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

GRAPH_BREAK_REASON_CHARS = 160
"""Each graph break's reason is kept to its first line, at most this long."""


@dataclass
class DynamoGraphs:
    """Graphs captured and graph breaks (with their reasons) during a block."""

    graphs: int = 0
    graph_breaks: int = 0
    reasons: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"graphs": self.graphs, "graph_breaks": self.graph_breaks, "reasons": self.reasons}


@contextlib.contextmanager
def dynamo_graphs() -> Iterator[DynamoGraphs]:
    """Dynamo's counters emptied for the block; on leaving it, the record
    yielded holds the graphs it captured and the graph breaks it took."""
    from torch._dynamo.utils import counters

    counters.clear()
    record = DynamoGraphs()
    try:
        yield record
    finally:
        breaks = counters.get("graph_break", {})
        record.graphs = int(counters.get("stats", {}).get("unique_graphs", 0))
        record.graph_breaks = int(sum(breaks.values()))
        record.reasons = sorted({_first_line(reason) for reason in breaks})


def _first_line(reason: str) -> str:
    """A graph break's reason cut to its first line and `GRAPH_BREAK_REASON_CHARS`."""
    line = reason.strip().splitlines()[0] if reason.strip() else "unknown"
    if len(line) <= GRAPH_BREAK_REASON_CHARS:
        return line
    return line[: GRAPH_BREAK_REASON_CHARS - 3] + "..."
