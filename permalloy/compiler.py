"""
Compiling one ATen graph: import, the named pipeline, code generation.

This is what the torch.compile backend runs for each graph AOTAutograd hands
it, step by step and in the open: every stage can be dumped as text that
`permalloy-opt` reads back. A graph compiled before, in this process or an
earlier one, is loaded from the compiled-graph cache (`permalloy.cache`)
after its import: the pipeline does not run and kernels are loaded rather
than compiled. Each stage's time goes into the graph's `CompileTimes`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sympy
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from permalloy.cache import (
    CacheEntry,
    CacheKey,
    GraphCache,
    LoadingTarget,
    NativeImageFiles,
    RecordingTarget,
    cache_enabled_by_environment,
    cache_parts,
    graph_devices,
    graph_key,
    join_modules,
    load_module,
    software_versions,
)
from permalloy.dialects import make_context
from permalloy.dialects.buffer import BufferType, ExternOp, KernelOp, LaunchOp, buffer_type
from permalloy.dialects.sym import SymExprAttr, format_expr
from permalloy.explain.details import GraphDetails
from permalloy.passes import build_pipeline
from permalloy.passes.fuse_loops import FuseLoopsPass
from permalloy.passes.fusion_decisions import FusionDecisions
from permalloy.pipeline import default_pipeline, pipeline_text
from permalloy.stats import CompileTimes, GraphStats
from permalloy.targets import KernelTarget
from permalloy.targets.host import UPDATED_ATTR, HostProgram, WrappedProgram, argument_attribute, build_host_program, python_expr
from permalloy.targets.registry import kernel_target, target_descriptor

if TYPE_CHECKING:
    from permalloy.lowering.complex_as_real import ComplexProgram
    from permalloy.lowering.import_fx.graph import ImportResult
    from permalloy.targets.native.image import NativeHostImage


@dataclass(frozen=True)
class CompileOptions:
    """How to compile a graph; the backend builds it from the user's options."""

    target: str | None = "llvm"
    """A kernel target name; None (the backend's default) means by the inputs' device."""
    dump_dir: str | None = None
    fallback: str = "warn"
    mode: str = "default"
    fusion: bool = True
    target_options: dict[str, Any] = field(default_factory=dict)
    """The target's own options (`TargetDescriptor.options`), checked."""
    cache: bool = True
    """Whether to use the compiled-graph cache (which `PERMALLOY_CACHE=0` turns
    off as well)."""
    host: str = "native"
    """"native": calls run the host program compiled to machine code where the
    target allows (`targets.native`); "python": the generated Python program."""


class StageDumper:
    """Writes each stage of one graph's compilation into a folder, in order."""

    def __init__(self, root: str):
        base = Path(root)
        base.mkdir(parents=True, exist_ok=True)
        existing = [p for p in base.iterdir() if p.name.startswith("graph_")]
        self.folder = base / f"graph_{len(existing):03d}"
        self.folder.mkdir()
        self.stage = 0

    def write(self, name: str, text: str) -> None:
        path = self.folder / f"{self.stage:02d}_{name}"
        path.write_text(text if text.endswith("\n") else text + "\n")
        self.stage += 1


def _dumper_root(options: CompileOptions) -> str | None:
    """The folder the stages of each graph are dumped into, if any."""
    return options.dump_dir or os.environ.get("PERMALLOY_DUMP_DIR") or None


def _dumper(options: CompileOptions) -> StageDumper | None:
    root = _dumper_root(options)
    return StageDumper(root) if root else None


def lower_module(
    module: ModuleOp,
    dumper: StageDumper | None = None,
    fusion: bool = True,
    target: str | None = None,
    times: CompileTimes | None = None,
    fusion_decisions: FusionDecisions | None = None,
    matmul_templates: bool = False,
    optional_passes: Collection[str] = (),
    optional_buffer_passes: Collection[str] = (),
) -> ModuleOp:
    """Run the default pipeline for `target` on an imported module, dumping
    after each pass, adding each pass's time to `times` and recording
    `fuse-loops`' decisions into `fusion_decisions` when given; with
    `matmul_templates`, half-precision products become contractions where the
    target tiles them; `optional_passes` and `optional_buffer_passes` are the
    target's tensor-level and buffer-level passes the compile's options add."""
    ctx = make_context()
    times = times if times is not None else CompileTimes()
    mark = time.perf_counter()

    def after_pass(previous: ModulePass | None, current: ModuleOp, _next) -> None:
        nonlocal mark
        if previous is not None:
            times.add_pass(previous.name, time.perf_counter() - mark)
            if dumper is not None:
                dumper.write(f"after_{previous.name}.mlir", str(current))
        mark = time.perf_counter()

    deterministic = torch.are_deterministic_algorithms_enabled()
    names = default_pipeline(fusion, target, deterministic, matmul_templates, optional_passes, optional_buffer_passes)
    pipeline = build_pipeline(pipeline_text(names), callback=after_pass)
    if fusion_decisions is not None:
        pipeline = PassPipeline(
            tuple(
                p.recording_into(fusion_decisions) if isinstance(p, FuseLoopsPass) else p
                for p in pipeline.passes
            ),
            pipeline.callback,
        )
    pipeline.apply(ctx, module)
    started = time.perf_counter()
    module.verify()
    times.add_pass("verify", time.perf_counter() - started)
    return module


def dump_kernels(module: ModuleOp, target: KernelTarget, dumper: StageDumper) -> None:
    """Write the source the target generates for each launched kernel."""
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, KernelOp)}
    extension = target_descriptor(target.name).source_extension or "txt"
    for launch in module.walk():
        if isinstance(launch, LaunchOp):
            name = launch.kernel.root_reference.data
            layouts = [buffer_type(v) for v in (*launch.inputs, *launch.outputs)]
            dumper.write(f"kernel_{name}.{extension}", target.emit_source(kernels[name], layouts))


@dataclass
class CompiledGraph:
    """A compiled ATen graph and what running it needs besides its inputs."""

    program: HostProgram | SizeOutputProgram | ComplexProgram
    stats: GraphStats
    outputs: list[Any]
    """For each graph output: the program result it is, or its plain value."""
    constants: list[torch.Tensor]
    """Values passed after the graph's inputs (the graph's large constants)."""
    cpu_outputs: tuple[int, ...] = ()
    """The graph outputs eager makes on the CPU in a graph computing on a GPU
    (tensors made from nothing, `torch.ones(3)`), which the program makes on
    the GPU and the caller receives on the CPU."""
    output_strides: list[tuple[int, ...] | None] = field(default_factory=list)
    """For each graph output: the strides the program returns it in where it
    chose them (an output of free layout), else None (eager's)."""
    updated_inputs: tuple[int, ...] = ()
    """The positions of the graph inputs the program writes (`ptensor.updated`)."""
    library_ops: frozenset[str] = frozenset()
    """The names of the ptensor ops its extern calls run (`ptensor.convolution`;
    an op run through torch's fallback is `ptensor.fallback`), whose
    libraries' settings the backend's calls of it take
    (`TargetDescriptor.library_settings`)."""
    cache_digest: str | None = None
    """The digest of its compiled-graph cache entry (None with the cache off)."""


def compile_graph(
    graph: torch.fx.GraphModule,
    options: CompileOptions,
    details: GraphDetails | None = None,
    free_layout_outputs: frozenset[int] = frozenset(),
    prepared: ImportedEntry | None = None,
) -> CompiledGraph:
    """Compile an ATen graph into a host program, or load it from the
    compiled-graph cache; raises on what it cannot do. `details`, when given,
    says what else to record (fusion decisions, kernels and their ATen ops,
    sources) and receives it. The outputs at the positions of
    `free_layout_outputs` (a training step's saved tensors, which its
    backward graph takes in any layout) are returned in the layouts the
    program plans for them; `CompiledGraph.output_strides` says which.
    `prepared`, what `imported_entry` said of this graph, gives the graph's
    import and cache key where they are those this compile would make
    (same options, no labels, no free outputs): a training step's backward
    graph is imported and keyed for AOTAutograd's cache before it compiles."""
    from permalloy.lowering.complex_as_real import complex_as_real
    from permalloy.lowering.import_fx import import_graph, verify_imported

    start = time.perf_counter()
    times = CompileTimes()
    dumper = _dumper(options)
    target = _make_target(options, times)
    labelled = details is not None and details.label_values
    cache = None if labelled else _graph_cache(options)
    if cache is None:  # the graph compiles: compiling starts at once (the Triton target's workers)
        _prepare_to_compile(target)
    reused = prepared if _reusable(prepared, options, cache, labelled, free_layout_outputs) else None
    with times.measure("import_fx"):
        real = None if reused is not None else complex_as_real(graph)
        if real is not None:
            graph = real.graph
        free = free_layout_outputs if real is None else frozenset()
        # with the cache, the module is verified only when it is lowered (a miss)
        imported = (
            reused.imported
            if reused is not None
            else import_graph(graph, label_values=labelled, free_layout_outputs=free, verify=cache is None)
        )
    if dumper is not None:
        if real is not None:
            dumper.write("complex_as_real.py", graph.code)
        dumper.write("imported.mlir", str(imported.module))
    hints = symbol_hints(graph, imported.symbols)
    loaded = None
    if cache is not None:
        with times.measure("cache_lookup"):
            key = reused.key if reused is not None else _cache_key(imported.module, graph, options, target)
            # A graph whose stages are dumped, or whose compilation is
            # watched, compiles, so that every stage is there.
            watched = details is not None and details.needs_pipeline
            entry = cache.load(key) if dumper is None and not watched else None
        if entry is not None:
            loaded = _load_entry(entry, target, times, cache, key, hints, options.host == "native")
            if loaded is None:
                target = _make_target(options, times)
    if loaded is not None:
        module, program = loaded
    else:
        if cache is not None:  # (without a cache the target was prepared at once)
            _prepare_to_compile(target)
            with times.measure("import_fx"):
                verify_imported(imported.module)
        decisions = details.fusion if details is not None else None
        templates = bool(options.target_options.get("matmul_templates", False))
        descriptor = target_descriptor(options.target)
        optional = descriptor.passes_turned_on(options.target_options)
        optional_buffer = descriptor.buffer_passes_turned_on(options.target_options)
        lower = descriptor.with_library_settings(lower_module, options.target_options, None)
        module = lower(
            imported.module, dumper, options.fusion, options.target, times, decisions, templates, optional, optional_buffer
        )
        if dumper is not None:
            dump_kernels(module, target, dumper)
        recording = RecordingTarget(target)
        kept = None if cache is None else cache.native_images(key)
        program = _host_program(module, recording, times, hints, options.host == "native", kept_images=kept)
        if cache is not None:
            with times.measure("cache_store"):
                cache.store(key, _cache_entry(key, module, recording, program))
    if dumper is not None:
        dumper.write("host.py", program.source)
        if program.native_source is not None:
            dumper.write("host.ll", program.native_source)
    if details is not None:
        details.record(graph, imported.value_labels, module, target, program.source)
    outputs, program = size_outputs(list(imported.outputs), module, program)
    if real is not None:
        program = real.boundary.wrap(program, [outputs[i].result for i in real.boundary.outputs])
    state = "off" if cache is None else "hit" if loaded is not None else "miss"
    stats = _graph_stats(
        module, program, options, hints, imported.fallback_ops, imported.fallback_reasons, start, times, state
    )
    _record_host(program, stats)
    strides = _free_output_strides(module, imported.outputs, free)
    return CompiledGraph(
        program,
        stats,
        outputs,
        list(imported.constants),
        _cpu_outputs(graph),
        strides,
        _updated_inputs(module),
        _library_ops(module),
        None if cache is None else key.digest,
    )


@dataclass(frozen=True)
class ImportedEntry:
    """What `compile_graph` will say of a graph's compiled-graph entry,
    known from its import alone (`imported_entry`)."""

    digest: str
    outputs: list[Any]
    """What the import made of the graph's outputs (`TensorOutput`, `ValueOutput`)."""
    cpu_outputs: tuple[int, ...]
    fallback_ops: list[str]
    fallback_reasons: list[str]
    imported: ImportResult | None = None
    """The import itself, unverified, which `compile_graph` of the same
    graph with the same options takes (`prepared`) rather than import again."""
    key: CacheKey | None = None
    """The entry's key."""
    options: CompileOptions | None = None
    """The options it was keyed with."""


def _reusable(
    prepared: ImportedEntry | None,
    options: CompileOptions,
    cache: GraphCache | None,
    labelled: bool,
    free_layout_outputs: frozenset[int],
) -> bool:
    """Whether `compile_graph` can take `prepared`'s import and key: made
    with these options, and this compile would import the graph the same way
    (no labels, no outputs of free layout) and look it up in a cache."""
    if prepared is None or prepared.imported is None or prepared.key is None:
        return False
    return cache is not None and not labelled and not free_layout_outputs and prepared.options == options


def imported_entry(graph: torch.fx.GraphModule, options: CompileOptions) -> ImportedEntry | None:
    """The compiled-graph entry `compile_graph(graph, options)` will look up
    or store, from the graph's import alone, for a graph that
    `load_compiled_graph` could load (real, of static sizes, capturing no
    constants); None for any other, or when the cache is off or stages are
    dumped."""
    from permalloy.lowering.complex_as_real import has_complex
    from permalloy.lowering.import_fx import import_graph

    cache = _graph_cache(options)
    if cache is None or _dumper_root(options) is not None or has_complex(graph):
        return None
    imported = import_graph(graph, verify=False)
    if imported.constants or imported.symbols:
        return None
    target = _make_target(options, CompileTimes())
    key = _cache_key(imported.module, graph, options, target)
    return ImportedEntry(
        key.digest,
        list(imported.outputs),
        _cpu_outputs(graph),
        list(imported.fallback_ops),
        list(imported.fallback_reasons),
        imported,
        key,
        options,
    )


def load_compiled_graph(
    digest: str,
    outputs: Sequence[Any],
    cpu_outputs: tuple[int, ...],
    fallback_ops: Sequence[str],
    fallback_reasons: Sequence[str],
    options: CompileOptions,
) -> CompiledGraph | None:
    """The graph of static sizes and no large constants whose compiled-graph
    cache entry is `digest`, loaded without its ATen graph: `outputs` are
    what its import made of its outputs (`TensorOutput`, `ValueOutput`),
    `cpu_outputs`, `fallback_ops` and `fallback_reasons` the rest of what the
    import said. None, without a warning, when the entry is missing or
    cannot be loaded: the ordinary lookup that follows reports a damaged one."""
    start = time.perf_counter()
    times = CompileTimes()
    cache = _graph_cache(options)
    if cache is None or _dumper_root(options) is not None:
        return None
    target = _make_target(options, times)
    key = CacheKey(digest, {})
    with times.measure("cache_lookup"):
        entry = cache.load(key, report=False)
    if entry is None:
        return None
    loaded = _load_entry(entry, target, times, cache, key, {}, options.host == "native", report=False)
    if loaded is None:
        return None
    module, program = loaded
    results, program = size_outputs(list(outputs), module, program)
    stats = _graph_stats(module, program, options, {}, fallback_ops, fallback_reasons, start, times, "hit")
    _record_host(program, stats)
    return CompiledGraph(
        program,
        stats,
        results,
        [],
        cpu_outputs,
        [None] * len(results),
        _updated_inputs(module),
        _library_ops(module),
        digest,
    )


def _graph_stats(
    module: ModuleOp,
    program: Any,
    options: CompileOptions,
    hints: dict[str, int],
    fallback_ops: Sequence[str],
    fallback_reasons: Sequence[str],
    started: float,
    times: CompileTimes,
    cache: str,
) -> GraphStats:
    """The record of a compiled graph whose compilation started at `started`
    (`time.perf_counter`) and took `times`; `cache` says how the
    compiled-graph cache served it."""
    peak = planned_peak_expr(module)
    return GraphStats(
        peak_intermediate_bytes=_planned_peak(module),
        peak_intermediate_expr=None if peak is None else format_expr(peak),
        peak_intermediate_bytes_first_call=_evaluate(peak, hints),
        size_symbols=hints,
        target=options.target,
        kernels=program.kernel_count,
        extern_calls=program.extern_count,
        fallback_ops=list(fallback_ops),
        fallback_reasons=list(fallback_reasons),
        compile_seconds=time.perf_counter() - started,
        compile_times=times,
        cache=cache,
    )


def _library_ops(module: ModuleOp) -> frozenset[str]:
    """The names of the ptensor ops the host function's extern calls run."""
    host = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return frozenset(op.library_op.name for op in host.walk() if isinstance(op, ExternOp))


def _updated_inputs(module: ModuleOp) -> tuple[int, ...]:
    """The positions of the host function's arguments marked `ptensor.updated`."""
    host = next(op for op in module.ops if isinstance(op, func.FuncOp))
    arguments = range(len(host.function_type.inputs.data))
    return tuple(p for p in arguments if argument_attribute(host, p, UPDATED_ATTR) is not None)


def _free_output_strides(module: ModuleOp, outputs: Sequence[Any], free: frozenset[int]) -> list[tuple[int, ...] | None]:
    """Per graph output (`ImportResult.outputs`), the strides of the buffer
    the host function returns for it where its position is in `free` (None
    elsewhere)."""
    from permalloy.lowering.import_fx import TensorOutput

    if not free:
        return [None] * len(outputs)
    host = next(op for op in module.ops if isinstance(op, func.FuncOp))
    returned = host.function_type.outputs.data
    strides: list[tuple[int, ...] | None] = []
    for position, output in enumerate(outputs):
        layout = returned[output.result] if isinstance(output, TensorOutput) and position in free else None
        fixed = isinstance(layout, BufferType) and all(s.is_Integer for s in layout.strides.data)
        strides.append(tuple(int(s) for s in layout.strides.data) if fixed else None)  # type: ignore[union-attr]
    return strides


def _record_host(program: Any, stats: GraphStats) -> None:
    """Keep `stats.host` and `stats.host_callbacks` true of the host program
    that runs the calls, now and when a native one takes over (on a GPU,
    after the first call)."""
    while isinstance(program, WrappedProgram):
        program = program.program

    def record(hosted: HostProgram) -> None:
        stats.host = "python" if hosted.native_source is None else "native"
        stats.host_callbacks = hosted.callback_count

    if isinstance(program, HostProgram):
        record(program)
        program.on_native = record


def _cpu_outputs(graph: torch.fx.GraphModule) -> tuple[int, ...]:
    """The positions of the graph's CPU tensor outputs when an input is on a GPU."""

    def device_type(node: Any) -> str | None:
        value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        return value.device.type if isinstance(value, torch.Tensor) else None

    nodes = list(graph.graph.nodes)
    if not any(device_type(n) == "cuda" for n in nodes if n.op == "placeholder"):
        return ()
    (results,) = [n.args[0] for n in nodes if n.op == "output"]
    return tuple(i for i, node in enumerate(results) if device_type(node) == "cpu")


def _make_target(options: CompileOptions, times: CompileTimes) -> KernelTarget:
    """The options' kernel target, adding its kernel stages to `times` (a
    target that keeps a `times` record of its own)."""
    target = kernel_target(options.target, options.mode, **options.target_options)
    if hasattr(target, "times"):
        target.times = times
    return target


def _prepare_to_compile(target: KernelTarget) -> None:
    """Have `target` start what compiling kernels needs, where it has such a
    hook (`prepare_to_compile`)."""
    prepare = getattr(target, "prepare_to_compile", None)
    if prepare is not None:
        prepare()


def _graph_cache(options: CompileOptions) -> GraphCache | None:
    """The compiled-graph cache, unless the options or `PERMALLOY_CACHE` turn it off."""
    if not options.cache or not cache_enabled_by_environment():
        return None
    return GraphCache()


def _cache_key(
    imported: ModuleOp, graph: torch.fx.GraphModule, options: CompileOptions, target: KernelTarget
) -> CacheKey:
    """The cache key of an imported graph compiled with `options` for `target`."""
    return graph_key(str(imported), _option_material(options), target.name, _target_identity(target), graph_devices(graph))


def _option_material(options: CompileOptions) -> dict[str, Any]:
    """What of `options` (the target's own with their declared defaults) and
    of torch's settings a compiled graph depends on."""
    target_options = options.target_options
    if options.target is not None:
        target_options = target_descriptor(options.target).with_defaults(target_options)
    return {
        "mode": options.mode,
        "fusion": options.fusion,
        "target_options": target_options,
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        # a template of a float32 product multiplies in TF32 where torch allows it then
        "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        # the pipeline's timings of convolutions follow cuDNN's setting where the target leaves it to torch
        "cudnn_benchmark": [torch.backends.cudnn.benchmark, torch.backends.cudnn.benchmark_limit],
    }


def _target_identity(target: KernelTarget) -> str:
    """What `target` says of the machine it compiles for (`cache_identity`)."""
    identity = getattr(target, "cache_identity", None)
    return identity() if identity is not None else ""


def compile_material(options: CompileOptions) -> dict[str, Any] | None:
    """What a graph's compilation with `options` depends on besides the graph
    and its devices (the options, torch's settings, the target and its
    identity), for keys over graphs before their import; None when such a
    graph would not be loaded from the cache (the cache off, stages dumped)."""
    if _graph_cache(options) is None or _dumper_root(options) is not None:
        return None
    target = _make_target(options, CompileTimes())
    return {"options": _option_material(options), "target": target.name, "target_identity": _target_identity(target)}


def _cache_entry(key: CacheKey, module: ModuleOp, recording: RecordingTarget, program: HostProgram) -> CacheEntry:
    """The cache entry of a compiled module whose kernels `recording`
    compiled, with its host program's native image where it has one."""
    (host, host_image), (kernels, kernel_image) = cache_parts(module)
    records = list(recording.records.values())
    native = program.native_image.to_json() if program.native_image is not None else None
    return CacheEntry(
        key.digest, software_versions(), host, kernels, host_image, kernel_image, records, recording.complete, native
    )


def _load_entry(
    entry: CacheEntry,
    target: KernelTarget,
    times: CompileTimes,
    cache: GraphCache,
    key: CacheKey,
    hints: dict[str, int],
    native: bool,
    report: bool = True,
) -> tuple[ModuleOp, HostProgram] | None:
    """The buffer-level module of the entry of `key` in `cache` and its host
    program, with the entry's kernels loaded (the kernels' IR is loaded only
    for a target that compiles some of them again); None (after a warning,
    where `report`) when it cannot be loaded."""
    try:
        with times.measure("cache_lookup"):
            module = load_module(entry.host, entry.host_image)
            if not (entry.complete and hasattr(target, "load_kernel")):
                module = join_modules(module, load_module(entry.kernel_module, entry.kernel_image))
            image = None
            if native and entry.native_host is not None:
                from permalloy.targets.native.image import NativeHostImage  # the native host's modules, on use

                image = NativeHostImage.from_json(entry.native_host)
        loading = LoadingTarget(target, entry.kernels)
        return module, _host_program(module, loading, times, hints, native, image, cache.native_images(key))
    except Exception as error:  # noqa: BLE001 - an entry that does not load is compiled again
        if report:
            GraphCache.report_unusable(cache.path(key), f"not loadable ({type(error).__name__}: {error})")
        return None


def _host_program(
    module: ModuleOp,
    target: KernelTarget,
    times: CompileTimes,
    hints: dict[str, int],
    native: bool,
    native_image: NativeHostImage | None = None,
    kept_images: NativeImageFiles | None = None,
) -> HostProgram:
    """The module's host program, `native` where asked and possible (loaded
    from `native_image`, a cache entry's, where given, on a GPU from
    `kept_images` where they hold one for its first call's launches); its
    time less the kernels' goes to `host_program`."""
    kernels = times.kernel_seconds()
    started = time.perf_counter()
    program = build_host_program(
        module, target, symbol_hints=hints, native=native, native_image=native_image, kept_images=kept_images
    )
    elapsed = time.perf_counter() - started
    times.add("host_program", elapsed - (times.kernel_seconds() - kernels))
    return program


@dataclass
class SizeOutputProgram(WrappedProgram):
    """
    A host program followed by the values of size expressions, computed from
    the sizes of each call's arguments: the graph outputs that are sizes (a
    training forward graph returns the sizes its backward graph needs), which
    differ from call to call when sizes are symbolic.
    """

    program: HostProgram
    sizes: Callable[..., tuple[int, ...]]
    """The arguments -> the values of the size outputs."""

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        return (*self.program(*args), *self.sizes(*args))


def size_outputs(
    outputs: list[Any], module: ModuleOp, program: HostProgram
) -> tuple[list[Any], HostProgram | SizeOutputProgram]:
    """
    The graph outputs and the program to run: outputs that are size expressions
    over symbols become results appended to the program's, computed per call
    from the arguments that carry the symbols (an `index` argument naming one,
    or a tensor dimension of that size).
    """
    from permalloy.lowering.import_fx import TensorOutput, ValueOutput

    symbolic = [
        i
        for i, o in enumerate(outputs)
        if isinstance(o, ValueOutput)
        and isinstance(o.value, sympy.Basic)
        and o.value.free_symbols
    ]
    if not symbolic:
        return outputs, program
    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    readers = _symbol_readers(function)
    results = len(function.function_type.outputs)
    exprs = []
    for count, index in enumerate(symbolic):
        exprs.append(python_expr(outputs[index].value))
        outputs[index] = TensorOutput(results + count)
    parameters = ", ".join(f"a{i}" for i in range(len(function.args)))
    lines = [f"def sizes({parameters}):"]
    lines += [f"    {name} = {reader}" for name, reader in readers.items()]
    lines.append(f"    return ({''.join(f'{e}, ' for e in exprs)})")
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines) + "\n", "<permalloy size outputs>", "exec"), namespace)
    return outputs, SizeOutputProgram(program, namespace["sizes"])


def _symbol_readers(function: func.FuncOp) -> dict[str, str]:
    """For each size symbol of the function, a Python expression reading its
    value from the arguments `a0, a1, ...`."""
    from permalloy.targets.host import index_argument_symbol

    readers: dict[str, str] = {}
    for position, arg in enumerate(function.args):
        symbol = index_argument_symbol(function, position) if isinstance(arg.type, IndexType) else None
        if symbol is not None and symbol not in readers:
            readers[symbol] = f"int(a{position})"
    for position, arg in enumerate(function.args):
        if isinstance(arg.type, BufferType):
            for dim, size in enumerate(arg.type.sizes):
                if size.is_Symbol and size.name not in readers:
                    readers[size.name] = f"a{position}.shape[{dim}]"
    return readers


def planned_peak_expr(module: ModuleOp) -> sympy.Expr | None:
    """The planned peak of the module's function (`plan-memory`'s attribute):
    a constant, an expression of the size symbols, or None without a plan."""
    from xdsl.dialects.builtin import IntegerAttr

    from permalloy.passes.plan_memory import PEAK_ATTR

    for function in module.ops:
        if isinstance(function, func.FuncOp):
            peak = function.attributes.get(PEAK_ATTR)
            if isinstance(peak, IntegerAttr):
                return sympy.Integer(peak.value.data)
            if isinstance(peak, SymExprAttr):
                return peak.expr
            return None
    return None


def _planned_peak(module: ModuleOp) -> int | None:
    """The planned peak in bytes when it is a constant, else None."""
    peak = planned_peak_expr(module)
    return int(peak) if peak is not None and peak.is_Integer else None


def _evaluate(expr: sympy.Expr | None, values: dict[str, int]) -> int | None:
    """An expression's value at the given symbol values; None when unknown."""
    if expr is None:
        return None
    value = expr.subs({s: values[s.name] for s in expr.free_symbols if s.name in values})
    return int(value) if value.is_Integer else None


def symbol_hints(graph: torch.fx.GraphModule, symbols: dict[str, str]) -> dict[str, int]:
    """The values of permalloy's size symbols at the sizes the graph was traced
    for (the first call's), from Dynamo's shape environment; `symbols` maps
    Dynamo's names to permalloy's."""
    if not symbols:
        return {}
    for node in graph.graph.nodes:
        example = node.meta.get("val")
        sizes = example.shape if isinstance(example, torch.Tensor) else [example]
        for size in sizes:
            if isinstance(size, torch.SymInt):
                env = size.node.shape_env
                known = getattr(env, "backed_var_to_val", None)
                known = env.var_to_val if known is None else known
                return {
                    ours: int(value)
                    for theirs, ours in symbols.items()
                    for symbol, value in known.items()
                    if symbol.name == theirs
                }
    return {}
