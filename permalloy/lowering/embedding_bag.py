"""
`embedding_bag` (aten._embedding_bag_forward_only, the inference form) as
indexing and scatters.

Each position of the flat indices belongs to the bag of the last offset at
or before it: marks at the offsets (a scatter_add of ones) summed along the
positions (a cumsum). A position holding `padding_idx`, and one past the
last offset with `include_last_offset`, goes to one extra bag that the
result leaves out. The bags' rows are the weight's rows at the indices
(scaled by `per_sample_weights`), combined into their bag by an index_add
(sum; mean divides by the bag's count, an empty bag giving 0) or a
scatter_reduce amax without the zeros it starts from (max, an empty bag
giving 0). The other results are torch's: each position's bag (none for
sum unless there is a padding index), each bag's count (zeros for sum, one
per offset), and for max the weight row of each
bag's maximum per feature (the first on ties; the count for mean, zeros
for sum). The training form, whose backward reads these, stays torch's.
"""

from __future__ import annotations

import torch

SUM, MEAN, MAX = 0, 1, 2


def embedding_bag_forward_only(
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
        nothing = torch.zeros(offsets.shape[0], dtype=torch.int64, device=indices.device)
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


def _positions_bag(marks: torch.Tensor, n: int, bags: int) -> torch.Tensor:
    """Each position's bag, padding positions included (torch's offset2bag)."""
    return marks.cumsum(0)[:n].clamp(max=max(bags - 1, 0))


__all__ = ["embedding_bag_forward_only"]
