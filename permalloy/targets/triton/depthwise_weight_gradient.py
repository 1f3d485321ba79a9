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

cuDNN computes this gradient with a direct kernel for grouped convolutions
that does not use the parallelism of the pixels: on an H200 it took 5.1 ms
of a 20 ms training step of timm's ConvNeXt-atto.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

from permalloy.targets.triton.depthwise_convolution import (
    Geometry,
    is_channels_last,
    supported as forward_supported,
)

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


@triton.jit(do_not_specialize=["height", "width", "out_height", "out_width", "pixels", "pixels_per_program"])
def triton_depthwise_convolution_weight_gradient(
    GRAD, X, PARTIAL,
    g_n, g_c, g_h, g_w,
    x_n, x_c, x_h, x_w,
    channels, height, width, out_height, out_width, pixels, pixels_per_program,
    STRIDE_H: tl.constexpr, STRIDE_W: tl.constexpr,
    PAD_H: tl.constexpr, PAD_W: tl.constexpr,
    DIL_H: tl.constexpr, DIL_W: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, TAPS: tl.constexpr, BLOCK_C: tl.constexpr, WIDE: tl.constexpr,
):  # fmt: skip
    run = tl.program_id(0)  # a run of output pixels: the grid's first axis takes 2^31 - 1 programs
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = c < channels
    taps = tl.arange(0, TAPS)
    kh = taps // KW
    kw = taps % KW
    tap_ok = taps < KH * KW
    acc = tl.full([TAPS, BLOCK_C], 0.0, tl.float32)
    for step in range(pixels_per_program):
        if WIDE:  # 2^31 pixels or more: 64-bit indices, whose divisions cost more
            pixel = run.to(tl.int64) * pixels_per_program + step
        else:
            pixel = run * pixels_per_program + step
        n = (pixel // (out_height * out_width)).to(tl.int64)  # 64-bit offsets: a batch may pass 2^31 elements
        oh = (pixel // out_width) % out_height
        ow = pixel % out_width
        live = taps * 0 + pixel < pixels  # the last run may end early
        grad = tl.load(GRAD + n * g_n + c * g_c + oh * g_h + ow * g_w, mask=c_ok & (c * 0 + pixel < pixels), other=0.0)
        ih = oh * STRIDE_H - PAD_H + kh * DIL_H
        iw = ow * STRIDE_W - PAD_W + kw * DIL_W
        ok = live & tap_ok & (ih >= 0) & (ih < height) & (iw >= 0) & (iw < width)
        x_pointers = X + n * x_n + c[None, :] * x_c + (ih * x_h + iw * x_w)[:, None]
        x = tl.load(x_pointers, mask=ok[:, None] & c_ok[None, :], other=0.0)
        acc += x.to(tl.float32) * grad.to(tl.float32)[None, :]
    target = PARTIAL + run.to(tl.int64) * channels * (KH * KW) + c[None, :] * (KH * KW) + taps[:, None]
    tl.store(target, acc, mask=tap_ok[:, None] & c_ok[None, :])


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
    batch, channels, height, width = x.shape
    kh, kw = weight.size(2), weight.size(3)
    out_h, out_w = grad_output.size(2), grad_output.size(3)
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = geometry.stride, geometry.padding, geometry.dilation
    config = config or candidate_configs(x)[0]
    pixels = batch * out_h * out_w
    channel_blocks = triton.cdiv(channels, config.block_c)
    pixels_per_program = triton.cdiv(pixels * channel_blocks, PROGRAMS)
    runs = triton.cdiv(pixels, pixels_per_program)
    partial = torch.empty(runs, channels, kh * kw, dtype=torch.float32, device=x.device)
    triton_depthwise_convolution_weight_gradient[(runs, channel_blocks)](
        grad_output, x, partial,
        *grad_output.stride(), *x.stride(),
        channels, height, width, out_h, out_w, pixels, pixels_per_program,
        STRIDE_H=stride_h, STRIDE_W=stride_w, PAD_H=pad_h, PAD_W=pad_w,
        DIL_H=dil_h, DIL_W=dil_w, KH=kh, KW=kw, TAPS=triton.next_power_of_2(kh * kw),
        BLOCK_C=config.block_c, WIDE=runs * pixels_per_program >= WIDE_PIXELS, num_warps=config.num_warps,
    )  # fmt: skip
    total = (partial.sum(0) if runs > 1 else partial[0]).to(weight.dtype)
    taps = kh * kw
    # torch's layout for this gradient: channels-last where the input is (the same memory)
    return total.as_strided(weight.shape, (taps, 1 if is_channels_last(x) else taps, kw, 1))


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
