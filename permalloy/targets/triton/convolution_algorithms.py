"""
cuDNN's algorithm search for the convolutions of compiled graphs.

torch picks each cuDNN convolution's algorithm by cuDNN's heuristics unless
`torch.backends.cudnn.benchmark` is on; then cuDNN times its algorithms on
the first call at a size and keeps the fastest. Either way torch remembers
the algorithm of each convolution (its sizes, memory layout, data type,
pointer alignment and whether deterministic or TF32 algorithms were asked
for) in a cache of the calling thread, and every later call there with the
same facts runs it, whatever the setting is then.

With the Triton target's `convolution_algorithms="measured"` (the default),
the search is on while a graph's passes run (a compile that the
compiled-graph cache does not answer), so that the pipeline's timings of
convolutions (`plan-layouts`, `convolutions-as-products`, the depthwise
kernel choices) compare against cuDNN's fastest algorithm, and during every
call of a compiled graph that runs a cuDNN convolution; the user's setting is
put back after each. With `"torch"` torch's setting decides. On an H200
(float32, TF32 off) eager's convolutions ran 1.02-1.63x faster with the
search than with the heuristics over the models suite's convolutional
networks (README).

The cache being torch's, a convolution that eager or another compiled graph
already ran in the same thread, at the same facts, keeps the algorithm it
got then: the search happens only for a convolution torch has not seen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch

from permalloy.targets.triton import CONVOLUTION_ALGORITHMS

CONVOLUTION_OPS = frozenset({"ptensor.convolution", "ptensor.convolution_backward"})
"""The library ops that run cuDNN convolutions on a GPU."""


class SearchSetting:
    """torch's cuDNN benchmark setting, on while any call that searches runs.

    The setting is one for the process, while calls may run in several
    threads at once: the first call in saves the user's value and turns the
    search on, the last call out puts the value back (eager convolutions that
    other threads run meanwhile search too). torch's setter is called
    directly, as `torch.backends.cudnn.flags()` would also reset the
    deterministic and TF32 settings."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        """The calls inside."""
        self.saved = False
        """The user's value, while any call runs."""

    def enter(self) -> None:
        with self.lock:
            if self.running == 0:
                self.saved = torch._C._get_cudnn_benchmark()  # noqa: SLF001
                torch._C._set_cudnn_benchmark(True)  # noqa: SLF001
            self.running += 1

    def leave(self) -> None:
        with self.lock:
            self.running -= 1
            if self.running == 0:
                torch._C._set_cudnn_benchmark(self.saved)  # noqa: SLF001


SEARCH_SETTING = SearchSetting()
"""The process's one record of who turned the search on: state of the
process, as the setting it guards is."""


def searching_algorithms(run: Callable[..., Any]) -> Callable[..., Any]:
    """`run`, called with cuDNN's algorithm search on and the user's setting
    back after the last call that searches, however the calls end."""

    def run_searching(*args: Any, **kwargs: Any) -> Any:
        SEARCH_SETTING.enter()
        try:
            return run(*args, **kwargs)
        finally:
            SEARCH_SETTING.leave()

    return run_searching


def convolution_settings(
    options: Mapping[str, Any], library_ops: Collection[str] | None
) -> Callable[[Callable[..., Any]], Callable[..., Any]] | None:
    """The Triton target's library settings (`TargetDescriptor.library_settings`):
    the algorithm search where the options measure algorithms and the graph
    calls convolutions (or may: `library_ops` None, while compiling)."""
    measured, _ = CONVOLUTION_ALGORITHMS
    if options.get("convolution_algorithms", measured) != measured:
        return None
    if library_ops is not None and not CONVOLUTION_OPS.intersection(library_ops):
        return None
    return searching_algorithms
