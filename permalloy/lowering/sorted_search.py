"""
`searchsorted` (and `bucketize` of a number) as a binary search run in parallel over all the values.

Each value keeps a range `[start, end)` of the sorted row it is searched in;
each step reads the row's middle element with a gather (`aten.gather` along
the last dimension of an N-d sorted sequence, advanced indexing of a 1-d one)
and halves the range, `bit_length(n)` steps for rows of `n` elements. The
comparisons are those of torch's kernels: left (lower bound) moves right where
`not (row[mid] >= value)`, right (upper bound) where `not (row[mid] > value)`,
so a NaN value lands after the row and NaNs sorted last are passed over alike.
A `sorter` is applied first (the row in sorted order is `row[sorter]`).
The number of steps is fixed by the row length: a symbolic length is
specialized (as torch's own `bucketize` decomposition does).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _middle_values(boundaries: torch.Tensor, mid: torch.Tensor) -> torch.Tensor:
    """`boundaries` at positions `mid` of its last dimension: a gather for an
    N-d sequence (rows matching `mid`'s leading dimensions), indexing for 1-d."""
    if boundaries.dim() == 1:
        return aten.index.Tensor(boundaries, [mid])
    return aten.gather.default(boundaries, -1, mid)


def binary_search(boundaries: torch.Tensor, values: torch.Tensor, right: bool) -> torch.Tensor:
    """The insertion positions (int64) of `values` in the sorted last
    dimension of `boundaries`, as torch's lower and upper bounds give them."""
    length = int(boundaries.shape[-1])
    start = aten.full.default(values.shape, 0, dtype=torch.int64, device=values.device)
    if length == 0:
        return start
    end = aten.full.default(values.shape, length, dtype=torch.int64, device=values.device)
    for _ in range(length.bit_length()):
        active = aten.lt.Tensor(start, end)
        half = aten.floor_divide.default(aten.sub.Tensor(end, start), 2)
        mid = torch.where(active, aten.add.Tensor(start, half), 0)
        middle = _middle_values(boundaries, mid)
        stays = aten.gt.Tensor(middle, values) if right else aten.ge.Tensor(middle, values)
        moves_right = aten.logical_and.default(active, aten.logical_not.default(stays))
        moves_left = aten.logical_and.default(active, stays)
        start = aten.where.self(moves_right, aten.add.Tensor(mid, 1), start)
        end = aten.where.self(moves_left, mid, end)
    return start


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """`searchsorted.Tensor`: both operands compared in their common dtype."""
    right = bool(right) or side == "right"
    common = torch.result_type(sorted_sequence, values)
    boundaries = sorted_sequence.to(common)
    if sorter is not None:
        boundaries = _middle_values(boundaries, sorter)
    positions = binary_search(boundaries, values.to(common), right)
    return positions.to(torch.int32 if out_int32 else torch.int64)


def _scalar_as_tensor(boundaries: torch.Tensor, value) -> torch.Tensor:
    """A number searched for, in the dtype torch compares it in: the
    boundaries' promoted with a Python number (a float and integer
    boundaries: the default float dtype)."""
    dtype = torch.result_type(boundaries, value)
    return aten.full.default([], value, dtype=dtype, device=boundaries.device)


def searchsorted_scalar(sorted_sequence, value, *, out_int32=False, right=False, side=None, sorter=None):
    """`searchsorted.Scalar`: a 0-d result."""
    values = _scalar_as_tensor(sorted_sequence, value)
    return searchsorted(
        sorted_sequence, values, out_int32=out_int32, right=right, side=side, sorter=sorter
    )


def bucketize(x, boundaries, *, out_int32=False, right=False):
    """`bucketize.Tensor`: `searchsorted` of x in 1-d boundaries (torch's own
    decomposition indexes the boundaries with Python indexing, which reads a
    0-d x's position as a number)."""
    return searchsorted(boundaries, x, out_int32=out_int32, right=right)


def bucketize_scalar(value, boundaries, *, out_int32=False, right=False):
    """`bucketize.Scalar`: a 0-d result (torch's decomposition would make a
    tensor of the number, which a traced graph cannot)."""
    values = _scalar_as_tensor(boundaries, value)
    return searchsorted(boundaries, values, out_int32=out_int32, right=right)
