"""
Kernels that walk an NCHW tensor's channels where another tensor is
contiguous: the kernels that channels-last memory would spare a transposed
access.

A layer norm over the channels of a permuted image (`x.permute(0, 2, 3, 1)`,
ConvNeXt's), or a linear layer's `[N*H*W, C]` result added back to an image,
reads one tensor along its channels contiguously and the image along its
width. In NCHW memory the two walk memory in different orders, and a kernel
reading both transposes one of them; in channels-last memory they agree.
A global pool over an image's height and width is not such a kernel: what it
walks contiguously in the image (the width) its result does not have.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import arith
from xdsl.ir import SSAValue

from permalloy.analysis.affine import split_affine, unit_stride
from permalloy.analysis.kernel import TensorLayout, UnsupportedKernelError, analyze_kernel
from permalloy.dialects.buffer import BufferType, KernelOp
from permalloy.dialects.loop import IndexOp, LoadOp, LoopOp
from permalloy.dialects.sym import parallel_index

CHANNELS = 1
"""The channel dimension of an `[N, C, *spatial]` tensor."""


def walks_channels_beside(kernel: KernelOp, layouts: Sequence[BufferType], images: set[int]) -> bool:
    """Whether a loop op of `kernel`, launched with `layouts` (inputs then
    outputs), reads or writes one of the tensors at positions `images` (NCHW
    images) and another tensor such that the other tensor's contiguous loop
    variable indexes the image's channels, while the image's contiguous one
    also addresses the other tensor. False for a kernel it cannot analyze."""
    try:
        analysis = analyze_kernel(kernel, layouts, "layout planning")
    except UnsupportedKernelError:
        return False
    num_in = len(analysis.inputs)
    for stage in analysis.stages:
        accesses: list[tuple[bool, sympy.Expr, Sequence[sympy.Expr]]] = []
        for load in stage.loads:
            source = stage.sources[load.source]
            if not source.stage:
                indices = list(load.indices.data)
                address = TensorLayout.of(layouts[source.index]).address(indices)
                accesses.append((source.index in images, address, indices))
        result_index = list(stage.op.result_index)
        for position in stage.returned:
            address = TensorLayout.of(layouts[num_in + position]).address(result_index)
            accesses.append((num_in + position in images, address, result_index))
        if _transposed(accesses):
            return True
    return False


def _transposed(accesses: list[tuple[bool, sympy.Expr, Sequence[sympy.Expr]]]) -> bool:
    images = [(address, indices) for is_image, address, indices in accesses if is_image and len(indices) > CHANNELS]
    others = [address for is_image, address, _ in accesses if not is_image]
    for address, indices in images:
        channel = indices[CHANNELS]
        if not isinstance(channel, sympy.Symbol):
            continue
        walked = [v for v in address.free_symbols if v != channel and unit_stride(address, v)]
        for other in others:
            if unit_stride(other, channel) and any(_depends(other, v) for v in walked):
                return True
    return False


def _depends(address: sympy.Expr, var: sympy.Symbol) -> bool:
    split = split_affine(address, var)
    return split is not None and split[1] != 0


def concatenates_channels(kernel: KernelOp) -> bool:
    """
    Whether a loop op of `kernel` over images (`[N, C, H, W]`, or `[C, H, W]`
    with the batch squeezed out) chooses among its inputs by channel: a load
    masked by a comparison of its channel index, a concatenation along
    channels (each DenseNet layer's input). In NCHW memory each input fills
    whole planes of the result; in channels-last memory every pixel's
    channels run through all the inputs, and the masked loads switch inputs
    within each vector of channels.
    """
    for op in kernel.walk():
        if not isinstance(op, LoopOp) or len(op.parallel_sizes) not in (3, 4):
            continue
        channel = parallel_index(1 if len(op.parallel_sizes) == 4 else 0)
        for inner in op.body.walk():
            if isinstance(inner, LoadOp) and inner.mask is not None and _compares_index(inner.mask, channel, 2):
                return True
    return False


def _compares_index(mask: SSAValue, index: sympy.Symbol, depth: int) -> bool:
    """Whether `mask` compares the loop index `index` alone with something
    (looking through `depth` conjunctions)."""
    owner = mask.owner
    if isinstance(owner, arith.AndIOp) and depth > 0:
        return any(_compares_index(v, index, depth - 1) for v in owner.operands)
    if not isinstance(owner, arith.CmpiOp):
        return False
    return any(
        isinstance(v.owner, IndexOp) and v.owner.expr.expr.free_symbols == {index} for v in owner.operands
    )
