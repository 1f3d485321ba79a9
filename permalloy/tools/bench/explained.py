"""
`--verbose`: the `permalloy.explain` report of a case that permalloy failed
or ran slower than Inductor, printed to standard error after the case.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from permalloy.tools.bench.backends import permalloy_target
from permalloy.tools.bench.results import BackendResult, short_error


def why_explain(results: dict[str, BackendResult]) -> str | None:
    """Why a case's report is worth printing: permalloy failed, or ran
    slower than Inductor (medians); None when it is not."""
    ours, theirs = results.get("permalloy"), results.get("inductor")
    if ours is None:
        return None
    if not ours.ok:
        return f"permalloy failed: {ours.error}"
    if theirs is not None and theirs.ok and ours.timing is not None and theirs.timing is not None:
        if ours.timing.median_s > theirs.timing.median_s:
            return (
                f"permalloy is slower than Inductor: {ours.timing.median_s * 1e3:.3f} ms "
                f"against {theirs.timing.median_s * 1e3:.3f} ms"
            )
    return None


def explanation(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], device: str) -> str:
    """The explain report of one call of `model` on `inputs`, as text (or why there is none)."""
    from permalloy.explain.run import explain_call

    try:
        return str(explain_call(model, inputs, options={"target": permalloy_target(device)}))
    except Exception as error:  # noqa: BLE001 - the report says why it is missing
        return f"no report: {short_error(error)}"


def print_explanation(case: str, why: str, text: str, progress: Any) -> None:
    """The report, under a line that names the case and why it is printed."""
    block = f"{case}: {why}\n{text}"
    if progress.enabled:
        progress.note(block)
    else:
        sys.stderr.write(block + "\n")
