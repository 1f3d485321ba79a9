"""
How big the cases are and how long each is timed, by device: a full run on a CPU,
a full run on a GPU (larger), and `--quick`, tiny sizes and few repetitions for CI.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from permalloy.tools.zoo import ZooSize

DEVICES = ("cpu", "cuda")
"""The devices `--device` accepts."""


@dataclass(frozen=True)
class Profile:
    """Sizes and repetition counts of one benchmark run."""

    name: str
    size: ZooSize
    warmup: int
    """Untimed calls before the timed ones."""
    min_runs: int
    max_runs: int
    budget_s: float
    """Roughly how long the timed calls of one case and backend take, in seconds."""
    rotation_bytes: int
    """Inputs are rotated over enough fresh sets to hold this many bytes, so that
    timed calls read their inputs from memory rather than from a warm cache."""
    max_input_sets: int
    copy_numel: int
    """float32 elements of the tensor whose copy measures memory bandwidth."""
    copy_runs: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


_MIB = 1 << 20

CPU = Profile(
    name="cpu",
    size=ZooSize(batch=8, seq=256, hidden=512, heads=8, channels=32, image=64),
    warmup=3,
    min_runs=10,
    max_runs=200,
    budget_s=1.0,
    rotation_bytes=64 * _MIB,
    max_input_sets=16,
    copy_numel=32 * _MIB,
    copy_runs=20,
)

CUDA = Profile(
    name="cuda",
    size=ZooSize(batch=32, seq=512, hidden=1024, heads=16, channels=64, image=128),
    warmup=10,
    min_runs=20,
    max_runs=500,
    budget_s=1.0,
    rotation_bytes=256 * _MIB,
    max_input_sets=16,
    copy_numel=256 * _MIB,
    copy_runs=50,
)

QUICK = Profile(
    name="quick",
    size=ZooSize(),
    warmup=1,
    min_runs=3,
    max_runs=5,
    budget_s=0.02,
    rotation_bytes=0,
    max_input_sets=2,
    copy_numel=_MIB,
    copy_runs=3,
)


def profile_for(device: str, quick: bool) -> Profile:
    """The profile of a run on `device` ("cpu" or "cuda"), or the quick one."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; valid devices: {', '.join(DEVICES)}")
    if quick:
        return QUICK
    return CUDA if device == "cuda" else CPU
