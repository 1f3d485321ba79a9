"""
Differential checking of the importer: capture a function, import its graph,
run the IR with the reference interpreter and compare with eager PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from permalloy.lowering.capture import CapturedGraph, capture_with_inputs
from permalloy.lowering.import_fx.graph import ImportResult, TensorOutput, import_graph


@dataclass
class Comparison:
    """Imported IR's outputs next to eager's."""

    result: ImportResult
    outputs: list[torch.Tensor]
    expected: list[torch.Tensor]

    def errors(self) -> list[float]:
        """The relative error of each output (0 or inf for exact dtypes)."""
        return [relative_error(o, e) for o, e in zip(self.outputs, self.expected)]

    def max_error(self) -> float:
        return max(self.errors(), default=0.0)


def relative_error(output: torch.Tensor, expected: torch.Tensor) -> float:
    """`||output - expected|| / ||expected||` for floats; 0 or inf when exact."""
    if output.shape != expected.shape:
        return float("inf")
    if not expected.dtype.is_floating_point:
        return 0.0 if torch.equal(output.to(expected.dtype), expected) else float("inf")
    output, expected = output.double(), expected.double()
    difference = torch.linalg.vector_norm(output - expected).item()
    scale = torch.linalg.vector_norm(expected).item()
    return difference / scale if scale > 0 else difference


def run_imported(result: ImportResult, inputs: list[Any]) -> list[torch.Tensor]:
    """The tensor outputs of an imported graph, run by the reference interpreter."""
    from permalloy.interpreter import run_function

    return list(run_function(result.module, [*inputs, *result.constants]))


def import_and_run(captured: CapturedGraph) -> tuple[ImportResult, list[torch.Tensor]]:
    result = import_graph(captured.graph_module)
    return result, run_imported(result, captured.inputs)


def compare_with_eager(fn: Callable, *inputs: Any, dynamic: bool | None = False) -> Comparison:
    """
    Capture `fn` (which must give one graph), import it, interpret it, and pair
    its tensor outputs with those of `fn(*inputs)` run eagerly.
    """
    with torch.no_grad():
        expected = [t for t in tree_leaves(fn(*inputs)) if isinstance(t, torch.Tensor)]
    graphs = capture_with_inputs(fn, *inputs, dynamic=dynamic)
    if len(graphs) != 1:
        raise AssertionError(f"expected one graph, Dynamo produced {len(graphs)}")
    result, outputs = import_and_run(graphs[0])
    tensor_outputs = [o for o in result.outputs if isinstance(o, TensorOutput)]
    if len(tensor_outputs) != len(expected):
        raise AssertionError(
            f"the graph returns {len(tensor_outputs)} tensors, eager {len(expected)}"
        )
    return Comparison(result, outputs, expected)
