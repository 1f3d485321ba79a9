"""
Library ops called from the host program: matrix products, convolution and its
backward, attention and embedding gradients, FFTs on complex tensors as real
pairs, each with its constant arguments
(convolution geometry, attention flags) bound at compile time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from permalloy.complex_layout import fft_c2c_as_real, fft_c2r_as_real, fft_r2c_as_real
from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor.types import IntListAttr
from permalloy.targets.externs.calls import ExternCall, ExternIntoCall, PlannedCall, Symbols, Tensors, size_function
from permalloy.targets.externs.recorded import RecordedCall


def _matmul(op: pt.MatmulOp) -> ExternCall:
    return lambda tensors, symbols: (torch.mm(*tensors),)


def _batch_matmul(op: pt.BatchMatmulOp) -> ExternCall:
    return lambda tensors, symbols: (torch.bmm(*tensors),)


def addmm_scales(op: pt.AddmmOp) -> tuple[float, float]:
    """`addmm`'s `beta` and `alpha`."""
    beta = 1.0 if op.beta is None else op.beta.value.data
    alpha = 1.0 if op.alpha is None else op.alpha.value.data
    return beta, alpha


def _addmm(op: pt.AddmmOp) -> ExternCall:
    beta, alpha = addmm_scales(op)
    if beta == 1.0 and alpha == 1.0:
        return lambda tensors, symbols: (torch.addmm(*tensors),)
    return lambda tensors, symbols: (torch.addmm(*tensors, beta=beta, alpha=alpha),)


def _matmul_into(op: pt.MatmulOp) -> ExternIntoCall:
    return lambda tensors, out: torch.mm(*tensors, out=out)


def _batch_matmul_into(op: pt.BatchMatmulOp) -> ExternIntoCall:
    return lambda tensors, out: torch.bmm(*tensors, out=out)


def _addmm_into(op: pt.AddmmOp) -> ExternIntoCall:
    beta, alpha = addmm_scales(op)
    if beta == 1.0 and alpha == 1.0:
        return lambda tensors, out: torch.addmm(*tensors, out=out)
    return lambda tensors, out: torch.addmm(*tensors, beta=beta, alpha=alpha, out=out)


def _convolution(op: pt.ConvolutionOp) -> ExternCall:
    geometry = pt.convolution_geometry(op)
    tile = op.attributes.get(pt.ConvolutionOp.TILE)
    if isinstance(tile, IntListAttr):
        return _depthwise_convolution(geometry, tile.data)
    convolution = torch.convolution

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        x, weight, *rest = tensors
        return (convolution(x, weight, rest[0] if rest else None, *geometry),)

    return call


def _depthwise_convolution(geometry: tuple, tile: tuple[int, ...]) -> ExternCall:
    """permalloy's depthwise kernel with the chosen tile where Triton runs
    (GPU tensors, or Triton's interpreter) and it takes the tensors, else
    torch's convolution."""
    from permalloy.targets.triton import interpreter_enabled
    from permalloy.targets.triton.depthwise_convolution import DepthwiseConfig, Geometry, run_depthwise

    config = DepthwiseConfig(*tile)
    window = Geometry(*geometry[:3])
    convolution = torch.convolution

    def run(tensors: Tensors) -> tuple | None:
        x, weight, *rest = tensors
        if not (x.is_cuda or interpreter_enabled()):
            return None
        ran = run_depthwise(x, weight, rest[0] if rest else None, window, config)
        return None if ran is None else ([ran[0]], ran[1], ran[2])

    def library(tensors: Tensors, symbols: Symbols) -> tuple:
        x, weight, *rest = tensors
        return (convolution(x, weight, rest[0] if rest else None, *geometry),)

    return PlannedCall(run, library)


def _convolution_backward(op: pt.ConvolutionBackwardOp) -> ExternCall:
    geometry = pt.convolution_geometry(op)
    mask = [bool(m) for m in op.output_mask.data]
    block = op.attributes.get(pt.ConvolutionBackwardOp.WEIGHT_BLOCK)
    if isinstance(block, IntListAttr):
        return _depthwise_convolution_backward(geometry, mask, block.data)
    backward = torch.ops.aten.convolution_backward.default

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        grad_output, x, weight = tensors
        gradients = backward(grad_output, x, weight, None, *geometry, mask)
        return tuple(g for g, wanted in zip(gradients, mask) if wanted)

    return call


def _depthwise_convolution_backward(geometry: list, mask: list[bool], block: tuple[int, ...]) -> ExternCall:
    """A depthwise convolution's gradients: the weight's by permalloy's
    weight-gradient kernel with the chosen channel block where Triton runs (GPU
    tensors, or Triton's interpreter) and it takes the tensors, the others
    (and otherwise all) by torch's convolution backward."""
    from permalloy.targets.triton import interpreter_enabled
    from permalloy.targets.triton.depthwise_convolution import Geometry
    from permalloy.targets.triton.depthwise_weight_gradient import WeightGradientConfig, depthwise_weight_gradient

    config = WeightGradientConfig(*block)
    window = Geometry(*geometry[:3])
    backward = torch.ops.aten.convolution_backward.default
    others = [mask[0], False, mask[2]]

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        grad_output, x, weight = tensors
        weight_gradient = None
        if x.is_cuda or interpreter_enabled():
            weight_gradient = depthwise_weight_gradient(grad_output, x, weight, window, config)
        if weight_gradient is None:
            gradients = backward(grad_output, x, weight, None, *geometry, mask)
        elif any(others):
            gradients = backward(grad_output, x, weight, None, *geometry, others)
            gradients = (gradients[0], weight_gradient, gradients[2])
        else:
            gradients = (None, weight_gradient, None)
        return tuple(g for g, wanted in zip(gradients, mask) if wanted)

    return call


def _attention(op: pt.AttentionOp) -> ExternCall:
    keywords: dict[str, Any] = {"is_causal": op.causal is not None}
    if op.scale is not None:
        keywords["scale"] = op.scale.value.data
    attention = F.scaled_dot_product_attention
    kernel = op.attributes.get(pt.AttentionOp.KERNEL)
    flash_kinds = ("triton", "measured")
    if isinstance(kernel, StringAttr) and kernel.data in flash_kinds and op.causal is None and op.scale is not None:
        return _flash_attention(keywords["scale"], measured=kernel.data == "measured")

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        query, key, value, *mask = tensors
        return (attention(query, key, value, attn_mask=fused_kernel_mask(mask[0]) if mask else None, **keywords),)

    return RecordedCall(call)  # a native host program calls the fused kernel torch chose itself


def fused_kernel_mask(mask: torch.Tensor) -> torch.Tensor:
    """The mask as torch's fused attention kernels take it: its last
    dimension contiguous (the flash, memory-efficient and cuDNN kernels
    read a mask row by row). A mask whose keys are strided, as a relative
    position bias gathered with its heads innermost (Swin's, `[1, heads,
    49, 49]` of strides `(heads, 1, 49 * heads, heads)`), is copied: given
    it, torch runs attention as its math, in float32 for half-precision
    inputs (on an H200, two of the suite's Swin's four attention calls took
    about 0.8 ms each so, in eleven kernels, against cuDNN's 0.25)."""
    if mask.dim() > 0 and mask.size(-1) > 1 and mask.stride(-1) != 1:
        return mask.contiguous()
    return mask


def _flash_attention(scale: float, measured: bool) -> ExternCall:
    """permalloy's flash kernel where Triton runs (GPU tensors, or Triton's
    interpreter but for bfloat16, which it multiplies wrongly) and it takes
    the tensors, else torch's fused attention.
    `measured`: only on a GPU, and only where the kernel timed faster than
    torch's fused attention on the call's first tensors of these sizes,
    strides and types (timed once per program and signature, outside the
    caller's dispatch modes, as launch configurations are)."""
    from permalloy.targets.triton import interpreter_enabled
    from permalloy.targets.triton.flash_attention import flash_is_faster, run_flash

    faster: dict[tuple, bool] = {}
    """Per signature of the tensors, whether the flash kernel timed faster."""

    def runs_flash(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None) -> bool:
        if not measured:  # not bfloat16 in Triton's interpreter, which multiplies it wrongly
            return query.is_cuda or (interpreter_enabled() and query.dtype != torch.bfloat16)
        if not query.is_cuda:
            return False
        signature = tuple(None if t is None else (t.shape, t.stride(), t.dtype) for t in (query, key, value, mask))
        signature += (query.device.index,)
        if signature not in faster:
            from torch.utils._python_dispatch import _disable_current_modes

            from permalloy.targets.triton.autotune import gpu_timer

            with _disable_current_modes():
                faster[signature] = flash_is_faster(query, key, value, mask, scale, gpu_timer())
        return faster[signature]

    def run(tensors: Tensors) -> tuple | None:
        query, key, value, *masks = tensors
        mask = masks[0] if masks else None
        if not runs_flash(query, key, value, mask):
            return None
        ran = run_flash(query, key, value, mask, scale)
        return None if ran is None else ([ran[0]], ran[1], ran[2])

    def library(tensors: Tensors, symbols: Symbols) -> tuple:
        query, key, value, *masks = tensors
        mask = fused_kernel_mask(masks[0]) if masks else None
        return (F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scale),)

    return PlannedCall(run, library)


def _fft(op: pt.FftOp) -> ExternCall:
    """torch's FFT on complex tensors given and returned as real pairs."""
    dims = list(op.dims.data)
    normalization = op.normalization.value.data
    kind = op.kind.data
    if kind == pt.FftKind.R2C:
        onesided = op.onesided is not None
        return lambda tensors, symbols: (fft_r2c_as_real(tensors[0], dims, normalization, onesided),)
    if kind == pt.FftKind.C2C:
        forward = op.forward is not None
        return lambda tensors, symbols: (fft_c2c_as_real(tensors[0], dims, normalization, forward),)
    last_dim_size = size_function(pt.tensor_type(op.result).sizes[dims[-1]])
    return lambda tensors, symbols: (
        fft_c2r_as_real(tensors[0], dims, normalization, last_dim_size(symbols)),
    )


def _embedding_backward(op: pt.EmbeddingBackwardOp) -> ExternCall:
    rows = pt.tensor_type(op.result).sizes[0]
    padding, scale = op.padding_idx.value.data, op.scale_by_frequency is not None
    backward = torch.ops.aten.embedding_dense_backward.default

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        num_weights = int(rows) if rows.is_Integer else int(rows.subs(symbols))
        return (backward(*tensors, num_weights, padding, scale),)

    return call


LIBRARY_CALLS: dict[type[Operation], Callable[[Any], ExternCall]] = {
    pt.MatmulOp: _matmul,
    pt.BatchMatmulOp: _batch_matmul,
    pt.AddmmOp: _addmm,
    pt.ConvolutionOp: _convolution,
    pt.ConvolutionBackwardOp: _convolution_backward,
    pt.AttentionOp: _attention,
    pt.EmbeddingBackwardOp: _embedding_backward,
    pt.FftOp: _fft,
}
"""The library ops' calls, by op class."""

LIBRARY_INTO_CALLS: dict[type[Operation], Callable[[Any], ExternIntoCall]] = {
    pt.MatmulOp: _matmul_into,
    pt.BatchMatmulOp: _batch_matmul_into,
    pt.AddmmOp: _addmm_into,
}
"""The library ops that also write into a given tensor (torch's `out=`), by op
class: the host program allocates their dense results itself, with the
allocator it uses for kernels, which costs less per call than the library's
own allocation and needs no layout check after (`analysis.out_forms` says
which layouts)."""
