"""
Capture the ATen graphs that `torch.compile` hands a backend, after AOTAutograd
and permalloy's decomposition table: the graphs the FX importer reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._inductor.output_code import OutputCode

from permalloy.lowering.decompositions import decomposition_table
from permalloy.lowering.math_for_training import (
    FUSED_FOR_INFERENCE,
    MATH_FOR_TRAINING,
    calls_rewritten,
    needs_gradients,
)


def aten_backend(
    compiler: Callable,
    training_forward: Callable | None = None,
    serializable: bool = False,
    backward: Callable | None = None,
) -> Callable:
    """
    A torch.compile backend that hands `compiler` each ATen graph AOTAutograd
    makes of Dynamo's graph, after permalloy's decomposition table: the
    inference graph, or for training the forward and the backward graph, split
    by torch's min-cut rematerialization partitioner (which saves few
    activations and recomputes cheap pointwise work in the backward graph).
    Updates of inputs that need no gradient (batch norm's running statistics,
    buffers a model writes) stay in the graph, as `copy_` into the input at
    its end, for the program to write in place.
    `training_forward`, when given, compiles a training step's forward graph
    instead of `compiler` (`saved_for_backward` says which of its outputs the
    backward graph reads).
    In a graph that needs gradients, attention and grid sampling are written
    as math first (`math_for_training.py`), so that their backward is made of
    ops ptensor has; in an inference graph, an attention mask that repeats
    along keys is made dense first, so that torch's fused kernels take it
    (`FUSED_FOR_INFERENCE`). Dynamo's graph is left calling what it called,
    so that it can still run eagerly as the user wrote it.
    `backward`, when given, compiles the backward graph instead of `compiler`.
    `serializable`: the compilers give `OutputCode`s, which AOTAutograd's
    cache may keep (`tools/autograd_cache.py`).
    """

    def serialized(compiler: Callable) -> Callable:
        return SerializableAOTDispatchCompiler(OutputCode, compiler) if serializable else compiler

    def backend(graph: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        rewrites = MATH_FOR_TRAINING if needs_gradients(example_inputs) else FUSED_FOR_INFERENCE
        with calls_rewritten(graph, rewrites):
            return aot_autograd(
                fw_compiler=serialized(training_forward or compiler),
                bw_compiler=serialized(backward or compiler),
                inference_compiler=serialized(compiler),
                partition_fn=min_cut_rematerialization_partition,
                decompositions=decomposition_table(),
                keep_inference_input_mutations=True,
            )(graph, example_inputs)

    return backend


def saved_for_backward(graph: torch.fx.GraphModule) -> range:
    """The positions, among the outputs of `graph`, the forward graph
    AOTAutograd is compiling now, of the tensors it saves for the backward
    graph (which it hands the backward graph in the strides the forward's
    compiler reports through `TracingContext.output_strides`); empty outside
    such a compile."""
    context = torch._guards.TracingContext.try_get()  # noqa: SLF001
    metadata = getattr(context, "fw_metadata", None)
    try:
        saved = metadata.tensors_saved_for_backwards_slice  # type: ignore[union-attr]
    except (AttributeError, AssertionError, TypeError):
        return range(0)
    (output,) = [n for n in graph.graph.nodes if n.op == "output"]
    results = output.args[0]
    count = len(results) if isinstance(results, list | tuple) else 1
    return range(count)[saved]


@dataclass
class CapturedGraph:
    """A forward ATen graph, with the arguments it was first run on."""

    graph_module: torch.fx.GraphModule
    inputs: list[Any] = field(default_factory=list)
    """The graph's actual arguments (tensors and ints) on the traced call."""


def capturing_backend(into: list[CapturedGraph]) -> Callable:
    """
    A torch.compile backend that appends each ATen graph (forward, then
    backward when training) to `into`, runs it unchanged, and records its
    arguments on its first run.
    """

    def capture(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        captured = CapturedGraph(gm)
        into.append(captured)

        def run(*args: Any) -> Any:
            if not captured.inputs:
                captured.inputs = list(args)
            return gm(*args)

        return run

    return aten_backend(capture)


def capture_with_inputs(
    fn: Callable, *example_inputs: Any, dynamic: bool | None = False
) -> list[CapturedGraph]:
    """
    The forward ATen graphs of `fn(*example_inputs)` with their actual inputs,
    one per Dynamo graph (more than one when Dynamo breaks the graph), traced
    once under `torch.no_grad()`.

    `dynamic` is passed to `torch.compile`: True traces sizes as symbols, False
    specializes them, None lets `torch._dynamo.mark_dynamic` decide. Dynamo's
    caches are reset before and after, so repeated captures in one process each
    trace afresh.
    """
    graphs: list[CapturedGraph] = []
    torch._dynamo.reset()
    try:
        compiled = torch.compile(fn, backend=capturing_backend(graphs), dynamic=dynamic)
        with torch.no_grad():
            compiled(*example_inputs)
    finally:
        torch._dynamo.reset()
    return graphs


def capture_training_graphs(
    model: Callable, *example_inputs: Any, dynamic: bool | None = False
) -> list[CapturedGraph]:
    """
    The forward and backward ATen graphs of a training step: `model` is run on
    `example_inputs` (floating ones made to require gradients) with gradients
    on, and the sum of its first output is differentiated.
    """
    graphs: list[CapturedGraph] = []
    inputs = [
        x.detach().clone().requires_grad_(True)
        if isinstance(x, torch.Tensor) and x.is_floating_point()
        else x
        for x in example_inputs
    ]
    torch._dynamo.reset()
    try:
        compiled = torch.compile(model, backend=capturing_backend(graphs), dynamic=dynamic)
        output = compiled(*inputs)
        output = output[0] if isinstance(output, tuple | list) else output
        output.sum().backward()
    finally:
        torch._dynamo.reset()
    return graphs


def capture_aten_graphs(
    fn: Callable, *example_inputs: Any, dynamic: bool | None = False
) -> list[torch.fx.GraphModule]:
    """The forward ATen graphs of `fn(*example_inputs)` (see `capture_with_inputs`)."""
    return [c.graph_module for c in capture_with_inputs(fn, *example_inputs, dynamic=dynamic)]
