"""
Native host programs: a compiled graph's host function as machine code.

The Python host program (`targets.host`) runs a call line by line; for a
graph of a hundred launches and library calls that is most of a small
call's time. A native host program is the same function emitted as LLVM IR
over torch's C shim (`emitter`), compiled with llvmlite and called once from
Python per call (`program`). On the CPU it calls the LLVM target's kernels
directly; on a GPU it launches the Triton target's compiled CUDA functions
with the driver, from the second call (the first chooses and compiles each
kernel's launch; its image is kept beside the graph's compiled-graph entry
for later processes whose first call chose the same launches, `image`).
The Python program stays the readable form (`host.py` in
dumps, beside `host.ll`) and runs wherever the native one does not apply:
the Triton interpreter, an op or element type the emitter does not take, or
a libtorch without the shim.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Protocol

import llvmlite.binding as llvm
import torch
from xdsl.dialects import func
from xdsl.ir import Operation

from permalloy.garbage_collection import garbage_collection_paused
from permalloy.targets.llvm.jit import JIT, HostMachine
from permalloy.targets.native.emitter import NativeHostEmitter, NativeHostSource, NativeHostUnsupported
from permalloy.targets.native.image import (
    NativeHostImage,
    NativeImageMismatch,
    launch_facts,
    native_host_image,
    native_host_source,
)
from permalloy.targets.native.program import NativeHost
from permalloy.targets.native.shim import load_shim
from permalloy.targets.workspace import KeptWorkspace


class KeptImages(Protocol):
    """Where GPU native host programs' images are kept between processes,
    by the digest of the launches they were emitted for (the compiled-graph
    cache's `NativeImageFiles`); images as `NativeHostImage.to_json` dicts."""

    def read(self, facts: str) -> dict[str, Any] | None: ...

    def write(self, facts: str, image: dict[str, Any]) -> None: ...

    def report_unusable(self, facts: str, reason: str) -> None: ...


def native_host(
    function: func.FuncOp,
    launches: dict[Operation, tuple[Any, list[str]]],
    target: Any,
    python: Callable[..., tuple],
    device: torch.device,
    workspace: KeptWorkspace | None = None,
    image: NativeHostImage | None = None,
    facts: str = "",
) -> NativeHost | None:
    """The native host program of a buffer-level function whose launches
    `launches` compiled, for `target`, computing on `device`; None where it
    does not apply. `python` is the function's Python host program, which
    runs a call again where the native one fails in torch's shim (to raise
    torch's error). `workspace` is what the program keeps between calls on
    the CPU (`targets.workspace`), shared with the Python program. With
    `image` (a program the compiled-graph cache kept), its object code
    is loaded instead of emitting and compiling the program
    (`NativeImageMismatch` where it does not fit the function); a program
    emitted here carries its image (on a GPU, made for the launches of
    digest `facts`)."""
    shim = load_shim()
    if shim is None:
        return None
    jit = getattr(target, "jit", None) or JIT(HostMachine())
    for name, address in shim.addresses.items():
        llvm.add_symbol(name, address)
    if image is not None:
        source = native_host_source(image, function, launches, workspace)
        address = jit.load_object(image.code, image.entry)
        return NativeHost(source, address, device, owner=jit, python=python, image=image)
    entry = jit.fresh_name("permalloy_host")
    emitter = NativeHostEmitter(
        function, launches, shim, entry=entry, device=device.type, triple=jit.host.triple, workspace=workspace
    )
    try:
        emitted = emitter.emit()
    except NativeHostUnsupported:
        return None
    address, code = jit.load(emitted.source, entry, optimize=False)
    stored = native_host_image(emitted, function, launches, code, entry, facts)
    return NativeHost(emitted, address, device, owner=jit, python=python, image=stored)


def attach_native_host(
    program: Any,
    function: func.FuncOp,
    launches: dict[Operation, tuple[Any, list[str]]],
    target: Any,
    workspace: KeptWorkspace | None = None,
    image: NativeHostImage | None = None,
    kept: KeptImages | None = None,
) -> None:
    """Have the calls of `program` (a `HostProgram`) run a native host program
    where one applies: on the CPU at once (loaded from `image`, the one the
    compiled-graph cache kept, where given); on a GPU from the second call, once
    the first has chosen and compiled each kernel's launch, whose binaries the
    native program launches (loaded from `kept` where it holds an image made
    for the same launches, and kept there otherwise); under Triton's
    interpreter, never."""
    device = getattr(target, "device", "cpu")
    python = program.python_function
    if getattr(target, "interpret", False):
        return
    if device == "cpu":
        hosted = native_host(function, launches, target, python, torch.device("cpu"), workspace, image)
        if hosted is not None:
            program.use_native(hosted)
        return
    if device != "cuda" or load_shim() is None:
        return

    def first_call(*args: Any) -> tuple:
        with garbage_collection_paused():
            results = python(*args)
            program.function = python
            gpu = next((a.device for a in args if isinstance(a, torch.Tensor) and a.is_cuda), None)
            try:
                hosted = None if gpu is None else _gpu_native_host(function, launches, target, python, gpu, kept)
            except Exception as error:  # noqa: BLE001 - the Python host program goes on running the calls
                warnings.warn(
                    f"permalloy could not build a native host program ({type(error).__name__}: {error}); "
                    "the Python host program runs the calls",
                    stacklevel=2,
                )
                return results
        if hosted is not None:
            program.use_native(hosted)
        return results

    program.function = first_call


def _gpu_native_host(
    function: func.FuncOp,
    launches: dict[Operation, tuple[Any, list[str]]],
    target: Any,
    python: Callable[..., tuple],
    device: torch.device,
    kept: KeptImages | None,
) -> NativeHost | None:
    """The GPU native host program for the launches the first call chose:
    loaded from the image `kept` holds for them, else emitted (and its image
    kept). An image that does not load is reported and replaced."""
    if kept is None:
        return native_host(function, launches, target, python, device)
    facts = launch_facts(function, launches)
    stored = kept.read(facts)
    if stored is not None:
        try:
            image = NativeHostImage.from_json(stored)
            if image.facts != facts:
                raise NativeImageMismatch("it was made for other launches")
            return native_host(function, launches, target, python, device, image=image)
        except (NativeImageMismatch, KeyError, TypeError, ValueError, RuntimeError) as error:
            kept.report_unusable(facts, f"not loadable ({type(error).__name__}: {error})")
    hosted = native_host(function, launches, target, python, device, facts=facts)
    if hosted is not None and hosted.image is not None:
        kept.write(facts, hosted.image.to_json())
    return hosted


__all__ = [
    "KeptImages",
    "NativeHost",
    "NativeHostImage",
    "NativeHostSource",
    "NativeHostUnsupported",
    "NativeImageMismatch",
    "attach_native_host",
    "native_host",
]
