"""
The buffer layout of a view: which sizes, strides and offset a view op gives
when applied to a buffer of known layout, or None when the view cannot be a
reinterpretation (a reshape that splits or merges non-contiguous dimensions).
"""

from __future__ import annotations

import sympy

from permalloy.dialects import ptensor as pt
from permalloy.dialects.buffer import BufferType, contiguous_strides
from permalloy.dialects.ptensor import sizes_equal
from xdsl.ir import Operation


def view_layout(op: Operation, source: BufferType) -> BufferType | None:
    """The layout of view `op`'s result over a source buffer of `source`."""
    result_type = op.results[0].type
    assert isinstance(result_type, pt.TensorType)
    sizes = list(result_type.sizes)
    strides = list(source.strides.data)
    offset = source.offset.expr
    element = source.element_type
    if isinstance(op, pt.PermuteOp):
        return BufferType(sizes, element, [strides[d] for d in op.dims.data], offset)
    if isinstance(op, pt.ExpandOp):
        lead = len(sizes) - len(strides)
        expanded = [sympy.Integer(0)] * lead + [
            sympy.Integer(0) if s == 1 and not sizes_equal(t, 1) else st
            for s, t, st in zip(source.sizes, sizes[lead:], strides)
        ]
        return BufferType(sizes, element, expanded, offset)
    if isinstance(op, pt.SliceOp):
        dim = op.dim.value.data
        offset = offset + op.start.expr * strides[dim]
        strides[dim] = strides[dim] * op.step.value.data
        return BufferType(sizes, element, strides, offset)
    if isinstance(op, pt.SelectOp):
        dim = op.dim.value.data
        offset = offset + op.index.expr * strides[dim]
        return BufferType(sizes, element, strides[:dim] + strides[dim + 1 :], offset)
    if isinstance(op, pt.SqueezeOp):
        kept = [s for i, s in enumerate(strides) if i not in op.dims.data]
        return BufferType(sizes, element, kept, offset)
    if isinstance(op, pt.UnsqueezeOp):
        dim = op.dim.value.data
        inner = strides[dim] * source.sizes[dim] if dim < len(strides) else sympy.Integer(1)
        return BufferType(sizes, element, strides[:dim] + [inner] + strides[dim:], offset)
    if isinstance(op, pt.ReshapeOp):
        reshaped = reshape_strides(source.sizes, strides, sizes)
        if reshaped is None:
            return None
        return BufferType(sizes, element, reshaped, offset)
    if isinstance(op, pt.AsStridedOp):
        if not source.is_contiguous():
            return None
        return BufferType(sizes, element, list(op.strides.data), offset + op.offset.expr)
    return None


def reshape_strides(old_sizes, old_strides, new_sizes) -> list[sympy.Expr] | None:
    """
    Strides for viewing a strided tensor under a new shape without copying, by
    torch's rule for `view` (chunks of dimensions that are contiguous with each
    other may be split and merged), or None when a copy is needed or when
    symbolic sizes leave the answer unknown.
    """
    if not old_sizes:
        return [sympy.Integer(1)] * len(new_sizes)
    if all(sizes_equal(a, b) for a, b in zip(old_strides, contiguous_strides(old_sizes))):
        return list(contiguous_strides(new_sizes))
    new_strides: list[sympy.Expr] = [sympy.Integer(0)] * len(new_sizes)
    view_d = len(new_sizes) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel: sympy.Expr = sympy.Integer(1)
    view_numel: sympy.Expr = sympy.Integer(1)
    for tensor_d in reversed(range(len(old_sizes))):
        tensor_numel = tensor_numel * old_sizes[tensor_d]
        chunk_ends = tensor_d == 0 or (
            old_sizes[tensor_d - 1] != 1
            and not sizes_equal(old_strides[tensor_d - 1], tensor_numel * chunk_base_stride)
        )
        if not chunk_ends:
            continue
        while view_d >= 0:
            smaller = _less(view_numel, tensor_numel)
            if smaller is None:
                return None
            if not (smaller or new_sizes[view_d] == 1):
                break
            new_strides[view_d] = sympy.expand(view_numel * chunk_base_stride)
            view_numel = view_numel * new_sizes[view_d]
            view_d -= 1
        if not sizes_equal(view_numel, tensor_numel):
            return None
        if tensor_d > 0:
            chunk_base_stride = old_strides[tensor_d - 1]
            tensor_numel = sympy.Integer(1)
            view_numel = sympy.Integer(1)
    return new_strides if view_d == -1 else None


def _less(a: sympy.Expr, b: sympy.Expr) -> bool | None:
    """Whether a < b, or None when symbolic sizes leave it open. Size symbols
    stand for sizes of at least 2, as Dynamo specializes sizes 0 and 1."""
    difference = sympy.expand(b - a)
    difference = difference.subs({s: s + 2 for s in difference.free_symbols})
    if difference.is_positive:
        return True
    if difference.is_nonpositive:
        return False
    return None
