"""
How each computing ptensor op becomes a loop op.

One function per op kind, each returning the `loop.pointwise`, `loop.reduce`
or `loop.scan` that computes the op's result (the scatters' are in
`scatter_ops`, the sorts' in `sort_ops`). Views are not lowered here: readers see through
them (see `loop_builder.resolve_views`).
"""

from __future__ import annotations

from collections.abc import Callable

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from permalloy.dialects import ptensor as pt
from permalloy.dialects.sym import index_value
from permalloy.lowering.index_algebra import (
    always_below,
    always_nonnegative,
    broadcast_index,
)
from permalloy.lowering.loop_builder import LoopBuilder
from permalloy.lowering.scalar_ops import compute_type, element_value, is_unsigned
from permalloy.lowering.scatter_ops import SCATTER_LOWERINGS
from permalloy.lowering.sort_ops import SORT_LOWERINGS


def _result_type(op: Operation) -> pt.TensorType:
    result_type = op.results[0].type
    assert isinstance(result_type, pt.TensorType)
    return result_type


def _element(value: SSAValue):
    assert isinstance(value.type, pt.TensorType)
    return value.type.element_type


def lower_unary(op: pt.UnaryOp) -> Operation:
    builder = LoopBuilder(_result_type(op))
    x = builder.read_broadcast(op.input)
    return builder.pointwise(builder.body.unary(op.kind.data, x, _element(op.input)))


def lower_binary(op: pt.BinaryOp) -> Operation:
    builder = LoopBuilder(_result_type(op))
    a = builder.read_broadcast(op.lhs)
    b = builder.read_broadcast(op.rhs)
    return builder.pointwise(builder.body.binary(op.kind.data, a, b, _element(op.lhs)))


def lower_compare(op: pt.CompareOp) -> Operation:
    builder = LoopBuilder(_result_type(op))
    a = builder.read_broadcast(op.lhs)
    b = builder.read_broadcast(op.rhs)
    predicate = op.predicate.data
    return builder.pointwise(builder.body.compare(predicate, a, b, _element(op.lhs)))


def lower_where(op: pt.WhereOp) -> Operation:
    builder = LoopBuilder(_result_type(op))
    condition = builder.read_broadcast(op.condition)
    on_true = builder.read_broadcast(op.on_true)
    on_false = builder.read_broadcast(op.on_false)
    return builder.pointwise(builder.body.select(condition, on_true, on_false))


def lower_cast(op: pt.CastOp) -> Operation:
    builder = LoopBuilder(_result_type(op))
    x = builder.read_broadcast(op.input)
    target = _result_type(op).element_type
    return builder.pointwise(builder.body.convert(x, _element(op.input), target))


def lower_full(op: pt.FullOp) -> Operation:
    result_type = _result_type(op)
    builder = LoopBuilder(result_type)
    value = op.value
    number = value.value.data if isinstance(value, FloatAttr | IntegerAttr) else 0
    number = element_value(number, result_type.element_type)
    return builder.pointwise(builder.body.constant(number, builder.compute_type()))


def lower_iota(op: pt.IotaOp) -> Operation:
    result_type = _result_type(op)
    builder = LoopBuilder(result_type)
    body = builder.body
    target = builder.compute_type()
    position = builder.index(builder.parallel_indices[0])
    start = op.start.value.data  # type: ignore[union-attr]
    step = op.step.value.data  # type: ignore[union-attr]
    if isinstance(target, IntegerType):
        i = body.index_to_int(position, IntegerType(64))
        value = body.add(arith.MuliOp(i, body.constant(int(step), i.type)))
        value = body.add(arith.AddiOp(value, body.constant(int(start), i.type)))
        return builder.pointwise(body.convert(value, IntegerType(64), result_type.element_type))
    i = body.index_to_int(position, IntegerType(64))
    as_float = body.add(arith.SIToFPOp(i, target))
    value = body.add(arith.MulfOp(as_float, body.constant(float(step), target)))
    value = body.add(arith.AddfOp(value, body.constant(float(start), target)))
    return builder.pointwise(body.round_to(value, result_type.element_type))


def lower_reduce(op: pt.ReduceOp) -> Operation:
    source = op.input.type
    assert isinstance(source, pt.TensorType)
    dims = op.dims.data
    keepdim = op.keepdim is not None
    reduction_sizes = [source.sizes[d] for d in dims]
    builder = LoopBuilder(_result_type(op), reduction_sizes)
    index: list[sympy.Expr] = []
    parallel = iter(range(builder.result_type.rank))
    reduction = iter(builder.reduction_indices)
    for d in range(source.rank):
        if d in dims:
            index.append(next(reduction))
            if keepdim:
                next(parallel)
        else:
            index.append(builder.parallel_indices[next(parallel)])
    value = builder.read(op.input, index)
    kind = op.kind.data
    value_type = source.element_type
    if kind in (pt.ReduceKind.ANY, pt.ReduceKind.ALL):
        value = builder.body.nonzero(value, value_type)
    elif kind in (pt.ReduceKind.ARGMAX, pt.ReduceKind.ARGMIN) and is_unsigned(value_type):
        # argmax/argmin compare signless values as signed: widen unsigned ones
        value = builder.body.convert(value, value_type, IntegerType(64))
        value_type = IntegerType(64)
    return builder.reduce(kind, value, value_type)


def lower_scan(op: pt.ScanOp) -> Operation:
    """The scanned dimension becomes the reduction index `r0`, read where the
    input has it; the other dimensions are the parallel indices, in order."""
    dim = op.dim.value.data
    builder = LoopBuilder(_result_type(op), scanned_dim=dim)
    index = list(builder.parallel_indices)
    index.insert(dim, builder.reduction_indices[0])
    value = builder.read(op.input, index)
    kind = op.kind.data
    value_type = _element(op.input)
    if kind in pt.SCAN_POSITION_KINDS and is_unsigned(value_type):
        # positions follow values compared as signed: widen unsigned ones
        value = builder.body.convert(value, value_type, IntegerType(64))
        value_type = IntegerType(64)
    return builder.scan(kind, value, value_type)


def lower_cat(op: pt.CatOp) -> Operation:
    result_type = _result_type(op)
    builder = LoopBuilder(result_type)
    body = builder.body
    dim = op.dim.value.data
    position = builder.parallel_indices[dim]
    offset: sympy.Expr = sympy.Integer(0)
    pieces: list[tuple[SSAValue | None, SSAValue]] = []
    for value in op.inputs:
        value_type = value.type
        assert isinstance(value_type, pt.TensorType)
        size = value_type.sizes[dim]
        if size == 0:
            continue
        end = offset + size
        inside = _in_range(builder, position, offset, end)
        index = list(builder.parallel_indices)
        index[dim] = position - offset
        pieces.append((inside, builder.read(value, index, mask=inside)))
        offset = end
    if not pieces:
        # every input is empty along `dim`, so the result has no elements
        return builder.pointwise(body.constant(0, result_type.element_type))
    result = pieces[-1][1]
    for inside, piece in reversed(pieces[:-1]):
        assert inside is not None
        result = body.select(inside, piece, result)
    return builder.pointwise(result)


def _in_range(
    builder: LoopBuilder, position: sympy.Expr, start: sympy.Expr, end: sympy.Expr
) -> SSAValue:
    """`start <= position < end` as i1, leaving out a bound that always holds."""
    body = builder.body
    here = builder.index(position)
    checks: list[SSAValue] = []
    if not always_nonnegative(position - start, builder.bounds):
        checks.append(body.add(arith.CmpiOp(here, builder.index(start), "sge")))
    if not always_below(position, end, builder.bounds):
        checks.append(body.add(arith.CmpiOp(here, builder.index(end), "slt")))
    if not checks:
        return body.constant(True, IntegerType(1))
    result = checks[0]
    for check in checks[1:]:
        result = body.add(arith.AndIOp(result, check))
    return result


def lower_pad(op: pt.PadOp) -> Operation:
    source = op.input.type
    assert isinstance(source, pt.TensorType)
    builder = LoopBuilder(_result_type(op))
    mode = op.mode.data
    low = op.low.data
    shifted = [d - lo for d, lo in zip(builder.parallel_indices, low)]
    if mode == pt.PadMode.CONSTANT:
        return _constant_pad(builder, op, shifted, source)
    values: list[SSAValue] = []
    index: list[sympy.Expr] = []
    for position, size, lo, hi in zip(shifted, source.sizes, low, op.high.data):
        if lo == 0 and hi == 0:
            index.append(position)
            continue
        index.append(index_value(len(values)))
        values.append(_reflect_or_clamp(builder, position, size, mode))
    return builder.pointwise(builder.read(op.input, index, values))


def _may_pad(amount: sympy.Expr) -> bool:
    """Whether a padding amount may add elements: a positive or symbolic one."""
    return not amount.is_Integer or amount > 0


def _constant_pad(builder, op, shifted, source) -> Operation:
    body = builder.body
    masks = [
        _in_range(builder, position, sympy.Integer(0), size)
        for position, size, lo, hi in zip(shifted, source.sizes, op.low.data, op.high.data)
        if _may_pad(lo) or _may_pad(hi)
    ]
    if not masks:
        return builder.pointwise(builder.read(op.input, shifted))
    inside = masks[0]
    for mask in masks[1:]:
        inside = body.add(arith.AndIOp(inside, mask))
    loaded = builder.read(op.input, shifted, mask=inside)
    fill = op.value.value.data  # type: ignore[union-attr]
    padding = body.constant(fill, builder.compute_type())
    return builder.pointwise(body.select(inside, loaded, padding))


def _reflect_or_clamp(builder, position, size, mode) -> SSAValue:
    """The source position of a reflect or replicate pad, as an index value."""
    body = builder.body
    here = builder.index(position)
    last = builder.index(size - 1)
    if mode == pt.PadMode.REPLICATE:
        zero = body.constant(0, IndexType())
        clamped = body.add(arith.MaxSIOp(here, zero))
        return body.add(arith.MinSIOp(clamped, last))
    # reflect: j = |i|; j = last - |last - j|
    magnitude = _abs_index(body, here)
    distance = body.add(arith.SubiOp(last, magnitude))
    return body.add(arith.SubiOp(last, _abs_index(body, distance)))


def _abs_index(body, value: SSAValue) -> SSAValue:
    zero = body.constant(0, IndexType())
    negative = body.add(arith.CmpiOp(value, zero, "slt"))
    negated = body.add(arith.SubiOp(zero, value))
    return body.select(negative, negated, value)


def lower_gather(op: pt.GatherOp) -> Operation:
    builder = LoopBuilder(_result_type(op))
    dim = op.dim.value.data
    here = builder.parallel_indices
    position = builder.within(builder.index_entry(op.index, here), pt.tensor_type(op.input).sizes[dim])
    index = list(here)
    index[dim] = index_value(0)
    return builder.pointwise(builder.read(op.input, index, [position]))


def lower_index(op: pt.IndexOp) -> Operation:
    source = op.input.type
    assert isinstance(source, pt.TensorType)
    result_type = _result_type(op)
    builder = LoopBuilder(result_type)
    dims = list(op.dims.data)
    index_types = [v.type for v in op.indices]
    broadcast = pt.broadcast_shapes(*(t.sizes for t in index_types))  # type: ignore[union-attr]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    start = dims[0] if adjacent else 0
    here = builder.parallel_indices
    broadcast_point = here[start : start + len(broadcast)]
    kept = here[:start] + here[start + len(broadcast) :]
    values = []
    for value, dim in zip(op.indices, dims):
        value_type = value.type
        assert isinstance(value_type, pt.TensorType)
        entry = builder.index_entry(value, broadcast_index(value_type.sizes, broadcast_point))
        values.append(builder.wrap_negative(entry, source.sizes[dim]))
    index: list[sympy.Expr] = []
    kept_iter = iter(kept)
    for d in range(source.rank):
        index.append(index_value(dims.index(d)) if d in dims else next(kept_iter))
    return builder.pointwise(builder.read(op.input, index, values))


LOWERINGS: dict[type[Operation], Callable[[Operation], Operation]] = {
    pt.UnaryOp: lower_unary,
    pt.BinaryOp: lower_binary,
    pt.CompareOp: lower_compare,
    pt.WhereOp: lower_where,
    pt.CastOp: lower_cast,
    pt.FullOp: lower_full,
    pt.IotaOp: lower_iota,
    pt.ReduceOp: lower_reduce,
    pt.ScanOp: lower_scan,
    pt.CatOp: lower_cat,
    pt.PadOp: lower_pad,
    pt.GatherOp: lower_gather,
    pt.IndexOp: lower_index,
    **SCATTER_LOWERINGS,
    **SORT_LOWERINGS,
}  # type: ignore[dict-item]
"""The ptensor ops that become loop ops (a list of them, the last giving the
result, for a scatter that clears its destinations first; a `Replacement`
of each result for a sort); the others stay for the host program."""

__all__ = ["LOWERINGS", "compute_type"]
