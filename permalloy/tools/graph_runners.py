"""
The runner of a compiled graph: what AOTAutograd calls in place of an ATen
graph. It calls the host program with the graph's inputs and captured
constants, gives back the graph's outputs (tensors and plain values), moves
the outputs eager makes on the CPU there, applies the target's library
settings and runtime (CUDA graphs under `reduce-overhead`), and times its
first calls into the graph's record. The backend builds one for each graph
it compiles and for each it loads (`tools/traced_graphs.py`,
`tools/autograd_cache.py`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from permalloy import logs
from permalloy.compiler import CompiledGraph, CompileOptions
from permalloy.explain.details import GraphDetails
from permalloy.lowering.import_fx import TensorOutput
from permalloy.stats import HOST_TIMED_CALLS, STATS_LOG, GraphStats
from permalloy.targets import registry


def compiled_runner(
    compiled: CompiledGraph,
    resolved: CompileOptions,
    aot_autograd_seconds: float | None,
    details: GraphDetails | None,
    logged_when_called: bool = False,
) -> Callable:
    """The runner of a compiled graph, its record logged (on its first call
    with `logged_when_called`, for a graph loaded with others that may yet
    fail to load): the host program given the graph's inputs, in the
    target's runtime and library settings."""
    runner = graph_runner(compiled.program, compiled.outputs, compiled.constants)
    if compiled.cpu_outputs:
        runner = moving_to_cpu(runner, compiled.cpu_outputs)
    descriptor = registry.target_descriptor(resolved.target)
    runner = descriptor.with_library_settings(runner, resolved.target_options, compiled.library_ops)
    runner = descriptor.host_runtime(runner, resolved.mode, compiled.updated_inputs)
    runner = timing_host_calls(runner, compiled.stats)
    compiled.stats.compile_times.aot_autograd = aot_autograd_seconds
    if logged_when_called:
        return logging_first_call(runner, compiled, details)
    STATS_LOG.add(compiled.stats)
    logs.log_compiled_graph(compiled.stats, details)
    return runner


def logging_first_call(runner: Callable, compiled: CompiledGraph, details: GraphDetails | None) -> Callable:
    """`runner`, logging the compiled graph's record on its first call."""
    logged = False

    def run(*args: Any) -> Any:
        nonlocal logged
        if not logged:
            logged = True
            STATS_LOG.add(compiled.stats)
            logs.log_compiled_graph(compiled.stats, details)
        return runner(*args)

    return run


def graph_runner(program: Callable, imported_outputs: Sequence, constants: Sequence) -> Callable:
    """Call the host program with the graph's inputs (and captured constants) and
    give AOTAutograd the graph's outputs, tensors and plain values alike."""
    constants = tuple(constants)
    layout = list(imported_outputs)
    if all(isinstance(o, TensorOutput) and o.result == i for i, o in enumerate(layout)):
        return lambda *args: program(*args, *constants)

    def run(*args: Any) -> tuple:
        results = program(*args, *constants)
        return tuple(results[o.result] if isinstance(o, TensorOutput) else o.value for o in layout)

    return run


def moving_to_cpu(runner: Callable, positions: Sequence[int]) -> Callable:
    """`runner` giving its outputs at `positions` on the CPU, as eager makes them."""

    def run(*args: Any) -> tuple:
        results = list(runner(*args))
        for position in positions:
            results[position] = copied_to_cpu(results[position])
        return tuple(results)

    return run


def timing_host_calls(runner: Callable, record: GraphStats) -> Callable:
    """`runner`, timing its calls 2 to `HOST_TIMED_CALLS + 1` into the record's
    `host_us_per_call` (the median of those made so far); later calls only count."""
    times: list[float] = []
    calls = 0

    def run(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1 or calls > HOST_TIMED_CALLS + 1:
            return runner(*args)
        start = time.perf_counter()
        results = runner(*args)
        times.append(time.perf_counter() - start)
        record.host_us_per_call = statistics.median(times) * 1e6
        return results

    return run


def copied_to_cpu(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` on the CPU with its sizes, strides and storage offset (an
    expanded tensor stays expanded): a view of a copy of its storage."""
    storage = tensor.untyped_storage().cpu()
    return torch.empty(0, dtype=tensor.dtype).set_(storage, tensor.storage_offset(), tensor.size(), tensor.stride())
