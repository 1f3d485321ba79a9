"""
Convolutions over non-overlapping patches, as matrix products.

A convolution whose stride equals its window, without padding, dilation or
groups (a vision transformer's patch embedding, Swin's and ConvNeXt's
stems) reads each input element once: it is the product of the input's
patches, `[N * P, C * K]` (`P` output positions, `K` window elements), by
the weight viewed as `[O, C * K]`. Its gradients are products too: the
input's, the output gradient by the weight, put back in place (rows and
columns past the last whole patch get zeros); the weight's, the output
gradient transposed by the patches; the bias's, a sum.

A transposed convolution of the same geometry (a U-Net's upsampling by a
2x2 window of stride 2) writes each output element once: it is the product
of the input's channel rows `[N * P, C]` by the weight `[C, O * K]`, each row
a patch of the output put in place. Its gradients are the same products the
other way round.

Written as products, these convolutions run as library matrix products, with
the patches' gather a copy the compiler fuses with what produces the input.
On a GPU they no longer go through cuDNN, whose algorithm search (run again
in every process, as torch keeps its choices in memory only) took seconds
for a patch embedding's weight gradient. Every other convolution is kept
whole (`NotImplemented`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch._prims_common import suggest_memory_format

aten = torch.ops.aten


def _is_patch_geometry(
    x: torch.Tensor,
    weight: torch.Tensor,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    groups: int,
    output_padding: Sequence[int] = (),
) -> bool:
    """Whether the convolution reads (or, `transposed`, writes without
    output padding) non-overlapping patches of windows larger than one
    element, at static spatial sizes."""
    window = weight.shape[2:]
    spatial = x.shape[2:]
    static = all(isinstance(s, int) for s in (*window, *spatial, weight.shape[0], weight.shape[1]))
    return (
        static
        and (not transposed or all(p == 0 for p in output_padding))
        and groups == 1
        and len(window) == len(stride) >= 1
        and math.prod(window) > 1
        and all(p == 0 for p in padding)
        and all(d == 1 for d in dilation)
        and list(stride) == list(window)
        and (transposed or all(s >= k for s, k in zip(spatial, window, strict=True)))
    )


def _patches(x: torch.Tensor, window: Sequence[int]) -> torch.Tensor:
    """The input's whole patches as rows: `[N * P, C * K]`, positions in
    order, each row the patch's channels then window elements in order."""
    n, c = x.shape[:2]
    positions = [s // k for s, k in zip(x.shape[2:], window, strict=True)]
    for dim, (count, k) in enumerate(zip(positions, window, strict=True), start=2):
        if x.shape[dim] != count * k:
            x = x.narrow(dim, 0, count * k)
    split = [n, c, *(v for pair in zip(positions, window, strict=True) for v in pair)]
    rank = len(window)
    order = [0, *(2 + 2 * i for i in range(rank)), 1, *(3 + 2 * i for i in range(rank))]
    patches = x.reshape(split).permute(order)
    return patches.reshape(n * math.prod(positions), c * math.prod(window))


def _channel_rows(x: torch.Tensor) -> torch.Tensor:
    """A tensor `[N, C, *P]` as rows of channels `[N * P, C]`."""
    rank = x.dim() - 2
    rows = x.permute(0, *range(2, 2 + rank), 1)
    return rows.reshape(-1, x.shape[1])


def _placed_patches(rows: torch.Tensor, n: int, channels: int, positions: Sequence[int], window: Sequence[int]) -> torch.Tensor:
    """Rows `[N * P, C * K]` of patches put in place: `[N, C, *(P * K)]`."""
    rank = len(window)
    patches = rows.view(n, *positions, channels, *window)
    order = [0, rank + 1, *(v for i in range(rank) for v in (1 + i, rank + 2 + i))]
    covered = [p * k for p, k in zip(positions, window, strict=True)]
    return patches.permute(order).reshape(n, channels, *covered)


def patch_convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """`aten.convolution` over non-overlapping patches as one product
    (`addmm` with a bias), or transposed, writing such patches, as one
    product put in place; NotImplemented for any other convolution."""
    if not _is_patch_geometry(x, weight, stride, padding, dilation, transposed, groups, output_padding):
        return NotImplemented
    if transposed:
        return _transposed_patch_convolution(x, weight, bias)
    window = weight.shape[2:]
    n, rank, out = x.shape[0], len(window), weight.shape[0]
    positions = [s // k for s, k in zip(x.shape[2:], window, strict=True)]
    patches = _patches(x, window)
    matrix = weight.reshape(out, -1).t()
    rows = aten.mm(patches, matrix) if bias is None else aten.addmm(bias, patches, matrix)
    return rows.view(n, *positions, out).permute(0, rank + 1, *range(1, rank + 1))


def patch_convolution_backward(
    grad, x, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    """`aten.convolution_backward` of a convolution over non-overlapping
    patches, or of a transposed one writing them, as products (the input's
    gradient zero past the last whole patch); NotImplemented for any other
    convolution."""
    if not _is_patch_geometry(x, weight, stride, padding, dilation, transposed, groups, output_padding):
        return NotImplemented
    if transposed:
        return _transposed_patch_convolution_backward(grad, x, weight, output_mask)
    window = weight.shape[2:]
    n, c, out = x.shape[0], x.shape[1], weight.shape[0]
    rows = _channel_rows(grad)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        positions = [s // k for s, k in zip(x.shape[2:], window, strict=True)]
        grad_input = _placed_patches(aten.mm(rows, weight.reshape(out, -1)), n, c, positions, window)
        covered = grad_input.shape[2:]
        missing = [s - v for s, v in zip(x.shape[2:], covered, strict=True)]
        if any(missing):
            grad_input = aten.constant_pad_nd(grad_input, [v for m in reversed(missing) for v in (0, m)], 0.0)
        grad_input = grad_input.contiguous(memory_format=suggest_memory_format(x))
    if output_mask[1]:
        grad_weight = aten.mm(rows.t(), _patches(x, window)).view(weight.shape)
    if output_mask[2]:
        grad_bias = rows.sum(0)
    return grad_input, grad_weight, grad_bias


def _transposed_patch_convolution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """A transposed convolution writing non-overlapping patches: each input
    position's channels times the weight `[C, O * K]`, put in place."""
    window = weight.shape[2:]
    n, c, out = x.shape[0], x.shape[1], weight.shape[1]
    rows = aten.mm(_channel_rows(x), weight.reshape(c, -1))
    y = _placed_patches(rows, n, out, x.shape[2:], window)
    return y if bias is None else y + bias.view(out, *[1] * len(window))


def _transposed_patch_convolution_backward(grad, x, weight, output_mask):
    """The gradients of `_transposed_patch_convolution` that `output_mask` asks for."""
    window = weight.shape[2:]
    n, c, rank = x.shape[0], x.shape[1], len(window)
    patches = _patches(grad, window)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        rows = aten.mm(patches, weight.reshape(c, -1).t())
        grad_input = rows.view(n, *x.shape[2:], c).permute(0, rank + 1, *range(1, rank + 1))
        grad_input = grad_input.contiguous(memory_format=suggest_memory_format(x))
    if output_mask[1]:
        grad_weight = aten.mm(_channel_rows(x).t(), patches).view(weight.shape)
    if output_mask[2]:
        grad_bias = _channel_rows(grad).sum(0)
    return grad_input, grad_weight, grad_bias
