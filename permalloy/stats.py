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
    """The planned peak of bytes the compiled program allocates, when it is
    the same for every call (None when it depends on size symbols: see
    `peak_intermediate_expr`)."""
    peak_intermediate_expr: str | None = None
    """The planned peak as an expression of the size symbols, in `#sym.expr`
    syntax (`s0 * 384`, `max(s0 * 64, s0 * s1 * 4)`); the number itself for a
    graph of constant sizes; None when no plan was made."""
    peak_intermediate_bytes_first_call: int | None = None
    """The planned peak at the sizes the graph was compiled for (the first
    call's, `size_symbols`); equal to `peak_intermediate_bytes` for a graph
    of constant sizes."""
    size_symbols: dict[str, int] = field(default_factory=dict)
    """The values of the size symbols (`s0`, ...) at compilation, the first
    call's sizes: empty for a graph of constant sizes."""
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
