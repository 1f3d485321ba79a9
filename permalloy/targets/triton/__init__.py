"""
The `triton` kernel target: each `buffer.kernel` as a generated Python module
holding one `@triton.jit` function and its launcher.

- `plan`: stages, groups of stages sharing rows, tiles and temporaries;
- `stages`, `body`, `arith`, `math_ops`, `reductions`, `scans`, `scatters`,
  `sorts`: the kernel's statements;
- `compat`: helpers that run on GPUs (libdevice) and in Triton's interpreter;
- `module`: the module text; `target`: compilation, loading and launching;
- `configs`, `autotune`: block sizes and warps, benchmarked on first call on
  a GPU and remembered on disk.

Kernels run on CUDA tensors, or on CPU tensors under Triton's interpreter
(`TRITON_INTERPRET=1`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Collection, Mapping
from typing import Any

from permalloy.targets.descriptor import TargetDescriptor, TargetOption, boolean, one_of


def interpreter_enabled() -> bool:
    """Whether Triton runs kernels in its CPU interpreter (`TRITON_INTERPRET=1`)."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def _make(mode: str = "default", **options: Any):
    from permalloy.targets.triton.target import TritonTarget

    return TritonTarget(mode=mode, **options)


def _unsupported_errors() -> tuple[type[Exception], ...]:
    from permalloy.targets.triton.types import UnsupportedKernelError

    return (UnsupportedKernelError,)


def _input_problem(devices: set[str]) -> str | None:
    """CUDA tensors (with 0-d CPU ones beside them), or CPU tensors under
    Triton's interpreter."""
    if "cpu" in devices and "cuda" not in devices and not interpreter_enabled():
        return (
            "target 'triton' runs on CUDA tensors; these inputs are on the CPU "
            "(use target 'llvm', or set TRITON_INTERPRET=1 for Triton's CPU interpreter)"
        )
    foreign = sorted(devices - {"cpu", "cuda"})
    if foreign:
        return f"target 'triton' runs on CUDA tensors; these inputs are on {', '.join(foreign)}"
    return None


CONVOLUTION_ALGORITHMS = ("measured", "torch")
"""The values of the `convolution_algorithms` option: the search (the
default) and torch's setting."""


def _library_settings(
    options: Mapping[str, Any], library_ops: Collection[str] | None
) -> Callable[[Callable[..., Any]], Callable[..., Any]] | None:
    """cuDNN's algorithm search, by the `convolution_algorithms` option
    (`convolution_algorithms`, which imports torch, imported when called)."""
    from permalloy.targets.triton.convolution_algorithms import convolution_settings

    return convolution_settings(options, library_ops)


def _host_runtime(run, mode: str, updated: tuple[int, ...] = ()):
    """`reduce-overhead` replays the graph as a CUDA graph after a warm-up
    (`updated`: the arguments the graph writes)."""
    if mode != "reduce-overhead":
        return run
    from permalloy.targets.cuda_graph import CudaGraphRunner

    return CudaGraphRunner(run, updated=updated)


TARGET = TargetDescriptor(
    name="triton",
    summary="GPU kernels: generated Triton modules (CPU tensors under TRITON_INTERPRET=1)",
    make=_make,
    devices=("cuda",),
    default_for=("cuda",),
    tensor_passes=("unfuse-bias-add", "pad-products", "scatter-embedding-gradients"),
    optional_passes={
        "attention": {
            "auto": "fuse-attention{kernel=triton precisions=half}",
            "torch": "fuse-attention",
            "triton": "fuse-attention{kernel=triton}",
            "measured": "fuse-attention{kernel=measured}",
        }
    },
    loop_passes=("split-reductions",),
    buffer_passes=(
        "plan-layouts{convolutions=measured device=cuda}",
        "convolutions-as-products{choose=measured device=cuda}",
    ),
    optional_buffer_passes={
        "depthwise_convolutions": {
            "measured": "choose-depthwise-kernels{choose=measured device=cuda}",
            "triton": "choose-depthwise-kernels{choose=always}",
        },
        "depthwise_weight_gradients": {
            "measured": "choose-depthwise-weight-gradients{choose=measured device=cuda}",
            "triton": "choose-depthwise-weight-gradients{choose=always}",
        },
    },
    fusion_options="instruction-math=true",
    atomic_scatters=True,
    sort_limits=(4096, 32),
    matmul_templates=True,
    source_extension="py",
    unsupported_errors=_unsupported_errors,
    options={
        "autotune": TargetOption(
            "True (default): benchmark launch configurations on first call; False: take the first",
            boolean,
        ),
        "matmul_templates": TargetOption(
            "False (default): matrix products are library calls; True: half-precision products are "
            "contractions with their fused prologues and epilogues, run by a tiled template or by the "
            "library, whichever is faster at each size",
            boolean,
        ),
        "attention": TargetOption(
            "how attention written as its math (products around a softmax) runs: 'auto' (default), "
            "permalloy's flash-attention kernel in float16 and bfloat16 and the math in float32; 'math', "
            "two library products around one fused softmax kernel; 'torch', torch's fused attention (a row "
            "whose scores are all -inf gives zeros where the math gives NaN); 'triton', permalloy's "
            "flash-attention kernel (NaN there, as the math); 'measured', on a GPU the faster of the two "
            "at each size, timed on the first call (torch's without a GPU)",
            one_of("auto", "math", "torch", "triton", "measured"),
            default="auto",
        ),
        "depthwise_convolutions": TargetOption(
            "how 2-d depthwise convolutions (one filter per channel) run: 'library' (default), cuDNN's "
            "kernels; 'measured', permalloy's depthwise kernel where its best tile times faster than "
            "the library in the program's layouts (timed when compiling); 'triton', permalloy's kernel "
            "for every one it takes",
            one_of("library", "measured", "triton"),
        ),
        "depthwise_weight_gradients": TargetOption(
            "how the weight gradients of 2-d depthwise convolutions are computed in training: "
            "'measured' (default), permalloy's weight-gradient kernel where its best channel block times faster "
            "than the library in the program's layouts (timed when compiling); 'library', cuDNN's "
            "kernels; 'triton', permalloy's kernel for every one it takes",
            one_of("measured", "library", "triton"),
            default="measured",
        ),
        "convolution_algorithms": TargetOption(
            "how cuDNN picks each convolution's algorithm: 'measured' (default), cuDNN times its "
            "algorithms on a convolution's first call at each size (its search, on while compiling and "
            "during each call of a graph with convolutions) and keeps the fastest; 'torch', by "
            "torch.backends.cudnn.benchmark (off: cuDNN's heuristics)",
            one_of(*CONVOLUTION_ALGORITHMS),
            default=CONVOLUTION_ALGORITHMS[0],
        ),
    },
    check_inputs=_input_problem,
    host_runtime=_host_runtime,
    library_settings=_library_settings,
    library_options=("convolution_algorithms",),
)
"""The `triton` target, as the registry lists it. On GPUs, products with a bias
that elementwise ops read become plain products (`unfuse-bias-add`),
half-precision products of unaligned sizes multiply padded operands
(`pad-products`), and reductions with few results split in two for
parallelism (`split-reductions`);
scatters combine with atomics, so that deterministic algorithms keep float
sums and products of scatters for torch; rows of at most 4096 elements of at
most 32 bits sort in registers, other sorts run with torch; with the
`matmul_templates` option, half-precision matrix products are contractions,
run by a tiled template with their fused prologues and epilogues or by the
library, whichever is faster; attention written as its math runs, by
default, as permalloy's flash kernel in half precision (`fuse-attention`;
on an H200 GPT-2 and BERT in bfloat16 ran 1.2-1.3x faster so than as the
math, while in float32 the math's library products are faster, and it stays),
and the `attention` option chooses the math, torch's fused attention or the
flash kernel for every precision instead; the `depthwise_convolutions` option
runs 2-d depthwise convolutions with permalloy's depthwise kernel where it
times faster than cuDNN, or always (`choose-depthwise-kernels`), which made
no model measured on an H200 faster (ARCHITECTURE.md); with the
`convolution_algorithms` option at its default, cuDNN times its algorithms
for each convolution a graph runs (`convolution_algorithms`)."""


def __getattr__(name: str) -> Any:
    """The code generator, imported on first use, so that reading `TARGET`
    does not load Triton."""
    if name == "TritonTarget":
        return importlib.import_module("permalloy.targets.triton.target").TritonTarget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CONVOLUTION_ALGORITHMS", "TARGET", "TritonTarget", "interpreter_enabled"]
