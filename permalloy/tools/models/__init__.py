"""
The broad model suite: small but complete models of every common family, with
random weights and seeded inputs, at three sizes; nothing is downloaded.

    case = make_model("llama", "quick", seed=0)
    case.model(*case.inputs)

Transformer models come from `transformers` config classes (2 layers), timm
models from `timm.create_model(..., pretrained=False)`, and a few are plain
`torch.nn` blocks. Every model's forward takes tensors and returns a tensor or
a tuple of tensors.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from permalloy.tools.models import (
    audio,
    blocks,
    convnets,
    decoders,
    encoders,
    seq2seq,
    timm_models,
    vision,
)
from permalloy.tools.models.spec import FAMILIES, SIZES, MissingPackage, ModelSpec, check_size
from permalloy.tools.zoo import Case

__all__ = ["FAMILIES", "MODELS", "SIZES", "Case", "MissingPackage", "ModelSpec", "first_output", "make_model"]


def _by_family(*spec_groups: tuple[ModelSpec, ...]) -> dict[str, ModelSpec]:
    """Every spec by name, ordered by family (then as given)."""
    specs = [spec for group in spec_groups for spec in group]
    specs.sort(key=lambda spec: FAMILIES.index(spec.family))
    return {spec.name: spec for spec in specs}


MODELS: dict[str, ModelSpec] = _by_family(
    decoders.SPECS,
    encoders.SPECS,
    seq2seq.SPECS,
    vision.SPECS,
    convnets.SPECS,
    timm_models.SPECS,
    audio.SPECS,
    blocks.SPECS,
)
"""Every model of the suite, by name, ordered by family."""


def make_model(name: str, size: str, seed: int = 0) -> Case:
    """Build model `name` at `size` (one of `SIZES`), its weights and inputs
    seeded by `seed`.

    Raises KeyError for an unknown name, ValueError for an unknown size and
    `MissingPackage` when a package the model needs is not installed."""
    if name not in MODELS:
        raise KeyError(f"no model '{name}'; models: {', '.join(MODELS)}")
    check_size(size)
    spec = MODELS[name]
    for package in spec.needs:
        if importlib.util.find_spec(package) is None:
            raise MissingPackage(package)
    return spec.build(size, seed)


def first_output(value: Any) -> Any:
    """A model's main output tensor: the first element of nested tuples and
    lists, and a Hugging Face output's logits or last hidden state."""
    while isinstance(value, tuple | list):
        value = value[0]
    for field in ("logits", "last_hidden_state"):
        value = getattr(value, field, value)
    return value
