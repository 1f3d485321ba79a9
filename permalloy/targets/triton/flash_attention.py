"""
Attention as one Triton kernel with an online softmax (flash attention's
forward), for attention that a graph wrote as its math.

Each program computes a block of queries of one (batch, head): it walks the
keys in blocks, adds the mask (an additive float tensor, or a boolean one that
keeps where true, read through its own strides, so a mask broadcast over
batch or heads is never copied) to the scaled scores, and keeps a running
maximum, sum and weighted sum of values, so the scores never reach memory.
Its semantics are the math's: a row whose scores are all -inf gives NaN, and
one masked throughout by the most negative float (as Hugging Face's masks
write it) the mean of its values.
Scores are kept in base 2 (`exp2`, with log2(e) folded into the scale) but
under an additive mask, whose most negative float overflows there; a
mask that is the same for every query (a padding mask) is read one row per
block of keys and broadcast; blocks that divide the sizes load and store
without bounds masks. Where a mask drops whole blocks of keys for a block of
queries (a causal mask, a sliding window, padding), a first small kernel
finds the range of blocks each block of queries keeps (`key_block_ranges`)
and the attention walks only that range. The block sizes, warps and pipeline stages come from
`default_config`, measured per size class (`benchmarks/attention_kernels.py`).
Row reductions name the standard library's combine functions (`tl.reduce`),
which Triton's interpreter runs whether or not Triton was imported with it
on, where `tl.max` and `tl.sum` would not.

    out = flash_attention(query, key, value, mask, scale)  # None: not supported here
    if flash_is_faster(query, key, value, mask, scale, timer): ...  # against torch's fused attention

Queries, keys and values are `[..., L, E]`, `[..., S, E]` and `[..., S, Ev]`
with at most two batch dimensions; the result is written token by token with
each token's heads together (`ATTENTION_MEMORY_ORDER`), as torch's fused
kernels write it.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from permalloy.targets.triton.autotune import Timer
from permalloy.targets.triton.configs import pow2_ceil
from permalloy.targets.triton.launch_plan import Allocation, LaunchPlan, PlannedLaunch, Slot, allocate, run_plan
from permalloy.targets.triton.modal_kernel import cdiv, modal_jit

MAX_FEATURES = 256
"""The widest query and value rows a program keeps in registers."""
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
LOG2E = 1.4426950408889634
Config = tuple[int, int, int, int]
"""Queries and keys per block, warps, pipeline stages."""


@modal_jit()
def triton_attention_key_ranges(
    MASK, RANGES,
    m_b, m_h, m_m, m_n,
    r_b, r_h, r_m,
    heads, rows, keys,
    MASK_KIND: tl.constexpr,  # 1: additive, 2: boolean (true keeps)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHUNK: tl.constexpr,
):  # fmt: skip
    """Into RANGES (zeros before), for a block of the mask's rows of one
    (batch, head) and CHUNK blocks of keys: the number of key blocks less
    the first that any row keeps, one past the last, and under an additive
    mask a flag per row that keeps a key, each the largest over the chunks
    (atomic), so that the programs of one block of rows need not wait on
    each other."""
    batch_head = tl.program_id(0)
    block = tl.program_id(1)
    b = (batch_head // heads).to(tl.int64)
    h = (batch_head % heads).to(tl.int64)
    rows_here = block * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows_here < rows
    m_start = MASK + b * m_b + h * m_h
    key_blocks = (keys + BLOCK_N - 1) // BLOCK_N
    row_keeps = tl.full([BLOCK_M], 0, tl.int32)
    first = tl.full([], 0, tl.int32) + key_blocks
    last = tl.full([], -1, tl.int32)
    for step in range(0, CHUNK):
        key_block = tl.program_id(2) * CHUNK + step
        cols = key_block * BLOCK_N + tl.arange(0, BLOCK_N)
        inside = row_ok[:, None] & (cols < keys)[None, :]
        mask = tl.load(m_start + rows_here[:, None] * m_m + cols[None, :] * m_n, mask=inside, other=0)
        if MASK_KIND == 2:
            keeps = (mask != 0) & inside
        else:
            keeps = (mask.to(tl.float32) > -1e38) & inside
        keeps = tl.reduce(keeps.to(tl.int32), 1, tl.standard._elementwise_max)
        row_keeps = tl.maximum(row_keeps, keeps)
        block_keeps = tl.reduce(keeps, 0, tl.standard._elementwise_max)
        first = tl.where(block_keeps > 0, tl.minimum(first, key_block), first)
        last = tl.where(block_keeps > 0, key_block, last)
    ranges = RANGES + b * r_b + h * r_h + block * r_m
    tl.atomic_max(ranges, key_blocks - first, mask=last >= 0)
    tl.atomic_max(ranges + 1, last + 1, mask=last >= 0)
    if MASK_KIND == 1:
        tl.atomic_max(ranges + 2 + tl.arange(0, BLOCK_M), row_keeps, mask=row_ok & (row_keeps > 0))


@modal_jit()
def triton_flash_attention_forward(
    Q, K, V, MASK, RANGES, OUT,
    q_b, q_h, q_m, q_d,
    k_b, k_h, k_n, k_d,
    v_b, v_h, v_n, v_d,
    m_b, m_h, m_m, m_n,
    r_b, r_h, r_m,
    o_b, o_h, o_m, o_d,
    heads, queries, keys, features, value_features, masked_rows, score_scale,
    MASK_KIND: tl.constexpr,  # 0: none, 1: additive, 2: boolean (true keeps)
    MASK_ROWS: tl.constexpr,  # whether the mask differs from query to query
    SKIP_BLOCKS: tl.constexpr,  # whether RANGES bounds the blocks of keys each block of queries walks
    PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EVEN_D: tl.constexpr,
):  # fmt: skip
    batch_head = tl.program_id(0)  # the grid's first axis takes 2^31 - 1 programs, its second 65535
    # the last blocks of queries first: under a causal mask they walk the most keys
    block = tl.num_programs(1) - 1 - tl.program_id(1)
    b = (batch_head // heads).to(tl.int64)  # 64-bit offsets: a batch of tensors may pass 2^31 elements
    h = (batch_head % heads).to(tl.int64)
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, BLOCK_D)
    dv = tl.arange(0, BLOCK_DV)
    row_ok = rows < queries
    q_pointers = Q + b * q_b + h * q_h + rows[:, None] * q_m + d[None, :] * q_d
    if EVEN_M and EVEN_D:
        q = tl.load(q_pointers)
    else:
        q = tl.load(q_pointers, mask=row_ok[:, None] & (d[None, :] < features), other=0.0)
    k_start = K + b * k_b + h * k_h
    v_start = V + b * v_b + h * v_h
    m_start = MASK + b * m_b + h * m_h
    # scores are kept in base 2, exp(x) = exp2(x * log2(e)), with log2(e) folded into the scale, except
    # under an additive mask: its most negative float stays finite only in natural units (as in the math,
    # a row masked by it throughout averages its values), which differences of scores leave for exp2
    maximum = tl.full([BLOCK_M], float("-inf"), tl.float32)
    total = tl.full([BLOCK_M], 0.0, tl.float32)
    acc = tl.full([BLOCK_M, BLOCK_DV], 0.0, tl.float32)
    lowest, highest = 0, keys
    if SKIP_BLOCKS:  # blocks of keys outside the range are dropped for every row: they add exactly nothing
        ranges = RANGES + b * r_b + h * r_h + block * r_m
        key_blocks = (keys + BLOCK_N - 1) // BLOCK_N
        lowest = (key_blocks - tl.load(ranges)) * BLOCK_N
        highest = tl.load(ranges + 1) * BLOCK_N
        if MASK_KIND == 1:  # a row that keeps nothing averages every value where its mask is finite
            mask_rows = tl.where(r_m != 0, block * BLOCK_M, 0) + tl.arange(0, BLOCK_M)
            flags = tl.load(ranges + 2 + tl.arange(0, BLOCK_M), mask=mask_rows < masked_rows, other=1)
            if tl.reduce(flags, 0, tl.standard._elementwise_min) == 0:
                lowest, highest = 0, key_blocks * BLOCK_N
    for start in range(lowest, highest, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_ok = cols < keys
        k_pointers = k_start + cols[:, None] * k_n + d[None, :] * k_d
        if EVEN_N and EVEN_D:
            k = tl.load(k_pointers)
        else:
            k = tl.load(k_pointers, mask=col_ok[:, None] & (d[None, :] < features), other=0.0)
        scores = tl.dot(q, tl.trans(k), input_precision=PRECISION) * score_scale
        if MASK_KIND != 0:
            if MASK_ROWS:
                m_pointers = m_start + rows[:, None] * m_m + cols[None, :] * m_n
                if EVEN_M and EVEN_N:
                    mask = tl.load(m_pointers)
                else:
                    mask = tl.load(m_pointers, mask=row_ok[:, None] & col_ok[None, :], other=0)
            else:  # one row of the mask serves every query: loaded once, broadcast
                if EVEN_N:
                    mask = tl.load(m_start + cols * m_n)[None, :]
                else:
                    mask = tl.load(m_start + cols * m_n, mask=col_ok, other=0)[None, :]
            if MASK_KIND == 1:
                scores = scores + mask.to(tl.float32)
            else:
                scores = tl.where(mask != 0, scores, float("-inf"))
        if not EVEN_N:
            scores = tl.where(col_ok[None, :], scores, float("-inf"))
        new_maximum = tl.maximum(maximum, tl.reduce(scores, 1, tl.standard._elementwise_max))
        # rows with nothing kept so far subtract 0 (exp2(-inf) = 0, not NaN)
        shift = tl.where(new_maximum == float("-inf"), 0.0, new_maximum)
        if MASK_KIND == 1:
            weights = tl.math.exp2((scores - shift[:, None]) * 1.4426950408889634)
            rescale = tl.math.exp2((maximum - shift) * 1.4426950408889634)
        else:
            weights = tl.math.exp2(scores - shift[:, None])
            rescale = tl.math.exp2(maximum - shift)
        total = total * rescale + tl.reduce(weights, 1, tl.standard._sum_combine)
        v_pointers = v_start + cols[:, None] * v_n + dv[None, :] * v_d
        if EVEN_N and EVEN_D:
            v = tl.load(v_pointers)
        else:
            v = tl.load(v_pointers, mask=col_ok[:, None] & (dv[None, :] < value_features), other=0.0)
        acc = acc * rescale[:, None] + tl.dot(weights.to(v.dtype), v, input_precision=PRECISION)
        maximum = new_maximum
    out = acc / total[:, None]  # 0 / 0: NaN where a row kept nothing, as in the math
    o_pointers = OUT + b * o_b + h * o_h + rows[:, None] * o_m + dv[None, :] * o_d
    if EVEN_M and EVEN_D:
        tl.store(o_pointers, out.to(OUT.dtype.element_ty))
    else:
        tl.store(o_pointers, out.to(OUT.dtype.element_ty), mask=row_ok[:, None] & (dv[None, :] < value_features))


def _block(size: int, largest: int) -> int:
    return max(16, min(largest, pow2_ceil(size)))


def default_config(queries: int, keys: int, width: int, dtype: torch.dtype) -> Config:
    """The block of queries and of keys, warps and pipeline stages for
    attention of these sizes, `width` being the wider of the query and value
    rows: the fastest of a sweep of eleven (half precision) and ten (float32)
    configurations on an H200 at BERT's, GPT-2's, T5's and Swin's attention
    and at 2,048 and 4,096 tokens, or the nearest that fits the registers
    and shared memory of wider rows."""
    half = dtype != torch.float32
    if width > 128:
        return (64, 32, 4, 2) if half else (32, 32, 4, 2)
    if queries <= 64:
        return (64, 32, 4, 3) if half else (64, 32, 8, 2)
    if not half:
        if width > 64:  # float32 rows of 128: larger blocks spill registers (65 against 23 ms at 4,096 tokens)
            return (32, 32, 4, 2)
        return (32, 64, 4, 3) if keys >= 2048 else (64, 64, 4, 2)
    if width > 64:
        return (128, 64, 8, 3)
    return (128, 64, 4, 3) if keys >= 2048 else (128, 64, 8, 2)


FALLBACK_CONFIG: Config = (32, 32, 4, 1)
"""The configuration run where a chosen one needs more shared memory or
registers than the GPU has."""


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
    return mask is None or _broadcasts_to(tuple(mask.shape), (*query.shape[:-1], key.size(-2)))


def _broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether a tensor of `shape` broadcasts to `target` unchanged (a plain
    comparison: torch's `broadcast_shapes` takes about 40 microseconds)."""
    if len(shape) > len(target):
        return False
    return all(size in (1, wanted) for size, wanted in zip(shape[::-1], target[::-1], strict=False))


SKIPPING_WORK = 1 << 26
"""The fewest scores (batch by heads by queries by keys; eight times as many
for float32 products without TF32, which take about eight times as long) at
which blocks of keys a mask drops are looked for. Below, the search costs
more than skipping saves: on an H200 at GPT-2's 8 x 16 x 512 tokens the
search took 0.015 ms and saved 0.010 in bf16, and saved 0.30 ms in float32."""
FLOAT32_SCORE_COST = 8
KEY_BLOCKS_PER_PROGRAM = 4


def key_block_ranges(mask: torch.Tensor, keys: int, block_m: int, block_n: int) -> torch.Tensor:
    """For each block of `block_m` of the mask's rows (one block where the
    mask is the same for every query) in each of its batches and heads (one
    where it broadcasts), int32 `[batches, heads, row blocks, 2 + block_m]`:
    the number of blocks of `block_n` keys less the first block that any row
    keeps, one past the last, and under an additive mask a flag per row that
    keeps a key. Keys outside that range are dropped for every row of the
    block (false in a boolean mask, at most -1e38 in an additive one), so
    their scores add exactly nothing, the exponent of a dropped score lying
    below the row's largest by more than any float32 score (scores of
    magnitude over 1e30 aside). Under an additive mask, a block with a row
    that keeps nothing walks every key: the math gives NaN there, or its mean
    of values where the mask is finite throughout; under a boolean one, NaN,
    which the range gives."""
    ranges, launch = _key_ranges_launch(mask, keys, block_m, block_n, Slot(0), Slot(1))
    plan = LaunchPlan(results=(ranges,), temporaries=(), launches=(launch,))
    (found,), _ = run_plan(plan, [mask], out=[allocate(ranges, mask.device, zeroed=True)])
    return found


def _key_ranges_launch(
    mask: torch.Tensor, keys: int, block_m: int, block_n: int, mask_slot: Slot, ranges_slot: Slot
) -> tuple[Allocation, PlannedLaunch]:
    """The ranges `key_block_ranges` finds (to be zeroed before) and the
    launch finding them, the mask and the ranges at these slots."""
    shape, strides = _four_d(mask)
    batches, heads, rows = shape[:3]
    mask_strides = _expanded_strides(shape, strides, (batches, heads, rows, keys))
    sizes = (batches, heads, cdiv(rows, block_m), 2 + block_m)
    ranges = Allocation(sizes, _dense_strides(sizes), torch.int32)
    chunks = cdiv(cdiv(keys, block_n), KEY_BLOCKS_PER_PROGRAM)
    launch = PlannedLaunch(
        triton_attention_key_ranges,
        (batches * heads, ranges.sizes[2], chunks),
        (mask_slot, ranges_slot, *mask_strides, *ranges.strides[:3], heads, rows, keys),
        {"MASK_KIND": 2 if mask.dtype == torch.bool else 1, "BLOCK_M": block_m, "BLOCK_N": block_n,
         "CHUNK": KEY_BLOCKS_PER_PROGRAM, "num_warps": 4, "num_stages": 1},
    )  # fmt: skip
    return ranges, launch


def _dense_strides(sizes: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(sizes):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _four_d(tensor: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The sizes and strides of a tensor of at most four dimensions as a
    four-dimensional view unsqueezed in front gives them."""
    strides = tensor.stride()
    leading = tensor.size(0) * strides[0] if tensor.dim() else 1
    padding = 4 - tensor.dim()
    return (1,) * padding + tuple(tensor.shape), (leading,) * padding + tuple(strides)


def _expanded_strides(shape: tuple[int, ...], strides: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    """The strides `expand` gives a tensor of `shape` and `strides` expanded to `target`."""
    pairs = zip(shape, strides, target, strict=True)
    return tuple(0 if size == 1 and wanted != 1 else stride for size, stride, wanted in pairs)


def flash_plan(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    config: Config | None = None,
) -> LaunchPlan | None:
    """What `flash_attention` allocates and launches for these tensors (the
    inputs query, key, value and the mask where there is one, in order), or
    None where `supported` says no."""
    if not supported(query, key, value, mask):
        return None
    (q_shape, q_strides), (k_shape, k_strides), (v_shape, v_strides) = (_four_d(t) for t in (query, key, value))
    batch, heads, queries, features = q_shape
    keys, value_features = k_shape[2], v_shape[3]
    # token by token, each token's heads together
    out_strides = (queries * heads * value_features, value_features, heads * value_features, 1)
    out = Allocation((batch, heads, queries, value_features), out_strides, query.dtype)
    result = out if query.dim() == 4 else Allocation(out.sizes[1:], out.strides[1:], query.dtype)
    inputs = 3 if mask is None else 4
    out_slot, ranges_slot = Slot(inputs), Slot(inputs + 1)
    kind, mask_strides, mask_slot = 0, (0, 0, 0, 0), Slot(0)
    if mask is not None:
        mask_strides = _expanded_strides(*_four_d(mask), (batch, heads, queries, keys))
        kind, mask_slot = (2 if mask.dtype == torch.bool else 1), Slot(3)
    precision = "tf32" if query.dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32 else "ieee"
    block_d, block_dv = _block(features, MAX_FEATURES), _block(value_features, MAX_FEATURES)
    if config is None:
        config = default_config(queries, keys, max(block_d, block_dv), query.dtype)
    block_m, block_n, warps, stages = config
    score_cost = FLOAT32_SCORE_COST if precision == "ieee" and query.dtype == torch.float32 else 1
    skip = mask is not None and cdiv(keys, block_n) > 1 and batch * heads * queries * keys * score_cost >= SKIPPING_WORK
    query_blocks = cdiv(queries, block_m)
    temporaries, launches = (), []
    ranges_arg, ranges_strides, masked_rows = Slot(0), (0, 0, 0), 0
    if skip:
        ranges, search = _key_ranges_launch(mask, keys, block_m, block_n, mask_slot, ranges_slot)
        temporaries, ranges_arg = (ranges,), ranges_slot
        walked = (batch, heads, query_blocks, ranges.sizes[3])
        ranges_strides = _expanded_strides(ranges.sizes, ranges.strides, walked)[:3]
        masked_rows = mask.size(-2) if mask.dim() >= 2 else 1
        launches.append(search)
    launches.append(PlannedLaunch(
        triton_flash_attention_forward,
        (batch * heads, query_blocks),
        (Slot(0), Slot(1), Slot(2), mask_slot, ranges_arg, out_slot,
         *q_strides, *k_strides, *v_strides, *mask_strides, *ranges_strides, *out_strides,
         heads, queries, keys, features, value_features, masked_rows, scale if kind == 1 else scale * LOG2E),
        {"MASK_KIND": kind, "MASK_ROWS": queries > 1 and mask_strides[2] != 0, "SKIP_BLOCKS": skip,
         "PRECISION": precision, "BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_D": block_d, "BLOCK_DV": block_dv,
         "EVEN_M": queries % block_m == 0, "EVEN_N": keys % block_n == 0,
         "EVEN_D": features == block_d and value_features == block_dv, "num_warps": warps, "num_stages": stages},
    ))  # fmt: skip
    return LaunchPlan(results=(result,), temporaries=temporaries, launches=tuple(launches))


def run_flash(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    config: Config | None = None,
) -> tuple[torch.Tensor, LaunchPlan, list] | None:
    """`flash_attention`'s result with the plan that ran and what each of its
    launches ran (`run_plan`), or None where `supported` says no. A
    configuration that needs more shared memory or registers than the GPU
    has gives way to `FALLBACK_CONFIG`."""
    plan = flash_plan(query, key, value, mask, scale, config)
    if plan is None:
        return None
    inputs = [query, key, value] if mask is None else [query, key, value, mask]
    try:
        (out,), launched = run_plan(plan, inputs)
    except triton.runtime.errors.OutOfResources:
        plan = flash_plan(query, key, value, mask, scale, FALLBACK_CONFIG)
        (out,), launched = run_plan(plan, inputs)
    return out, plan, launched


def flash_attention(*arguments: Any) -> torch.Tensor | None:
    """`softmax(query @ key^T * scale + mask) @ value` in one kernel, or None
    where `supported` says no; the arguments `query, key, value, mask, scale`
    and optionally `config`, which replaces the sizes' default
    (`default_config`), as `run_flash` takes them."""
    ran = run_flash(*arguments)
    return None if ran is None else ran[0]


def flash_is_faster(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    timer: Timer,
) -> bool:
    """Whether the flash kernel at its default configuration runs these
    tensors faster than torch's fused attention, both timed by `timer`
    (median milliseconds of a callable); False, untimed, where the kernel
    does not take them. On an H200 torch's kernels win at 512 tokens (twice
    as fast) and the flash kernel where a long sequence carries a bias that
    torch's fastest kernel cannot take (ALiBi over 4,096 tokens)."""
    if not supported(query, key, value, mask):
        return False
    library = timer(lambda: F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scale))
    kernel = timer(lambda: flash_attention(query, key, value, mask, scale))
    return kernel < library
