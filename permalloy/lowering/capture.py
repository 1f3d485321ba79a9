"""
Capture the ATen graphs that `torch.compile` hands a backend, after AOTAutograd
and permalloy's decomposition table: the graphs the FX importer reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._dynamo.backends.common import aot_autograd

from permalloy.lowering.decompositions import decomposition_table


def capturing_backend(into: list[torch.fx.GraphModule]) -> Callable:
    """
    A torch.compile backend that appends each forward ATen graph to `into` and
    runs it unchanged.
    """

    def forward_compiler(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        into.append(gm)
        return gm.forward

    return aot_autograd(
        fw_compiler=forward_compiler, decompositions=decomposition_table()
    )


def capture_aten_graphs(
    fn: Callable, *example_inputs: Any, dynamic: bool | None = False
) -> list[torch.fx.GraphModule]:
    """
    The forward ATen graphs of `fn(*example_inputs)`, one per Dynamo graph (more
    than one when Dynamo breaks the graph), traced once under `torch.no_grad()`.

    `dynamic` is passed to `torch.compile`: True traces sizes as symbols, False
    specializes them, None lets `torch._dynamo.mark_dynamic` decide. Dynamo's
    caches are reset before and after, so repeated captures in one process each
    trace afresh.
    """
    graphs: list[torch.fx.GraphModule] = []
    torch._dynamo.reset()
    try:
        compiled = torch.compile(fn, backend=capturing_backend(graphs), dynamic=dynamic)
        with torch.no_grad():
            compiled(*example_inputs)
    finally:
        torch._dynamo.reset()
    return graphs
