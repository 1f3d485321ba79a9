"""
`embedding_bag` (aten._embedding_bag and its inference form
_embedding_bag_forward_only) as indexing and scatters, and its backward.

Each position of the flat indices belongs to the bag of the last offset at
or before it: marks at the offsets (a scatter_add of ones) summed along the
positions (a cumsum). A position holding `padding_idx`, and one past the
last offset with `include_last_offset`, goes to one extra bag that the
result leaves out. The bags' rows are the weight's rows at the indices
(scaled by `per_sample_weights`), combined into their bag by an index_add
(sum; mean divides by the bag's count, an empty bag giving 0) or a
scatter_reduce amax without the zeros it starts from (max, an empty bag
giving 0). The other results are torch's, which the backward reads: each
position's bag (none for sum unless there is a padding index), each bag's
count (zeros for sum; in the inference form, one per offset), and for max
the weight row of each bag's maximum per feature (the first on ties; the
count for mean, zeros for sum). The backward (`embedding_bag_backward`)
adds each bag's gradient to the rows it read.
"""

from __future__ import annotations

import torch

SUM, MEAN, MAX = 0, 1, 2


def embedding_bag_forward_only(*args, **kwargs):
    """aten._embedding_bag_forward_only."""
    return _embedding_bag(False, *args, **kwargs)


def embedding_bag(*args, **kwargs):
    """aten._embedding_bag."""
    return _embedding_bag(True, *args, **kwargs)


def _embedding_bag(
    training: bool,
    weight: torch.Tensor,
    indices: torch.Tensor,
    offsets: torch.Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = SUM,
    sparse: bool = False,
    per_sample_weights: torch.Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int = -1,
):
    if indices.dim() != 1 or offsets.dim() != 1 or weight.dim() != 2:
        return NotImplemented
    n, features = indices.shape[0], weight.shape[1]
    bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    later = offsets[1:].long()
    marks = torch.zeros(n + 1, dtype=torch.int64, device=indices.device).index_add(0, later, torch.ones_like(later))
    bag = marks.cumsum(0)[:n].clamp(max=bags)
    if padding_idx >= 0:
        bag = torch.where(indices == padding_idx, bags, bag)
    rows = weight[indices]
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    start = torch.zeros(bags + 1, features, dtype=weight.dtype, device=weight.device)
    counts = torch.zeros(bags + 1, dtype=torch.int64, device=indices.device).index_add(0, bag, torch.ones_like(bag))[:bags]
    if mode == SUM:
        output = start.index_add(0, bag, rows)[:bags]
        nothing = torch.zeros(bags if training else offsets.shape[0], dtype=torch.int64, device=indices.device)
        positions = indices.new_zeros(0) if padding_idx < 0 else _positions_bag(marks, n, bags)
        return output, positions, nothing, nothing.clone()
    if mode == MEAN:
        sums = start.index_add(0, bag, rows)[:bags]
        output = sums / counts.clamp(min=1).unsqueeze(1).to(weight.dtype)
        return output, bag.clamp(max=bags - 1) if padding_idx < 0 else _positions_bag(marks, n, bags), counts, counts.clone()
    spread = bag.unsqueeze(1).expand(n, features)
    output = start.scatter_reduce(0, spread, rows, "amax", include_self=False)
    reached = rows == output.gather(0, spread)
    position = torch.arange(n, device=indices.device).unsqueeze(1).expand(n, features)
    first = torch.full((bags + 1, features), n, dtype=torch.int64, device=indices.device)
    first = first.scatter_reduce(0, spread, torch.where(reached, position, n), "amin")[:bags]
    padded = torch.cat([indices.long(), indices.new_zeros(1, dtype=torch.int64)])  # position n: no maximum
    extremes = torch.where(first < n, padded[first], 0)
    return output[:bags], _positions_bag(marks, n, bags), counts, extremes


def embedding_bag_backward(
    grad: torch.Tensor,
    indices: torch.Tensor,
    offsets: torch.Tensor,
    offset2bag: torch.Tensor,
    bag_size: torch.Tensor,
    maximum_indices: torch.Tensor,
    num_weights: int,
    scale_grad_by_freq: bool,
    mode: int,
    sparse: bool,
    per_sample_weights: torch.Tensor | None,
    padding_idx: int = -1,
):
    """The weight's gradient: each bag's gradient added to the rows its
    positions read (divided by the bag's count for mean, scaled by the
    per-sample weights for sum), or to the row of each feature's maximum
    (max, non-empty bags)."""
    if scale_grad_by_freq or sparse or indices.dim() != 1 or grad.dim() != 2:
        return NotImplemented
    bags, features = grad.shape
    start = grad.new_zeros(num_weights, features)
    if mode == MAX:
        rows = maximum_indices.long()
        kept = torch.where((bag_size > 0).unsqueeze(1), grad, 0)
        return start.scatter_add(0, rows, kept)
    n = indices.shape[0]
    later = offsets[1:].long()
    marks = torch.zeros(n + 1, dtype=torch.int64, device=indices.device).index_add(0, later, torch.ones_like(later))
    bag = marks.cumsum(0)[:n].clamp(max=bags)
    if padding_idx >= 0:
        bag = torch.where(indices == padding_idx, bags, bag)
    spread = torch.cat([grad, grad.new_zeros(1, features)])[bag]
    if mode == MEAN:
        sizes = torch.cat([bag_size, bag_size.new_ones(1)]).clamp(min=1)[bag]
        spread = spread / sizes.unsqueeze(1).to(grad.dtype)
    elif per_sample_weights is not None:
        spread = spread * per_sample_weights.unsqueeze(1)
    return start.index_add(0, indices, spread)


def _positions_bag(marks: torch.Tensor, n: int, bags: int) -> torch.Tensor:
    """Each position's bag, padding positions included (torch's offset2bag)."""
    return marks.cumsum(0)[:n].clamp(max=max(bags - 1, 0))


__all__ = ["embedding_bag", "embedding_bag_backward", "embedding_bag_forward_only"]
