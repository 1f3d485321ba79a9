"""The `choose-depthwise-weight-gradients` pass."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import astuple, dataclass
from typing import ClassVar, NamedTuple

import torch

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.dtypes import torch_dtype
from permalloy.passes.choose_depthwise_kernels import KernelChoicePass, Layouts, static_layouts
from permalloy.passes.convolution_layouts import device_identity, random_strided


class Candidate(NamedTuple):
    """A convolution backward whose weight gradient permalloy's kernel can
    compute."""

    backward: pt.ConvolutionBackwardOp
    layouts: Layouts
    """Sizes and strides of its output gradient, input and weight."""
    input: torch.Tensor
    """A meta tensor of its input's sizes, strides and type."""


def kernel_candidate(op: buf.ExternOp) -> Candidate | None:
    """The convolution backward `op` holds, where permalloy's depthwise
    weight-gradient kernel can compute its weight gradient: a 2-d depthwise
    convolution's, of static sizes and strides, in a type the kernel takes."""
    backward = op.library_op
    if not isinstance(backward, pt.ConvolutionBackwardOp) or not backward.is_depthwise_2d():
        return None
    if not backward.output_mask.data[1]:
        return None
    operands = op.library_inputs()  # the output gradient, the input, the weight
    layouts = static_layouts(operands)
    if layouts is None:
        return None
    from permalloy.targets.triton import depthwise_weight_gradient as kernel

    dtype = torch_dtype(buf.buffer_type(operands[1]).element_type)
    grad, x, weight = (torch.empty_strided(sizes, strides, dtype=dtype, device="meta") for sizes, strides in layouts)
    if not kernel.supported(grad, x, weight, kernel.Geometry(*pt.convolution_geometry(backward)[:3])):
        return None
    return Candidate(backward, layouts, x)


def measured_block(op: buf.ExternOp, device: str) -> tuple[int, ...] | None:
    """The channel block of permalloy's depthwise weight-gradient kernel that computes
    the weight gradient of the backward `op` holds fastest on `device`, where
    it beats the library's in the program's layouts; None where the library
    is as fast, or there is no GPU to time on."""
    candidate = kernel_candidate(op)
    if candidate is None or not torch.cuda.is_available():
        return None
    geometry = tuple(tuple(g) for g in pt.convolution_geometry(candidate.backward)[:3])
    return _fastest_block(candidate.layouts, candidate.input.dtype, geometry, device, device_identity(device))


@functools.cache
def _fastest_block(layouts: Layouts, dtype: torch.dtype, geometry: tuple, device: str, _: int) -> tuple[int, ...] | None:
    """Timed once per process for each backward of these layouts: the same
    layers repeat through a network."""
    from permalloy.targets.triton.autotune import gpu_timer
    from permalloy.targets.triton.depthwise_weight_gradient import Geometry, fastest_config

    generator = torch.Generator(device).manual_seed(0)
    grad, x, weight = (random_strided(sizes, strides, dtype, device, generator) for sizes, strides in layouts)
    with torch.no_grad():
        config = fastest_config(grad, x, weight, Geometry(*geometry), gpu_timer())
    return None if config is None else astuple(config)


def precompile_blocks(externs: list[buf.ExternOp], device: str) -> None:
    """Compile permalloy's weight-gradient kernel for every candidate block
    of every backward among `externs` that `measured_block` would time, all
    at once in the compile workers, and wait for them: the timings then find
    the kernels compiled (a backward timed before in this process only has
    its binaries found in the workers' cache). Nothing where there are no
    workers or no GPU."""
    if not torch.cuda.is_available():
        return
    from permalloy.targets.triton.depthwise_weight_gradient import Geometry, precompile

    futures, seen = [], set()
    for extern in externs:
        candidate = kernel_candidate(extern)
        if candidate is None:
            continue
        geometry = tuple(tuple(g) for g in pt.convolution_geometry(candidate.backward)[:3])
        key = (candidate.layouts, candidate.input.dtype, geometry, device, device_identity(device))
        if key in seen:
            continue
        seen.add(key)
        grad, x, weight = (
            torch.empty_strided(sizes, strides, dtype=candidate.input.dtype, device="meta")
            for sizes, strides in candidate.layouts
        )
        futures += precompile(grad, x, weight, Geometry(*geometry))
    for future in futures:
        with contextlib.suppress(Exception):  # a failed request: the JIT compiles that block when timed
            future.result()


def first_block(op: buf.ExternOp) -> tuple[int, ...] | None:
    """The first candidate channel block of permalloy's depthwise weight-gradient
    kernel for the backward `op` holds, where the kernel can compute it."""
    candidate = kernel_candidate(op)
    if candidate is None:
        return None
    from permalloy.targets.triton.depthwise_weight_gradient import candidate_configs

    return astuple(candidate_configs(candidate.input)[0])


@dataclass(frozen=True)
class ChooseDepthwiseWeightGradientsPass(KernelChoicePass):
    """
    Computes the weight gradients of 2-d depthwise convolutions (one filter
    per channel) with permalloy's depthwise weight-gradient Triton kernel
    (`targets/triton/depthwise_weight_gradient.py`) where it is faster than
    the library: it marks each such `ptensor.convolution_backward` with the
    kernel's channel block (`depthwise_weight_block`); the host program's call then
    asks the library only for the other gradients.

    It runs after `plan-layouts`, on the layouts the program has. With
    `choose=measured` (the GPU target's default) the kernel's candidate channel blocks
    are timed against the library's weight gradient on `device` (the current
    GPU), on random tensors of the program's layouts, once per process for
    each backward, and the fastest block is taken where it beats the library;
    a backward of symbolic sizes or strides, or with no GPU to time on, stays
    the library's. `always` (the default) marks every backward the kernel
    takes, with the first block for its layout. Before `measured` times
    anything, the compile workers compile every candidate block of every
    backward at once (`precompile_blocks`), so that the timings do not wait
    for Triton's JIT one block after another.

    Before:
    ```
    %gx, %gw = buffer.extern ins(%a = %dy : ..., %b = %x : ..., %c = %w : ...) -> (...) {
      %g:2 = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [1, 1, 0] : ...
      buffer.yield %g#0, %g#1 : ...
    }
    ```
    After:
    ```
      %g:2 = ptensor.convolution_backward %a, %b, %c stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 output_mask [1, 1, 0] {depthwise_weight_block = #ptensor.ints[32, 4]} : ...
    ```
    """

    name = "choose-depthwise-weight-gradients"

    ATTRIBUTE: ClassVar[str] = pt.ConvolutionBackwardOp.WEIGHT_BLOCK

    def prepare(self, externs: list[buf.ExternOp]) -> None:
        if self.choose == "measured":
            precompile_blocks(externs, self.device)

    def chosen(self, extern: buf.ExternOp) -> tuple[int, ...] | None:
        return first_block(extern) if self.choose == "always" else measured_block(extern, self.device)
