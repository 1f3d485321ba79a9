"""
What one timed call of a case does. `Inference` (the default) calls the model
on an input set under `torch.no_grad()` and compares outputs with eager's;
`Training` (`--train`, in `training`) runs a training step, forward and
backward, and compares gradients; `make_workload` (in `runner`) picks one. The runner asks the workload for everything
that differs between the two, so that building inputs, compiling, checking and
timing are written once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from permalloy.tools.bench.accuracy import Accuracy, compare

InputSet = tuple[torch.Tensor, ...]


class Workload(Protocol):
    """One kind of timed call: inference or a training step."""

    name: str
    grad_enabled: bool
    """Whether the run needs autograd (the whole run is under this grad mode)."""
    measures_bandwidth: bool
    """Whether bytes moved over time mean anything for this workload."""

    def prepare(self, model: torch.nn.Module, inputs: InputSet) -> torch.nn.Module:
        """The module that backends compile, built from the case's model."""
        ...

    def prepare_inputs(self, sets: list[InputSet]) -> list[InputSet]:
        """The input sets as the workload needs them."""
        ...

    def step(
        self, compiled: Callable[..., Any], model: torch.nn.Module
    ) -> Callable[[InputSet], Any]:
        """One timed call of `compiled` (compiled from `model`) on an input set."""
        ...

    def results(
        self, compiled: Callable[..., Any], model: torch.nn.Module, sets: Sequence[InputSet]
    ) -> list[Any]:
        """What is compared with eager, one item per input set."""
        ...

    def compare(self, results: Sequence[Any], references: Sequence[Any]) -> Accuracy:
        """How far `results` are from eager's `references`."""
        ...


class Inference:
    """The model called on an input set; its outputs compared with eager's."""

    name = "inference"
    grad_enabled = False
    measures_bandwidth = True

    def prepare(self, model: torch.nn.Module, inputs: InputSet) -> torch.nn.Module:
        return model  # zoo models are built in eval mode

    def prepare_inputs(self, sets: list[InputSet]) -> list[InputSet]:
        return sets

    def step(
        self, compiled: Callable[..., Any], model: torch.nn.Module
    ) -> Callable[[InputSet], Any]:
        return lambda inputs: compiled(*inputs)

    def results(
        self, compiled: Callable[..., Any], model: torch.nn.Module, sets: Sequence[InputSet]
    ) -> list[Any]:
        return [compiled(*s) for s in sets]

    def compare(self, results: Sequence[Any], references: Sequence[Any]) -> Accuracy:
        return compare(results, references)
