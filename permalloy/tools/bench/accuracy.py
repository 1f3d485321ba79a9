"""
Accuracy against eager: the relative error `||out - ref|| / ||ref||` over every
output tensor together, and the largest absolute error. A result passes when the
relative error is within the bar of its dtype (1e-4 for float32).

Gradients are compared one by one, the worst counting: each gradient's error is
`||g - ref|| / max(||ref||, floor)`, where the floor is `GRADIENT_FLOOR` times
the norm the gradient would have if its elements were as large as eager's
gradients are on average (their root mean square). A gradient that is zero in
exact arithmetic (a conv bias before training-mode batch norm, the key bias of
attention) holds rounding noise in eager and in any backend alike; the floor
measures that noise against the scale of the gradients rather than against
itself. Gradients pass the same bar as outputs (`GRADIENT_TOLERANCES`, 1e-4
in float32). A discontinuity such as ReLU's can exceed it where a value rounds
to the other side of zero in one backend and not in the other: that moves a
whole term of the weights' gradients (one such element of a batch norm + ReLU
over two million elements is 1e-3 of its bias's gradient norm). Such a case is
reported as failing, with its error, rather than hidden by a looser bar.
Smooth models reach about 1e-6 in float32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

GRADIENT_FLOOR = 0.1
"""The floor of a gradient's norm in its relative error, as a fraction of the
norm it would have at eager's root mean square gradient element."""

TOLERANCES = {
    torch.float64: 1e-7,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 2e-2,
}
"""The pass bar of the relative error, by the dtype of eager's outputs."""

GRADIENT_TOLERANCES = dict(TOLERANCES)
"""The pass bar of the largest gradient error, by the dtype of eager's gradients:
the outputs' bars."""


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


@dataclass(frozen=True)
class GradientAccuracy(Accuracy):
    """How far a backend's gradients are from eager's: `relative_error` is the
    largest of the gradients' errors, `errors` holds each one by name."""

    worst: str | None = None
    errors: dict[str, float] = field(default_factory=dict)


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


Gradients = Mapping[str, "torch.Tensor | None"]
"""Gradients by name (a parameter's name, or `input k`); None where none flowed."""


def compare_gradients(
    actual: Sequence[Gradients], expected: Sequence[Gradients]
) -> GradientAccuracy:
    """
    The errors of a backend's gradients against eager's, one mapping per step
    compared (gradient names the same in each); each gradient's error is its
    largest over the steps.
    """
    if len(actual) != len(expected):
        raise ValueError(f"{len(actual)} sets of gradients where eager gives {len(expected)}")
    errors: dict[str, float] = {}
    max_abs, compared = 0.0, []
    for got, want in zip(actual, expected):
        if set(got) != set(want):
            raise ValueError(f"gradients of {sorted(got)} where eager gives {sorted(want)}")
        pairs = {n: _gradient_pair(got[n], want[n]) for n in want}
        pairs = {n: pair for n, pair in pairs.items() if pair is not None}
        scale = _root_mean_square([e for _, e in pairs.values()])
        for name, (a, e) in pairs.items():
            if a.shape != e.shape:
                shapes = f"{list(a.shape)} where eager's is {list(e.shape)}"
                raise ValueError(f"gradient {name} of shape {shapes}")
            diff_sq, ref_sq, largest = _errors(a, e)
            floor = GRADIENT_FLOOR * scale * e.numel() ** 0.5
            denominator = max(ref_sq**0.5, floor)
            error = diff_sq**0.5 / denominator if denominator > 0 else diff_sq**0.5
            errors[name] = max(errors.get(name, 0.0), error)
            max_abs = max(max_abs, largest)
            compared.append(e)
    worst = max(errors, key=errors.__getitem__, default=None)
    relative = errors[worst] if worst is not None else 0.0
    tolerance = _tolerance(compared, GRADIENT_TOLERANCES)
    return GradientAccuracy(relative, max_abs, tolerance, worst, errors)


def _gradient_pair(
    actual: torch.Tensor | None, expected: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The two gradients, a missing one as zeros like the other; None if both are."""
    if actual is None and expected is None:
        return None
    if actual is None:
        actual = torch.zeros_like(expected)
    if expected is None:
        expected = torch.zeros_like(actual)
    return actual, expected


def _root_mean_square(tensors: Sequence[torch.Tensor]) -> float:
    """The root mean square of the finite elements of `tensors` together."""
    total, count = 0.0, 0
    for t in tensors:
        finite = torch.nan_to_num(t.detach().double(), nan=0.0, posinf=0.0, neginf=0.0)
        total, count = total + float((finite * finite).sum()), count + t.numel()
    return (total / count) ** 0.5 if count else 0.0


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


def _tolerance(
    expected: Sequence[torch.Tensor], tolerances: Mapping[torch.dtype, float] = TOLERANCES
) -> float:
    """The loosest bar among eager's floating results (exact for the others)."""
    bars = [tolerances.get(t.dtype, 0.0) for t in expected]
    return max(bars, default=0.0)
