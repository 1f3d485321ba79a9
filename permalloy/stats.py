"""
Compilation statistics: one record per graph the backend compiled.

`permalloy.stats()` reads the records kept since `permalloy.reset_stats()`. The
log is the one process-wide record permalloy keeps, as the user-facing
`permalloy.stats()` needs; compilation itself passes explicit context objects.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class GraphStats:
    """What compiling one graph produced."""

    target: str
    kernels: int = 0
    extern_calls: int = 0
    fallback_ops: list[str] = field(default_factory=list)
    compile_seconds: float = 0.0
    peak_intermediate_bytes: int | None = None
    """The planned peak of bytes the compiled program allocates (None when
    sizes are symbolic)."""
    compiled: bool = True
    """False when the graph fell back to eager as a whole."""
    reason: str = ""
    """Why the graph fell back, when it did."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class StatsLog:
    """The records of the graphs compiled so far."""

    def __init__(self) -> None:
        self._records: list[GraphStats] = []

    def add(self, record: GraphStats) -> None:
        self._records.append(record)

    def records(self) -> list[dict[str, Any]]:
        return [r.as_dict() for r in self._records]

    def clear(self) -> None:
        self._records.clear()


STATS_LOG = StatsLog()


def stats() -> list[dict[str, Any]]:
    """One dict per graph compiled since the last `reset_stats()`."""
    return STATS_LOG.records()


def reset_stats() -> None:
    """Forget the records of the graphs compiled so far."""
    STATS_LOG.clear()
