"""
Running the benchmark: each case is built at the profile's size, run eagerly for
reference outputs, then under each backend: compiled (the first call, Dynamo
included, is the compile time) and checked against eager. Then the backends are
timed in turn, one call of each per round, over rotating fresh random inputs, so
that a busy machine slows them alike. A backend that fails on a case is recorded
with its error and the run goes on.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from permalloy.tools.bench.accuracy import Accuracy, compare, flatten_tensors
from permalloy.tools.bench.backends import BenchError, make_backend
from permalloy.tools.bench.profiles import Profile
from permalloy.tools.bench.progress import Progress
from permalloy.tools.bench.timing import (
    CopyBandwidth,
    TimingStats,
    copy_bandwidth,
    measure_interleaved,
    synchronizer,
    timed,
)
from permalloy.tools.zoo import make_case

MEMORY_BOUND_CASES = frozenset(
    {"pointwise_chain", "layer_norm", "masked_softmax", "rms_norm_silu", "layer_norm_gelu_residual"}
)
"""Cases with no library call, whose speed is limited by memory traffic: their
achieved bandwidth is reported as a fraction of the copy bandwidth."""

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
    speedup_vs_eager: float | None = None
    speedup_vs_inductor: float | None = None
    bandwidth_gb_per_s: float | None = None
    bandwidth_fraction_of_copy: float | None = None

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
            "bandwidth_gb_per_s": self.bandwidth_gb_per_s,
            "bandwidth_fraction_of_copy": self.bandwidth_fraction_of_copy,
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
    results: dict[str, BackendResult] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
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


@dataclass(frozen=True)
class _Inputs:
    """The rotating input sets of a case and eager's outputs for the first ones."""

    sets: list[tuple[torch.Tensor, ...]]
    references: list[Any]


def run_benchmark(config: BenchConfig, progress: Progress) -> BenchReport:
    """Measure every case of `config` under every backend of it."""
    if config.device == "cuda" and not torch.cuda.is_available():
        raise BenchError("--device cuda: CUDA is not available here; valid devices here: cpu")
    with torch.no_grad(), _threads(config.threads):
        machine = machine_description(config.device)
        copy = copy_bandwidth(config.device, config.profile)
        progress.note(f"copy bandwidth {copy.median_bytes_per_s / 1e9:.1f} GB/s (median)")
        first_use = {b: _first_use(b, config.device, progress) for b in config.backends}
        cases = [_run_case(i, name, config, copy, progress) for i, name in enumerate(config.cases)]
    progress.finish()
    return BenchReport(config, machine, copy, first_use, cases)


@contextlib.contextmanager
def _threads(count: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `count` for the block (unchanged if None)."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def machine_description(device: str) -> dict[str, Any]:
    """The machine, the software versions and the threads, for the report."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        permalloy_version = version("permalloy")
    except PackageNotFoundError:
        permalloy_version = "unknown"
    machine = {
        "device": device,
        "cpu": _cpu_name(),
        "cpu_count": _cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average": _load_average(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "permalloy": permalloy_version,
    }
    if device == "cuda" and torch.cuda.is_available():
        machine["gpu"] = torch.cuda.get_device_name()
    return machine


def _first_use(backend: str, device: str, progress: Progress) -> float | str:
    """
    Compile and run a one-op function under `backend`, so that one-time costs
    (imports, compiler start-up) are not charged to the first case; their time,
    or the error that stopped them.
    """
    adapter = make_backend(backend, device)
    if not adapter.compiles:
        return 0.0
    progress.note(f"starting {backend} (one-time costs, not charged to the cases)")
    x = torch.randn(8, device=device)
    torch._dynamo.reset()  # noqa: SLF001
    try:
        with adapter.session():
            compiled = adapter.compile(torch.nn.Sequential(torch.nn.ReLU()))
            return timed(lambda: compiled(x), synchronizer(device))[1]
    except Exception as error:  # noqa: BLE001 - reported, and the cases will say more
        return short_error(error)
    finally:
        torch._dynamo.reset()  # noqa: SLF001


def _run_case(
    index: int, name: str, config: BenchConfig, copy: CopyBandwidth, progress: Progress
) -> CaseResult:
    """Build case `name`, run it eagerly, then under each backend."""
    result = CaseResult(name, memory_bound=name in MEMORY_BOUND_CASES)
    try:
        with progress.phase(index, name, None, "building inputs and eager references"):
            case = make_case(name, config.profile.size)
            model = case.model.to(config.device)
            inputs = _prepare_inputs(name, case.inputs, model, config)
    except Exception as error:  # noqa: BLE001 - the case is reported, the run goes on
        result.error = short_error(error)
        return result
    result.input_shapes = [list(t.shape) for t in inputs.sets[0]]
    result.input_sets = len(inputs.sets)
    result.traffic_bytes = traffic_bytes(model, inputs.sets[0], inputs.references[0])
    run = _CaseRun(index, name, model, inputs, config, progress, synchronizer(config.device))
    torch._dynamo.reset()  # noqa: SLF001
    try:
        compiled = _prepare_backends(run, result.results)
        _time_backends(run, compiled, result.results)
    finally:
        torch._dynamo.reset()  # noqa: SLF001
    add_speedups(result.results)
    add_bandwidth(result, copy)
    return result


@dataclass(frozen=True)
class _CaseRun:
    """What running one case under a backend needs: the case's model and inputs,
    the run's configuration, progress display and device synchronization."""

    index: int
    name: str
    model: torch.nn.Module
    inputs: _Inputs
    config: BenchConfig
    progress: Progress
    sync: Callable[[], None]

    def phase(self, backend: str | None, what: str) -> Any:
        """The progress display of one step of this case (under `backend`, if any)."""
        return self.progress.phase(self.index, self.name, backend, what)


def _prepare_inputs(
    name: str, first: tuple[torch.Tensor, ...], model: torch.nn.Module, config: BenchConfig
) -> _Inputs:
    """Fresh input sets on the device and eager's outputs for the first two."""
    sets = input_sets(name, first, config.profile)
    sets = [tuple(t.to(config.device) for t in s) for s in sets]
    references = [model(*s) for s in sets[: accuracy_sets(sets)]]
    return _Inputs(sets, references)


def input_sets(
    name: str, first: tuple[torch.Tensor, ...], profile: Profile
) -> list[tuple[torch.Tensor, ...]]:
    """
    The case's inputs and more built the same way from other seeds: enough sets
    to hold `profile.rotation_bytes` (at least two, at most
    `profile.max_input_sets`), so the timed calls never see the same data twice
    in a row and, on large sizes, read it from memory.
    """
    per_set = max(sum(t.nbytes for t in first), 1)
    count = max(2, min(profile.max_input_sets, math.ceil(profile.rotation_bytes / per_set)))
    others = [
        make_case(name, replace(profile.size, seed=profile.size.seed + k)).inputs
        for k in range(1, count)
    ]
    return [first, *others]


def accuracy_sets(sets: Sequence[Any]) -> int:
    """How many input sets the accuracy check compares on."""
    return min(2, len(sets))


def traffic_bytes(model: torch.nn.Module, inputs: Sequence[torch.Tensor], outputs: Any) -> int:
    """Inputs, parameters and buffers read once plus outputs written once, in bytes."""
    state = [*model.parameters(), *model.buffers()]
    read = sum(t.nbytes for t in (*inputs, *state))
    return read + sum(t.nbytes for t in flatten_tensors(outputs))


def _prepare_backends(
    run: _CaseRun, results: dict[str, BackendResult]
) -> dict[str, Callable[..., Any]]:
    """Compile and check the case under each backend, recording into `results`;
    the compiled models of the backends that got through."""
    compiled = {}
    for backend in run.config.backends:
        results[backend], model = _prepare_backend(run, backend)
        if model is not None:
            compiled[backend] = model
    return compiled


def _prepare_backend(run: _CaseRun, backend: str) -> tuple[BackendResult, Any]:
    """Compile and check one backend; its result, and its compiled model or None."""
    result = BackendResult(backend)
    adapter = make_backend(backend, run.config.device)
    try:
        with adapter.session():
            try:
                return result, _compile_and_check(run, adapter, result)
            finally:
                result.kernels = adapter.kernel_info()
    except Exception as error:  # noqa: BLE001 - the failure is the result
        result.ok, result.error = False, short_error(error)
        return result, None


def _compile_and_check(run: _CaseRun, adapter: Any, result: BackendResult) -> Any:
    """Compile (timing the first call), compare with eager; the compiled model."""
    sets, references = run.inputs.sets, run.inputs.references
    with run.phase(adapter.name, "compiling" if adapter.compiles else "first call"):
        compiled, seconds = timed(lambda: _compile_and_call(adapter, run.model, sets[0]), run.sync)
    if adapter.compiles:
        result.compile_s = seconds
        result.accuracy = compare([compiled(*s) for s in sets[: len(references)]], references)
    return compiled


def _time_backends(
    run: _CaseRun, compiled: dict[str, Callable[..., Any]], results: dict[str, BackendResult]
) -> None:
    """Time the compiled models in turn, over the rotating input sets."""
    sets = run.inputs.sets
    calls = {b: _rotating_call(model, sets) for b, model in compiled.items()}
    with run.phase(None, f"timing {', '.join(calls)} in turn"):
        timings = measure_interleaved(calls, run.sync, run.config.profile)
    for backend, timing in timings.items():
        if isinstance(timing, Exception):
            results[backend].ok, results[backend].error = False, short_error(timing)
        else:
            results[backend].timing = timing


def _rotating_call(model: Callable[..., Any], sets: list[tuple[torch.Tensor, ...]]) -> Callable:
    """`call(i)` runs `model` on input set `i` modulo their number."""
    return lambda i: model(*sets[i % len(sets)])


def _compile_and_call(adapter: Any, model: torch.nn.Module, inputs: Sequence[torch.Tensor]) -> Any:
    """Compile `model` and call it once (compilation happens at the first call)."""
    compiled = adapter.compile(model)
    compiled(*inputs)
    return compiled


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


def _cpu_name() -> str:
    """The processor's model name, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages at the start: other work on the
    machine makes timings noisy."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
