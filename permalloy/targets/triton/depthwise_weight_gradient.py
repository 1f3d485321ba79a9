"""
The weight gradient of a depthwise 2-d convolution (one filter per channel)
as one Triton kernel and a sum of its partial results.

`grad_weight[c, 0, kh, kw]` is the sum, over images and output pixels, of the
output gradient times the input pixel that tap `(kh, kw)` read. Each program
takes `BLOCK_C` channels and a run of output pixels; for each pixel it loads
the pixel's output gradient and the window of input pixels its taps read
(zeros outside the image), a `[taps, BLOCK_C]` block, and adds their product
to a `[taps, BLOCK_C]` accumulator in float32: every tap has its own row, so
nothing is reduced across threads until the end. The window's loads are
those of the forward kernel, and neighbouring pixels' windows overlap, so
most come from the cache. The programs' partial sums (`[programs, channels,
taps]`, a row per run of pixels) are then added in one reduction, in a fixed order, so results are
deterministic. Tensors are read through their strides: NCHW and
channels-last memory alike, with channel blocks for each
(`candidate_configs`).

    geometry = Geometry(stride, padding, dilation)
    grad_weight = depthwise_weight_gradient(grad_output, x, weight, geometry)  # None: not supported
    config = fastest_config(grad_output, x, weight, geometry, timer)  # None: the library's is faster
    futures = precompile(grad_output, x, weight, geometry)  # every candidate, compiled by the workers

cuDNN computes this gradient with a direct kernel for grouped convolutions
that does not use the parallelism of the pixels: on an H200 it took 5.1 ms
of a 20 ms training step of timm's ConvNeXt-atto.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from permalloy.targets.triton.depthwise_convolution import (
    Geometry,
    is_channels_last,
    supported as forward_supported,
)
from permalloy.targets.triton import depthwise_weight_gradient_kernel as kernel_module, interpreter_enabled
from permalloy.targets.triton.compile_workers import compile_requests, shared_compile_workers
from permalloy.targets.triton.configs import pow2_ceil
from permalloy.targets.triton.modal_kernel import ModalKernel, cdiv

triton_depthwise_convolution_weight_gradient = ModalKernel(
    kernel_module.triton_depthwise_convolution_weight_gradient, **kernel_module.JIT_OPTIONS
)
"""The kernel, made for the mode Triton is in when it launches."""

PROGRAMS = 1024
"""About how many programs share a gradient's pixels and channels: enough to
fill a GPU several times over, few enough that the partial sums stay small."""


WIDE_PIXELS = 2**31
"""From how many pixels (rounded up to whole runs) the kernel indexes them
in 64 bits."""


@dataclass(frozen=True)
class WeightGradientConfig:
    """`block_c` channels per program, run by `num_warps` warps."""

    block_c: int
    num_warps: int = 4


CHANNELS_LAST_CONFIGS = (
    WeightGradientConfig(32),
    WeightGradientConfig(64),
    WeightGradientConfig(16, 2),
    WeightGradientConfig(128, 8),
)
"""Channel blocks for channels-last memory, where a block's channels are
adjacent."""
NCHW_CONFIGS = (
    WeightGradientConfig(16, 2),
    WeightGradientConfig(32),
)
"""Channel blocks for NCHW memory."""


def candidate_configs(x: torch.Tensor) -> tuple[WeightGradientConfig, ...]:
    """The channel blocks worth timing for input `x`."""
    return CHANNELS_LAST_CONFIGS if is_channels_last(x) else NCHW_CONFIGS


def supported(grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, geometry: Geometry) -> bool:
    """Whether `depthwise_weight_gradient` takes these tensors: those the
    forward kernel takes (`depthwise_convolution.supported`), with an output
    gradient of the forward result's sizes and type."""
    if not forward_supported(x, weight, None, geometry):
        return False
    sizes = [geometry.output_size(d, x.size(2 + d), weight.size(2 + d)) for d in range(2)]
    return grad_output.shape == (*x.shape[:2], *sizes) and grad_output.dtype == x.dtype


class Launch(NamedTuple):
    """One launch of the kernel: its grid, its integer arguments after the
    three tensors, and its compile-time arguments with `num_warps`."""

    grid: tuple[int, int]
    scalars: tuple[int, ...]
    constants: dict[str, Any]


def plan_launch(
    grad_strides: Sequence[int],
    x_sizes: Sequence[int],
    x_strides: Sequence[int],
    window: tuple[int, int],
    out_size: tuple[int, int],
    geometry: Geometry,
    config: WeightGradientConfig,
) -> Launch:
    """The launch computing the weight gradient of a `window`-sized
    depthwise convolution of an input of `x_sizes` and `x_strides`, from an
    output gradient of `out_size` pixels and `grad_strides`, with `config`."""
    batch, channels, height, width = x_sizes
    kh, kw = window
    out_h, out_w = out_size
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = geometry.stride, geometry.padding, geometry.dilation
    pixels = batch * out_h * out_w
    channel_blocks = cdiv(channels, config.block_c)
    pixels_per_program = cdiv(pixels * channel_blocks, PROGRAMS)
    runs = cdiv(pixels, pixels_per_program)
    scalars = (*grad_strides, *x_strides, channels, height, width, out_h, out_w, pixels, pixels_per_program)
    constants = dict(
        STRIDE_H=stride_h, STRIDE_W=stride_w, PAD_H=pad_h, PAD_W=pad_w,
        DIL_H=dil_h, DIL_W=dil_w, KH=kh, KW=kw, TAPS=pow2_ceil(kh * kw),
        BLOCK_C=config.block_c, WIDE=runs * pixels_per_program >= WIDE_PIXELS, num_warps=config.num_warps,
    )  # fmt: skip
    return Launch((runs, channel_blocks), tuple(int(s) for s in scalars), constants)


def _launch_of(grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, geometry: Geometry, config: WeightGradientConfig) -> Launch:
    """`plan_launch` for these tensors."""
    window = (weight.size(2), weight.size(3))
    return plan_launch(grad_output.stride(), x.shape, x.stride(), window, tuple(grad_output.shape[2:]), geometry, config)


def depthwise_weight_gradient(
    grad_output: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor,
    geometry: Geometry,
    config: WeightGradientConfig | None = None,
) -> torch.Tensor | None:
    """The gradient, with respect to `weight`, of the depthwise convolution
    of `x` by `weight` whose result's gradient is `grad_output`, with the
    weight's sizes and type and torch's strides for it; None where
    `supported` says no. `config` replaces the input layout's first
    candidate."""
    if not supported(grad_output, x, weight, geometry):
        return None
    channels, kh, kw = x.size(1), weight.size(2), weight.size(3)
    launch = _launch_of(grad_output, x, weight, geometry, config or candidate_configs(x)[0])
    runs = launch.grid[0]
    partial = torch.empty(runs, channels, kh * kw, dtype=torch.float32, device=x.device)
    kernel = triton_depthwise_convolution_weight_gradient
    kernel.launch(launch.grid, grad_output, x, partial, *launch.scalars, **launch.constants)
    total = (partial.sum(0) if runs > 1 else partial[0]).to(weight.dtype)
    taps = kh * kw
    # torch's layout for this gradient: channels-last where the input is (the same memory)
    return total.as_strided(weight.shape, (taps, 1 if is_channels_last(x) else taps, kw, 1))


def precompile(
    grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, geometry: Geometry
) -> list[Future]:
    """Have the compile workers compile the kernel for every candidate
    channel block of these tensors (`candidate_configs`), as their launches
    would, and return the futures of their answers; none where there is no
    pool of workers (or Triton interprets kernels) or the kernel does not
    take these tensors. Triton's JIT then finds the binaries in its cache;
    a request that fails only means the JIT compiles that block itself."""
    workers = None if interpreter_enabled() else shared_compile_workers()
    if workers is None or not supported(grad_output, x, weight, geometry):
        return []
    workers.start()
    dtype = str(x.dtype).removeprefix("torch.")
    futures = []
    for config in candidate_configs(x):
        launch = _launch_of(grad_output, x, weight, geometry, config)
        (request,) = compile_requests(kernel_module, launch.scalars, [{"dtype": dtype, **launch.constants}])
        futures.append(workers.submit(request))
    return futures


def library_weight_gradient(grad_output: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, geometry: Geometry) -> torch.Tensor:
    """The same gradient computed by torch's convolution backward (cuDNN's
    kernels on a GPU)."""
    backward = torch.ops.aten.convolution_backward.default
    stride, padding, dilation = list(geometry.stride), list(geometry.padding), list(geometry.dilation)
    groups = x.size(1)
    return backward(grad_output, x, weight, None, stride, padding, dilation, False, [0, 0], groups, [False, True, False])[1]


def fastest_config(
    grad_output: torch.Tensor,
    x: torch.Tensor,
    weight: torch.Tensor,
    geometry: Geometry,
    timer: Callable[[Callable[[], Any]], float],
) -> WeightGradientConfig | None:
    """The channel block of `candidate_configs` that computes this weight
    gradient fastest, where it beats torch's convolution backward by `timer` (median
    milliseconds of a callable); None where the library is as fast, or the
    kernel does not take these tensors."""
    if not supported(grad_output, x, weight, geometry):
        return None
    best, best_time = None, timer(lambda: library_weight_gradient(grad_output, x, weight, geometry))
    for config in candidate_configs(x):
        try:
            time = timer(lambda config=config: depthwise_weight_gradient(grad_output, x, weight, geometry, config))
        except Exception:  # noqa: BLE001 - a tile that does not compile (registers, shared memory) is skipped
            continue
        if time < best_time:
            best, best_time = config, time
    return best
