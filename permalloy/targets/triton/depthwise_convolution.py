"""
Depthwise 2-d convolution (one filter per channel) as one Triton kernel.

Each program computes a tile of output pixels (`TILE_H` rows of `TILE_W`
pixels) for `BLOCK_C` channels of one image: it walks the window's taps,
loads the input pixels each tap reads (zeros outside the image), and
accumulates products with that tap's weight per channel in float32, adding
the bias, if any, at the end. Tensors are read and written through their
strides, so the same kernel runs on NCHW and channels-last memory; its tile
shapes (`DepthwiseConfig`) differ for the two, channels-last wanting
channels along the tile's fast axis and NCHW pixels along a row.

    geometry = Geometry(stride, padding, dilation)
    out = depthwise_convolution(x, weight, bias, geometry)  # None: not supported
    config = fastest_config(x, weight, bias, geometry, timer)  # None: the library's is faster

The result has the layout torch's convolution gives the same input
(`result_strides`), so a caller may use either in place of the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import triton.language as tl

from permalloy.targets.triton.launch_plan import Allocation, LaunchPlan, PlannedLaunch, Slot, run_plan
from permalloy.targets.triton.modal_kernel import cdiv, modal_jit

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_WINDOW = 81
"""The most taps (window elements) a kernel unrolls: a 9x9 window."""


@modal_jit(do_not_specialize=["height", "width", "out_height", "out_width", "tiles_h", "tiles_w"])
def triton_depthwise_convolution_forward(
    X, W, B, OUT,
    x_n, x_c, x_h, x_w,
    w_c, w_h, w_w,
    o_n, o_c, o_h, o_w,
    channels, height, width, out_height, out_width, tiles_h, tiles_w,
    STRIDE_H: tl.constexpr, STRIDE_W: tl.constexpr,
    PAD_H: tl.constexpr, PAD_W: tl.constexpr,
    DIL_H: tl.constexpr, DIL_W: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, HAS_BIAS: tl.constexpr,
    TILE_H: tl.constexpr, TILE_W: tl.constexpr, BLOCK_C: tl.constexpr,
):  # fmt: skip
    tile = tl.program_id(0)  # images x tile rows x tile columns: the grid's first axis takes 2^31 - 1
    n = (tile // (tiles_h * tiles_w)).to(tl.int64)  # 64-bit offsets: a batch may pass 2^31 elements
    spatial = tile % (tiles_h * tiles_w)
    pixel = tl.arange(0, TILE_H * TILE_W)
    oh = (spatial // tiles_w) * TILE_H + pixel // TILE_W
    ow = (spatial % tiles_w) * TILE_W + pixel % TILE_W
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = c < channels
    pixel_ok = (oh < out_height) & (ow < out_width)
    source = X + n * x_n + c[None, :] * x_c
    acc = tl.full([TILE_H * TILE_W, BLOCK_C], 0.0, tl.float32)  # (tl.zeros is a jit function: the interpreter runs it only if on at import)
    for kh in tl.static_range(KH):  # unrolled: as a loop, small images ran up to 4x slower
        ih = oh * STRIDE_H - PAD_H + kh * DIL_H
        row_ok = pixel_ok & (ih >= 0) & (ih < height)
        for kw in tl.static_range(KW):
            iw = ow * STRIDE_W - PAD_W + kw * DIL_W
            ok = row_ok & (iw >= 0) & (iw < width)
            x = tl.load(source + (ih * x_h + iw * x_w)[:, None], mask=ok[:, None] & c_ok[None, :], other=0.0)
            w = tl.load(W + c * w_c + kh * w_h + kw * w_w, mask=c_ok, other=0.0)
            acc += x.to(tl.float32) * w.to(tl.float32)[None, :]
    if HAS_BIAS:
        acc += tl.load(B + c, mask=c_ok, other=0.0).to(tl.float32)[None, :]
    target = OUT + n * o_n + c[None, :] * o_c + (oh * o_h + ow * o_w)[:, None]
    tl.store(target, acc.to(OUT.dtype.element_ty), mask=pixel_ok[:, None] & c_ok[None, :])


@dataclass(frozen=True)
class Geometry:
    """A convolution's stride, padding and dilation, each per spatial dimension."""

    stride: Sequence[int]
    padding: Sequence[int]
    dilation: Sequence[int]

    def valid(self) -> bool:
        """Two spatial dimensions, positive strides and dilations, no negative padding."""
        parts = (self.stride, self.padding, self.dilation)
        return all(len(p) == 2 for p in parts) and min(self.stride) >= 1 and min(self.dilation) >= 1 and min(self.padding) >= 0

    def output_size(self, dim: int, size: int, window: int) -> int:
        """The result's size along spatial dimension `dim`."""
        return (size + 2 * self.padding[dim] - self.dilation[dim] * (window - 1) - 1) // self.stride[dim] + 1


@dataclass(frozen=True)
class DepthwiseConfig:
    """A tile of `tile_h` x `tile_w` output pixels by `block_c` channels per
    program, run by `num_warps` warps."""

    tile_h: int
    tile_w: int
    block_c: int
    num_warps: int = 4


CHANNELS_LAST_CONFIGS = (
    DepthwiseConfig(4, 8, 32),
    DepthwiseConfig(2, 4, 128),
    DepthwiseConfig(4, 4, 128),
    DepthwiseConfig(1, 8, 128),
)
"""Tiles timed on channels-last memory: of sixteen timed on an H200 over
the depthwise layers of ConvNeXt, EfficientNet and MobileNet (float32, 32
images), the four whose best is within 9% of the sixteen's best at every
size."""
NCHW_CONFIGS = (
    DepthwiseConfig(8, 8, 4),
    DepthwiseConfig(16, 16, 1),
    DepthwiseConfig(8, 32, 4, 8),
    DepthwiseConfig(4, 32, 2),
)
"""Tiles timed on NCHW memory: of twelve, the four whose best is within 3%
of the twelve's best at every size (as above)."""


def is_channels_last(x: torch.Tensor) -> bool:
    """Whether `x`'s channels are its innermost dimension in memory."""
    return x.stride(1) == 1 and x.size(1) > 1


def candidate_configs(x: torch.Tensor) -> tuple[DepthwiseConfig, ...]:
    """The tiles worth timing for input `x`."""
    return CHANNELS_LAST_CONFIGS if is_channels_last(x) else NCHW_CONFIGS


def supported(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, geometry: Geometry) -> bool:
    """Whether `depthwise_convolution` takes these tensors: a 4-d floating
    input of one type with its weight, one filter per channel, a window of
    at most `MAX_WINDOW` taps, and a nonempty result."""
    if x.dim() != 4 or weight.dim() != 4 or x.dtype not in DTYPES or weight.dtype != x.dtype:
        return False
    channels = x.size(1)
    if weight.size(0) != channels or weight.size(1) != 1 or weight.size(2) * weight.size(3) > MAX_WINDOW:
        return False
    if bias is not None and (bias.shape != (channels,) or bias.dtype != x.dtype):
        return False
    if not geometry.valid():
        return False
    sizes = [geometry.output_size(d, x.size(2 + d), weight.size(2 + d)) for d in range(2)]
    return x.numel() > 0 and min(sizes) > 0


def result_strides(x: torch.Tensor, sizes: Sequence[int]) -> tuple[int, ...]:
    """The strides torch's convolution gives a result of `sizes` for input
    `x`: channels-last where the input's memory is, else row-major."""
    n, c, h, w = sizes
    if is_channels_last(x) and not x.is_contiguous():
        return (h * w * c, 1, w * c, c)
    return (c * h * w, h * w, w, 1)


def depthwise_plan(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    geometry: Geometry,
    config: DepthwiseConfig | None = None,
    out_strides: Sequence[int] | None = None,
) -> LaunchPlan | None:
    """What `depthwise_convolution` allocates and launches for these tensors
    (the inputs `x`, `weight` and the bias where there is one, in order), its
    result of `out_strides` where given, else of `result_strides`; None
    where `supported` says no."""
    if not supported(x, weight, bias, geometry):
        return None
    batch, channels, height, width = x.shape
    kh, kw = weight.size(2), weight.size(3)
    out_h, out_w = geometry.output_size(0, height, kh), geometry.output_size(1, width, kw)
    (stride_h, stride_w), (pad_h, pad_w), (dil_h, dil_w) = geometry.stride, geometry.padding, geometry.dilation
    sizes = (batch, channels, out_h, out_w)
    strides = tuple(out_strides) if out_strides is not None else result_strides(x, sizes)
    config = config or candidate_configs(x)[0]
    tiles_h, tiles_w = cdiv(out_h, config.tile_h), cdiv(out_w, config.tile_w)
    out = Slot(2 if bias is None else 3)
    launch = PlannedLaunch(
        triton_depthwise_convolution_forward,
        (batch * tiles_h * tiles_w, cdiv(channels, config.block_c)),
        (Slot(0), Slot(1), Slot(0) if bias is None else Slot(2), out,
         *x.stride(), weight.stride(0), weight.stride(2), weight.stride(3), *strides,
         channels, height, width, out_h, out_w, tiles_h, tiles_w),
        {"STRIDE_H": stride_h, "STRIDE_W": stride_w, "PAD_H": pad_h, "PAD_W": pad_w,
         "DIL_H": dil_h, "DIL_W": dil_w, "KH": kh, "KW": kw, "HAS_BIAS": bias is not None,
         "TILE_H": config.tile_h, "TILE_W": config.tile_w, "BLOCK_C": config.block_c,
         "num_warps": config.num_warps},
    )  # fmt: skip
    return LaunchPlan(results=(Allocation(sizes, strides, x.dtype),), temporaries=(), launches=(launch,))


def run_depthwise(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    geometry: Geometry,
    config: DepthwiseConfig | None = None,
    out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, LaunchPlan, list] | None:
    """`depthwise_convolution`'s result with the plan that ran and what its
    launch ran (`run_plan`), or None where `supported` says no."""
    plan = depthwise_plan(x, weight, bias, geometry, config, None if out is None else out.stride())
    if plan is None:
        return None
    inputs = [x, weight] if bias is None else [x, weight, bias]
    (result,), launched = run_plan(plan, inputs, None if out is None else [out])
    return result, plan, launched


def depthwise_convolution(*arguments: Any, **keywords: Any) -> torch.Tensor | None:
    """The depthwise convolution of `x` by `weight` (plus `bias`), or None
    where `supported` says no; the arguments `x, weight, bias, geometry` and
    optionally `config`, which replaces the input layout's first candidate,
    and `out`, a tensor of the result's sizes (any strides) to write into,
    as `run_depthwise` takes them."""
    ran = run_depthwise(*arguments, **keywords)
    return None if ran is None else ran[0]


def fastest_config(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    geometry: Geometry,
    timer: Callable[[Callable[[], Any]], float],
) -> DepthwiseConfig | None:
    """The tile of `candidate_configs` that computes this convolution
    fastest, where it beats torch's convolution (cuDNN's kernels on a GPU)
    by `timer` (median milliseconds of a callable); None where the library
    is as fast, or the kernel does not take these tensors. The tensors'
    values do not matter, their layouts do."""
    out = depthwise_convolution(x, weight, bias, geometry)
    if out is None:
        return None
    stride, padding, dilation = geometry.stride, geometry.padding, geometry.dilation
    groups = x.size(1)
    best, best_time = None, timer(lambda: torch.convolution(x, weight, bias, stride, padding, dilation, False, (0, 0), groups))
    for config in candidate_configs(x):
        try:
            time = timer(lambda config=config: depthwise_convolution(x, weight, bias, geometry, config, out))
        except Exception:  # noqa: BLE001 - a tile that does not compile (registers, shared memory) is skipped
            continue
        if time < best_time:
            best, best_time = config, time
    return best
