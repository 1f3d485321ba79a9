"""
The results of a benchmark run as data: the configuration, each case under each
backend, and the derived speedups and bandwidths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from permalloy.tools.bench.accuracy import Accuracy
from permalloy.tools.bench.backends import BenchError
from permalloy.tools.bench.graphs import DynamoGraphs
from permalloy.tools.bench.profiles import Profile
from permalloy.tools.bench.timing import CopyBandwidth, TimingStats

ERROR_CHARS = 200
"""Errors are kept to their first line, at most this long."""


@dataclass(frozen=True)
class BenchConfig:
    """What to run: the device, the cases and backends (in order), the profile."""

    device: str
    cases: tuple[str, ...]
    backends: tuple[str, ...]
    profile: Profile
    threads: int | None = None
    """torch's intra-op threads (which permalloy's CPU kernels use too); None
    leaves torch's default."""
    train: bool = False
    """Time training steps (forward and backward) and compare gradients, rather
    than inference calls and outputs."""
    suite: str = "zoo"
    """The suite the cases come from (`zoo` or `models`)."""
    profile_kernels: bool = False
    """Also profile each case (`--profile`): host time per call against summed
    kernel time, and each backend's most expensive kernels."""
    compile_times: bool = False
    """Also print permalloy's compile time per case, stage by stage (`--compile-times`)."""
    warm_compile: bool = False
    """Also compile each case again in a new process with the caches the first
    compile filled, under permalloy and Inductor each, and report those warm
    compiles (`--warm-compile`)."""
    cold_process: bool = False
    """Also compile each case in a new process with empty caches, under
    permalloy and Inductor each (`--cold-process`): a cold first call that no
    earlier backend's run in the same process helped."""
    float64_reference: bool = False
    """Also run each case's model in float64 and report every backend's
    relative error against it (outputs, or a training step's gradients),
    eager float32's included (`--float64-reference`): which of two backends
    that differ is the closer to the exact result."""
    target_options: tuple[tuple[str, Any], ...] = ()
    """Options of permalloy's kernel target, by name (`--target-option
    NAME=VALUE`): the `permalloy` backend compiles with them."""
    verbose: bool = False
    """Print the `permalloy.explain` report of each case permalloy failed or
    ran slower than Inductor (`--verbose`)."""


@dataclass
class BackendResult:
    """One case under one backend; filled as far as the backend got."""

    backend: str
    ok: bool = True
    error: str | None = None
    compile_s: float | None = None
    accuracy: Accuracy | None = None
    timing: TimingStats | None = None
    kernels: dict[str, Any] = field(default_factory=dict)
    dynamo: DynamoGraphs | None = None
    """Graphs Dynamo captured and graph breaks, while compiling and checking."""
    profile: dict[str, Any] | None = None
    """With `--profile`: host and kernel time per call and the top kernels."""
    warm_compile: dict[str, Any] | None = None
    """With `--warm-compile`: the first call's seconds in a new process with
    the caches the first compile filled (for permalloy, its compile times too)."""
    cold_process: dict[str, Any] | None = None
    """With `--cold-process`: the first call's seconds in a new process with
    empty caches (for permalloy, its compile times too)."""
    speedup_vs_eager: float | None = None
    speedup_vs_inductor: float | None = None
    bandwidth_gb_per_s: float | None = None
    bandwidth_fraction_of_copy: float | None = None
    float64_error: float | None = None
    """With `--float64-reference`: the relative error of its outputs (with
    `--train`, its gradients) against the model run in float64."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "ok": self.ok,
            "error": self.error,
            "compile_s": self.compile_s,
            "accuracy": None if self.accuracy is None else self.accuracy.as_dict(),
            "time": None if self.timing is None else self.timing.as_dict(),
            "speedup_vs_eager": self.speedup_vs_eager,
            "speedup_vs_inductor": self.speedup_vs_inductor,
            "kernels": self.kernels,
            "dynamo": None if self.dynamo is None else self.dynamo.as_dict(),
            "profile": self.profile,
            "warm_compile": self.warm_compile,
            "cold_process": self.cold_process,
            "bandwidth_gb_per_s": self.bandwidth_gb_per_s,
            "bandwidth_fraction_of_copy": self.bandwidth_fraction_of_copy,
            "float64_error": self.float64_error,
        }


@dataclass
class CaseResult:
    """Every backend's result on one case."""

    case: str
    memory_bound: bool
    input_shapes: list[list[int]] = field(default_factory=list)
    traffic_bytes: int | None = None
    input_sets: int = 0
    error: str | None = None
    """Set when the case itself could not be built or run eagerly."""
    skipped: bool = False
    """The case cannot be built here (a package it needs is missing); `error` says why."""
    family: str | None = None
    """The model family (decoder, encoder, convnet, ...) in the models suite."""
    results: dict[str, BackendResult] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "family": self.family,
            "skipped": self.skipped,
            "memory_bound": self.memory_bound,
            "input_shapes": self.input_shapes,
            "traffic_bytes": self.traffic_bytes,
            "input_sets": self.input_sets,
            "error": self.error,
            "results": {name: r.as_dict() for name, r in self.results.items()},
        }


@dataclass
class BenchReport:
    """A whole run: where and how it ran, the copy bandwidth, every case."""

    config: BenchConfig
    machine: dict[str, Any]
    copy: CopyBandwidth | None
    first_use_s: dict[str, float | str]
    cases: list[CaseResult]


def add_speedups(results: dict[str, BackendResult]) -> None:
    """Each timed backend's speedup over eager and over Inductor, where those ran."""
    for baseline, attribute in (("eager", "speedup_vs_eager"), ("inductor", "speedup_vs_inductor")):
        base = results.get(baseline)
        if base is None or base.timing is None:
            continue
        for result in results.values():
            if result.timing is not None:
                setattr(result, attribute, base.timing.median_s / result.timing.median_s)


def add_bandwidth(case: CaseResult, copy: CopyBandwidth) -> None:
    """On a memory-bound case, each backend's bytes per second and its fraction of copy's."""
    if not case.memory_bound or case.traffic_bytes is None:
        return
    for result in case.results.values():
        if result.timing is not None:
            achieved = case.traffic_bytes / result.timing.median_s
            result.bandwidth_gb_per_s = achieved / 1e9
            result.bandwidth_fraction_of_copy = achieved / copy.median_bytes_per_s


def short_error(error: BaseException) -> str:
    """`Type: first line of the message` (the message alone for the benchmark's
    own errors), cut to `ERROR_CHARS`."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    if not isinstance(error, BenchError):
        text = f"{type(error).__name__}: {text}".rstrip(": ")
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3] + "..."
