"""
`x[mask] = values` (and `+=`): `index_put` with a boolean mask, as a select.

torch turns a mask into the positions where it holds (`nonzero`), a size
known only at run time; the assignment itself needs no such size. Where
the values have one entry along the selected positions' dimension, each
selected position takes it (broadcast), and the result is
`where(mask, values, x)`. Where they have one entry per selected position,
the i-th selected position, in row-major order of the mask, takes entry
`i = cumsum(mask) - 1`, a gather. With accumulation each selected position
adds its value once (a mask selects a position at most once).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _static(shape) -> bool:
    return all(isinstance(size, int) for size in shape)


def index_put_with_mask(x, indices, values, accumulate=False):
    """index_put(x, [None, ..., mask, ...], values, accumulate) with one
    boolean mask as its only index; NotImplemented for other indices."""
    given = [(position, index) for position, index in enumerate(indices) if index is not None]
    if len(given) != 1 or given[0][1].dtype != torch.bool:
        return NotImplemented
    position, mask = given[0]
    rank, mask_rank = x.dim(), mask.dim()
    trailing = rank - position - mask_rank
    if mask_rank == 0 or trailing < 0 or values.dtype != x.dtype:
        return NotImplemented
    if not (_static(x.shape) and _static(mask.shape) and _static(values.shape)):
        return NotImplemented
    if values.device != x.device:
        # `x[mask] = number` on a GPU assigns a CPU scalar, which torch's ops
        # take beside GPU tensors only while it has no dimensions
        values = aten._to_copy.default(values, device=x.device)
    selected_rank = position + 1 + trailing  # x[mask]: the selected positions as one dimension
    if values.dim() > selected_rank:
        return NotImplemented
    values = aten.view.default(values, [1] * (selected_rank - values.dim()) + list(values.shape))
    extent = values.shape[position]
    if extent == 0:  # nothing to assign: the mask holds nowhere
        return aten.clone.default(x)
    if extent == 1:
        values = aten.view.default(
            values, [*values.shape[:position], *([1] * mask_rank), *values.shape[position + 1 :]]
        )
    else:
        order = aten.cumsum.default(aten.view.default(mask, [-1]), 0, dtype=torch.int64)
        order = aten.clamp.default(aten.sub.Tensor(order, 1), 0, extent - 1)
        order = aten.view.default(order, list(mask.shape))
        values = aten.index.Tensor(values, [None] * position + [order])
    placed = aten.view.default(mask, [1] * position + list(mask.shape) + [1] * trailing)
    new = aten.add.Tensor(x, values) if accumulate else values
    return aten.expand.default(aten.where.self(placed, new, x), list(x.shape))
