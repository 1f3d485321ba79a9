"""
Compilation statistics: one record per graph the backend compiled.

`permalloy.stats()` reads the records kept since `permalloy.reset_stats()`. The
log is the one process-wide record permalloy keeps, as the user-facing
`permalloy.stats()` needs; compilation itself passes explicit context objects.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

HOST_TIMED_CALLS = 10
"""How many calls after the first `GraphStats.host_us_per_call` is the median of."""

KERNEL_STAGES = ("kernel_emission", "kernel_compilation", "kernel_loading", "autotuning")
"""The stages of `CompileTimes` spent on kernels, which a target records."""


@dataclass
class CompileTimes:
    """
    Where the compile time of one graph went, in seconds, stage by stage.

    The compiler and the kernel target add to the stages as they go (`measure`);
    a target that compiles or tunes kernels at their first launch (Triton) adds
    those seconds then, to the same record, so they show in `permalloy.stats()`
    after the graph's first call. Dynamo's own tracing happens before the
    backend is called: it is not measured here (the bench reports it as the
    first call's time less these stages).
    """

    aot_autograd: float | None = None
    """From the backend's entry to permalloy's compiler receiving the graph:
    AOTAutograd's tracing with permalloy's decompositions (for a backward graph
    compiled with its forward graph, from the end of the forward graph's
    compilation); None for a graph compiled later (a backward graph compiled at
    its first call) or outside the backend."""
    import_fx: float = 0.0
    """The FX graph imported into ptensor IR."""
    passes: dict[str, float] = field(default_factory=dict)
    """Each pass of the pipeline by name, summed over its runs (`cse` runs
    several times), and `verify`, the final check of the module."""
    kernel_emission: float = 0.0
    """Planning kernels and generating their code (LLVM IR, Triton source)."""
    kernel_compilation: float = 0.0
    """LLVM's optimization and code generation; Triton's compilation at a
    kernel's first launch on a GPU."""
    kernel_loading: float = 0.0
    """Kernels loaded from the compiled-graph cache (LLVM object code) or
    imported (generated Triton modules)."""
    autotuning: float = 0.0
    """Choosing launch configurations (Triton, at a kernel's first launch)."""
    host_program: float = 0.0
    """Generating the host program, kernels excluded."""
    cache_lookup: float = 0.0
    """Computing the compiled-graph cache's key, reading an entry and parsing
    its buffer-level module."""
    cache_store: float = 0.0
    """Writing the compiled graph into the cache."""

    def add(self, stage: str, seconds: float) -> None:
        """Add `seconds` to the stage named `stage` (a field of this record)."""
        setattr(self, stage, (getattr(self, stage) or 0.0) + seconds)

    def add_pass(self, name: str, seconds: float) -> None:
        """Add `seconds` to the pass called `name`."""
        self.passes[name] = self.passes.get(name, 0.0) + seconds

    @contextmanager
    def measure(self, stage: str) -> Iterator[None]:
        """Add the time the block takes to `stage`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - start)

    def kernel_seconds(self) -> float:
        """The seconds of the kernel stages so far."""
        return sum(getattr(self, stage) for stage in KERNEL_STAGES)



@dataclass
class GraphStats:
    """What compiling one graph produced."""

    target: str
    kernels: int = 0
    extern_calls: int = 0
    fallback_ops: list[str] = field(default_factory=list)
    fallback_reasons: list[str] = field(default_factory=list)
    """Why each op of `fallback_ops` runs with torch: no converter, or what
    its converter does not take (a dtype, a symbolic argument, ...)."""
    compile_seconds: float = 0.0
    """permalloy's compilation of the graph, from import to host program."""
    compile_times: CompileTimes = field(default_factory=CompileTimes)
    """`compile_seconds` stage by stage, with AOTAutograd's time before it and
    the kernel compilation and tuning a target does at first launch after it."""
    cache: str = "off"
    """The compiled-graph cache: "hit" (loaded, the pipeline not run), "miss"
    (compiled and stored) or "off" (not used)."""
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
    host: str = "python"
    """What runs each call: "native" (the host program compiled to machine
    code, `targets.native`) or "python" (the generated Python program)."""
    host_callbacks: int = 0
    """The ops a native host program runs in Python, calling back (library
    calls without a function in torch's C shim, fallbacks, constants)."""
    host_us_per_call: float | None = None
    """The median wall time of the compiled program's calls 2 to
    `HOST_TIMED_CALLS + 1` in microseconds (the first call compiles and
    tunes kernels), measured around the host program alone: on a GPU,
    whose kernels run asynchronously, the host's own time per call
    (allocation, launches, library calls), unless the device's queue is
    full; on the CPU, kernels included. None until those calls ran."""
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
