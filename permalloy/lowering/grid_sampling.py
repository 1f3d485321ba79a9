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
"""

from __future__ import annotations

import torch
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
