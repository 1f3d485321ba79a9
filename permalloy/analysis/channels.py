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

from permalloy.analysis.affine import split_affine, unit_stride
from permalloy.analysis.kernel import TensorLayout, UnsupportedKernelError, analyze_kernel
from permalloy.dialects.buffer import BufferType, KernelOp

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
