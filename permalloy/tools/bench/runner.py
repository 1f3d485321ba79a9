"""
Running the benchmark: each case is built at the profile's size, run eagerly for
reference results, then under each backend: compiled (the first call, Dynamo
included, is the compile time) and checked against eager. Then the backends are
timed in turn, one call of each per round, over rotating fresh random inputs, so
that a busy machine slows them alike. A backend that fails on a case is recorded
with its error and the run goes on. What a call is (inference, or a training
step with `--train`) and what is compared (outputs, or gradients) is the
`workload`'s business.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

import torch

from permalloy.tools.bench.accuracy import flatten_tensors
from permalloy.tools.bench.backends import BenchError, add_host_times, make_backend
from permalloy.tools.bench.compile_times import add_first_call_remainder, cold_compile, warm_compile
from permalloy.tools.bench.explained import explanation, print_explanation, why_explain
from permalloy.tools.bench.machine import machine_description
from permalloy.tools.bench.profiles import Profile
from permalloy.tools.bench.progress import Progress
from permalloy.tools.bench.results import (
    BackendResult,
    BenchConfig,
    BenchReport,
    CaseResult,
    add_bandwidth,
    add_speedups,
    short_error,
)
from permalloy.tools.bench.timing import (
    CopyBandwidth,
    copy_bandwidth,
    measure_interleaved,
    synchronizer,
    timed,
)
from permalloy.tools.bench.graphs import dynamo_graphs
from permalloy.tools.bench.kernel_profile import profile_backend, settings_for
from permalloy.tools.bench.suites import CaseUnavailable, Suite, make_suite
from permalloy.tools.bench.training import Training
from permalloy.tools.bench.workload import Inference, InputSet, Workload


@dataclass(frozen=True)
class _Inputs:
    """The rotating input sets of a case and eager's results (outputs, or
    gradients) for the first ones."""

    sets: list[InputSet]
    references: list[Any]
    float64_references: list[Any] | None = None
    """With `--float64-reference`: the model's outputs in float64 for the
    same sets; None otherwise, or where it cannot run so."""


def make_workload(train: bool) -> Workload:
    """The workload of a run: a training step with `train`, else inference."""
    return Training() if train else Inference()


def run_benchmark(
    config: BenchConfig, progress: Progress, case_done: Callable[[BenchReport], None] | None = None
) -> BenchReport:
    """Measure every case of `config` under every backend of it; after each
    case, `case_done` gets the report of the cases done so far."""
    if config.device == "cuda" and not torch.cuda.is_available():
        raise BenchError("--device cuda: CUDA is not available here; valid devices here: cpu")
    workload = make_workload(config.train)
    suite = make_suite(config.suite)
    with torch.set_grad_enabled(workload.grad_enabled), _threads(config.threads), full_float32():
        machine = machine_description(config.device)
        copy = copy_bandwidth(config.device, config.profile)
        progress.note(f"copy bandwidth {copy.median_bytes_per_s / 1e9:.1f} GB/s (median)")
        first_use = {b: _first_use(b, config.device, workload, progress) for b in config.backends}
        cases: list[CaseResult] = []
        for i, name in enumerate(config.cases):
            cases.append(_run_case(i, name, suite, config, workload, copy, progress))
            if case_done is not None:
                case_done(BenchReport(config, machine, copy, first_use, list(cases)))
    progress.finish()
    return BenchReport(config, machine, copy, first_use, cases)


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """
    float32 matrix products and convolutions in float32 for the block: torch
    lets cuDNN's convolutions use TF32 by default, whose rounding (about 1e-3
    relative) differs with the algorithm each backend's layout selects, so that
    no backend could be compared with eager at float32's bar.
    """
    backends = torch.backends
    previous = (backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32)
    backends.cudnn.allow_tf32 = backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        backends.cudnn.allow_tf32, backends.cuda.matmul.allow_tf32 = previous


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


def _first_use(backend: str, device: str, workload: Workload, progress: Progress) -> float | str:
    """
    Compile and run a one-op function under `backend` (a training step of it
    with `--train`), so that one-time costs (imports, compiler start-up) are not
    charged to the first case; their time, or the error that stopped them.
    """
    adapter = make_backend(backend, device)
    if not adapter.compiles:
        return 0.0
    progress.note(f"starting {backend} (one-time costs, not charged to the cases)")
    (inputs,) = workload.prepare_inputs([(torch.randn(8, device=device),)])
    torch._dynamo.reset()  # noqa: SLF001
    try:
        with adapter.session():
            model = workload.prepare(torch.nn.Sequential(torch.nn.ReLU()), inputs)
            step = workload.step(adapter.compile(model), model)
            return timed(lambda: step(inputs), synchronizer(device))[1]
    except Exception as error:  # noqa: BLE001 - reported, and the cases will say more
        return short_error(error)
    finally:
        torch._dynamo.reset()  # noqa: SLF001


def _run_case(
    index: int,
    name: str,
    suite: Suite,
    config: BenchConfig,
    workload: Workload,
    copy: CopyBandwidth,
    progress: Progress,
) -> CaseResult:
    """Build case `name`, run it eagerly, then under each backend."""
    result = CaseResult(name, memory_bound=suite.memory_bound(name))
    result.family = suite.family(name)
    try:
        with progress.phase(index, name, None, "building inputs and eager references"):
            case = suite.build(name, config.profile, config.profile.size.seed)
            model = workload.prepare(case.model.to(config.device), _on(config.device, case.inputs))
            inputs = _prepare_inputs(name, suite, case.inputs, model, config, workload)
    except CaseUnavailable as unavailable:
        result.error, result.skipped = str(unavailable), True
        return result
    except Exception as error:  # noqa: BLE001 - the case is reported, the run goes on
        result.error = short_error(error)
        return result
    result.input_shapes = [list(t.shape) for t in inputs.sets[0]]
    result.input_sets = len(inputs.sets)
    if workload.measures_bandwidth:
        result.traffic_bytes = traffic_bytes(model, inputs.sets[0], inputs.references[0])
    sync = synchronizer(config.device)
    run = _CaseRun(index, name, model, inputs, config, workload, progress, sync)
    torch._dynamo.reset()  # noqa: SLF001
    try:
        compiled = _prepare_backends(run, result.results)
        _time_backends(run, compiled, result.results)
        add_host_times(result.results.get("permalloy"))
        if config.profile_kernels:
            _profile_backends(run, compiled, result.results)
    finally:
        torch._dynamo.reset()  # noqa: SLF001
    add_speedups(result.results)
    add_bandwidth(result, copy)
    if config.verbose:
        _explain_case(run, result.results)
    return result


def _explain_case(run: _CaseRun, results: dict[str, BackendResult]) -> None:
    """`--verbose`: the explain report of a case permalloy failed or ran
    slower than Inductor."""
    why = why_explain(results)
    if why is None:
        return
    with run.phase("permalloy", "explaining"):
        text = explanation(run.model, run.inputs.sets[0], run.config.device)
    print_explanation(run.name, why, text, run.progress)


@dataclass(frozen=True)
class _CaseRun:
    """What running one case under a backend needs: the case's model (as the
    workload prepared it) and inputs, the run's configuration and workload,
    progress display and device synchronization."""

    index: int
    name: str
    model: torch.nn.Module
    inputs: _Inputs
    config: BenchConfig
    workload: Workload
    progress: Progress
    sync: Callable[[], None]

    def phase(self, backend: str | None, what: str) -> Any:
        """The progress display of one step of this case (under `backend`, if any)."""
        return self.progress.phase(self.index, self.name, backend, what)


def _prepare_inputs(
    name: str,
    suite: Suite,
    first: InputSet,
    model: torch.nn.Module,
    config: BenchConfig,
    workload: Workload,
) -> _Inputs:
    """Fresh input sets on the device and eager's results for the first two."""
    sets = input_sets(name, suite, first, config.profile)
    sets = workload.prepare_inputs([_on(config.device, s) for s in sets])
    references = workload.results(model, model, sets[: accuracy_sets(sets)])
    exact = None
    if config.float64_reference:
        exact = _float64_results(model, sets[: len(references)], workload)
    return _Inputs(sets, references, exact)


def _float64_results(model: torch.nn.Module, sets: list[InputSet], workload: Workload) -> list[Any] | None:
    """What the workload compares (outputs, or a training step's gradients)
    from a float64 copy of `model` on the sets' floating inputs widened to
    float64; None where the model does not run so (an op without a float64
    kernel on the device)."""
    try:
        widened = deepcopy(model).double()
        wide_sets = workload.prepare_inputs([tuple(t.detach().double() if t.is_floating_point() else t for t in s) for s in sets])
        return workload.results(widened, widened, wide_sets)
    except Exception:  # noqa: BLE001 - the errors are then reported as not available
        return None


def _float64_error(results: list[Any], run: _CaseRun) -> float | None:
    """The relative error of `results` against the case's float64 results,
    measured as the workload measures it against eager's."""
    exact = run.inputs.float64_references
    return None if exact is None else run.workload.compare(results, exact).relative_error


def _on(device: str, tensors: InputSet) -> InputSet:
    """The tensors moved to `device`."""
    return tuple(t.to(device) for t in tensors)


def input_sets(
    name: str, suite: Suite, first: tuple[torch.Tensor, ...], profile: Profile
) -> list[tuple[torch.Tensor, ...]]:
    """
    The case's inputs and more built the same way from other seeds: enough sets
    to hold `profile.rotation_bytes` (at least two, at most
    `profile.max_input_sets` and the suite's `max_input_sets`), so the timed
    calls never see the same data twice in a row and, on large sizes, read it
    from memory.
    """
    per_set = max(sum(t.nbytes for t in first), 1)
    most = min(profile.max_input_sets, suite.max_input_sets)
    count = max(2, min(most, math.ceil(profile.rotation_bytes / per_set)))
    others = [suite.build(name, profile, profile.size.seed + k).inputs for k in range(1, count)]
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
    adapter = make_backend(backend, run.config.device, run.config.target_options)
    graphs = dynamo_graphs() if adapter.compiles else contextlib.nullcontext()
    try:
        with adapter.session(), graphs as record:
            try:
                compiled = _compile_and_check(run, adapter, result)
                if run.config.warm_compile and backend in NEW_PROCESS_BACKENDS:
                    with run.phase(backend, "compiling again in a new process (warm cache)"):
                        result.warm_compile = _in_new_process(warm_compile, run, backend)
                if run.config.cold_process and backend in NEW_PROCESS_BACKENDS:
                    with run.phase(backend, "compiling again in a new process (empty caches)"):
                        result.cold_process = _in_new_process(cold_compile, run, backend)
                return result, compiled
            finally:
                result.kernels, result.dynamo = adapter.kernel_info(), record
                if "compile_times" in result.kernels:
                    add_first_call_remainder(result.kernels["compile_times"], result.compile_s)
    except Exception as error:  # noqa: BLE001 - the failure is the result
        result.ok, result.error = False, short_error(error)
        return result, None


NEW_PROCESS_BACKENDS = ("permalloy", "inductor")
"""The backends whose compiles `--warm-compile` and `--cold-process` repeat in a new process."""


def _in_new_process(compile_case: Callable[..., dict[str, Any]], run: _CaseRun, backend: str) -> dict[str, Any]:
    """The case compiled by `backend` in a new process by `compile_case`
    (`warm_compile`, with the caches this one filled, inside the backend's
    session, which keeps them; or `cold_compile`, with empty ones)."""
    config = run.config
    quick = config.profile.name == "quick"
    return compile_case(
        config.suite, run.name, config.device, quick, config.train, config.threads, backend, config.target_options
    )


def _compile_and_check(run: _CaseRun, adapter: Any, result: BackendResult) -> Any:
    """Compile (timing the first call), compare with eager; the compiled model."""
    sets, references, workload = run.inputs.sets, run.inputs.references, run.workload
    with run.phase(adapter.name, "compiling" if adapter.compiles else "first call"):
        compiled, seconds = timed(lambda: _compile_and_call(adapter, run, sets[0]), run.sync)
    if adapter.compiles:
        result.compile_s = seconds
        checked = workload.results(compiled, run.model, sets[: len(references)])
        result.accuracy = workload.compare(checked, references)
        result.float64_error = _float64_error(checked, run)
    else:
        result.float64_error = _float64_error(references, run)
    return compiled


def _time_backends(
    run: _CaseRun, compiled: dict[str, Callable[..., Any]], results: dict[str, BackendResult]
) -> None:
    """Time the compiled models in turn, over the rotating input sets."""
    sets = run.inputs.sets
    steps = {b: run.workload.step(model, run.model) for b, model in compiled.items()}
    calls = {b: _rotating_call(step, sets) for b, step in steps.items()}
    with run.phase(None, f"timing {', '.join(calls)} in turn"):
        timings = measure_interleaved(calls, run.sync, run.config.profile)
    for backend, timing in timings.items():
        if isinstance(timing, Exception):
            results[backend].ok, results[backend].error = False, short_error(timing)
        else:
            results[backend].timing = timing


def _profile_backends(
    run: _CaseRun, compiled: dict[str, Callable[..., Any]], results: dict[str, BackendResult]
) -> None:
    """Each backend's profile (`--profile`): host and kernel time, top kernels."""
    settings = settings_for(run.config.device, run.config.profile.name == "quick")
    for backend, model in compiled.items():
        if not results[backend].ok:
            continue
        call = _rotating_call(run.workload.step(model, run.model), run.inputs.sets)
        with run.phase(backend, "profiling"):
            try:
                results[backend].profile = profile_backend(call, run.config.device, settings)
            except Exception as error:  # noqa: BLE001 - the profile says why it is missing
                results[backend].profile = {"error": short_error(error)}


def _rotating_call(step: Callable[[InputSet], Any], sets: list[InputSet]) -> Callable:
    """`call(i)` runs `step` on input set `i` modulo their number."""
    return lambda i: step(sets[i % len(sets)])


def _compile_and_call(adapter: Any, run: _CaseRun, inputs: InputSet) -> Any:
    """Compile the case's model and take one step (compilation happens at the
    first call; in a training step, the backward graph's at the first backward)."""
    compiled = adapter.compile(run.model)
    run.workload.step(compiled, run.model)(inputs)
    return compiled
