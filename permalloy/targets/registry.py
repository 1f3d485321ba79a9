"""
The kernel targets, listed in one place.

Every part of permalloy that depends on the target reads this list: the
backend (`options={"target": ...}`, the default target of a device, the
target's options and its host runtime), the default pipeline (the passes a
target adds), `permalloy-opt -t` (one output format per target that emits
source) and `permalloy-bench` (the target of a device). A new target is a
package that defines a `TargetDescriptor` (see `permalloy.targets.descriptor`)
and one more entry in `TARGETS`.
"""

from __future__ import annotations

from typing import Any

from permalloy.targets import KernelTarget, llvm, reference, triton
from permalloy.targets.descriptor import TargetDescriptor

TARGETS: tuple[TargetDescriptor, ...] = (llvm.TARGET, triton.TARGET, reference.TARGET)
"""Every kernel target, in the order listings show them."""


class UnknownTargetError(ValueError):
    """A target name that is not one of `available_targets()`."""


def available_targets() -> dict[str, TargetDescriptor]:
    """Every kernel target, by name."""
    return {target.name: target for target in TARGETS}


def target_names() -> str:
    """The valid target names, for error messages."""
    return ", ".join(sorted(available_targets()))


def target_descriptor(name: str) -> TargetDescriptor:
    """The target called `name`; an `UnknownTargetError` listing the valid ones
    otherwise."""
    target = available_targets().get(name)
    if target is None:
        raise UnknownTargetError(f"unknown target '{name}'; valid targets: {target_names()}")
    return target


def target_for_device(device: str) -> TargetDescriptor | None:
    """The target compiled for when a graph's tensors are on `device` and the
    user names none; None when no target runs there."""
    for target in TARGETS:
        if device in target.default_for:
            return target
    return None


def served_devices() -> set[str]:
    """The device types some target runs kernels on."""
    return {device for target in TARGETS for device in target.devices}


def kernel_target(name: str, mode: str = "default", **options: Any) -> KernelTarget:
    """A fresh code generator of the target called `name`, for a torch.compile
    `mode`, with the target's own `options` (checked)."""
    target = target_descriptor(name)
    checked = target.checked_options(options)
    return target.make(mode, **target.generator_options(checked))
