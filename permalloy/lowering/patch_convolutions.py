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

aten = torch.ops.aten


def _is_patch_geometry(
    x: torch.Tensor,
    weight: torch.Tensor,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    groups: int,
) -> bool:
    """Whether the convolution reads non-overlapping patches of windows
    larger than one element, at static spatial sizes."""
    window = weight.shape[2:]
    spatial = x.shape[2:]
    static = all(isinstance(s, int) for s in (*window, *spatial, weight.shape[0], weight.shape[1]))
    return (
        static
        and not transposed
        and groups == 1
        and len(window) == len(stride) >= 1
        and math.prod(window) > 1
        and all(p == 0 for p in padding)
        and all(d == 1 for d in dilation)
        and list(stride) == list(window)
        and all(s >= k for s, k in zip(spatial, window, strict=True))
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


def _output_rows(grad: torch.Tensor) -> torch.Tensor:
    """The output (gradient) `[N, O, *P]` as rows `[N * P, O]`."""
    rank = grad.dim() - 2
    rows = grad.permute(0, *range(2, 2 + rank), 1)
    return rows.reshape(-1, grad.shape[1])


def patch_convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """`aten.convolution` over non-overlapping patches as one product
    (`addmm` with a bias); NotImplemented for any other convolution."""
    if not _is_patch_geometry(x, weight, stride, padding, dilation, transposed, groups):
        return NotImplemented
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
    patches, as products (the input's gradient zero past the last whole
    patch); NotImplemented for any other convolution."""
    if not _is_patch_geometry(x, weight, stride, padding, dilation, transposed, groups):
        return NotImplemented
    window = weight.shape[2:]
    n, c, rank, out = x.shape[0], x.shape[1], len(window), weight.shape[0]
    rows = _output_rows(grad)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        positions = [s // k for s, k in zip(x.shape[2:], window, strict=True)]
        patches = aten.mm(rows, weight.reshape(out, -1))
        patches = patches.view(n, *positions, c, *window)
        order = [0, rank + 1, *(v for i in range(rank) for v in (1 + i, rank + 2 + i))]
        covered = [p * k for p, k in zip(positions, window, strict=True)]
        grad_input = patches.permute(order).reshape(n, c, *covered)
        missing = [s - v for s, v in zip(x.shape[2:], covered, strict=True)]
        if any(missing):
            grad_input = aten.constant_pad_nd(grad_input, [v for m in reversed(missing) for v in (0, m)], 0.0)
        grad_input = grad_input.contiguous(memory_format=_memory_format(x))
    if output_mask[1]:
        grad_weight = aten.mm(rows.t(), _patches(x, window)).view(weight.shape)
    if output_mask[2]:
        grad_bias = rows.sum(0)
    return grad_input, grad_weight, grad_bias


def _memory_format(x: torch.Tensor) -> torch.memory_format:
    """The memory format of the input, which its gradient takes."""
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        return torch.channels_last
    if x.dim() == 5 and x.is_contiguous(memory_format=torch.channels_last_3d) and not x.is_contiguous():
        return torch.channels_last_3d
    return torch.contiguous_format
