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

from permalloy.lowering.decompositions import decomposition_table


@dataclass
class CapturedGraph:
    """A forward ATen graph, with the arguments it was first run on."""

    graph_module: torch.fx.GraphModule
    inputs: list[Any] = field(default_factory=list)
    """The graph's actual arguments (tensors and ints) on the traced call."""


def capturing_backend(into: list[CapturedGraph]) -> Callable:
    """
    A torch.compile backend that appends each forward ATen graph to `into`,
    runs it unchanged, and records its arguments on its first run.
    """

    def forward_compiler(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        captured = CapturedGraph(gm)
        into.append(captured)

        def run(*args: Any) -> Any:
            if not captured.inputs:
                captured.inputs = list(args)
            return gm(*args)

        return run

    return aot_autograd(
        fw_compiler=forward_compiler, decompositions=decomposition_table()
    )


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


def capture_aten_graphs(
    fn: Callable, *example_inputs: Any, dynamic: bool | None = False
) -> list[torch.fx.GraphModule]:
    """The forward ATen graphs of `fn(*example_inputs)` (see `capture_with_inputs`)."""
    return [c.graph_module for c in capture_with_inputs(fn, *example_inputs, dynamic=dynamic)]
