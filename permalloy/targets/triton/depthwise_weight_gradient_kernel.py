"""
The Triton kernel of depthwise weight gradients (`depthwise_weight_gradient.py`
launches it), alone in a module that imports nothing but Triton, so that a
compile worker (`warmup_worker.py`) can compile it into Triton's on-disk
cache before its first launch (`warmup`): the `choose-depthwise-weight-gradients`
pass times every candidate channel block of every depthwise convolution of a
training graph, and compiled one after another in the model's process they
took seconds of a compile. The kernel is a plain function here: the
worker makes it a `@triton.jit` one to compile it, and the launcher for the
mode Triton is in (`modal_kernel.py`, which this module cannot import
without torch).
"""

from __future__ import annotations

import functools
from typing import Any

import triton
import triton.language as tl


JIT_OPTIONS = {"do_not_specialize": ["height", "width", "out_height", "out_width", "pixels", "pixels_per_program"]}
"""How the kernel is made a `@triton.jit` function (`triton.jit(kernel,
**JIT_OPTIONS)`): here for the compile worker, and in the launcher for the
mode Triton is in when it launches (`ModalKernel`)."""


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


def warmup(symbols: list[int], config: dict[str, Any]) -> None:
    """Compile the kernel into Triton's cache, without tensors or a launch:
    `symbols` are its integer arguments after the three tensors, `config`
    its compile-time ones and `num_warps`, with `dtype` the name of torch's
    type of the output gradient and the input (the partial sums are float32)."""
    import torch  # in a compile worker, its stand-in: the dtypes Triton reads

    constants = dict(config)
    dtype = getattr(torch, constants.pop("dtype"))
    _compiled_kernel().warmup(dtype, dtype, torch.float32, *symbols, grid=(1,), **constants)


@functools.cache
def _compiled_kernel() -> Any:
    """The kernel as a GPU `@triton.jit` function (a worker never
    interprets), made once for every candidate a worker compiles."""
    return triton.jit(triton_depthwise_convolution_weight_gradient, **JIT_OPTIONS)
