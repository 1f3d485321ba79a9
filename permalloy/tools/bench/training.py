"""
The training step of `permalloy-bench --train`: the case's model in train mode
under a fixed loss, `sum(out * seed)` over its floating outputs with seeds drawn
once per case from a fixed generator (so the gradient reaching each output is a
fixed random tensor, as any loss would give), then the backward pass to the
parameters and to the floating inputs. The loss is part of the compiled module,
so the backward graph starts from it.

Dropout and stochastic depth are switched off where a module keeps their
probability as `nn.Dropout`'s `p` or as a float attribute of a known name
(`without_dropout`, `DROP_RATES`): their random draws differ between
compilers, so gradients computed with them could not be compared with
eager's. Models whose own configurations set other such rates are built with
them at zero.

Gradients are reset to None at the start of every step, inside the timed call
and alike for every backend, as `optimizer.zero_grad()` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from permalloy.tools.bench.accuracy import (
    Accuracy,
    Gradients,
    compare_gradients,
    flatten_tensors,
)
from permalloy.tools.bench.workload import InputSet

SEED = 20240917
"""The seed of the generator that draws the loss's seeds."""
DROP_RATES = ("drop_prob", "drop_rate", "dropout", "attention_dropout", "activation_dropout")
"""Float attributes through which modules pass a drop probability to
functional dropout or drop path (timm's `DropPath` and heads, Hugging Face's
attention and feed-forward layers)."""


class SeededLoss(torch.nn.Module):
    """`sum(out * seed)` over the floating outputs of `model`: a scalar loss whose
    gradient with respect to each output is that output's fixed seed."""

    def __init__(self, model: torch.nn.Module, seeds: Sequence[torch.Tensor]) -> None:
        super().__init__()
        self.model = model
        self.count = len(seeds)
        for k, seed in enumerate(seeds):
            self.register_buffer(f"seed_{k}", seed)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        outputs = _floating(flatten_tensors(self.model(*inputs)))
        seeds = [getattr(self, f"seed_{k}") for k in range(self.count)]
        return sum((out * seed).sum() for out, seed in zip(outputs, seeds, strict=True))


class Training:
    """A training step: forward, the seeded loss, backward; gradients compared."""

    name = "train"
    grad_enabled = True
    measures_bandwidth = False

    def prepare(self, model: torch.nn.Module, inputs: InputSet) -> torch.nn.Module:
        """`model` in train mode, dropout off, under a `SeededLoss` with seeds
        shaped like its outputs."""
        without_dropout(model)
        model.train()
        with torch.no_grad():
            outputs = _floating(flatten_tensors(model(*inputs)))
        generator = torch.Generator().manual_seed(SEED)
        seeds = [
            torch.randn(out.shape, generator=generator, dtype=out.dtype).to(out.device)
            for out in outputs
        ]
        if not seeds:
            raise ValueError("the model has no floating output to train through")
        return SeededLoss(model, seeds)

    def prepare_inputs(self, sets: list[InputSet]) -> list[InputSet]:
        """The sets with their floating tensors requiring gradients."""
        return [tuple(_requiring_grad(t) for t in s) for s in sets]

    def step(
        self, compiled: Callable[..., Any], model: torch.nn.Module
    ) -> Callable[[InputSet], Any]:
        """Reset the gradients, compute the loss with `compiled`, run backward."""
        parameters = list(model.parameters())

        def train_step(inputs: InputSet) -> torch.Tensor:
            for leaf in (*parameters, *inputs):
                leaf.grad = None
            loss = compiled(*inputs)
            loss.backward()
            return loss

        return train_step

    def results(
        self, compiled: Callable[..., Any], model: torch.nn.Module, sets: Sequence[InputSet]
    ) -> list[Gradients]:
        """The gradients of one step on each input set."""
        step = self.step(compiled, model)
        gradients = []
        for inputs in sets:
            step(inputs)
            gradients.append(named_gradients(model, inputs))
        return gradients

    def compare(self, results: Sequence[Any], references: Sequence[Any]) -> Accuracy:
        return compare_gradients(results, references)


def without_dropout(model: torch.nn.Module) -> None:
    """Set every drop probability of `model`'s modules to zero, in place:
    dropout modules' `p` and the float attributes named in `DROP_RATES`."""
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd):
            module.p = 0.0
        for name in DROP_RATES:
            if isinstance(getattr(module, name, None), float):
                setattr(module, name, 0.0)


def named_gradients(model: torch.nn.Module, inputs: InputSet) -> dict[str, torch.Tensor | None]:
    """Copies of the gradients of the parameters of the model under `model` (by
    name) and of the inputs that require them (`input k`)."""
    inner = model.model if isinstance(model, SeededLoss) else model
    gradients = {name: _copy(p.grad) for name, p in inner.named_parameters()}
    for k, tensor in enumerate(inputs):
        if tensor.requires_grad:
            gradients[f"input {k}"] = _copy(tensor.grad)
    return gradients


def _copy(gradient: torch.Tensor | None) -> torch.Tensor | None:
    return None if gradient is None else gradient.detach().clone()


def _floating(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    return [t for t in tensors if t.is_floating_point()]


def _requiring_grad(tensor: torch.Tensor) -> torch.Tensor:
    """A floating tensor as a leaf requiring gradients; others unchanged."""
    if not tensor.is_floating_point():
        return tensor
    return tensor.detach().requires_grad_(True)
