"""
Max and average pooling as ATen ops that ptensor has.

A pooling window of `k` elements is unrolled: the input is padded once (with
the lowest value for max pooling, zero for average pooling) and each of the `k`
window positions is a strided slice of the padded tensor, so that after
lowering the whole pooling is one pointwise kernel whose `k` loads are affine
(and masked where the padding was). This is how Inductor lowers small windows
too. Windows of more than `MAX_UNROLLED_WINDOW` elements are left to torch,
except those that tile the input exactly (global pooling), which become a
reshape and a reduction. Adaptive average pooling in three dimensions is two
adaptive poolings in two (torch decomposes those).

Semantics follow torch's kernels exactly:
- max pooling compares with `>` in window order, so the first maximum wins; a
  NaN always replaces the running maximum (the last NaN of a window wins), and
  a window whose elements are all the lowest value gives the index of its first
  element inside the input, as torch's kernels start from it;
- average pooling sums in float32 for half-precision inputs and divides by
  `divisor_override`, or by the window's size clipped to the padded input
  (`count_include_pad`), or by the number of its elements inside the input.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from torch._prims_common import suggest_memory_format

aten = torch.ops.aten

MAX_UNROLLED_WINDOW = 25
"""The largest window (elements) unrolled into slices; Inductor's limit too."""

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _expand(value: int | Sequence[int], n_dim: int, default: Sequence[int] | None = None) -> list[int]:
    """A pooling parameter for each of the `n_dim` pooled dimensions."""
    if isinstance(value, int):
        return [value] * n_dim
    if len(value) == 0:
        assert default is not None
        return list(default)
    return list(value) * n_dim if len(value) == 1 else list(value)


def _average_geometry(kernel_size, stride, padding, n_dim: int) -> tuple[list[int], list[int], list[int]]:
    """Average pooling's window, stride (the window where none is given) and
    padding for each pooled dimension."""
    kernel = _expand(kernel_size, n_dim)
    return kernel, _expand(stride, n_dim, kernel), _expand(padding, n_dim)


def output_size(size, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool):
    """torch's output length of one pooled dimension: windows that start inside
    the input or its left padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out = out - 1
    return out


class _Windows:
    """The windows of one pooling: its geometry over the last `n_dim`
    dimensions of an input, and the padded input's strided slices."""

    def __init__(self, x: torch.Tensor, kernel, stride, padding, dilation, ceil_mode, n_dim: int):
        self.n_dim = n_dim
        self.kernel, self.stride, self.padding, self.dilation = kernel, stride, padding, dilation
        self.sizes = list(x.shape[-n_dim:])
        self.outputs = [
            output_size(n, k, s, p, d, ceil_mode)
            for n, k, s, p, d in zip(self.sizes, kernel, stride, padding, dilation)
        ]

    def padded(self, x: torch.Tensor, value: float | int) -> torch.Tensor:
        """`x` padded so that every window's every position is in range."""
        amounts: list[int] = []
        for d in reversed(range(self.n_dim)):
            needed = (self.outputs[d] - 1) * self.stride[d] + (self.kernel[d] - 1) * self.dilation[d] + 1
            right = max(0, needed - (self.sizes[d] + 2 * self.padding[d])) + self.padding[d]
            amounts += [self.padding[d], right]
        return aten.constant_pad_nd.default(x, amounts, value)

    def offsets(self):
        """Each position of a window, in torch's order (the last dimension fastest)."""
        return itertools.product(*(range(k) for k in self.kernel))

    def at(self, padded: torch.Tensor, offset: Sequence[int]) -> torch.Tensor:
        """The element at window position `offset` of every window."""
        view = padded
        for d, position in enumerate(offset):
            dim = padded.dim() - self.n_dim + d
            start = position * self.dilation[d]
            end = start + (self.outputs[d] - 1) * self.stride[d] + 1
            view = aten.slice.Tensor(view, dim, start, end, self.stride[d])
        return view

    def placed(self, values: torch.Tensor, offset: Sequence[int], padded_shape: Sequence) -> torch.Tensor:
        """A tensor of the padded input's shape holding `values` (one per
        window) at window position `offset` of every window and zeros
        elsewhere: `at`'s strided slice, scattered."""
        placed = values
        for d in reversed(range(self.n_dim)):
            dim = len(padded_shape) - self.n_dim + d
            shape = [*placed.shape[:dim], padded_shape[dim], *placed.shape[dim + 1 :]]
            start = offset[d] * self.dilation[d]
            end = start + (self.outputs[d] - 1) * self.stride[d] + 1
            zeros = aten.full.default(shape, 0, dtype=values.dtype, device=values.device)
            placed = aten.slice_scatter.default(zeros, placed, dim, start, end, self.stride[d])
        return placed

    def starts(self, d: int, like: torch.Tensor) -> torch.Tensor:
        """Each window's first position along pooled dimension `d` (in input
        coordinates, before padding), shaped to broadcast against the output."""
        shape = [1] * (like.dim() - self.n_dim) + [1] * self.n_dim
        shape[like.dim() - self.n_dim + d] = self.outputs[d]
        first, step = -self.padding[d], self.stride[d]
        end = first + self.outputs[d] * step
        positions = aten.arange.start_step(first, end, step, dtype=torch.int64, device=like.device)
        return aten.view.default(positions, shape)

    def flat_index(self, positions: Sequence[torch.Tensor]) -> torch.Tensor:
        """The index of input positions in the flattened pooled dimensions."""
        index = positions[0]
        for d in range(1, self.n_dim):
            index = index * self.sizes[d] + positions[d]
        return index


def _in_eager_layout(result: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """`result` laid out as torch's pooling kernels write it: channels-last
    for an input of 4 or 5 dimensions whose strides are ordered as
    channels-last ones (torch's `suggest_memory_format`, which also decides
    where a dimension of size one leaves the layout ambiguous), else
    contiguous (slices of a permuted input would otherwise keep its
    permutation)."""
    layout = suggest_memory_format(x) if x.dim() in (4, 5) else torch.contiguous_format
    if result.is_contiguous(memory_format=layout):
        return result
    return aten.clone.default(result, memory_format=layout)


def _lowest(dtype: torch.dtype) -> float | int:
    if dtype.is_floating_point:
        return -math.inf
    return torch.iinfo(dtype).min


def max_pool_with_indices(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False, *, n_dim: int):
    """`max_pool{n}d_with_indices`: unrolled over windows of at most
    `MAX_UNROLLED_WINDOW` elements; NotImplemented (torch runs it) otherwise."""
    kernel = _expand(kernel_size, n_dim)
    if math.prod(kernel) > MAX_UNROLLED_WINDOW or x.dtype == torch.bool:
        return NotImplemented
    windows = _Windows(
        x, kernel, _expand(stride, n_dim, kernel), _expand(padding, n_dim), _expand(dilation, n_dim), ceil_mode, n_dim
    )
    lowest = _lowest(x.dtype)
    padded = windows.padded(x, lowest)
    values = [windows.at(padded, offset) for offset in windows.offsets()]
    best = values[0]
    for value in values[1:]:
        best = aten.maximum.default(best, value)
    index = _argmax(windows, values, best, lowest)
    return _in_eager_layout(best, x), _in_eager_layout(index, x)


def _argmax(windows: _Windows, values: list[torch.Tensor], best: torch.Tensor, lowest) -> torch.Tensor:
    """The index torch's kernels give the maximum `best` of each window: its
    first occurrence, or the last NaN, or for a window all of the lowest value
    its first element inside the input. Each step reads the previous one once,
    so fusion inlines the whole chain into one kernel."""
    offsets = list(windows.offsets())
    first_inside = _first_inside(windows, best)
    index = first_inside
    for offset, value in reversed(list(zip(offsets, values))):
        index = aten.where.self(aten.eq.Tensor(value, best), _position(windows, offset, best), index)
    index = aten.where.self(aten.eq.Scalar(best, lowest), first_inside, index)
    if best.dtype.is_floating_point:
        for offset, value in zip(offsets, values):
            index = aten.where.self(aten.isnan.default(value), _position(windows, offset, best), index)
    return aten.expand.default(index, best.shape)


def _position(windows: _Windows, offset, like: torch.Tensor) -> torch.Tensor:
    """The flat input index of window position `offset` of every window."""
    positions = [windows.starts(d, like) + offset[d] * windows.dilation[d] for d in range(windows.n_dim)]
    return windows.flat_index(positions)


def _first_inside(windows: _Windows, like: torch.Tensor) -> torch.Tensor:
    """The flat index of each window's first element inside the input."""
    positions = []
    for d in range(windows.n_dim):
        start = windows.starts(d, like)
        dilation = windows.dilation[d]
        # Skip the positions in the left padding: whole steps of the dilation.
        skipped = aten.clamp_min.default(dilation - 1 - start, 0) // dilation * dilation
        positions.append(start + skipped)
    return windows.flat_index(positions)


def avg_pool(
    x,
    kernel_size,
    stride=(),
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
    *,
    n_dim: int,
):
    """`avg_pool{n}d`: unrolled over windows of at most `MAX_UNROLLED_WINDOW`
    elements, or a reshape and a mean where the windows tile the input;
    NotImplemented (torch runs it) otherwise."""
    kernel, stride, padding = _average_geometry(kernel_size, stride, padding, n_dim)
    if not x.dtype.is_floating_point:
        return NotImplemented
    if math.prod(kernel) > MAX_UNROLLED_WINDOW:
        return _tiled_mean(x, kernel, stride, padding, divisor_override, n_dim)
    windows = _Windows(x, kernel, stride, padding, [1] * n_dim, ceil_mode, n_dim)
    accumulate = torch.float32 if x.dtype in _LOW_PRECISION else x.dtype
    padded = windows.padded(x.to(accumulate) if accumulate != x.dtype else x, 0)
    total = None
    for offset in windows.offsets():
        value = windows.at(padded, offset)
        total = value if total is None else total + value
    divisor = _divisor(windows, total, count_include_pad, divisor_override)
    return _in_eager_layout((total / divisor).to(x.dtype), x)


def _divisor(windows: _Windows, like: torch.Tensor, count_include_pad: bool, divisor_override):
    """torch's divisor of each window's sum."""
    if divisor_override:
        return divisor_override
    divisor = None
    for d in range(windows.n_dim):
        start = windows.starts(d, like)
        end = aten.clamp_max.default(start + windows.kernel[d], windows.sizes[d] + windows.padding[d])
        if not count_include_pad:
            end = aten.clamp_max.default(end, windows.sizes[d])
            start = aten.clamp_min.default(start, 0)
        length = end - start
        divisor = length if divisor is None else divisor * length
    return divisor.to(like.dtype)


def _tiled_mean(x, kernel, stride, padding, divisor_override, n_dim):
    """Average pooling whose windows tile the input exactly (no padding, the
    stride equal to the window): a reshape and a mean."""
    sizes = list(x.shape[-n_dim:])
    if divisor_override:
        return NotImplemented
    covers = all(
        p == 0 and isinstance(n, int) and k >= n and (n - k) // s + 1 <= 1
        for n, k, s, p in zip(sizes, kernel, stride, padding)
    )
    if covers and all(isinstance(n, int) and n > 0 for n in sizes):
        # One window over the whole input (a window at least as large, as
        # ceil_mode allows): its clipped size is the input's, so a mean.
        reduced = list(range(x.dim() - n_dim, x.dim()))
        return _in_eager_layout(aten.mean.dim(x, reduced, True), x)
    tiles = all(
        s == k and p == 0 and isinstance(n, int) and n % k == 0
        for n, k, s, p in zip(sizes, kernel, stride, padding)
    )
    if not tiles:
        return NotImplemented
    shape = list(x.shape[:-n_dim])
    for n, k in zip(sizes, kernel):
        shape += [n // k, k]
    reduced = [x.dim() - n_dim + 2 * d + 1 for d in range(n_dim)]
    return _in_eager_layout(aten.mean.dim(aten.view.default(x.contiguous(), shape), reduced), x)


def _tiled_mean_backward(grad_output, x, kernel, stride, padding, divisor_override, n_dim):
    """The backward of `_tiled_mean`: each window's gradient over its size,
    spread over the window (the whole input for one covering window)."""
    sizes = list(x.shape[-n_dim:])
    if divisor_override or not all(isinstance(n, int) and n > 0 for n in sizes):
        return NotImplemented
    if all(p == 0 and k >= n and (n - k) // s + 1 <= 1 for n, k, s, p in zip(sizes, kernel, stride, padding)):
        spread = aten.expand.default(grad_output / math.prod(sizes), list(x.shape))
        return _in_eager_layout(aten.clone.default(spread), x)
    if not all(s == k and p == 0 and n % k == 0 for n, k, s, p in zip(sizes, kernel, stride, padding)):
        return NotImplemented
    leading = list(x.shape[:-n_dim])
    tiled, spread = list(leading), list(leading)
    for n, k in zip(sizes, kernel):
        tiled += [n // k, 1]
        spread += [n // k, k]
    share = aten.view.default((grad_output / math.prod(kernel)).contiguous(), tiled)
    result = aten.reshape.default(aten.expand.default(share, spread), list(x.shape))
    return _in_eager_layout(result, x)


def adaptive_avg_pool3d(x, output_size):
    """Adaptive average pooling over the last three dimensions as two adaptive
    2-d poolings (torch's decomposition of `_adaptive_avg_pool2d`), since the
    mean over a box of windows is the mean of the means along each of them:
    height and width first, then depth (the flattened height-width plane
    pooled to itself)."""
    *leading, depth, height, width = x.shape
    out_depth, out_height, out_width = output_size
    batch = math.prod(leading)
    planes = aten._adaptive_avg_pool2d.default(
        aten.view.default(x.contiguous(), [batch, depth, height, width]), [out_height, out_width]
    )
    plane = out_height * out_width
    pooled = aten._adaptive_avg_pool2d.default(
        aten.view.default(planes, [batch, depth, plane]), [out_depth, plane]
    )
    # contiguous whatever the input's layout, as torch's kernel writes it
    return aten.view.default(pooled, [*leading, out_depth, out_height, out_width])


def max_pool_backward(grad_output, x, kernel_size, stride, padding, dilation, ceil_mode, indices, *, n_dim: int):
    """`max_pool{n}d_with_indices_backward`: each output's gradient added at
    the input position its index names (a scatter_add over the flattened
    pooled dimensions; half-precision gradients sum in float32). Under
    torch's deterministic algorithms torch's kernel runs instead."""
    if torch.are_deterministic_algorithms_enabled():
        return NotImplemented
    batch = list(x.shape[: x.dim() - n_dim])
    accumulate = torch.float32 if grad_output.dtype in _LOW_PRECISION else grad_output.dtype
    gradient = aten.reshape.default(grad_output, [*batch, -1])
    if accumulate != gradient.dtype:
        gradient = aten._to_copy.default(gradient, dtype=accumulate)
    positions = aten.reshape.default(indices, [*batch, -1])
    zeros = aten.full.default([*batch, math.prod(x.shape[x.dim() - n_dim :])], 0, dtype=accumulate, device=x.device)
    summed = aten.scatter_add.default(zeros, len(batch), positions, gradient)
    result = aten.view.default(summed, list(x.shape)).to(grad_output.dtype)
    return _in_eager_layout(result, x)


def avg_pool_backward(
    grad_output, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, *, n_dim: int
):
    """`avg_pool{n}d_backward`: each output's gradient over its divisor, added
    back at every position of its window (one strided slice-scatter into the
    padded input per window position, as the forward reads one strided
    slice), then the padding cut off; NotImplemented where the forward is."""
    kernel, stride, padding = _average_geometry(kernel_size, stride, padding, n_dim)
    if not x.dtype.is_floating_point:
        return NotImplemented
    if math.prod(kernel) > MAX_UNROLLED_WINDOW:
        return _tiled_mean_backward(grad_output, x, kernel, stride, padding, divisor_override, n_dim)
    windows = _Windows(x, kernel, stride, padding, [1] * n_dim, ceil_mode, n_dim)
    accumulate = torch.float32 if grad_output.dtype in _LOW_PRECISION else grad_output.dtype
    gradient = grad_output.to(accumulate) if accumulate != grad_output.dtype else grad_output
    share = gradient / _divisor(windows, gradient, count_include_pad, divisor_override)
    padded_shape = list(windows.padded(aten.empty_like.default(x, dtype=accumulate), 0).shape)
    total = None
    for offset in windows.offsets():
        placed = windows.placed(share, offset, padded_shape)
        total = placed if total is None else total + placed
    for d in range(n_dim):
        dim = x.dim() - n_dim + d
        total = aten.slice.Tensor(total, dim, padding[d], padding[d] + windows.sizes[d])
    return _in_eager_layout(total.to(grad_output.dtype), x)
