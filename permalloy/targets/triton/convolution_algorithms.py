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
the search is on while a graph compiles, so that the pipeline's timings of
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

from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch

from permalloy.targets.triton import CONVOLUTION_ALGORITHMS

CONVOLUTION_OPS = frozenset({"ptensor.convolution", "ptensor.convolution_backward"})
"""The library ops that run cuDNN convolutions on a GPU."""


def searching_algorithms(run: Callable[..., Any]) -> Callable[..., Any]:
    """`run`, called with cuDNN's algorithm search on and the previous
    setting put back after, however the call ends."""
    read, write = torch._C._get_cudnn_benchmark, torch._C._set_cudnn_benchmark  # noqa: SLF001

    def run_searching(*args: Any, **kwargs: Any) -> Any:
        previous = read()
        write(True)
        try:
            return run(*args, **kwargs)
        finally:
            write(previous)

    return run_searching


def convolution_settings(
    options: Mapping[str, Any], library_ops: Collection[str] | None
) -> Callable[[Callable[..., Any]], Callable[..., Any]] | None:
    """The Triton target's library settings (`TargetDescriptor.library_settings`):
    the algorithm search where the options measure algorithms and the graph
    calls convolutions (or may: `library_ops` None, while compiling)."""
    if options.get("convolution_algorithms", CONVOLUTION_ALGORITHMS[0]) != "measured":
        return None
    if library_ops is not None and not CONVOLUTION_OPS.intersection(library_ops):
        return None
    return searching_algorithms
