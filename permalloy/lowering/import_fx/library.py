"""
Converters of library ops (run as extern calls): mm, bmm, addmm, convolution
and its backward, the scaled-dot-product attention variants, the gradient
of an embedding table, and the FFTs on real pairs that `complex_as_real`
writes.
"""

from __future__ import annotations

import operator

import sympy
import torch
from torch import fx
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor
from permalloy.lowering import complex_fft  # noqa: F401 - defines the FFT custom ops named below
from permalloy.lowering.import_fx.common import Converter, argument
from permalloy.lowering.import_fx.context import ImportContext
from permalloy.lowering.import_fx.fallback import torch_call

aten = torch.ops.aten


def _floats(ctx: ImportContext, node: fx.Node) -> bool:
    """Library ops take floats; integer matrix products fall back."""
    element_type = ctx.result_type(node, 0 if _several(node) else None).element_type
    if ptensor.is_float(element_type):
        return True
    ctx.decline(f"unsupported dtype {element_type}: library calls take floats")
    return False


def _several(node: fx.Node) -> bool:
    return isinstance(node.meta["val"], list | tuple)


def matmul(op_class: type) -> Converter:
    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
        if not _floats(ctx, node):
            return None
        lhs, rhs = ctx.tensor(node.args[0]), ctx.tensor(node.args[1])
        return ctx.emit(op_class(lhs, rhs, ctx.result_type(node)))

    return convert


def addmm(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    if not _floats(ctx, node):
        return None
    bias, lhs, rhs = (ctx.tensor(a) for a in node.args[:3])
    beta = float(node.kwargs.get("beta", 1.0))
    alpha = float(node.kwargs.get("alpha", 1.0))
    return ctx.emit(ptensor.AddmmOp(bias, lhs, rhs, ctx.result_type(node), beta, alpha))


def convolution(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """aten.convolution(input, weight, bias, stride, padding, dilation,
    transposed, output_padding, groups)."""
    if not _floats(ctx, node):
        return None
    source, weight, bias = node.args[:3]
    geometry = _geometry(ctx, source, *node.args[3:9])
    if geometry is None:
        return None
    stride, padding, dilation, groups, transposed, output_padding = geometry
    return ctx.emit(
        ptensor.ConvolutionOp(
            ctx.tensor(source),
            ctx.tensor(weight),
            None if bias is None else ctx.tensor(bias),
            stride,
            padding,
            dilation,
            groups,
            ctx.result_type(node),
            transposed=transposed,
            output_padding=output_padding,
        )
    )


def convolution_backward(ctx: ImportContext, node: fx.Node):
    """aten.convolution_backward(grad_output, input, weight, bias_sizes, stride,
    padding, dilation, transposed, output_padding, groups, output_mask): the
    masked-in gradients, None for the others. A float32 or float64 bias's
    gradient is the sum of the output gradient over its images and
    positions, a `ptensor.reduce` that fusion can join to the kernel
    computing the output gradient; the library computes the input's and the
    weight's. A half-precision bias's stays the library's: `split-reductions`
    keeps half-precision sums whole (their partial sums would round), and a
    column sum over a batch of images as a few programs would be slower than
    torch's."""
    grad_output, source, weight = node.args[:3]
    if not ptensor.is_float(ctx.type_of(ctx.meta(grad_output)).element_type):
        return ctx.decline("unsupported dtype: library calls take floats")
    geometry = _geometry(ctx, source, *node.args[4:10])
    if geometry is None:
        return None
    stride, padding, dilation, groups, transposed, output_padding = geometry
    mask = [bool(m) for m in node.args[10]]
    bias_gradient = None
    if mask[2] and ctx.meta(grad_output).dtype in (torch.float32, torch.float64):
        rank = ctx.meta(grad_output).dim()
        reduce = ptensor.ReduceOp(
            ptensor.ReduceKind.SUM, ctx.tensor(grad_output), [0, *range(2, rank)], False, ctx.result_type(node, 2)
        )
        bias_gradient = ctx.emit(reduce)
    library_mask = [mask[0], mask[1], mask[2] and bias_gradient is None]
    if not any(library_mask):
        return None, None, bias_gradient
    types = [ctx.result_type(node, i) for i in range(3) if library_mask[i]]
    op = ptensor.ConvolutionBackwardOp(
        ctx.tensor(grad_output),
        ctx.tensor(source),
        ctx.tensor(weight),
        stride,
        padding,
        dilation,
        groups,
        library_mask,
        types,
        transposed=transposed,
        output_padding=output_padding,
    )
    ctx.emit(op)
    gradients = iter(op.gradients)
    library = tuple(next(gradients) if wanted else None for wanted in library_mask)
    return library[0], library[1], library[2] if bias_gradient is None else bias_gradient


def _geometry(ctx: ImportContext, source, stride, padding, dilation, transposed, output_padding, groups):
    """(stride, padding, dilation, groups, transposed, output_padding) of a
    convolution or its backward, with per-dimension lists of one entry per
    spatial dimension; None when a value is symbolic (the op falls back)."""
    spatial = ctx.meta(source).dim() - 2
    lists = [_per_dimension(v, spatial) for v in (stride, padding, dilation, output_padding)]
    if any(v is None for v in lists) or not isinstance(groups, int):
        return ctx.decline("a symbolic stride, padding, dilation or group count")
    return lists[0], lists[1], lists[2], groups, bool(transposed), lists[3]


def _per_dimension(values, spatial: int) -> list[int] | None:
    values = list(values)
    if any(not isinstance(v, int) for v in values):
        return None
    return values * spatial if len(values) == 1 else values


def _only_first_result_used(node: fx.Node) -> bool:
    """Whether every (live) reader of a multi-result op reads its result 0."""
    return all(
        user.target is operator.getitem and (user.args[1] == 0 or not user.users)
        for user in node.users
    )


def _query_groups(query: SSAValue, key: SSAValue) -> int | None:
    """How many query heads share each key/value head (grouped-query
    attention: `[..., Hq, L, E]` queries over `[..., Hkv, S, E]` keys, Hq a
    multiple of Hkv); None where that is not a constant."""
    query_type, key_type = ptensor.tensor_type(query), ptensor.tensor_type(key)
    if query_type.rank < 3 or key_type.rank != query_type.rank:
        return 1
    heads, kv_heads = query_type.sizes[-3], key_type.sizes[-3]
    if ptensor.sizes_equal(heads, kv_heads):
        return 1
    if not (heads.is_Integer and kv_heads.is_Integer) or int(kv_heads) == 0:
        return None
    if int(heads) % int(kv_heads):
        return None
    return int(heads) // int(kv_heads)


def _repeat_heads(ctx: ImportContext, tensor: SSAValue, groups: int) -> SSAValue:
    """`tensor.repeat_interleave(groups, -3)` as views: each head of
    `[..., H, S, E]` broadcast over a new dimension of `groups`, merged into
    `[..., H * groups, S, E]`."""
    if groups == 1:
        return tensor
    source = ptensor.tensor_type(tensor)
    *batch, heads, length, width = source.sizes
    rank = source.rank
    split = source.with_shape([*batch, heads, 1, length, width])
    widened = source.with_shape([*batch, heads, groups, length, width])
    merged = source.with_shape([*batch, heads * groups, length, width])
    unsqueezed = ctx.emit(ptensor.UnsqueezeOp(tensor, rank - 2, split))
    expanded = ctx.emit(ptensor.ExpandOp(unsqueezed, widened))
    return ctx.emit(ptensor.ReshapeOp(expanded, merged))


def attention(mask: tuple[int | None, str], dropout_index: int, causal_index: int) -> Converter:
    """
    An SDPA variant, given where its mask (position, or None for keyword-only,
    and name), dropout and causal arguments are. Grouped-query attention
    (fewer key/value heads than query heads, as `enable_gqa` allows) reads
    each key/value head once per query head of its group. A training step's
    forward, whose extra results (log-sum-exp, the dropout's seed) its
    backward reads, and attention with dropout or a symbolic scale, are the
    ATen op called whole (`torch_call`), as is the backward
    (`attention_backward`); symbolic head counts that differ fall back.
    """

    def convert(ctx: ImportContext, node: fx.Node):
        several = _several(node)
        if several and not _only_first_result_used(node):
            return torch_call(ctx, node)
        if not _floats(ctx, node):
            return None
        if argument(node, dropout_index, "dropout_p", 0.0):
            return torch_call(ctx, node)
        scale = ctx.scalar(node.kwargs.get("scale"))
        if isinstance(scale, sympy.Basic):
            return torch_call(ctx, node)
        query, key, value = (ctx.tensor(a) for a in node.args[:3])
        groups = _query_groups(query, key)
        if groups is None:
            return ctx.decline("key and value heads that do not divide the query heads")
        key, value = (_repeat_heads(ctx, t, groups) for t in (key, value))
        mask_index, mask_name = mask
        mask_arg = (
            node.kwargs.get(mask_name)
            if mask_index is None
            else argument(node, mask_index, mask_name)
        )
        result = ctx.emit(
            ptensor.AttentionOp(
                query,
                key,
                value,
                None if mask_arg is None else ctx.tensor(mask_arg),
                bool(argument(node, causal_index, "is_causal", False)),
                None if scale is None else float(scale),
                ctx.result_type(node, 0 if several else None),
            )
        )
        if not several:
            return result
        return (result,) + (None,) * (len(node.meta["val"]) - 1)

    return convert


def attention_backward(ctx: ImportContext, node: fx.Node):
    """The backward of a fused attention kernel, the ATen op called whole: it
    reads the forward's extra results in that kernel's own format."""
    return torch_call(ctx, node)


def embedding_backward(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """aten.embedding_dense_backward(grad_output, indices, num_weights,
    padding_idx, scale_grad_by_freq): torch's kernel sorts the indices and sums
    each index's rows once, where a scatter of every row serializes on
    repeated indices (a relative-position table of 32 rows read 10^5 times)."""
    if not _floats(ctx, node):
        return None
    grad_output, indices = (ctx.tensor(a) for a in node.args[:2])
    padding_idx = argument(node, 3, "padding_idx", -1)
    scale = argument(node, 4, "scale_grad_by_freq", False)
    if not isinstance(padding_idx, int) or not isinstance(scale, bool):
        return ctx.decline("a symbolic padding_idx or scale_grad_by_freq")
    return ctx.emit(ptensor.EmbeddingBackwardOp(grad_output, indices, padding_idx, scale, ctx.result_type(node)))


def fft(kind: ptensor.FftKind) -> Converter:
    """The FFT custom ops of `complex_as_real` (`permalloy.fft_r2c`, ...),
    whose complex tensors are real pairs, as `ptensor.fft`."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
        if not _floats(ctx, node):
            return None
        source, dims, normalization, flag = node.args[:4]
        if not all(isinstance(d, int) for d in (*dims, normalization)):
            return ctx.decline("symbolic dimensions or normalization")
        return ctx.emit(
            ptensor.FftOp(
                kind,
                ctx.tensor(source),
                dims,
                normalization,
                ctx.result_type(node),
                forward=kind == ptensor.FftKind.C2C and bool(flag),
                onesided=kind == ptensor.FftKind.R2C and bool(flag),
            )
        )

    return convert


CONVERTERS: dict = {
    torch.ops.permalloy.fft_r2c.default: fft(ptensor.FftKind.R2C),
    torch.ops.permalloy.fft_c2c.default: fft(ptensor.FftKind.C2C),
    torch.ops.permalloy.fft_c2r.default: fft(ptensor.FftKind.C2R),
    aten.mm.default: matmul(ptensor.MatmulOp),
    aten.bmm.default: matmul(ptensor.BatchMatmulOp),
    aten.addmm.default: addmm,
    aten.convolution.default: convolution,
    aten.convolution_backward.default: convolution_backward,
    aten.embedding_dense_backward.default: embedding_backward,
    aten.scaled_dot_product_attention.default: attention((3, "attn_mask"), 4, 5),
    aten._scaled_dot_product_flash_attention_for_cpu.default: attention(
        (None, "attn_mask"), 3, 4
    ),
    aten._scaled_dot_product_flash_attention.default: attention((None, ""), 3, 4),
    aten._scaled_dot_product_efficient_attention.default: attention(
        (3, "attn_bias"), 5, 6
    ),
    aten._scaled_dot_product_cudnn_attention.default: attention(
        (3, "attn_bias"), 5, 6
    ),
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: attention_backward,
    aten._scaled_dot_product_flash_attention_backward.default: attention_backward,
    aten._scaled_dot_product_efficient_attention_backward.default: attention_backward,
    aten._scaled_dot_product_cudnn_attention_backward.default: attention_backward,
}
"""Converters by ATen overload."""

LIBRARY_TARGETS = frozenset(CONVERTERS)
"""ATen ops that become library ops (extern calls) when imported."""
