"""
The suites `permalloy-bench` runs: `zoo`, the built-in model zoo of small blocks
(quick, the default), and `models`, the broad suite of whole models built from
`transformers` configurations, `torch.nn` blocks and, where `timm` is
installed, timm models (`permalloy/tools/models`), and `timm`, whole timm
models by name at their own resolution (`permalloy/tools/models/timm_catalog.py`:
a default selection, or any model timm knows). A suite names its cases and
builds one at a profile's size from a seed; the runner needs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from permalloy.tools.bench.backends import BenchError
from permalloy.tools.bench.profiles import Profile
from permalloy.tools.zoo import Case

SUITES = ("zoo", "models", "timm")
"""The suites `--suite` accepts; the first is the default."""


class CaseUnavailable(Exception):
    """A case that cannot be built here (a package it needs is not installed):
    its row says why, and the run goes on."""


def _unless_missing(build: Callable[[str, str, int], Case], name: str, size: str, seed: int) -> Case:
    """`build(name, size, seed)`, or `CaseUnavailable` saying which package
    it needs that is not installed."""
    from permalloy.tools.models import MissingPackage

    try:
        return build(name, size, seed)
    except MissingPackage as missing:
        raise CaseUnavailable(f"skipped: {missing}") from None


class Suite(Protocol):
    """A named set of cases, each built at a profile's size from a seed."""

    name: str
    max_input_sets: int
    """At most this many input sets rotate in timed calls (building a case
    builds its model too, which whole models make slow)."""

    def names(self) -> tuple[str, ...]:
        """Every case, in table order: what runs when no case is named."""
        ...

    def accepts(self, name: str) -> bool:
        """Whether `--cases` may name `name`."""
        ...

    def build(self, name: str, profile: Profile, seed: int) -> Case:
        """Case `name` at `profile`'s size, weights and inputs drawn from `seed`."""
        ...

    def memory_bound(self, name: str) -> bool:
        """Whether the case's speed is limited by memory traffic alone (no
        library call): its bandwidth is then reported against a copy's."""
        ...

    def describe(self, name: str) -> str:
        """One line about the case, for `--list`."""
        ...

    def family(self, name: str) -> str | None:
        """The model family of the case (decoder, encoder, convnet, ...), if any."""
        ...


@dataclass(frozen=True)
class ZooSuite:
    """The built-in zoo (`permalloy/tools/zoo.py`), at the profile's `ZooSize`."""

    name: str = "zoo"
    max_input_sets: int = 16

    _MEMORY_BOUND = frozenset(
        {"pointwise_chain", "layer_norm", "masked_softmax", "rms_norm_silu",
         "layer_norm_gelu_residual"}
    )

    def names(self) -> tuple[str, ...]:
        from permalloy.tools.zoo import CASES

        return tuple(CASES)

    def accepts(self, name: str) -> bool:
        return name in self.names()

    def build(self, name: str, profile: Profile, seed: int) -> Case:
        from permalloy.tools.zoo import make_case

        return make_case(name, replace(profile.size, seed=seed))

    def memory_bound(self, name: str) -> bool:
        return name in self._MEMORY_BOUND

    def describe(self, name: str) -> str:
        from permalloy.tools.zoo import CASES

        doc = (CASES[name].__doc__ or "").strip().splitlines()
        return doc[0] if doc else ""

    def family(self, name: str) -> str | None:
        return None


@dataclass(frozen=True)
class ModelSuite:
    """Whole models (`permalloy/tools/models`), at the sizes each model gives
    for the profile (`quick`, `cpu` or `cuda`)."""

    name: str = "models"
    max_input_sets: int = 3

    def names(self) -> tuple[str, ...]:
        from permalloy.tools.models import MODELS

        return tuple(MODELS)

    def accepts(self, name: str) -> bool:
        return name in self.names()

    def build(self, name: str, profile: Profile, seed: int) -> Case:
        from permalloy.tools.models import make_model

        return _unless_missing(make_model, name, profile.name, seed)

    def memory_bound(self, name: str) -> bool:
        return False

    def describe(self, name: str) -> str:
        from permalloy.tools.models import MODELS

        spec = MODELS[name]
        needs = f" (needs {', '.join(spec.needs)})" if spec.needs else ""
        return f"{spec.family}: {spec.description}{needs}"

    def family(self, name: str) -> str:
        from permalloy.tools.models import MODELS

        return MODELS[name].family


@dataclass(frozen=True)
class TimmSuite:
    """Whole timm models by name (`permalloy/tools/models/timm_catalog.py`):
    the default selection, or any model timm can build; one image on the CPU,
    32 on a GPU, at each model's own input size."""

    name: str = "timm"
    max_input_sets: int = 2

    def names(self) -> tuple[str, ...]:
        from permalloy.tools.models.timm_catalog import TIMM_MODELS

        return tuple(TIMM_MODELS)

    def accepts(self, name: str) -> bool:
        from permalloy.tools.models.timm_catalog import known_timm_model

        return known_timm_model(name)

    def build(self, name: str, profile: Profile, seed: int) -> Case:
        from permalloy.tools.models.timm_catalog import make_timm_case

        return _unless_missing(make_timm_case, name, profile.name, seed)

    def memory_bound(self, name: str) -> bool:
        return False

    def describe(self, name: str) -> str:
        return f"{self.family(name)}: timm's {name}, whole (needs timm)"

    def family(self, name: str) -> str:
        from permalloy.tools.models.timm_catalog import timm_family

        return timm_family(name)


def make_suite(name: str) -> Suite:
    """The suite called `name`; a `BenchError` lists the valid ones."""
    if name == "zoo":
        return ZooSuite()
    if name == "models":
        return ModelSuite()
    if name == "timm":
        return TimmSuite()
    raise BenchError(f"unknown suite {name!r}; valid suites: {', '.join(SUITES)}")
