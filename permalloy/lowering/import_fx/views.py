"""Converters of view ops: reshape, permute, expand, slice, select, squeeze, ..."""

from __future__ import annotations

from typing import Any

import sympy
import torch
from torch import fx
from torch.fx.experimental.symbolic_shapes import statically_known_true
from xdsl.ir import SSAValue

from permalloy.dialects import ptensor, sym
from permalloy.dialects.ptensor import slice_length
from permalloy.lowering.import_fx.common import argument, normalize_dim
from permalloy.lowering.import_fx.context import ImportContext, Scalar
from permalloy.lowering.import_fx.symbols import sizes_equal_as_integers
from permalloy.lowering.index_algebra import row_major_strides

aten = torch.ops.aten
_UNBOUNDED = 2**62
"""Slice ends at or above this mean "to the end" (torch passes INT64_MAX)."""


def reshape(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """view / reshape / _unsafe_view, to the shape torch computed (-1 resolved)."""
    source = ctx.tensor(node.args[0])
    result = ctx.result_type(node)
    sizes = ptensor.tensor_type(source).sizes
    if ptensor.shapes_equal(sizes, result.sizes):
        return source
    before, after = sym.product(sizes), sym.product(result.sizes)
    if not ptensor.sizes_equal(before, after) and ctx.symbols.equal_under_guards(before, after):
        # element counts equal only under Dynamo's guards (a -1 that torch
        # resolved as `(s0 floordiv (s0 floordiv 2)) * s1`): the row-major
        # reinterpretation that a reshape of contiguous elements is
        strides = row_major_strides(result.sizes)
        return ctx.emit(ptensor.AsStridedOp(source, strides, 0, result))
    return ctx.emit(ptensor.ReshapeOp(source, result))


def permute(ctx: ImportContext, node: fx.Node) -> SSAValue:
    source = ctx.tensor(node.args[0])
    rank = ptensor.tensor_type(source).rank
    dims = [normalize_dim(d, rank) for d in node.args[1]]
    return _permute(ctx, node, source, dims)


def _permute(ctx, node, source, dims: list[int]) -> SSAValue:
    if dims == list(range(len(dims))):
        return source
    return ctx.emit(ptensor.PermuteOp(source, dims, ctx.result_type(node)))


def transpose(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """transpose(x, a, b) and t(x): a permutation swapping two dimensions."""
    source = ctx.tensor(node.args[0])
    rank = ptensor.tensor_type(source).rank
    first, second = (node.args[1], node.args[2]) if len(node.args) > 2 else (0, 1)
    dims = list(range(rank))
    if rank >= 2:
        a, b = normalize_dim(first, rank), normalize_dim(second, rank)
        dims[a], dims[b] = dims[b], dims[a]
    return _permute(ctx, node, source, dims)


def expand(ctx: ImportContext, node: fx.Node) -> SSAValue:
    source = ctx.tensor(node.args[0])
    result = ctx.result_type(node)
    if ptensor.shapes_equal(ptensor.tensor_type(source).sizes, result.sizes):
        return source
    return ctx.emit(ptensor.ExpandOp(source, result))


def _normalize_index(index: Scalar, size: sympy.Expr) -> sympy.Expr:
    """A start or end index: negative ones count from the end, huge ones mean it."""
    index = sympy.sympify(index)
    if index.is_Integer and int(index) >= _UNBOUNDED:
        return size
    if index.is_negative:
        return index + size
    return index


def _slice_bounds(start, end, step, size, length) -> tuple | None:
    """
    The start and end clamped to `[0, size]`: exactly when static, else the
    candidate clamping whose length is the one torch computed.
    """
    start, end = _normalize_index(start, size), _normalize_index(end, size)
    if start.is_Integer and end.is_Integer and size.is_Integer:
        low = min(max(int(start), 0), int(size))
        return low, min(max(int(end), low), int(size))
    if length == 0:
        # empty for the sizes this graph serves (Dynamo guards them)
        return 0, 0
    candidates = ((start, end), (start, size), (0, end), (0, size))
    for candidate in candidates:
        if ptensor.sizes_equal(slice_length(*candidate, step), length):
            return candidate
    for candidate in candidates:
        if sizes_equal_as_integers(slice_length(*candidate, step), length):
            return candidate
    return None


def slice_tensor(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """slice(x, dim, start, end, step) with clamped bounds."""
    source = ctx.tensor(node.args[0])
    source_type = ptensor.tensor_type(source)
    result = ctx.result_type(node)
    dim = normalize_dim(argument(node, 1, "dim", 0), source_type.rank)
    start = ctx.scalar(argument(node, 2, "start", None) or 0)
    end_arg = argument(node, 3, "end", None)
    end = source_type.sizes[dim] if end_arg is None else ctx.scalar(end_arg)
    step = argument(node, 4, "step", 1)
    if not isinstance(step, int):
        return ctx.decline("a symbolic step")
    bounds = _slice_bounds(start, end, step, source_type.sizes[dim], result.sizes[dim])
    if bounds is None:
        return ctx.decline("slice bounds that are not known to give the result's length")
    length = slice_length(sympy.sympify(bounds[0]), sympy.sympify(bounds[1]), step)
    if not ptensor.sizes_equal(length, result.sizes[dim]):
        # torch wrote the length in another form, `(s0 + 1) floordiv 2` for
        # `s0 ceildiv 2`: the IR uses the slice's form from here on
        ctx.symbols.alias(result.sizes[dim], length)
        result = ctx.result_type(node)
    if bounds == (0, source_type.sizes[dim]) and step == 1:
        return source
    return ctx.emit(ptensor.SliceOp(source, dim, bounds[0], bounds[1], step, result))


def select(ctx: ImportContext, node: fx.Node) -> SSAValue:
    source = ctx.tensor(node.args[0])
    source_type = ptensor.tensor_type(source)
    dim = normalize_dim(node.args[1], source_type.rank)
    index = sympy.sympify(ctx.scalar(node.args[2]))
    if index.is_negative:
        index = index + source_type.sizes[dim]
    return ctx.emit(ptensor.SelectOp(source, dim, index, ctx.result_type(node)))


def squeeze(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """squeeze with no, one or several dims; only size-1 dimensions go."""
    source = ctx.tensor(node.args[0])
    source_type = ptensor.tensor_type(source)
    requested = argument(node, 1, "dim")
    if requested is None:
        requested = list(range(source_type.rank))
    elif isinstance(requested, int):
        requested = [requested]
    dims = sorted(
        {
            normalize_dim(d, source_type.rank)
            for d in requested
            if source_type.rank > 0 and source_type.sizes[normalize_dim(d, source_type.rank)] == 1
        }
    )
    if not dims:
        return source
    return ctx.emit(ptensor.SqueezeOp(source, dims, ctx.result_type(node)))


def unsqueeze(ctx: ImportContext, node: fx.Node) -> SSAValue:
    source = ctx.tensor(node.args[0])
    rank = ptensor.tensor_type(source).rank
    dim = node.args[1] % (rank + 1)
    return ctx.emit(ptensor.UnsqueezeOp(source, dim, ctx.result_type(node)))


def as_strided(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """
    as_strided addresses its input's storage, whatever view of it the input
    is. The view reads storage positions `offset + sum(i_k * stride_k)`; the
    nearest node up the input's chain of views whose example lays its elements
    out densely over a range of the storage holding all of them (`storage_window`)
    gives those elements: `in_storage_order` makes it a value whose row-major
    elements are that range, and the view is a `ptensor.as_strided` of it at
    the offset relative to the range. Where no node of the graph holds them (a
    graph input that is itself a view into a larger one, read outside its own
    elements) the op falls back.
    """
    example = ctx.meta(node.args[0])
    sizes, strides = node.args[1], node.args[2]
    offset = argument(node, 3, "storage_offset", None)
    if offset is None:
        offset = example.storage_offset()
    found = storage_window(node.args[0], sizes, strides, offset)
    if found is None:
        return ctx.decline("as_strided reading storage outside every value of the graph")
    owner, relative_offset = found
    source = in_storage_order(ctx, owner)
    if source is None:
        return ctx.decline("as_strided of a value with symbolic strides out of row-major order")
    return ctx.emit(
        ptensor.AsStridedOp(
            source, ctx.sizes(strides), ctx.scalar(relative_offset), ctx.result_type(node)
        )
    )


def storage_window(arg: fx.Node, sizes, strides, offset) -> tuple[fx.Node, Any] | None:
    """The first node from `arg` up its chain of view ops (ATen ops whose
    result aliases their first argument) whose example is dense (row-major, or
    in some order of its dimensions) and whose elements cover every storage
    position an `as_strided(sizes, strides, offset)` reads, with `offset`
    relative to its first element; None when the chain ends first, or reaches
    a reinterpretation as another dtype (`view.dtype`)."""
    sizes, strides = [_example_value(s) for s in sizes], [_example_value(s) for s in strides]
    offset = _example_value(offset)
    empty = any(statically_known_true(size == 0) for size in sizes)
    last = offset + sum((size - 1) * stride for size, stride in zip(sizes, strides, strict=True))
    dtype = _example_value(arg).dtype
    current = arg
    while isinstance(current, fx.Node):
        example = current.meta.get("val")
        if not isinstance(example, torch.Tensor) or example.dtype != dtype:
            return None
        if _statically_contiguous(example) or _permuted_row_major(example):
            first = example.storage_offset()
            if (
                empty
                or _owns_storage(example)
                or (
                    statically_known_true(offset >= first)
                    and statically_known_true(last < first + example.numel())
                )
            ):
                return current, offset - first
        target = current.target
        if not (isinstance(target, torch._ops.OpOverload) and target.is_view and current.args):  # noqa: SLF001
            return None
        current = current.args[0]
    return None


def _owns_storage(example: torch.Tensor) -> bool:
    """Whether a dense example's elements are its whole storage: then torch
    has checked that a view of it stays inside (a check that symbolic sizes
    may leave beyond `statically_known_true`)."""
    try:
        storage_bytes = example.untyped_storage().nbytes()
    except (RuntimeError, TypeError):
        return False
    return statically_known_true(example.storage_offset() == 0) and statically_known_true(
        storage_bytes == example.numel() * example.element_size()
    )


def _example_value(arg: Any) -> Any:
    """A size argument's example value (a SymInt for a node)."""
    return arg.meta.get("val") if isinstance(arg, fx.Node) else arg


def in_storage_order(ctx: ImportContext, owner: fx.Node) -> SSAValue | None:
    """`owner`'s value with its dimensions in the order of their strides,
    outermost first (a permute, where the example is not row-major), so that
    its row-major elements are its storage's; None for symbolic strides out
    of row-major order."""
    source = ctx.tensor(owner)
    example = owner.meta["val"]
    if _statically_contiguous(example):
        return source
    strides = example.stride()
    if not all(isinstance(s, int) for s in strides):
        return None
    order = sorted(range(example.dim()), key=lambda d: -strides[d])
    source_type = ptensor.tensor_type(source)
    permuted = ptensor.TensorType([source_type.sizes[d] for d in order], source_type.element_type)
    return ctx.emit(ptensor.PermuteOp(source, order, permuted))


def _statically_contiguous(example: torch.Tensor) -> bool:
    expected = 1
    for size, stride in reversed(list(zip(example.shape, example.stride(), strict=True))):
        if not statically_known_true(size == 1) and not statically_known_true(stride == expected):
            return False
        expected = expected * size
    return True


def _permuted_row_major(example: torch.Tensor) -> bool:
    """Whether integer strides are row-major ones of some order of the dimensions."""
    strides = example.stride()
    if not all(isinstance(s, int) for s in (*strides, *example.shape)):
        return False
    expected = 1
    for d in sorted(range(example.dim()), key=lambda d: strides[d]):
        if example.shape[d] != 1 and strides[d] != expected:
            return False
        expected *= example.shape[d]
    return True


CONVERTERS: dict = {
    aten.view.default: reshape,
    aten._unsafe_view.default: reshape,
    aten.reshape.default: reshape,
    aten.view_copy.default: reshape,
    aten.permute.default: permute,
    aten.permute_copy.default: permute,
    aten.transpose.int: transpose,
    aten.t.default: transpose,
    aten.expand.default: expand,
    aten.expand_copy.default: expand,
    aten.slice.Tensor: slice_tensor,
    aten.slice_copy.Tensor: slice_tensor,
    aten.select.int: select,
    aten.select_copy.int: select,
    aten.squeeze.default: squeeze,
    aten.squeeze.dim: squeeze,
    aten.squeeze.dims: squeeze,
    aten.unsqueeze.default: unsqueeze,
    aten.unsqueeze_copy.default: unsqueeze,
    aten.as_strided.default: as_strided,
    aten.as_strided_copy.default: as_strided,
}
"""Converters by ATen overload."""
