"""
A hand-written kernel's launches as data, so that a native host program can
make them itself.

A library op that permalloy runs with its own Triton kernels (attention,
depthwise convolutions) is a Python call of the host program. Where that
call first plans its work as a `LaunchPlan` (the results and zeroed
temporaries to allocate, and each kernel's grid and parameter values, its
tensors by position) and then runs the plan, the plan of a call, with the
compiled binaries its launches used, says everything a native host program
needs to make the same call without Python (`RecordedLaunches`): on a GPU,
a graph of constant sizes makes the same plan on every call.

    plan = LaunchPlan(results=(Allocation(sizes, strides, dtype),), temporaries=(), launches=(
        PlannedLaunch(kernel, (blocks,), (Slot(0), Slot(1), count), {"BLOCK": 64, "num_warps": 4}),
    ))
    results, launched = run_plan(plan, [x])  # `launched`: each launch's (run, function, metadata) or None

Tensors are numbered inputs first, then results, then temporaries. A
kernel reads a tensor only through its data pointer and the strides the
plan passes, so a plan names the tensors the call was given (or their
unsqueezed, expanded or permuted views, which share the data pointer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from permalloy.targets.triton.direct import Launch, StaticLaunch
from permalloy.targets.triton.modal_kernel import ModalKernel


@dataclass(frozen=True)
class Slot:
    """A tensor parameter: the tensor at `position` (inputs, results, temporaries)."""

    position: int


@dataclass(frozen=True)
class Allocation:
    """A tensor a plan allocates: its sizes, strides and element type."""

    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: torch.dtype

    @property
    def storage_elements(self) -> int:
        """The elements its memory holds (0 for an empty tensor)."""
        if 0 in self.sizes:
            return 0
        return 1 + sum((size - 1) * stride for size, stride in zip(self.sizes, self.strides, strict=True))


@dataclass(frozen=True)
class PlannedLaunch:
    """One launch of a hand-written kernel: `kernel.launch(grid, *values, **keywords)`
    with each `Slot` replaced by its tensor."""

    kernel: ModalKernel
    grid: tuple[int, ...]
    values: tuple[Any, ...]
    """The kernel's leading parameters."""
    keywords: Mapping[str, Any]
    """Its compile-time parameters and Triton's launch options (`num_warps`)."""


@dataclass(frozen=True)
class LaunchPlan:
    """What a call allocates and launches: results (returned, in order) and
    temporaries filled with zeros, then the launches in order."""

    results: tuple[Allocation, ...]
    temporaries: tuple[Allocation, ...]
    launches: tuple[PlannedLaunch, ...]


def allocate(allocation: Allocation, device: torch.device, zeroed: bool = False) -> torch.Tensor:
    """A tensor of the allocation on `device`, filled with zeros where asked."""
    tensor = torch.empty_strided(allocation.sizes, allocation.strides, dtype=allocation.dtype, device=device)
    return tensor.zero_() if zeroed else tensor


def run_plan(
    plan: LaunchPlan, inputs: Sequence[torch.Tensor], out: Sequence[torch.Tensor] | None = None
) -> tuple[list[torch.Tensor], list[Launch | None]]:
    """Run `plan` on `inputs`: its results (`out` where given, of the
    results' layouts) and what each launch ran (`ModalKernel.launch`)."""
    device = inputs[0].device
    results = list(out) if out is not None else [allocate(a, device) for a in plan.results]
    temporaries = [allocate(a, device, zeroed=True) for a in plan.temporaries]
    tensors = [*inputs, *results, *temporaries]
    launched = []
    for launch in plan.launches:
        values = tuple(tensors[v.position] if isinstance(v, Slot) else v for v in launch.values)
        launched.append(launch.kernel.launch(launch.grid, *values, **launch.keywords))
    return results, launched


@dataclass(frozen=True)
class RecordedLaunches:
    """A plan as a native host program makes it on a GPU: the call's
    device and each input's 16-byte alignment (the binaries were compiled
    for them: elsewhere the program calls back into Python), the results
    and the zeroed temporaries to allocate, and each launch's grid
    (x, y, z), compiled binary (`Launch`, its metadata a `StaticLaunch`)
    and the values of every parameter of the kernel's function, a tensor
    as `("tensor", position)`."""

    device: int
    aligned: tuple[bool, ...]
    results: tuple[Allocation, ...]
    temporaries: tuple[Allocation, ...]
    steps: tuple[tuple[tuple[int, int, int], Launch, tuple[Any, ...]], ...]


def recorded_launches(
    plan: LaunchPlan, inputs: Sequence[torch.Tensor], launched: Sequence[Launch | None]
) -> RecordedLaunches | None:
    """The recording of a plan that ran on `inputs` (GPU tensors) through
    `launched`; None where a launch did not go through torch's static
    launcher (the interpreter, or a kernel it does not take), which a
    native host program cannot make."""
    if not inputs or not all(t.is_cuda for t in inputs):
        return None
    steps = []
    for launch, binary in zip(plan.launches, launched, strict=True):
        if binary is None or not isinstance(binary[2], StaticLaunch):
            return None
        parameters = launch.kernel.parameters
        rest = tuple(launch.keywords[name] for name in parameters[len(launch.values) :])
        values = tuple(("tensor", v.position) if isinstance(v, Slot) else v for v in launch.values) + rest
        grid = (*launch.grid, 1, 1)[:3]
        steps.append((grid, binary, values))
    return RecordedLaunches(
        inputs[0].get_device(),
        tuple(t.data_ptr() % 16 == 0 for t in inputs),
        plan.results,
        plan.temporaries,
        tuple(steps),
    )
