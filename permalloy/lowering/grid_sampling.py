"""
`grid_sampler_2d` and `grid_sampler_3d` (`F.grid_sample` of 4-d and 5-d
inputs) as gathers with clamped indices.

torch's decomposition is used with the grid kept at its own shape
`[N, H, W, 2]`: the source coordinates, corner indices and weights are
computed once per output position (`[N, 1, H, W]`) and the gathers from the
input broadcast them over the channels, where torch's default expands the grid
over the channels first and so computes (and, where fusion keeps them,
stores) every coordinate once per channel. Bilinear, nearest and bicubic
interpolation, zero, border and reflection padding, both `align_corners`.
Half-precision inputs are computed in float32, as torch's decomposition does.
torch has no decomposition of the 3-d sampler: `grid_sampler_3d` is written
here the same way, trilinear and nearest (its kernel has no bicubic).

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


def _source_index(coordinates, size: int, padding_mode: int, align_corners: bool):
    """Grid coordinates in [-1, 1] as positions along a dimension of `size`
    elements, with border or reflection padding applied (torch's
    decomposition's formulas, as its kernels compute them)."""
    scale = (size * 0.5 - 0.5) if align_corners else (size * 0.5)
    positions = coordinates * scale + (size * 0.5 - 0.5)
    if padding_mode == 0:
        return positions
    if padding_mode == 2:
        twice_low, twice_high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if twice_low == twice_high:
            positions = torch.zeros_like(positions)
        else:
            low, span = twice_low / 2, (twice_high - twice_low) / 2
            distance = (positions - low).abs()
            extra = torch.fmod(distance, span)
            flips = (distance / span).floor().to(dtype=torch.int8)
            positions = torch.where(flips & 1 == 0, extra + low, span + low - extra)
    return torch.clamp(positions, 0, size - 1)


def grid_sampler_3d(a, grid, interpolation_mode=0, padding_mode=0, align_corners=False):
    """
    `aten.grid_sampler_3d` (`F.grid_sample` of 5-d inputs), trilinear or
    nearest (round half to even), as gathers: the eight corners of each
    sampling position weighted as torch's kernel weights them, in its order,
    a corner outside the input contributing zero. Coordinates and weights are
    computed once per output position and broadcast over the channels.
    """
    if interpolation_mode not in (0, 1):
        return NotImplemented
    dtype = a.dtype
    if dtype in _LOW_PRECISION:
        a, grid = a.to(torch.float32), grid.to(torch.float32)
    batch, channels, depth, height, width = a.shape
    _, out_depth, out_height, out_width, _ = grid.shape
    sizes = (width, height, depth)
    x, y, z = (
        _source_index(grid[..., k], sizes[k], padding_mode, align_corners) for k in range(3)
    )
    batch_index = torch.arange(batch, device=a.device).view(batch, 1, 1, 1, 1)
    channel_index = torch.arange(channels, device=a.device).view(1, channels, 1, 1, 1)
    shape = (batch, 1, out_depth, out_height, out_width)

    def corner(ix, iy, iz, weight):
        inside = (ix >= 0) & (ix < width) & (iy >= 0) & (iy < height) & (iz >= 0) & (iz < depth)
        ix, iy, iz = (torch.where(inside, i, 0).to(torch.int64).view(shape) for i in (ix, iy, iz))
        weight = torch.where(inside, weight, 0).view(shape)
        return a[batch_index, channel_index, iz, iy, ix] * weight

    if interpolation_mode == 1:
        rounded = [c.round() for c in (x, y, z)]
        result = corner(*rounded, torch.ones_like(x))
    else:
        x0, y0, z0 = x.floor(), y.floor(), z.floor()
        x1, y1, z1 = x0 + 1, y0 + 1, z0 + 1
        corners = []
        for iz, wz in ((z0, z1 - z), (z1, z - z0)):
            for iy, wy in ((y0, y1 - y), (y1, y - y0)):
                for ix, wx in ((x0, x1 - x), (x1, x - x0)):
                    corners.append(corner(ix, iy, iz, wx * wy * wz))
        result = corners[0]
        for term in corners[1:]:
            result = result + term
    return result.to(dtype)


GRID_SAMPLE_CALLS = (F.grid_sample, torch.grid_sampler)
"""The callables by which Dynamo's graphs call grid sampling."""

_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample_math(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """
    `F.grid_sample` as the math of `grid_sampler_2d` or `grid_sampler_3d`,
    written with differentiable torch ops, for graphs that need gradients:
    autograd then differentiates the gathers and the coordinate arithmetic
    (the input's gradient an accumulating `index_put`, the grid's pointwise
    math), where `aten.grid_sampler_*_backward` have no ptensor form. Other
    inputs call `F.grid_sample`. Also takes `torch.grid_sampler`'s arguments
    (the modes as numbers, `align_corners` required).
    """
    interpolation = _INTERPOLATION_MODES[mode] if isinstance(mode, str) else mode
    padding = _PADDING_MODES[padding_mode] if isinstance(padding_mode, str) else padding_mode
    if input.dim() == 4:
        result = grid_sampler_2d(input, grid, interpolation, padding, bool(align_corners))
    elif input.dim() == 5 and interpolation in (0, 1):
        result = grid_sampler_3d(input, grid, interpolation, padding, bool(align_corners))
    elif isinstance(mode, int):
        return torch.grid_sampler(input, grid, mode, padding_mode, align_corners)
    else:
        return F.grid_sample(input, grid, mode, padding_mode, align_corners)
    if interpolation == _INTERPOLATION_MODES["nearest"] and grid.requires_grad:
        # rounding has no gradient: the grid's is zeros, as eager gives it,
        # through a term that is 0 whatever the grid holds
        never = torch.zeros((), dtype=torch.bool, device=grid.device)
        result = result + torch.where(never, grid, 0.0).sum().to(result.dtype)
    return result
