"""
Native host programs: a compiled graph's host function as machine code.

The Python host program (`targets.host`) runs a call line by line; for a
graph of a hundred launches and library calls that is most of a small
call's time. A native host program is the same function emitted as LLVM IR
over torch's C shim (`emitter`), compiled with llvmlite and called once from
Python per call (`program`). The Python program stays the readable form
(`host.py` in dumps, beside `host.ll`) and runs wherever the native one does
not apply: a target whose kernels have no native entry, an op or element
type the emitter does not take, or a libtorch without the shim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm
from xdsl.dialects import func
from xdsl.ir import Operation

from permalloy.targets.native.emitter import NativeHostEmitter, NativeHostSource, NativeHostUnsupported
from permalloy.targets.native.program import NativeHost
from permalloy.targets.native.shim import load_shim


def native_host(
    function: func.FuncOp,
    launches: dict[Operation, tuple[Any, list[str]]],
    target: Any,
    python: Callable[..., tuple],
) -> NativeHost | None:
    """The native host program of a buffer-level function whose launches
    `launches` compiled, for `target`; None where it does not apply.
    `python` is the function's Python host program, which runs a call again
    where the native one fails in torch's shim (to raise torch's error)."""
    address_of = getattr(target, "native_kernel_address", None)
    jit = getattr(target, "jit", None)
    shim = load_shim()
    if address_of is None or jit is None or shim is None or getattr(target, "device", "cpu") != "cpu":
        return None
    entry = jit.fresh_name("permalloy_host")
    try:
        emitted = NativeHostEmitter(function, launches, address_of, shim, entry=entry, triple=jit.host.triple).emit()
    except NativeHostUnsupported:
        return None
    for name, address in shim.addresses.items():
        llvm.add_symbol(name, address)
    address, _ = jit.load(emitted.source, entry)
    kernels = [address_of(k) for k in emitted.kernels]
    return NativeHost(emitted, address, kernels, "cpu", owner=jit, python=python)


__all__ = ["NativeHost", "NativeHostSource", "NativeHostUnsupported", "native_host"]
