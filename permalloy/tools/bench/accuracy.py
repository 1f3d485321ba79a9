"""
Accuracy against eager: the relative error `||out - ref|| / ||ref||` over every
output tensor together, and the largest absolute error. A result passes when the
relative error is within the bar of its dtype (1e-4 for float32).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

TOLERANCES = {
    torch.float64: 1e-7,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 2e-2,
}
"""The pass bar of the relative error, by the dtype of eager's outputs."""


@dataclass(frozen=True)
class Accuracy:
    """How far a backend's outputs are from eager's."""

    relative_error: float
    max_abs_error: float
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.relative_error <= self.tolerance

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


def flatten_tensors(value: Any) -> list[torch.Tensor]:
    """The tensors in nested tuples, lists and dicts of outputs, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, tuple | list):
        return [t for item in value for t in flatten_tensors(item)]
    return []


def compare(outputs: Sequence[Any], references: Sequence[Any]) -> Accuracy:
    """The errors of `outputs` against eager's `references`, all calls together."""
    actual = [t for out in outputs for t in flatten_tensors(out)]
    expected = [t for ref in references for t in flatten_tensors(ref)]
    if len(actual) != len(expected):
        raise ValueError(f"{len(actual)} output tensors where eager gives {len(expected)}")
    diff_sq, ref_sq, max_abs = 0.0, 0.0, 0.0
    for a, e in zip(actual, expected):
        if a.shape != e.shape:
            raise ValueError(f"output shape {list(a.shape)} where eager gives {list(e.shape)}")
        d, r, m = _errors(a, e)
        diff_sq, ref_sq, max_abs = diff_sq + d, ref_sq + r, max(max_abs, m)
    relative = (diff_sq**0.5) / ref_sq**0.5 if ref_sq > 0 else diff_sq**0.5
    return Accuracy(relative, max_abs, _tolerance(expected))


def _errors(actual: torch.Tensor, expected: torch.Tensor) -> tuple[float, float, float]:
    """Squared norm of the difference, squared norm of eager's, largest absolute
    difference; NaNs and infinities where eager has the same count as equal."""
    a, e = actual.detach().double(), expected.detach().to(actual.device).double()
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))
    diff = torch.where(same, torch.zeros_like(a), a - e)
    diff = torch.nan_to_num(diff, nan=float("inf"))
    finite_ref = torch.where(torch.isfinite(e), e, torch.zeros_like(e))
    max_abs = float(diff.abs().max()) if diff.numel() else 0.0
    return float((diff * diff).sum()), float((finite_ref * finite_ref).sum()), max_abs


def _tolerance(expected: Sequence[torch.Tensor]) -> float:
    """The loosest bar among eager's floating outputs (exact for the others)."""
    bars = [TOLERANCES.get(t.dtype, 0.0) for t in expected]
    return max(bars, default=0.0)
