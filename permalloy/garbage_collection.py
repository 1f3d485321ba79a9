"""
Python's cycle collector paused while permalloy compiles.

A compile allocates hundreds of thousands of short-lived objects (IR ops,
attributes, sympy expressions, LLVM IR values) while torch's and the model's
objects keep the heap large, so each full collection the allocations trigger
walks everything: collections took 0.8 s of MobileNetV2's 5.5 s first call on
the CPU, and pausing them in the backend saves 0.5 s of it. The compile's
garbage waits for the collections that follow.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def garbage_collection_paused() -> Iterator[None]:
    """The cycle collector off inside the block, and after it as it was
    before (a caller that had turned it off keeps it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
