"""
Scaled dot-product attention as torch's fused kernels take it, or as its math.

Inference graphs keep attention whole: it becomes `ptensor.attention`, a library
call, with a mask the fused kernels take (`attention_with_fused_mask`). A
training graph keeps torch's fused attention too, through the same function:
AOTAutograd differentiates it into its fused backward
(`_scaled_dot_product_*_backward`), and the importer calls both whole (a mask
whose key length is not a multiple of 16, which torch's memory-efficient
kernel pads to align its rows, is padded by a generated kernel, of symbolic
size too). For `nn.MultiheadAttention`'s function
(`multi_head_attention_math`), attention is written as its math
(`attention_math`): two matrix products around a softmax, whose backward the
rest of the pipeline lowers and fuses.
"""

from __future__ import annotations

import inspect
import math

import torch
import torch.nn.functional as F

_LOW_PRECISION = (torch.float16, torch.bfloat16)

ATTENTION_CALLS = (F.scaled_dot_product_attention, torch._C._nn.scaled_dot_product_attention)  # noqa: SLF001
"""The callables by which Dynamo's graphs call attention."""

MULTI_HEAD_ATTENTION_CALLS = (F.multi_head_attention_forward,)
"""`nn.MultiheadAttention`'s function, which Dynamo's graphs call whole."""


def attention_math(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """
    `softmax(q @ k^T * scale + mask) @ v`, with `F.scaled_dot_product_attention`'s
    signature and semantics: a boolean mask keeps where true, a float mask is
    added, `is_causal` keeps the lower triangle aligned to the top left, rows
    with nothing kept give zeros, and half-precision scores are normalized in
    float32.
    """
    if enable_gqa and query.size(-3) != key.size(-3):
        repeats = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(repeats, -3)
        value = value.repeat_interleave(repeats, -3)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if scores.dtype in _LOW_PRECISION:
        scores = scores.float()
    keep = None
    if is_causal:
        rows, columns = query.size(-2), key.size(-2)
        keep = torch.ones(rows, columns, dtype=torch.bool, device=query.device).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        keep = attn_mask if keep is None else keep & attn_mask
    elif attn_mask is not None:
        scores = scores + attn_mask
    if keep is not None:
        scores = scores.masked_fill(keep.logical_not(), -math.inf)
    probabilities = torch.softmax(scores, -1)
    if keep is not None and attn_mask is not None:
        # A user's mask may keep nothing in a row: eager gives zeros there.
        probabilities = torch.where(keep.any(-1, keepdim=True), probabilities, 0.0)
    probabilities = probabilities.to(value.dtype)
    if dropout_p > 0.0:
        probabilities = F.dropout(probabilities, dropout_p)
    return torch.matmul(probabilities, value)


def attention_with_fused_mask(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: torch.Tensor | None = None, *rest, **options
) -> torch.Tensor:
    """
    `F.scaled_dot_product_attention` with a mask that torch's fused kernels
    take: one that repeats its elements along keys (stride 0 in its last
    dimension, as a padding mask built by broadcasting a comparison is) is
    copied into dense memory first. torch's flash, memory-efficient and cuDNN
    kernels read a mask row by row and need its last dimension contiguous;
    given such a mask, attention runs as its math, in float32 for
    half-precision inputs (on an H100: 0.69 ms against cuDNN's 0.03 ms for
    BERT-base's attention over 8 x 512 tokens in bfloat16). The copy is the
    mask's size once per graph call, for all the layers that share it.
    """
    if attn_mask is not None and attn_mask.dim() > 0 and attn_mask.size(-1) > 1 and attn_mask.stride(-1) == 0:
        attn_mask = attn_mask.contiguous()
    return F.scaled_dot_product_attention(query, key, value, attn_mask, *rest, **options)


def multi_head_attention_math(*args, **kwargs):
    """`F.multi_head_attention_forward` through its explicit path: with
    `need_weights` it computes attention as products around a softmax of the
    scores (the mask it merges from the padding and attention masks added),
    where without it calls the fused attention; the weights are dropped
    again where the caller did not ask for them."""
    bound = inspect.signature(F.multi_head_attention_forward).bind(*args, **kwargs)
    asked = bound.arguments.get("need_weights", True)
    bound.arguments["need_weights"] = True
    output, weights = F.multi_head_attention_forward(*bound.args, **bound.kwargs)
    return output, weights if asked else None
