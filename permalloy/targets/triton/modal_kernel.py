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
    ModalKernel(plain_function, **options)  # the same, for a function not decorated
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton

from permalloy.targets.triton import interpreter_enabled


class ModalKernel:
    """`function` as `triton.jit(**options)` makes it in the mode Triton is in
    now, made once per mode."""

    def __init__(self, function: Callable[..., Any], **options: Any):
        self.function = function
        self.options = options
        self._by_mode: dict[bool, Any] = {}

    def current(self) -> Any:
        """The `@triton.jit` function for the interpreter's present setting."""
        interpret = interpreter_enabled()
        made = self._by_mode.get(interpret)
        if made is None:
            made = self._by_mode[interpret] = triton.jit(self.function, **self.options)
        return made

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return self.current()[grid]

    def __repr__(self) -> str:
        return f"ModalKernel({self.function.__name__})"


def modal_jit(**options: Any) -> Callable[[Callable[..., Any]], ModalKernel]:
    """A decorator, as `triton.jit(**options)`, that makes a `ModalKernel`."""
    return lambda function: ModalKernel(function, **options)
