"""
Launching compiled Triton kernels directly, without Triton's JIT.

A call through a `@triton.jit` function binds its arguments, computes their
specialization, looks the compiled kernel up and reads Triton's settings each
time: tens of microseconds of host time, most of a small graph's run. Once a
kernel is compiled for a configuration and for its arguments' specialization
(sizes, and whether each pointer is 16-byte aligned), its launcher can be
called with the grid, the stream and the arguments alone, as Inductor does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Launch = tuple[Callable[..., None], Any, Any]
"""A compiled kernel's launcher, CUDA function and packed metadata."""


def direct_launch_available() -> bool:
    """Whether compiled kernels can be launched directly: Triton's launchers take
    every parameter of the function, compile-time ones included (Triton 3.3
    and later, which dropped `AttrsDescriptor`), and no launch hook (a
    profiler's) is installed, which only Triton's own launch path calls.
    Read when a kernel is compiled: a hook installed later sees only first calls."""
    import torch
    import triton.backends.compiler
    import triton.compiler.compiler

    if not hasattr(torch._C, "_cuda_getCurrentRawStream"):  # noqa: SLF001 - a build without CUDA
        return False
    if hasattr(triton.backends.compiler, "AttrsDescriptor") or hasattr(triton.compiler.compiler, "AttrsDescriptor"):
        return False
    try:
        from triton import knobs
    except ImportError:
        return False
    return not (_installed(knobs.runtime.launch_enter_hook) or _installed(knobs.runtime.launch_exit_hook))


def _installed(hook: Any) -> bool:
    """Whether a launch hook does anything: set, or a chain of hooks holding one."""
    return hook is not None and bool(getattr(hook, "calls", True))


def compiled_launches(kernels: Sequence[Any]) -> list[Launch] | None:
    """The launcher, function and metadata of each of Triton's compiled
    `kernels` (loaded on the current device); None if one is missing."""
    launches = []
    for kernel in kernels:
        run = getattr(kernel, "run", None)  # loads the binary on first use
        function = getattr(kernel, "function", None)
        metadata = getattr(kernel, "packed_metadata", None)
        if run is None or function is None or metadata is None:
            return None
        launches.append((run, function, metadata))
    return launches


def current_stream() -> Callable[[int], int]:
    """The function giving the current CUDA stream of a device index (as Triton
    launches on it: captured CUDA graphs record onto their capture stream)."""
    import torch

    return torch._C._cuda_getCurrentRawStream  # noqa: SLF001
