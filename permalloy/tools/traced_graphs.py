"""
The backend's warm start for inference graphs: Dynamo's graph loaded from the
compiled-graph cache through its traced-graph record (`permalloy.cache.traced`),
without AOTAutograd's trace or permalloy's import.

`traced_key` says whether a Dynamo graph can have a record, and under which
key. After its inference graph compiles, `record_traced` writes the record
where AOTAutograd's wrapper around that graph only calls it with gradients
off (`plain_inference`). A later process's first call finds the record and
loads the entry (`load_traced`); the backend then runs it as that wrapper
would (`as_inference_wrapper`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from permalloy.cache import CacheKey
from permalloy.cache.traced import Scalar, TracedGraphRecord, TracedGraphs, traced_graph_key
from permalloy.compiler import (
    CompiledGraph,
    CompileOptions,
    ImportedEntry,
    compile_material,
    imported_entry,
    load_compiled_graph,
)
from permalloy.lowering.import_fx import TensorOutput, ValueOutput
from permalloy.lowering.math_for_training import needs_gradients
from permalloy.targets.host import HostProgram


def traced_key(graph: torch.fx.GraphModule, example_inputs: Sequence[Any], options: CompileOptions) -> CacheKey | None:
    """The traced-graph key of Dynamo's `graph`, compiled with `options` (its
    target resolved); None for a graph that needs gradients or cannot have a
    record, or when the compiled-graph cache would not be used."""
    if needs_gradients(example_inputs):
        return None
    material = compile_material(options)
    if material is None:
        return None
    return traced_graph_key(graph, list(example_inputs), material)


def load_traced(
    key: CacheKey, options: CompileOptions, input_count: int
) -> tuple[CompiledGraph, tuple[int, ...]] | None:
    """The compiled graph of the record of `key` (for a Dynamo graph of
    `input_count` inputs), and the positions of the inputs it updates whose
    version counters each call bumps; None when there is no record, it does
    not fit the inputs, or its entry is missing or does not load."""
    record = TracedGraphs().load(key)
    if record is None or not all(0 <= p < input_count for p in record.bumped_inputs):
        return None
    compiled = load_record(record, options)
    return None if compiled is None else (compiled, record.bumped_inputs)


def load_record(record: TracedGraphRecord, options: CompileOptions) -> CompiledGraph | None:
    """The compiled graph `record` names, loaded from the compiled-graph
    cache without its ATen graph; None when its entry is missing or does
    not load."""
    outputs = [TensorOutput(o) if isinstance(o, int) else ValueOutput(o[0]) for o in record.outputs]
    return load_compiled_graph(
        record.entry, outputs, record.cpu_outputs, record.fallback_ops, record.fallback_reasons, options
    )


def record_traced(key: CacheKey, graph: torch.fx.GraphModule, compiled: CompiledGraph, input_count: int) -> None:
    """Write the record of `key` for the inference graph `graph` AOTAutograd
    made of a Dynamo graph of `input_count` inputs, compiled into
    `compiled`, where AOTAutograd's wrapper adds nothing to it and the
    compiled graph needs nothing a record does not hold."""
    updated = plain_inference(graph, input_count, len(compiled.outputs))
    if updated is None:
        return
    record = loadable_record(compiled, updated)
    if record is not None:
        TracedGraphs().store(key, record)


def loadable_record(compiled: CompiledGraph, bumped_inputs: tuple[int, ...] = ()) -> TracedGraphRecord | None:
    """What loading `compiled` again from its compiled-graph entry needs
    besides the entry (`load_record`), with `bumped_inputs`; None where it
    cannot be loaded so: it has no entry, it captured constants, its sizes
    are symbolic or an output is a size expression."""
    if compiled.cache_digest is None or compiled.constants or compiled.stats.size_symbols:
        return None
    if type(compiled.program) is not HostProgram:
        return None
    outputs = _record_outputs(compiled.outputs)
    if outputs is None:
        return None
    return TracedGraphRecord(
        compiled.cache_digest,
        outputs,
        tuple(compiled.cpu_outputs),
        tuple(compiled.stats.fallback_ops),
        tuple(compiled.stats.fallback_reasons),
        bumped_inputs,
    )


def imported_record(
    graph: torch.fx.GraphModule, options: CompileOptions, keep: Callable[[ImportedEntry], None] | None = None
) -> TracedGraphRecord | None:
    """The record `loadable_record` will give of `graph` once it compiles
    with `options`, known from its import alone (`imported_entry`, which
    `keep` receives where it is made, for the graph's compile to take);
    None where the compiled graph could not be loaded from its entry."""
    entry = imported_entry(graph, options)
    if entry is not None and keep is not None:
        keep(entry)
    outputs = None if entry is None else _record_outputs(entry.outputs)
    if entry is None or outputs is None:
        return None
    return TracedGraphRecord(
        entry.digest, outputs, entry.cpu_outputs, tuple(entry.fallback_ops), tuple(entry.fallback_reasons)
    )


def _record_outputs(outputs: Sequence[Any]) -> tuple[int | tuple[Scalar], ...] | None:
    """A record's form of what the import made of a graph's outputs; None
    where one is a size expression."""
    recorded: list[int | tuple[Scalar]] = []
    for output in outputs:
        if isinstance(output, TensorOutput):
            recorded.append(output.result)
        elif isinstance(output.value, Scalar):  # type: ignore[arg-type]
            recorded.append((output.value,))
        else:
            return None
    return tuple(recorded)


def plain_inference(graph: torch.fx.GraphModule, input_count: int, output_count: int) -> tuple[int, ...] | None:
    """Where the inference graph AOTAutograd is compiling now (`graph`, of
    `output_count` outputs, made of a Dynamo graph of `input_count` inputs)
    takes Dynamo's inputs as they are and is wrapped only to run with
    gradients off and to bump the version counters of the inputs it updates:
    those inputs' positions. None where the wrapper does more: inputs lifted
    or deduplicated, mutations, aliases or a gradient mode to replay, effect
    tokens, functionalized randomness (`ViewAndMutationMeta`, in
    AOTAutograd's tracing context)."""
    context = torch._guards.TracingContext.try_get()  # noqa: SLF001
    metadata = getattr(context, "fw_metadata", None)
    if metadata is None:
        return None
    placeholders = sum(1 for node in graph.graph.nodes if node.op == "placeholder")
    try:
        plain = (
            placeholders == input_count
            and metadata.num_outputs == output_count
            and metadata.num_mutated_inp_runtime_indices == 0
            and metadata.num_outputs_aliased == 0
            and metadata.num_intermediate_bases == 0
            and not metadata.tokens
            and not metadata.is_rng_op_functionalized
            and not metadata.dynamic_outputs
            and metadata.grad_enabled_mutation is None
        )
        return tuple(metadata.mutated_graph_handled_indices_seen_by_autograd) if plain else None
    except AttributeError:  # another torch's metadata: no record
        return None


def as_inference_wrapper(runner: Callable[..., Any], updated: tuple[int, ...]) -> Callable[..., Any]:
    """`runner` called as AOTAutograd calls an inference graph: the version
    counters of the inputs at the positions of `updated` bumped, gradients off."""
    increment_version = torch.autograd.graph.increment_version

    def run(*args: Any) -> Any:
        if updated:
            increment_version(tuple(args[i] for i in updated))
        if not torch.is_grad_enabled():
            return runner(*args)
        torch._C._set_grad_enabled(False)  # noqa: SLF001
        try:
            return runner(*args)
        finally:
            torch._C._set_grad_enabled(True)  # noqa: SLF001

    return run
