"""`permalloy.explain`: compile a function with the permalloy backend, run
it once, and report what happened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest.mock import patch

import torch
from torch._dynamo.backends.debugging import ExplainWithBackend

from permalloy.explain.collect import ExplanationCollector
from permalloy.explain.report import ExplainReport


def explain(fn: Callable, *args: Any, **kwargs: Any) -> ExplainReport:
    """Compile `fn` (a function or an `nn.Module`) with the permalloy backend
    and its default options, call it once on `args` and `kwargs`, and report
    Dynamo's graphs and graph breaks and, for each graph, its ATen ops,
    fallbacks, kernels, the loop ops fusion kept apart and why, the planned
    peak memory and the compile time by stage. Like `torch._dynamo.explain`,
    it resets Dynamo's caches before and after."""
    return explain_call(fn, args, kwargs)


def explain_call(
    fn: Callable,
    args: tuple | list = (),
    kwargs: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    mode: str | None = None,
) -> ExplainReport:
    """`explain` with the backend's `options` and `mode`."""
    collector = ExplanationCollector()
    explainer = ExplainWithBackend(collector.backend(mode, options))
    torch._dynamo.reset()  # noqa: SLF001 - a fresh compilation, as Dynamo's explain does
    try:
        with patch("torch._dynamo.symbolic_convert.explain", True):
            torch.compile(fn, backend=explainer)(*args, **(kwargs or {}))
        return ExplainReport.of(explainer.output(), collector)
    finally:
        torch._dynamo.reset()  # noqa: SLF001
