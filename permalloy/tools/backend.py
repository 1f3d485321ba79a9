"""
The torch.compile backend: `torch.compile(model, backend="permalloy")`.

Registered through the `torch_dynamo_backends` entry point, so it works without
importing permalloy. Dynamo's graph goes through AOTAutograd with permalloy's
decomposition table; each graph it produces (the inference graph, or for
training the forward and the backward graph) is imported, lowered by the
default pipeline and compiled for the target. Training graphs are split by
torch's min-cut rematerialization partitioner, which saves few activations
and recomputes cheap pointwise work in the backward graph, and their
attention and grid sampling calls are written as math first
(`lowering/math_for_training.py`) so that the backward is ours too. An
inference graph compiled before, in this process or an earlier one, is
loaded through its traced-graph record before AOTAutograd runs
(`tools/traced_graphs.py`); other graphs, training steps among them, start
warm from AOTAutograd's own cache (`tools/autograd_cache.py`). A graph that
cannot be compiled runs eagerly after one warning (`fallback="warn"`, the
default) or raises (`fallback="raise"`).

Options (`torch.compile(..., options={...})`):
- `target`: "llvm" (CPU kernels), "triton" (GPU kernels; on CPU tensors
  through Triton's interpreter when `TRITON_INTERPRET=1`) or "reference" (the
  loop interpreter, for debugging); by default "triton" when the graph's
  inputs are CUDA tensors and "llvm" otherwise;
- `dump_dir`: a folder receiving, for each graph, one file per stage: the
  imported IR, the IR after each pass, the kernels and the host program
  (the environment variable PERMALLOY_DUMP_DIR does the same);
- `fallback`: "warn" or "raise";
- `fusion`: True (the default) or False, to compile every loop op as its own
  kernel;
- `cache`: True (the default) or False, to compile without the compiled-graph
  cache (`permalloy.cache`: graphs compiled before, by this process or an
  earlier one, are loaded from `$PERMALLOY_CACHE_DIR` without running the
  pipeline; `PERMALLOY_CACHE=0` turns it off as well);
- each target's own options (`TargetDescriptor.options`): for "llvm"
  `vector_bits` and `parallel_threshold`, for "triton" `autotune`.

Modes: `max-autotune` makes the Triton target try more launch
configurations; `reduce-overhead` replays graphs on CUDA tensors as CUDA
graphs after two warm-up calls (`targets/cuda_graph.py`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._dynamo.exc import RestartAnalysis, SkipFrame
from torch._subclasses.fake_tensor import unset_fake_temporarily

from permalloy import logs
from permalloy.cache import CacheKey, CacheSettingError, cache_enabled_by_environment
from permalloy.cache.traced import TracedGraphRecord
from permalloy.compiler import CompileOptions, ImportedEntry, compile_graph
from permalloy.garbage_collection import garbage_collection_paused
from permalloy.explain.collect import ExplanationCollector
from permalloy.explain.details import GraphDetails
from permalloy.lowering.capture import aten_backend, saved_for_backward
from permalloy.passes.fusion_decisions import FusionDecisions
from permalloy.stats import STATS_LOG, GraphStats
from permalloy.targets import registry
from permalloy.targets.descriptor import TargetOptionError
from permalloy.tools.autograd_cache import (
    CompiledGraphCode,
    PendingGraphCode,
    autograd_cache_digest,
    autograd_cache_settings,
)
from permalloy.tools.graph_runners import compiled_runner
from permalloy.tools.traced_graphs import (
    as_inference_wrapper,
    imported_record,
    load_traced,
    loadable_record,
    record_traced,
    traced_key,
)

VALID_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""The modes of `torch.compile` the backend takes."""
VALID_OPTIONS = {
    "target": "kernel target: "
    + "; ".join(f"{t.name} ({t.summary})" for t in registry.TARGETS),
    "dump_dir": "folder for the IR of every stage",
    "fallback": "'warn' (run eagerly) or 'raise' when a graph cannot compile",
    "fusion": "True (default) or False: fuse loops into fewer kernels",
    "cache": "True (default) or False: load graphs compiled before from the "
    "compiled-graph cache ($PERMALLOY_CACHE_DIR) and store new ones",
    "host": "'native' (default, or $PERMALLOY_HOST: the host program compiled to machine "
    "code where the target allows) or 'python' (the generated Python host program)",
    "mode": "the mode, for a torch.compile call that gives options (torch takes mode= "
    "or options=, not both): " + ", ".join(f"'{mode}'" for mode in VALID_MODES),
}
"""The options every target takes; each target adds its own (`TargetDescriptor.options`)."""
VALID_FALLBACKS = ("warn", "raise")
VALID_HOSTS = ("native", "python")


class PermalloyOptionError(ValueError):
    """An option or mode the backend does not know."""


def _option_listing() -> str:
    """Every option, the common ones and then each target's own."""
    common = "; ".join(f"{k} ({v})" for k, v in VALID_OPTIONS.items())
    own = "; ".join(
        f"{key} (target '{t.name}': {option.description})"
        for t in registry.TARGETS
        for key, option in t.options.items()
    )
    return f"{common}; {own}" if own else common


def parse_options(options: dict[str, Any] | None, mode: str | None) -> CompileOptions:
    """Check the user's options and mode; unknown ones are errors that list the valid ones."""
    options = dict(options or {})
    target_keys = {key for t in registry.TARGETS for key in t.options}
    unknown = sorted(set(options) - set(VALID_OPTIONS) - target_keys)
    if unknown:
        raise PermalloyOptionError(
            f"unknown permalloy option(s) {', '.join(map(repr, unknown))}; "
            f"valid options: {_option_listing()}"
        )
    if "mode" in options and mode is not None and options["mode"] != mode:
        raise PermalloyOptionError(f"mode {mode!r} and option 'mode' {options['mode']!r} differ; give one")
    mode = options.get("mode") or mode or "default"
    if mode not in VALID_MODES:
        raise PermalloyOptionError(
            f"unknown mode {mode!r}; valid modes: {', '.join(VALID_MODES)}"
        )
    target = options.get("target")
    if target is not None and target not in registry.available_targets():
        raise PermalloyOptionError(f"unknown target {target!r}; valid targets: {registry.target_names()}")
    fallback = options.get("fallback", "warn")
    if fallback not in VALID_FALLBACKS:
        raise PermalloyOptionError(
            f"unknown fallback {fallback!r}; valid values: {', '.join(VALID_FALLBACKS)}"
        )
    fusion = options.get("fusion", True)
    if not isinstance(fusion, bool):
        raise PermalloyOptionError(f"option 'fusion' takes True or False, got {fusion!r}")
    cache = options.get("cache", True)
    if not isinstance(cache, bool):
        raise PermalloyOptionError(f"option 'cache' takes True or False, got {cache!r}")
    try:
        cache = cache and cache_enabled_by_environment()
    except CacheSettingError as error:
        raise PermalloyOptionError(str(error)) from None
    host = options.get("host", os.environ.get("PERMALLOY_HOST") or "native")
    if host not in VALID_HOSTS:
        source = "option 'host'" if "host" in options else "PERMALLOY_HOST"
        raise PermalloyOptionError(f"unknown host {host!r} ({source}); valid values: {', '.join(VALID_HOSTS)}")
    dump_dir = options.get("dump_dir")
    if dump_dir is not None and not isinstance(dump_dir, str | os.PathLike):
        raise PermalloyOptionError(
            f"option 'dump_dir' takes a folder path (str or os.PathLike) or None, got {dump_dir!r}"
        )
    target_options = {k: v for k, v in options.items() if k not in VALID_OPTIONS}
    if target is not None:
        _check_target_options(target, target_options)
    else:
        for key, value in target_options.items():
            owner = next(t for t in registry.TARGETS if key in t.options)
            _check_target_options(owner.name, {key: value})
    return CompileOptions(
        target=target,
        dump_dir=None if dump_dir is None else str(dump_dir),
        fallback=fallback,
        mode=mode,
        fusion=fusion,
        target_options=target_options,
        cache=cache,
        host=host,
    )


def _check_target_options(target: str, target_options: dict[str, Any]) -> None:
    """Raise a `PermalloyOptionError` unless `target` takes each of the options."""
    try:
        registry.target_descriptor(target).checked_options(target_options)
    except TargetOptionError as error:
        raise PermalloyOptionError(str(error)) from None


def default_target(example_inputs: Sequence[Any]) -> str:
    """The target for a graph's inputs: the registered default of the first
    device that has one ("triton" for CUDA tensors), else that of the CPU."""
    devices = [v.device.type for v in example_inputs if isinstance(v, torch.Tensor)]
    for device in (*sorted(set(devices) - {"cpu"}), "cpu"):
        target = registry.target_for_device(device)
        if target is not None:
            return target.name
    raise PermalloyOptionError("no kernel target runs on the CPU")


def resolve_target(options: CompileOptions, example_inputs: Sequence[Any]) -> CompileOptions:
    """`options` with a target: the user's, else the one for the inputs' device,
    whose options are then checked. A target that cannot run on the inputs'
    devices (Triton on CPU tensors without its interpreter, tensors on devices
    no target serves, such as meta tensors) is an error, and so falls back to
    eager."""
    devices = {v.device.type for v in example_inputs if isinstance(v, torch.Tensor)}
    unsupported = sorted(devices - registry.served_devices())
    if unsupported:
        served = " and ".join(sorted(d.upper() for d in registry.served_devices()))
        raise PermalloyOptionError(
            f"permalloy compiles graphs of {served} tensors; these inputs are on "
            f"{', '.join(unsupported)} (which has no data to run kernels on)"
        )
    if options.target is None:
        options = dataclasses.replace(options, target=default_target(example_inputs))
        _check_target_options(options.target, options.target_options)
    problem = registry.target_descriptor(options.target).input_problem(devices)
    if problem is not None:
        raise PermalloyOptionError(problem)
    return options


DYNAMO_CONTROL_FLOW: tuple[type[Exception], ...] = (RestartAnalysis, SkipFrame)
"""Exceptions Dynamo raises through a backend to steer its own tracing, not
failures: a restart of the frame's analysis (e.g. once Python float inputs
are turned into 0-d tensors during AOTAutograd's trace) or a request to skip
the frame. They pass through the backend untouched, whatever `fallback` says."""


class PermalloyCompileError(RuntimeError):
    """A graph that could not be compiled, raised with `fallback="raise"`
    when the failure happened before permalloy's compiler saw the graph (in
    AOTAutograd or permalloy's decompositions)."""


class _EagerFallback(Exception):
    """Raised out of AOTAutograd by the graph compiler so that the backend runs
    Dynamo's graph eagerly; carries the failure that caused it."""

    def __init__(self, error: Exception):
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error


@dataclasses.dataclass
class CompileAttempt:
    """One call of the backend on one Dynamo graph.

    While the backend's call is in progress (`active`), Dynamo's graph can still
    be run eagerly in place of everything AOTAutograd made of it. A backward
    graph of static sizes compiles on the first backward call (AOTAutograd
    lowers it lazily, or, for its cache, hands it over with the forward and
    permalloy defers it) and can only fall back to itself, an ATen graph
    made of decompositions."""

    options: CompileOptions
    active: bool = True
    mark: float = dataclasses.field(default_factory=time.perf_counter)
    """When the backend was entered, then when its last graph was compiled:
    the time since is AOTAutograd's, until the next graph reaches permalloy."""
    compiler_error: Exception | None = None
    """A failure of permalloy's compiler with `fallback="raise"`, which goes
    to the user as it is."""
    explanation: ExplanationCollector | None = None
    """Where `permalloy.explain` collects each graph's details, when it runs."""
    traced: CacheKey | None = None
    """The traced-graph key of Dynamo's graph, where its inference graph's
    compilation is to be recorded under it (`tools/traced_graphs.py`)."""
    traced_inputs: int = 0
    """The number of Dynamo's graph's inputs, where `traced` is set."""

    def details(self) -> GraphDetails | None:
        """What to record of a graph's compilation: what `permalloy.explain`
        reports and what the enabled log channels say; None when nothing is."""
        explained = self.explanation is not None
        fusion = explained or logs.enabled("fusion")
        sources = logs.enabled("output_code")
        if not (fusion or sources):
            return None
        return GraphDetails(
            label_values=explained, fusion=FusionDecisions() if fusion else None, sources=sources
        )

    def record_failure(self, record: GraphStats) -> None:
        if self.explanation is not None:
            self.explanation.add(record, None)


def _failure_reason(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _warn_fallback(reason: str, target: str | None, attempt: CompileAttempt) -> None:
    """The one warning, and the stats record, of a graph run eagerly."""
    warnings.warn(f"permalloy could not compile a graph and runs it eagerly: {reason}", stacklevel=3)
    record = GraphStats(target=target or "", compiled=False, reason=reason)
    STATS_LOG.add(record)
    attempt.record_failure(record)
    logs.log_eager_graph(reason)
    if torch._dynamo.config.verbose:  # noqa: SLF001
        traceback.print_exc()


def _compile_one(
    graph: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: CompileOptions,
    aot_autograd_seconds: float | None = None,
    attempt: CompileAttempt | None = None,
    saved: Sequence[int] = (),
    prepared: ImportedEntry | None = None,
):
    """Compile one ATen graph; gives the runner AOTAutograd calls. `saved`:
    the positions of the outputs a training step's forward graph saves for
    its backward graph, whose layouts the program chooses and reports.
    `prepared`: the graph's import and cache key, made for AOTAutograd's
    cache before it compiles (`compile_graph`)."""
    resolved = resolve_target(options, example_inputs)
    details = attempt.details() if attempt is not None else None
    # AOTAutograd calls this under its fake mode; the graph's constants
    # (get_attr tensors) are real and are read as real tensors.
    with unset_fake_temporarily(), garbage_collection_paused():
        compiled = compile_graph(graph, resolved, details, free_layout_outputs=frozenset(saved), prepared=prepared)
    _report_output_strides(compiled.output_strides)
    if attempt is not None and attempt.traced is not None and attempt.active and not saved:
        record_traced(attempt.traced, graph, compiled, attempt.traced_inputs)
    runner = compiled_runner(compiled, resolved, aot_autograd_seconds, details)
    if attempt is not None and attempt.explanation is not None:
        attempt.explanation.add(compiled.stats, details)
    return CompiledGraphCode(runner, loadable_record(compiled), resolved)


def _warm_start(graph: torch.fx.GraphModule, example_inputs: Sequence[Any], attempt: CompileAttempt) -> Callable | None:
    """Dynamo's inference graph loaded through its traced-graph record,
    without AOTAutograd's trace or the import (`tools/traced_graphs.py`);
    None where it has none (then `attempt.traced` says where to write one
    after the graph compiles)."""
    if attempt.explanation is not None or attempt.details() is not None:
        return None
    try:
        resolved = resolve_target(attempt.options, example_inputs)
    except PermalloyOptionError:  # the graph's compilation reports it
        return None
    started = time.perf_counter()
    try:
        key = traced_key(graph, example_inputs, resolved)
    except Exception:  # noqa: BLE001 - a graph that cannot be keyed compiles as usual
        return None
    if key is None:
        return None
    attempt.traced, attempt.traced_inputs = key, len(example_inputs)
    keyed = time.perf_counter() - started
    try:
        with unset_fake_temporarily():
            loaded = load_traced(key, resolved, len(example_inputs))
    except Exception:  # noqa: BLE001 - a record that does not load is a miss, written again
        return None
    if loaded is None:
        return None
    compiled, updated = loaded
    compiled.stats.compile_times.add("cache_lookup", keyed)
    compiled.stats.compile_seconds += keyed
    return as_inference_wrapper(compiled_runner(compiled, resolved, 0.0, None), updated)


def _autograd_cache_digest(example_inputs: Sequence[Any], attempt: CompileAttempt) -> str | None:
    """The digest AOTAutograd's cache keys the graph's compilation on
    (`tools/autograd_cache.py`); None where it is not to be used: the
    compiled-graph cache off, or details of the compilation wanted."""
    if attempt.explanation is not None or attempt.details() is not None:
        return None
    try:
        return autograd_cache_digest(resolve_target(attempt.options, example_inputs))
    except PermalloyOptionError:  # the graph's compilation reports it
        return None


def _report_output_strides(strides: list[tuple[int, ...] | None]) -> None:
    """Tell AOTAutograd the strides of the outputs whose layout the program
    chose (None for the others, returned in eager's), where it asks for them
    (`TracingContext.report_output_strides`, around a forward graph's
    compile): it gives the backward graph the saved tensors in these."""
    context = torch._guards.TracingContext.try_get()  # noqa: SLF001
    reported = getattr(context, "output_strides", None)
    if isinstance(reported, list):
        reported.extend(strides)


def _take_example_strides(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> dict[int, tuple[int, ...]]:
    """Give `graph`'s tensor placeholders the strides of their example
    inputs where these differ from the traced ones (a backward graph's saved
    tensors arrive in the layouts the forward's program chose and reported,
    and AOTAutograd restrides the examples, not the graph); the traced
    strides so replaced, by input position."""
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    traced_strides = {}
    for position, (node, example) in enumerate(zip(placeholders, example_inputs)):
        traced = node.meta.get("val")
        if isinstance(traced, torch.Tensor) and isinstance(example, torch.Tensor) and traced.stride() != example.stride():
            traced_strides[position] = tuple(traced.stride())
            node.meta["val"] = example
    return traced_strides


def _in_strides(graph: torch.fx.GraphModule, strides: dict[int, tuple[int, ...]]) -> Callable[..., Any]:
    """`graph`, run eagerly, on the inputs at the positions of `strides`
    copied into those strides where they arrive in others: the strides it
    was traced with, which an ATen `view` in it may need."""
    if not strides:
        return graph

    def run(*args: Any) -> Any:
        args = list(args)
        for position, wanted in strides.items():
            tensor = args[position]
            if tensor.stride() != wanted:
                args[position] = torch.empty_strided(tensor.shape, wanted, dtype=tensor.dtype, device=tensor.device).copy_(tensor)
        return graph(*args)

    return run


def graph_compiler(attempt: CompileAttempt, training_forward: bool = False, backward: bool = False) -> Callable:
    """The compiler AOTAutograd calls for each graph: inference, forward or
    backward (`training_forward`: the compiler of a training step's forward
    graph, whose saved tensors' layouts the program chooses; `backward`: of
    its backward graph, which compiles on its first call, and on a failure
    runs as its ATen graph after a warning, the forward staying compiled)."""
    options = attempt.options

    def compile_now(
        graph: torch.fx.GraphModule,
        example_inputs: Sequence[Any],
        traced_strides: dict[int, tuple[int, ...]],
        prepared: ImportedEntry | None = None,
    ) -> CompiledGraphCode:
        aot_autograd = time.perf_counter() - attempt.mark if attempt.active else None
        saved = saved_for_backward(graph) if training_forward else ()
        try:
            return _compile_one(graph, example_inputs, options, aot_autograd, attempt, saved, prepared)
        except DYNAMO_CONTROL_FLOW:
            raise
        except Exception as error:  # noqa: BLE001 - any failure falls back to eager
            if options.fallback == "raise":
                attempt.compiler_error = error
                raise
            if attempt.active:
                raise _EagerFallback(error) from error
            _warn_fallback(_failure_reason(error), options.target or default_target(example_inputs), attempt)
            return CompiledGraphCode(_in_strides(graph, traced_strides), None, options)
        finally:
            attempt.mark = time.perf_counter()

    def compiler(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> CompiledGraphCode:
        traced_strides = _take_example_strides(graph, example_inputs)
        if backward and attempt.active and not _has_symbolic_sizes(example_inputs):
            # AOTAutograd's non-lazy lowering, for its cache (one of symbolic
            # sizes compiles now, as AOTAutograd's own would, within its guards)
            resolved = resolve_target(options, example_inputs)
            # the import and key made for AOTAutograd's record, which the compile takes
            imports: list[ImportedEntry] = []
            return PendingGraphCode(
                lambda: compile_now(graph, example_inputs, traced_strides, imports.pop() if imports else None),
                lambda: _imported_record(graph, resolved, imports.append),
                resolved,
            )
        return compile_now(graph, example_inputs, traced_strides)

    return compiler


def _has_symbolic_sizes(example_inputs: Sequence[Any]) -> bool:
    """Whether a graph's example inputs carry symbolic sizes or are sizes."""
    for value in example_inputs:
        if isinstance(value, torch.SymInt | torch.SymFloat):
            return True
        if isinstance(value, torch.Tensor) and any(isinstance(n, torch.SymInt) for n in (*value.shape, *value.stride())):
            return True
    return False


def _imported_record(
    graph: torch.fx.GraphModule, resolved: CompileOptions, keep: Callable[[ImportedEntry], None]
) -> TracedGraphRecord | None:
    """`imported_record` of a graph AOTAutograd is saving, outside its fake
    mode (the graph's constants are real tensors); `keep` receives the
    import it made."""
    with unset_fake_temporarily(), garbage_collection_paused():
        return imported_record(graph, resolved, keep)


def _eager(
    graph: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    attempt: CompileAttempt,
    error: Exception,
) -> Callable:
    """Dynamo's graph, run as the user wrote it, after a failure to compile it;
    with `fallback="raise"`, a clear error instead."""
    cause = error.error if isinstance(error, _EagerFallback) else error
    reason = _failure_reason(cause)
    if attempt.options.fallback == "raise":
        raise PermalloyCompileError(
            f"permalloy could not compile a graph: {reason} (raised while AOTAutograd "
            "traced it with permalloy's decompositions; fallback='warn' runs it eagerly)"
        ) from error
    _warn_fallback(reason, attempt.options.target or default_target(example_inputs), attempt)
    return graph.forward


def _with_bits_resolved(run: Callable, example_inputs: Sequence[Any]) -> Callable:
    """`run`, given the inputs at the positions where the example inputs
    carry a negative or conjugate bit (`z.conj().imag`) with the bit
    applied to their values: compiled programs read a tensor's memory as it
    is. Dynamo guards on the bits, so other positions never carry one."""
    positions = [
        i for i, v in enumerate(example_inputs) if isinstance(v, torch.Tensor) and (v.is_neg() or v.is_conj())
    ]
    if not positions:
        return run

    def call(*args: Any) -> Any:
        values = list(args)
        for position in positions:
            values[position] = values[position].resolve_conj().resolve_neg()
        return run(*values)

    return call


def permalloy_backend(
    graph: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    explanation: ExplanationCollector | None = None,
) -> Callable:
    """The entry point torch.compile calls with Dynamo's graph. Any failure,
    in AOTAutograd, permalloy's decompositions or its compiler, runs Dynamo's
    graph eagerly after one warning (or raises with `fallback="raise"`);
    Dynamo's own control-flow exceptions (`DYNAMO_CONTROL_FLOW`) propagate.
    `PERMALLOY_LOGS` is read here (`permalloy.logs`); `explanation` is
    `permalloy.explain`'s collector of what each graph became."""
    try:
        logs.configure_from_environment()
    except logs.LogSettingError as error:
        raise PermalloyOptionError(str(error)) from None
    attempt = CompileAttempt(parse_options(options, mode), explanation=explanation)
    logs.log_recompile(graph)
    try:
        with garbage_collection_paused():
            warm = _warm_start(graph, example_inputs, attempt)
            if warm is not None:
                return warm
            digest = _autograd_cache_digest(example_inputs, attempt)
            backend = aten_backend(
                graph_compiler(attempt),
                graph_compiler(attempt, training_forward=True),
                serializable=digest is not None,
                backward=graph_compiler(attempt, backward=True),
            )
            with autograd_cache_settings(digest) if digest is not None else contextlib.nullcontext():
                return _with_bits_resolved(backend(graph, example_inputs), example_inputs)
    except DYNAMO_CONTROL_FLOW:
        raise
    except Exception as error:  # noqa: BLE001 - any failure falls back to eager
        if error is attempt.compiler_error:
            raise
        return _eager(graph, example_inputs, attempt, error)
    finally:
        attempt.active = False
