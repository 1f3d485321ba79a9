"""
How the sorts become loop ops.

`ptensor.sort` and `ptensor.topk` become a `loop.sort` giving the positions
of each row in sorted order (the first `k` of them for a topk, ascending
for the smallest, descending for the largest), and a `loop.pointwise`
gathering the values at those positions from the input (only where the
values are read). The sort's body yields the value to sort by in its
storage type, so that a producer fusion inlines there rounds as it would
be stored; unsigned integers and booleans are widened to the next signed
integer, since `loop.sort` compares integers as signed. A row of one
element is its own sort: positions 0, values the input.

A target sorts natively only rows it can hold (`SortLimits`): the Triton
target rows of at most 4096 elements of at most 32 bits, packed into 64-bit
keys; others stay `ptensor.sort` and `ptensor.topk` for the host program,
which calls torch.sort and torch.topk. Rows of symbolic length stay too,
since their length has no bound at compile time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation, Region, SSAValue

from permalloy.dialects import loop
from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import index_value
from permalloy.lowering.loop_builder import LoopBuilder
from permalloy.lowering.scalar_ops import is_unsigned, signless

I64 = IntegerType(64)


@dataclass(frozen=True)
class SortLimits:
    """The rows a target sorts in its kernels: at most `max_length` elements
    (a static length) of at most `max_bits` bits once widened."""

    max_length: int = 4096
    max_bits: int = 64


@dataclass(frozen=True)
class Replacement:
    """The loop ops replacing a ptensor op, and the value replacing each of
    its results (None for a result nothing reads)."""

    ops: list[Operation]
    results: list[SSAValue | None]


def key_type(element_type: Attribute) -> Attribute | None:
    """The type a sort's body yields for elements of `element_type`: the
    signless type itself, unsigned integers and booleans widened to a signed
    integer twice as wide (None where none is wide enough)."""
    if not isinstance(element_type, IntegerType):
        return element_type
    width = element_type.width.data
    if not (is_unsigned(element_type) or width == 1):
        return IntegerType(width)
    wider = 8 if width == 1 else 2 * width
    return IntegerType(wider) if wider <= 64 else None


def _key_bits(key: Attribute) -> int:
    if isinstance(key, IntegerType):
        return key.width.data
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[key.name]


def sorts_natively(op: Operation, limits: SortLimits) -> bool:
    """Whether a sort's rows are ones the target sorts in its kernels."""
    assert isinstance(op, pt.SortOp | pt.TopkOp)
    source = pt.tensor_type(op.input)
    length = source.sizes[op.dim.value.data]
    key = key_type(source.element_type)
    if key is None or _key_bits(key) > limits.max_bits:
        return False
    return bool(length.is_Integer) and int(length) <= limits.max_length


def _positions(op: pt.SortOp | pt.TopkOp, count: sympy.Expr, descending: bool) -> Operation:
    """The `loop.sort` of `op`'s input along its dimension, keeping `count`
    positions per row (or, for rows of one element, the constant 0)."""
    source = pt.tensor_type(op.input)
    dim = op.dim.value.data
    sizes = list(source.sizes)
    sizes[dim] = count
    result_type = TensorType(sizes, I64)
    length = source.sizes[dim]
    if length == 1:
        builder = LoopBuilder(result_type)
        return builder.pointwise(builder.body.constant(0, I64))
    builder = LoopBuilder(TensorType(source.sizes, I64), scanned_dim=dim)
    index = list(builder.parallel_indices)
    index.insert(dim, builder.reduction_indices[0])
    value = builder.read(op.input, index)
    key = key_type(source.element_type)
    assert key is not None
    if key == signless(source.element_type):
        stored = builder.body.to_storage(value, source.element_type)
        narrowed, widened = stored.owner, value.owner
        if isinstance(narrowed, arith.TruncFOp) and isinstance(widened, arith.ExtFOp):
            stored = widened.input  # the loaded f16 or bf16 itself, not widened and narrowed back
            for dead in (narrowed, widened):
                dead.detach()
                dead.erase()
    else:  # unsigned or boolean, widened
        stored = builder.body.convert(value, source.element_type, key)
    builder.block.add_op(loop.YieldOp(stored))
    return loop.SortOp(builder.inputs, dim, length, descending, result_type, Region(builder.block))


def _gathered(op: pt.SortOp | pt.TopkOp, positions: SSAValue) -> Operation:
    """The input's values at `positions` along the sorted dimension."""
    values_type = pt.tensor_type(op.values)
    builder = LoopBuilder(values_type)
    here = builder.parallel_indices
    entry = builder.index_entry(positions, here)
    index = list(here)
    index[op.dim.value.data] = index_value(0)
    return builder.pointwise(builder.read(op.input, index, [entry]))


def _lower(op: pt.SortOp | pt.TopkOp, count: sympy.Expr, descending: bool) -> Replacement:
    positions = _positions(op, count, descending)
    ops: Sequence[Operation] = [positions]
    values: SSAValue | None = None
    if op.values.uses:
        gather = _gathered(op, positions.results[0])
        ops = [positions, gather]
        values = gather.results[0]
    return Replacement(list(ops), [values, positions.results[0]])


def lower_sort(op: pt.SortOp) -> Replacement:
    """Every position of each row, ascending or descending."""
    source = pt.tensor_type(op.input)
    return _lower(op, source.sizes[op.dim.value.data], op.is_descending)


def lower_topk(op: pt.TopkOp) -> Replacement:
    """The first `k` positions of each row sorted descending (the largest)
    or ascending (the smallest); always in order."""
    return _lower(op, sympy.Integer(op.count), op.is_largest)


SORT_LOWERINGS = {
    pt.SortOp: lower_sort,
    pt.TopkOp: lower_topk,
}
"""The sorts' lowerings, each to a `Replacement` of both results."""

__all__ = ["SORT_LOWERINGS", "Replacement", "SortLimits", "key_type", "sorts_natively"]
