"""
What a model of the suite is: a named builder of a `Case` at a size, plus the
packages it needs, and the per-size choice every builder makes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch

from permalloy.tools.zoo import Case

SIZES = ("quick", "cpu", "cuda")
"""The sizes a model is built at: "quick" compiles in seconds on a CPU, "cpu"
runs one eager call in about 5-50 ms on one CPU thread, "cuda" has realistic
GPU shapes."""

FAMILIES = (
    "decoder",
    "encoder",
    "encoder-decoder",
    "vision-transformer",
    "convnet",
    "audio",
    "block",
)
"""The model families, in the order the suite lists them."""

T = TypeVar("T")


@dataclass(frozen=True)
class ModelSpec:
    """A model of the suite: how to build it, and what it needs to be built."""

    name: str
    family: str
    """One of `FAMILIES`."""
    build: Callable[[str, int], Case]
    """(size name in `SIZES`, seed) -> Case; the seed fixes weights and inputs."""
    needs: tuple[str, ...] = ()
    """Importable packages beyond torch that building needs ("transformers", "timm")."""
    description: str = ""
    """One line, for listings."""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            families = ", ".join(FAMILIES)
            raise ValueError(f"model '{self.name}': family '{self.family}' is not one of {families}")


class MissingPackage(Exception):
    """A model needs a package that is not installed."""

    def __init__(self, package: str):
        super().__init__(f"{package} is not installed")
        self.package = package


def check_size(size: str) -> None:
    """Raise ValueError, listing `SIZES`, when `size` is not one of them."""
    if size not in SIZES:
        raise ValueError(f"unknown size '{size}'; sizes: {', '.join(SIZES)}")


def per_size(size: str, quick: T, cpu: T, cuda: T) -> T:
    """The one of `quick`, `cpu` and `cuda` that `size` names."""
    check_size(size)
    return {"quick": quick, "cpu": cpu, "cuda": cuda}[size]


def build_case(name: str, build: Callable[[str], tuple], size: str, seed: int = 0) -> Case:
    """Seed torch's generator, call `build(size) -> (model, *inputs)` and make
    the case `name` of it with the model in eval mode."""
    check_size(size)
    torch.manual_seed(seed)
    model, *inputs = build(size)
    return Case(name, model.eval(), tuple(inputs))


def model_spec(
    name: str,
    family: str,
    build: Callable[[str], tuple],
    needs: tuple[str, ...] = ("transformers",),
) -> ModelSpec:
    """The spec of model `name` built by `build(size) -> (model, *inputs)`;
    its description is the first line of `build`'s docstring."""
    description = (build.__doc__ or "").strip().splitlines()[0] if build.__doc__ else ""
    return ModelSpec(name, family, functools.partial(build_case, name, build), needs, description)
