"""
Attention as one Triton kernel with an online softmax (flash attention's
forward), for attention that a graph wrote as its math.

Each program computes a block of queries of one (batch, head): it walks the
keys in blocks, adds the mask (an additive float tensor, or a boolean one that
keeps where true, read through its own strides, so a mask broadcast over
batch or heads is never copied) to the scaled scores, and keeps a running
maximum, sum and weighted sum of values, so the scores never reach memory.
Its semantics are the math's: a row whose scores are all -inf gives NaN.
Row reductions name the standard library's combine functions (`tl.reduce`),
which Triton's interpreter runs whether or not Triton was imported with it
on, where `tl.max` and `tl.sum` would not.

    out = flash_attention(query, key, value, mask, scale)  # None: not supported here

Queries, keys and values are `[..., L, E]`, `[..., S, E]` and `[..., S, Ev]`
with at most two batch dimensions; the result is written token by token with
each token's heads together (`ATTENTION_MEMORY_ORDER`), as torch's fused
kernels write it.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

MAX_FEATURES = 256
"""The widest query and value rows a program keeps in registers."""
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _flash_forward(
    Q, K, V, MASK, OUT,
    q_b, q_h, q_m, q_d,
    k_b, k_h, k_n, k_d,
    v_b, v_h, v_n, v_d,
    m_b, m_h, m_m, m_n,
    o_b, o_h, o_m, o_d,
    heads, queries, keys, features, value_features, scale,
    MASK_KIND: tl.constexpr,  # 0: none, 1: additive, 2: boolean (true keeps)
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
):  # fmt: skip
    batch_head = tl.program_id(0)  # the grid's first axis takes 2^31 - 1 programs, its second 65535
    block = tl.program_id(1)
    b = (batch_head // heads).to(tl.int64)  # 64-bit offsets: a batch of tensors may pass 2^31 elements
    h = (batch_head % heads).to(tl.int64)
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    row_ok = rows < queries
    q = tl.load(
        Q + b * q_b + h * q_h + rows[:, None] * q_m + d[None, :] * q_d,
        mask=row_ok[:, None] & (d[None, :] < features),
        other=0.0,
    )
    maximum = tl.full([BLOCK_M], float("-inf"), tl.float32)
    total = tl.full([BLOCK_M], 0.0, tl.float32)
    acc = tl.full([BLOCK_M, BLOCK_DV], 0.0, tl.float32)
    for start in range(0, keys, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_ok = cols < keys
        k = tl.load(
            K + b * k_b + h * k_h + cols[None, :] * k_n + d[:, None] * k_d,
            mask=col_ok[None, :] & (d[:, None] < features),
            other=0.0,
        )
        scores = tl.dot(q, k, input_precision=PRECISION) * scale
        both = row_ok[:, None] & col_ok[None, :]
        if MASK_KIND != 0:
            mask = tl.load(MASK + b * m_b + h * m_h + rows[:, None] * m_m + cols[None, :] * m_n, mask=both, other=0)
            if MASK_KIND == 1:
                scores = scores + mask.to(tl.float32)
            else:
                scores = tl.where(mask != 0, scores, float("-inf"))
        scores = tl.where(col_ok[None, :], scores, float("-inf"))
        new_maximum = tl.maximum(maximum, tl.reduce(scores, 1, tl.standard._elementwise_max))
        # rows with nothing kept so far subtract 0 (exp(-inf) = 0, not NaN)
        shift = tl.where(new_maximum == float("-inf"), 0.0, new_maximum)
        weights = tl.exp(scores - shift[:, None])
        rescale = tl.exp(maximum - shift)
        total = total * rescale + tl.reduce(weights, 1, tl.standard._sum_combine)
        v = tl.load(
            V + b * v_b + h * v_h + cols[:, None] * v_n + dv[None, :] * v_d,
            mask=col_ok[:, None] & (dv[None, :] < value_features),
            other=0.0,
        )
        acc = acc * rescale[:, None] + tl.dot(weights.to(v.dtype), v, input_precision=PRECISION)
        maximum = new_maximum
    out = acc / total[:, None]  # 0 / 0: NaN where a row kept nothing, as in the math
    tl.store(
        OUT + b * o_b + h * o_h + rows[:, None] * o_m + dv[None, :] * o_d,
        out.to(OUT.dtype.element_ty),
        mask=row_ok[:, None] & (dv[None, :] < value_features),
    )


def _four_d(tensor: torch.Tensor) -> torch.Tensor:
    return tensor if tensor.dim() == 4 else tensor.unsqueeze(0)


def _block(size: int, largest: int) -> int:
    return max(16, min(largest, triton.next_power_of_2(size)))


def supported(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None) -> bool:
    """Whether `flash_attention` takes these tensors: queries, keys and values
    of one batch and type, keys as wide as queries, as many values as keys,
    and a mask that broadcasts to the scores."""
    if not (3 <= query.dim() <= 4 and query.dim() == key.dim() == value.dim()):
        return False
    if query.dtype not in DTYPES or not (query.dtype == key.dtype == value.dtype):
        return False
    if not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]) or query.size(-1) != key.size(-1):
        return False
    if key.size(-2) != value.size(-2) or key.size(-2) == 0 or query.numel() == 0:
        return False
    if max(query.size(-1), value.size(-1)) > MAX_FEATURES:
        return False
    scores = (*query.shape[:-1], key.size(-2))
    try:
        return mask is None or torch.broadcast_shapes(mask.shape, scores) == scores
    except RuntimeError:
        return False


def flash_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    config: tuple[int, int, int, int] | None = None,
) -> torch.Tensor | None:
    """`softmax(query @ key^T * scale + mask) @ value` in one kernel, or None
    where `supported` says no. `config` (queries and keys per block, warps,
    pipeline stages) replaces the sizes' default."""
    if not supported(query, key, value, mask):
        return None
    q, k, v = _four_d(query), _four_d(key), _four_d(value)
    batch, heads, queries, features = q.shape
    keys, value_features = k.size(2), v.size(3)
    # token by token, each token's heads together
    out = torch.empty(batch, queries, heads, value_features, dtype=q.dtype, device=q.device).permute(0, 2, 1, 3)
    kind, mask_strides, mask_arg = 0, (0, 0, 0, 0), q
    if mask is not None:
        expanded = mask.expand(batch, heads, queries, keys)
        kind = 2 if mask.dtype == torch.bool else 1
        mask_strides, mask_arg = expanded.stride(), expanded
    precision = "tf32" if q.dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32 else "ieee"
    block_d, block_dv = _block(features, MAX_FEATURES), _block(value_features, MAX_FEATURES)
    wide = max(block_d, block_dv) > 64 or q.dtype == torch.float32
    block_m, block_n, warps, stages = _block(queries, 64), _block(keys, 32 if wide else 64), 4, 2
    if config is not None:
        block_m, block_n, warps, stages = config
    grid = (batch * heads, triton.cdiv(queries, block_m))
    _flash_forward[grid](
        q, k, v, mask_arg, out,
        *q.stride(), *k.stride(), *v.stride(), *mask_strides, *out.stride(),
        heads, queries, keys, features, value_features, scale,
        MASK_KIND=kind, PRECISION=precision,
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d, BLOCK_DV=block_dv,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return out if query.dim() == 4 else out.squeeze(0)
