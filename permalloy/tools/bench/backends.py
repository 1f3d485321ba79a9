"""
The backends a case runs under: eager PyTorch (the model itself), Inductor and
permalloy through `torch.compile`. Each adapter compiles a model and, around a
case (`session`), collects what its compiler reports: kernel counts, extern
calls, fallback ops.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from unittest import mock

import torch

import permalloy
from permalloy.targets.registry import target_for_device, target_names
from permalloy.tools.bench.compile_times import summed_compile_times

BACKENDS = ("eager", "inductor", "permalloy")
"""The backends `--backends` accepts, in table order."""


class BenchError(Exception):
    """A problem with the benchmark's set-up that the user can fix."""


class Eager:
    """Eager PyTorch: the model itself, the reference of every comparison."""

    name = "eager"
    compiles = False

    def compile(self, model: torch.nn.Module) -> Callable[..., Any]:
        return model

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        yield

    def kernel_info(self) -> dict[str, Any]:
        return {}


class Inductor:
    """
    `torch.compile(model)` with Inductor. Each case compiles with empty caches (a
    fresh cache folder), so compile times are cold compiles. Kernels are counted
    in the generated code (`kernels`) and by Inductor's own metric
    (`generated_kernel_count`, which on CPU counts each vectorized and scalar
    loop nest of a kernel).
    """

    name = "inductor"
    compiles = True
    _KERNEL_DEFINITION = re.compile(r"^\s*\w+ = async_compile\.\w+\(", re.MULTILINE)

    def __init__(self) -> None:
        self._codes: list[str] = []

    def compile(self, model: torch.nn.Module) -> Callable[..., Any]:
        return torch.compile(model, backend="inductor")

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        from torch._inductor import metrics
        from torch._inductor.graph import GraphLowering

        self._codes = []
        metrics.reset()
        with _fresh_inductor_cache(), mock.patch.object(
            GraphLowering, "save_output_code", self._codes.append
        ):
            yield

    def kernel_info(self) -> dict[str, Any]:
        from torch._inductor import metrics

        return {
            "graphs": len(self._codes),
            "kernels": sum(len(self._KERNEL_DEFINITION.findall(c)) for c in self._codes),
            "generated_kernel_count": metrics.generated_kernel_count,
        }


class Permalloy:
    """
    `torch.compile(model, backend="permalloy")` for the device's kernel target.
    Kernel counts add up every graph compiled (forward and backward ones in a
    training step); `per_graph` lists each in the order they were compiled,
    `compile_times` sums their compile time by stage. Like Inductor's, each
    case compiles with empty caches (a fresh `PERMALLOY_CACHE_DIR` and
    `TRITON_CACHE_DIR` for the session, `cache_dir`), so compile times are
    cold compiles; `fresh_cache=False` keeps the caches the environment names
    (a warm compile).
    """

    name = "permalloy"
    compiles = True

    def __init__(self, device: str, fresh_cache: bool = True, target_options: Mapping[str, Any] | None = None) -> None:
        self.device = device
        self.fresh_cache = fresh_cache
        self.target_options = dict(target_options or {})
        """Options of the kernel target it compiles with."""
        self.cache_dir: str | None = None
        """The session's cache directory, while a session with a fresh cache runs."""
        self._warnings: list[str] = []

    def compile(self, model: torch.nn.Module) -> Callable[..., Any]:
        """`torch.compile(model, backend="permalloy", ...)`, with the backend function
        itself, so that a checkout run without installing measures its own code."""
        from permalloy.tools.backend import permalloy_backend

        target = permalloy_target(self.device)
        return torch.compile(model, backend=permalloy_backend, options={"target": target, **self.target_options})

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        permalloy.reset_stats()
        caches = _fresh_permalloy_cache() if self.fresh_cache else contextlib.nullcontext()
        with caches as directory, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.cache_dir = directory
            try:
                yield
            finally:
                self.cache_dir = None
                self._warnings = sorted({str(w.message) for w in caught if _ours(w)})

    def _target(self) -> str | None:
        """The kernel target compiled for, or None where the device has none."""
        try:
            return permalloy_target(self.device)
        except BenchError:
            return None

    def kernel_info(self) -> dict[str, Any]:
        records = permalloy.stats()
        fell_back = [r for r in records if not r["compiled"]]
        return {
            "target": self._target(),
            "graphs": len(records),
            "kernels": sum(r["kernels"] for r in records),
            "extern_calls": sum(r["extern_calls"] for r in records),
            "fallback_ops": sorted({op for r in records for op in r["fallback_ops"]}),
            "graphs_fell_back": len(fell_back),
            "fell_back_reasons": [r["reason"] for r in fell_back],
            "compile_s": sum(r["compile_seconds"] for r in records),
            "compile_times": summed_compile_times(records),
            "warnings": list(self._warnings),
            "per_graph": [_graph_summary(r) for r in records],
        }


def _graph_summary(record: dict[str, Any]) -> dict[str, Any]:
    """What the report keeps of one graph's record: for a training step the
    forward graph's comes before the backward graph's."""
    keys = (
        "compiled", "kernels", "extern_calls", "fallback_ops", "compile_seconds", "compile_times", "cache",
        "host", "host_callbacks", "host_us_per_call",
    )
    return {key: record.get(key) for key in keys}


def add_host_times(result: Any) -> None:
    """Each permalloy graph's host time per call into `result`'s per-graph
    summaries: its stats record has it once the graph's first calls after
    the first ran, which is after the compile the summaries were taken at."""
    if result is None or not result.kernels:
        return
    for summary, record in zip(result.kernels.get("per_graph", ()), permalloy.stats()):
        summary["host_us_per_call"] = record.get("host_us_per_call")


def make_backend(
    name: str, device: str, target_options: Sequence[tuple[str, Any]] = ()
) -> Eager | Inductor | Permalloy:
    """The adapter of backend `name` for `device` (permalloy's with the
    kernel target's `target_options`)."""
    if name == "eager":
        return Eager()
    if name == "inductor":
        return Inductor()
    if name == "permalloy":
        return Permalloy(device, target_options=dict(target_options))
    raise BenchError(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")


def parse_target_option(text: str) -> tuple[str, Any]:
    """A `NAME=VALUE` target option: the value as a Python literal (`False`,
    `3`, `'torch'`) where it reads as one, else as text (`torch`)."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise BenchError(f"--target-option takes NAME=VALUE, not {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def check_target_options(device: str, options: Sequence[tuple[str, Any]]) -> None:
    """A `BenchError` listing the options the device's target takes, where one
    of `options` is not among them or has a value it does not take."""
    from permalloy.targets.descriptor import TargetOptionError
    from permalloy.targets.registry import target_descriptor

    try:
        target_descriptor(permalloy_target(device)).checked_options(dict(options))
    except TargetOptionError as error:
        raise BenchError(str(error)) from None


def permalloy_target(device: str) -> str:
    """permalloy's kernel target for tensors on `device` (the registry's default)."""
    target = target_for_device(device)
    if target is None:
        raise BenchError(
            f"permalloy has no kernel target for {device} tensors "
            f"(available targets: {target_names()})"
        )
    return target.name


@contextlib.contextmanager
def _fresh_permalloy_cache() -> Iterator[str]:
    """permalloy's cache (compiled graphs, Triton modules and tuned
    configurations) and Triton's binaries in a fresh folder for the block;
    the folder's path."""
    with tempfile.TemporaryDirectory(prefix="permalloy-bench-cache-") as directory:
        binaries = os.path.join(directory, "triton-binaries")
        settings = {"PERMALLOY_CACHE_DIR": directory, "TRITON_CACHE_DIR": binaries}
        previous = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            yield directory
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@contextlib.contextmanager
def _fresh_inductor_cache() -> Iterator[None]:
    """Inductor's on-disk and in-memory caches emptied for the block."""
    try:
        from torch._inductor.utils import fresh_cache
    except ImportError:  # older torch
        from torch._inductor.utils import fresh_inductor_cache as fresh_cache
    with fresh_cache():
        yield


def _ours(warning: warnings.WarningMessage) -> bool:
    """Whether a caught warning is one of permalloy's (fallbacks, unknown ops)."""
    return "permalloy" in str(warning.message) or "permalloy" in (warning.filename or "")
