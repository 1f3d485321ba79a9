"""
Launching compiled Triton kernels directly, without Triton's JIT.

A call through a `@triton.jit` function binds its arguments, computes their
specialization, looks the compiled kernel up and reads Triton's settings each
time: tens of microseconds of host time, most of a small graph's run. Once a
kernel is compiled for a configuration and for its arguments' specialization
(sizes, and whether each pointer is 16-byte aligned), its launcher can be
called with the grid, the stream and the arguments alone, as Inductor does.

The launcher itself is torch's where the build has it
(`torch._C._StaticCudaLauncher`, the one Inductor uses): it loads the
kernel's binary and takes the arguments' types as a string, so one launcher
serves every kernel. Triton's own launcher is C source generated for each
kernel signature and built with the host's C compiler on first use, a third
of a second per signature, which a cold first call pays for every new
signature; it remains the launcher where torch's does not apply.
"""

from __future__ import annotations

import hashlib
import operator
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from permalloy.cache.files import cache_dir, write_bytes_atomically

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


def compiled_launches(kernels: Sequence[Any], device: int | None = None) -> list[Launch] | None:
    """The launcher, function and metadata of each of Triton's compiled
    `kernels` on GPU `device` (torch's static launcher where it applies,
    else Triton's, loaded on the current device); None if one is missing."""
    launches = []
    for kernel in kernels:
        static = static_launch(kernel, device) if device is not None else None
        if static is not None:
            launches.append(static)
            continue
        run = getattr(kernel, "run", None)  # loads the binary on first use
        function = getattr(kernel, "function", None)
        metadata = getattr(kernel, "packed_metadata", None)
        if run is None or function is None or metadata is None:
            return None
        launches.append((run, function, metadata))
    return launches


ARGUMENT_TYPES = {
    "i1": "i", "i8": "b", "i16": "h", "i32": "i", "i64": "l",
    "u1": "I", "u8": "B", "u16": "H", "u32": "I", "u64": "K",
    "fp16": "f", "bf16": "f", "fp32": "f", "f32": "f", "fp64": "d",
}  # fmt: skip
"""The static launcher's code of each scalar parameter type of a Triton
signature (pointers are `O`: a tensor, an address or None)."""


def static_launcher() -> Any:
    """torch's static launcher of CUDA kernels, None where the build has none."""
    import torch

    return getattr(torch._C, "_StaticCudaLauncher", None)  # noqa: SLF001


def launched_parameters(kernel: Any) -> tuple[list[int], str] | None:
    """The positions (among every parameter of the `@triton.jit` function) of
    the values a compiled `kernel`'s binary takes, and their static-launcher
    type codes: compile-time parameters, and values Triton specialized into
    constants (an integer equal to 1), are not passed. None for a parameter
    type the static launcher does not take (tensor descriptors)."""
    signature = getattr(getattr(kernel, "src", None), "signature", None)
    if not isinstance(signature, dict):
        return None
    constants = set()
    for key in getattr(kernel.src, "constants", {}) or {}:
        position = key[0] if isinstance(key, tuple) else key
        constants.add(list(signature).index(position) if isinstance(position, str) else position)
    positions, types = [], ""
    for position, kind in enumerate(signature.values()):
        if kind == "constexpr" or position in constants:
            continue
        code = "O" if kind.startswith("*") else ARGUMENT_TYPES.get(kind)
        if code is None:
            return None
        positions.append(position)
        types += code
    return positions, types


def static_launch(kernel: Any, device: int) -> Launch | None:
    """`kernel` (compiled by Triton, not yet loaded) as a launch through
    torch's static launcher, loaded on GPU `device`: a function taking the
    arguments of Triton's launcher (grid, stream, function, metadata, three
    hooks, every parameter), so that generated launchers call either alike,
    the function, and in the metadata's place (which the function ignores)
    the `StaticLaunch`, which native host programs read.
    None where the static launcher does not apply: no such launcher, a
    kernel spanning several blocks' clusters, cooperative or programmatic
    launches, scratch memory, or a parameter type it does not take."""
    launcher = static_launcher()
    metadata = getattr(kernel, "metadata", None)
    parameters = launched_parameters(kernel)
    if launcher is None or metadata is None or parameters is None:
        return None
    if getattr(metadata, "num_ctas", 1) != 1 or getattr(metadata, "launch_cooperative_grid", False):
        return None
    if getattr(metadata, "launch_pdl", False) or getattr(metadata, "tensordesc_meta", None):
        return None
    scratch = [name for name in ("global_scratch_size", "profile_scratch_size") if hasattr(metadata, name)]
    if any(getattr(metadata, name) for name in scratch):
        return None
    path = _binary_path(kernel)
    if path is None:
        return None
    positions, types = parameters
    return loaded_launch(
        launcher, path, metadata.name, metadata.num_warps, metadata.shared, types, positions, len(scratch), device
    )


def loaded_launch(
    launcher: Any,
    binary: str,
    name: str,
    warps: int,
    shared: int,
    types: str,
    positions: Sequence[int],
    scratch: int,
    device: int,
) -> Launch:
    """The function `name` of the binary file `binary` loaded on GPU
    `device` through torch's static `launcher`, as a launch (`static_launch`);
    the launcher's error where it does not load."""
    loaded = launcher._load_kernel(binary, name, shared, device)  # noqa: SLF001
    function = loaded[-3]  # (module,) function, registers, spills
    launch = StaticLaunch(function, warps, shared, types, tuple(positions), scratch, binary, name)
    return launch.run, function, launch


@dataclass
class StaticLaunch:
    """A compiled kernel launched through torch's static launcher: `run`
    takes the arguments of Triton's launcher (grid, stream, function,
    metadata, three hooks, every parameter), so that generated launchers call
    either alike; the fields are what a native host program launches it with."""

    function: int
    """The loaded CUDA function."""
    warps: int
    shared: int
    """Bytes of dynamic shared memory."""
    types: str
    """The static launcher's code of each value passed (`O` a pointer, `i` an
    i32, `l` an i64, ...), not counting the scratch buffers."""
    positions: tuple[int, ...]
    """The position of each value passed among the function's parameters."""
    scratch: int
    """The scratch buffers the binary takes, each passed a null pointer last."""
    binary: str = ""
    """The file of the binary (`binaries.py` keeps it for later processes)."""
    name: str = ""
    """The binary's function name."""

    def __post_init__(self) -> None:
        launch_kernel = static_launcher()._launch_kernel  # noqa: SLF001
        warps, shared, types = self.warps, self.shared, self.types + "O" * self.scratch
        passed = _picker(self.positions)
        unused = (None,) * self.scratch

        def run(grid_x, grid_y, grid_z, stream, function, _metadata, _launch_metadata, _enter, _exit, *values):
            launch_kernel(function, grid_x, grid_y, grid_z, warps, shared, types, passed(values) + unused, stream)

        self.run = run


def _picker(positions: Sequence[int]) -> Callable[[tuple], tuple]:
    """The function taking the values at `positions` out of a tuple, as a tuple."""
    if len(positions) > 1:
        return operator.itemgetter(*positions)
    if positions:
        (position,) = positions
        return lambda values: (values[position],)
    return lambda values: ()


def _binary_path(kernel: Any) -> str | None:
    """The file holding a compiled kernel's CUDA binary: Triton's cache
    entry where it still exists, else a file of its bytes under permalloy's
    cache (a kernel Triton keeps in memory may come from a cache directory
    since removed, as when `TRITON_CACHE_DIR` changes within a process)."""
    for name, path in (getattr(kernel, "metadata_group", None) or {}).items():
        if name.endswith(".cubin") and os.path.exists(path):
            return path
    binary = (getattr(kernel, "asm", None) or {}).get("cubin")
    if not isinstance(binary, bytes):
        return None
    path = cache_dir() / "triton" / "binaries" / f"{hashlib.sha256(binary).hexdigest()[:32]}.cubin"
    if not path.exists():
        write_bytes_atomically(path, binary)
    return str(path)


def current_stream() -> Callable[[int], int]:
    """The function giving the current CUDA stream of a device index (as Triton
    launches on it: captured CUDA graphs record onto their capture stream)."""
    import torch

    return torch._C._cuda_getCurrentRawStream  # noqa: SLF001
