"""The kernel targets by name, as `options={"target": ...}` and `-t` name them."""

from __future__ import annotations

from collections.abc import Callable

from permalloy.targets import KernelTarget


def _llvm(mode: str = "default") -> KernelTarget:
    from permalloy.targets.llvm import LLVMTarget

    return LLVMTarget()


def _triton(mode: str = "default") -> KernelTarget:
    from permalloy.targets.triton import TritonTarget

    return TritonTarget(mode=mode)


def _reference(mode: str = "default") -> KernelTarget:
    from permalloy.targets.reference import ReferenceTarget

    return ReferenceTarget()


def available_targets() -> dict[str, Callable[..., KernelTarget]]:
    """Every kernel target, by name, with a factory."""
    return {"llvm": _llvm, "triton": _triton, "reference": _reference}


class UnknownTargetError(ValueError):
    """A target name that is not one of `available_targets()`."""


def kernel_target(name: str, mode: str = "default") -> KernelTarget:
    """A fresh instance of the target called `name`, for a torch.compile `mode`."""
    factories = available_targets()
    if name not in factories:
        raise UnknownTargetError(
            f"unknown target '{name}'; valid targets: {', '.join(sorted(factories))}"
        )
    return factories[name](mode=mode)
