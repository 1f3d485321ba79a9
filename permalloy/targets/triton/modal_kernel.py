"""
Hand-written Triton kernels made for the mode Triton is in when they launch.

`@triton.jit` decides when it decorates a function whether the function is
compiled for a GPU or run by Triton's CPU interpreter (`TRITON_INTERPRET=1`).
A kernel decorated at import would keep the mode of whoever imported its
module first: a GPU kernel, which cannot launch on CPU tensors, where the
interpreter was switched on later (as a test does), or an interpreted one
where it was switched off. `ModalKernel` decorates the plain function on its
first launch in each mode instead, and keeps both.

    @modal_jit(do_not_specialize=["height"])
    def kernel(X, OUT, height, BLOCK: tl.constexpr): ...

    kernel[grid](x, out, height, BLOCK=64)  # as a `@triton.jit` function
    kernel.launch(grid, x, out, height, BLOCK=64, num_warps=4)  # the same, faster on a GPU
    ModalKernel(plain_function, **options)  # the same, for a function not decorated

On a GPU, `launch` keeps each compiled binary's launcher by the arguments'
specialization (their integers, element types and pointer alignments, as
Triton's JIT specializes a kernel) and calls it directly when the same
specialization launches again: Triton's JIT binds and keys the arguments on
every call, tens of microseconds of host time a launch, the whole time of a
small kernel.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import triton

from permalloy.targets.triton import interpreter_enabled
from permalloy.targets.triton.direct import Launch, compiled_launches, current_stream, direct_launch_available


LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})
"""Keywords of a launch that are Triton's options, not the kernel's parameters."""


class ModalKernel:
    """`function` as `triton.jit(**options)` makes it in the mode Triton is in
    now, made once per mode."""

    def __init__(self, function: Callable[..., Any], **options: Any):
        self.function = function
        self.options = options
        self._by_mode: dict[bool, Any] = {}
        self.parameters = tuple(inspect.signature(function).parameters)
        """The names of the function's parameters, in order."""
        self._direct: dict[tuple, tuple] = {}
        """Compiled launchers on GPUs by the arguments' specialization."""

    def current(self) -> Any:
        """The `@triton.jit` function for the interpreter's present setting."""
        interpret = interpreter_enabled()
        made = self._by_mode.get(interpret)
        if made is None:
            made = self._by_mode[interpret] = triton.jit(self.function, **self.options)
        return made

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return self.current()[grid]

    def launch(self, grid: Sequence[int], *args: Any, **keywords: Any) -> Launch | None:
        """`self[grid](*args, **keywords)`, through the compiled binary's
        launcher where an earlier launch on a GPU had the same specialization
        (`args` the leading parameters, `keywords` the rest and Triton's
        launch options, such as `num_warps`). The binary's launch (launcher,
        CUDA function, metadata) where it has a direct one, else None."""
        if interpreter_enabled():
            self.current()[grid](*args, **keywords)
            return None
        key = (tuple(map(_specialization, args)), tuple(keywords.items()))
        direct = self._direct.get(key)
        if direct is not None:
            run, function, metadata, device, stream = direct
            x, y, z = (*grid, 1, 1)[:3]
            rest = tuple(keywords[name] for name in self.parameters[len(args) :])
            run(x, y, z, stream(device), function, metadata, None, None, None, *args, *rest)
            return run, function, metadata
        compiled = self.current()[grid](*args, **keywords)
        devices = [arg.get_device() for arg in args if hasattr(arg, "data_ptr")]
        given = set(self.parameters[len(args) :])
        if not given <= set(keywords) or set(keywords) - given - LAUNCH_OPTIONS or not devices:
            return None
        launches = compiled_launches([compiled], devices[0]) if direct_launch_available() else None
        if launches is None:
            return None
        self._direct[key] = (*launches[0], devices[0], current_stream())
        return launches[0]

    def __repr__(self) -> str:
        return f"ModalKernel({self.function.__name__})"


def cdiv(numerator: int, denominator: int) -> int:
    """`triton.cdiv` of Python integers for a launch's grid, without Triton's
    function-call machinery (several microseconds a call in Triton 3.9)."""
    return -(-numerator // denominator)


def _specialization(argument: Any) -> Any:
    """What of an argument a compiled kernel depends on: a tensor's element
    type, device and 16-byte alignment, an integer's value (Triton
    specializes integers equal to 1 and multiples of 16), a float's type, a
    boolean's type and value."""
    if hasattr(argument, "data_ptr"):
        return (argument.dtype, argument.device, argument.data_ptr() % 16 == 0)
    if isinstance(argument, float):
        return float
    if isinstance(argument, bool):  # a parameter of its own type, though True == 1
        return (bool, argument)
    return argument


def modal_jit(**options: Any) -> Callable[[Callable[..., Any]], ModalKernel]:
    """A decorator, as `triton.jit(**options)`, that makes a `ModalKernel`."""
    return lambda function: ModalKernel(function, **options)
