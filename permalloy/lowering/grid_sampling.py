"""
`grid_sampler_2d` (`F.grid_sample` of 4-d inputs) as gathers with clamped
indices.

torch's decomposition is used with the grid kept at its own shape
`[N, H, W, 2]`: the source coordinates, corner indices and weights are
computed once per output position (`[N, 1, H, W]`) and the gathers from the
input broadcast them over the channels, where torch's default expands the grid
over the channels first and so computes (and, where fusion keeps them,
stores) every coordinate once per channel. Bilinear, nearest and bicubic
interpolation, zero, border and reflection padding, both `align_corners`.
Half-precision inputs are computed in float32, as torch's decomposition does.

In a graph that needs gradients, `grid_sample_math` replaces Dynamo's grid
sampling calls before AOTAutograd traces them (`math_for_training.py`), so
that the backward is derived from these gathers and this arithmetic.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch._decomp import decompositions as torch_decompositions

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def grid_sampler_2d(a, grid, interpolation_mode=0, padding_mode=0, align_corners=False):
    """`aten.grid_sampler_2d` with the grid not expanded over channels."""
    dtype = a.dtype
    if dtype in _LOW_PRECISION:
        a, grid = a.to(torch.float32), grid.to(torch.float32)
    result = torch_decompositions._grid_sampler_2d(  # noqa: SLF001
        a,
        grid=grid,
        interpolation_mode=interpolation_mode,
        padding_mode=padding_mode,
        align_corners=align_corners,
        _expand_grid=False,
    )
    return result.to(dtype)


GRID_SAMPLE_CALLS = (F.grid_sample, torch.grid_sampler)
"""The callables by which Dynamo's graphs call grid sampling."""

_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample_math(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """
    `F.grid_sample` of a 4-d input as the math of `grid_sampler_2d`, written
    with differentiable torch ops, for graphs that need gradients: autograd
    then differentiates the gathers and the coordinate arithmetic (the input's
    gradient an accumulating `index_put`, the grid's pointwise math), where
    `aten.grid_sampler_2d_backward` has no ptensor form. Other inputs (5-d)
    call `F.grid_sample`. Also takes `torch.grid_sampler`'s arguments (the
    modes as numbers, `align_corners` required).
    """
    if input.dim() != 4:
        if isinstance(mode, int):
            return torch.grid_sampler(input, grid, mode, padding_mode, align_corners)
        return F.grid_sample(input, grid, mode, padding_mode, align_corners)
    interpolation = _INTERPOLATION_MODES[mode] if isinstance(mode, str) else mode
    padding = _PADDING_MODES[padding_mode] if isinstance(padding_mode, str) else padding_mode
    result = grid_sampler_2d(input, grid, interpolation, padding, bool(align_corners))
    if interpolation == _INTERPOLATION_MODES["nearest"] and grid.requires_grad:
        # rounding has no gradient: the grid's is zeros, as eager gives it,
        # through a term that is 0 whatever the grid holds
        never = torch.zeros((), dtype=torch.bool, device=grid.device)
        result = result + torch.where(never, grid, 0.0).sum().to(result.dtype)
    return result
