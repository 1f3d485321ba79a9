"""
How the scatters become `loop.scatter` ops.

A scatter's domain is its index's shape (`scatter_add`, `scatter_reduce`)
or the indexed shape (`index_put`): each point loads its index entries (a
negative `index_put` entry counts from the end) and its value, and yields
them at the position it lands on, its other dimensions its own. Without
`include_self` the input's elements that some value lands on must not take
part: a first `loop.scatter assign` writes the kind's identity there, and the
reduction combines into that.

`order_dependent` says which scatters give results that depend on the order
in which their values combine (float sums and products, and a scatter of a
source, where the last value written to an element stays): a pipeline that
must be deterministic leaves them to torch's kernels on a target whose
scatters use atomics.
"""

from __future__ import annotations

import math

import sympy
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Operation, Region, SSAValue

from permalloy.dialects import loop
from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import ScatterKind, TensorType
from permalloy.dialects.sym import index_value
from permalloy.lowering.index_algebra import broadcast_index
from permalloy.lowering.loop_builder import LoopBuilder
from permalloy.lowering.scalar_ops import UnsupportedScalarOp, compute_type, is_unsigned

ORDER_FREE = (ScatterKind.MAX, ScatterKind.MIN, ScatterKind.ASSIGN)


def _kind(op: Operation) -> ScatterKind:
    if isinstance(op, pt.ScatterReduceOp):
        return op.kind.data
    return ScatterKind.SUM


def order_dependent(op: Operation) -> bool:
    """Whether a scatter's result may depend on the order its values combine
    in: float sums and products, and a scatter of a source (which of several
    values landing on one element stays)."""
    if isinstance(op, pt.ScatterOp):
        return True
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    return pt.is_float(result_type.element_type) and _kind(op) not in ORDER_FREE


def _result_type(op: Operation) -> TensorType:
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    return result_type


class ScatterBuilder(LoopBuilder):
    """A `LoopBuilder` over a scatter's domain, finishing with `loop.scatter_yield`."""

    def __init__(self, domain: TensorType, result_type: TensorType):
        super().__init__(domain)
        self.scatter_result = result_type

    def scatter(
        self,
        kind: ScatterKind,
        init: SSAValue,
        value: SSAValue,
        position: list[sympy.Expr],
        index_values: list[SSAValue],
    ) -> loop.ScatterOp:
        """The `loop.scatter` combining `value` (compute type) at `position`."""
        stored = self.body.to_storage(value, self.scatter_result.element_type)
        self.block.add_op(loop.ScatterYieldOp(stored, position, index_values))
        domain = self.parallel_sizes
        return loop.ScatterOp(kind, init, self.inputs, domain, self.scatter_result, Region(self.block))


def _dim_scatter(op: pt.ScatterOp | pt.ScatterAddOp | pt.ScatterReduceOp, kind: ScatterKind, init: SSAValue, identity: bool) -> loop.ScatterOp:
    """torch.scatter's pattern: the index's shape, the index entry at `dim`;
    with `identity`, the kind's identity assigned instead of the source."""
    result_type = _result_type(op)
    index_type = pt.tensor_type(op.index)
    builder = ScatterBuilder(index_type.with_element_type(result_type.element_type), result_type)
    here = builder.parallel_indices
    dim = op.dim.value.data
    position: list[sympy.Expr] = list(here)
    entries = []
    if position:  # a 0-d scatter's index is 0: its one value lands on the one element
        target = pt.tensor_type(init)
        entries.append(builder.within(builder.index_entry(op.index, here), target.sizes[dim]))
        position[dim] = index_value(0)
    if identity:
        value = builder.body.constant(_identity(kind, result_type.element_type), compute_type(result_type.element_type))
        return builder.scatter(ScatterKind.ASSIGN, init, value, position, entries)
    value = builder.read(op.source, here)
    return builder.scatter(kind, init, value, position, entries)


def _identity(kind: ScatterKind, element_type) -> float | int:
    """The value that combining with changes nothing."""
    if kind == ScatterKind.SUM:
        return 0
    if kind == ScatterKind.PROD:
        return 1
    if pt.is_float(element_type):
        return -math.inf if kind == ScatterKind.MAX else math.inf
    assert isinstance(element_type, IntegerType)
    width = element_type.width.data
    low, high = (0, 2**width - 1) if is_unsigned(element_type) else (-(2 ** (width - 1)), 2 ** (width - 1) - 1)
    return low if kind == ScatterKind.MAX else high


def _check_supported(op: Operation) -> None:
    if pt.is_bool(_result_type(op).element_type):
        raise UnsupportedScalarOp(f"{op.name} of booleans")


def lower_scatter(op: pt.ScatterOp) -> Operation:
    """Each source value assigned where it lands: the targets write duplicates
    in some order (the LLVM target in the domain's, as torch's CPU kernel)."""
    _check_supported(op)
    return _dim_scatter(op, ScatterKind.ASSIGN, op.input, identity=False)


def lower_scatter_add(op: pt.ScatterAddOp) -> Operation:
    _check_supported(op)
    return _dim_scatter(op, ScatterKind.SUM, op.input, identity=False)


def lower_scatter_reduce(op: pt.ScatterReduceOp) -> list[Operation]:
    """One `loop.scatter`; without `include_self`, after the identity's."""
    _check_supported(op)
    kind = op.kind.data
    if op.includes_self:
        return [_dim_scatter(op, kind, op.input, identity=False)]
    cleared = _dim_scatter(op, kind, op.input, identity=True)
    return [cleared, _dim_scatter(op, kind, cleared.result, identity=False)]


def lower_index_put(op: pt.IndexPutOp) -> Operation:
    """`x[indices] += values` over the indexed shape; an assigning
    `index_put` stays for torch, whose kernel picks among duplicates."""
    _check_supported(op)
    if op.accumulate is None:
        raise UnsupportedScalarOp("index_put without accumulation")
    target = pt.tensor_type(op.input)
    result_type = _result_type(op)
    dims = list(op.dims.data)
    index_types = [pt.tensor_type(v) for v in op.indices]
    broadcast = pt.broadcast_shapes(*(t.sizes for t in index_types))
    domain = pt.index_result_shape(target.sizes, dims, broadcast)
    builder = ScatterBuilder(TensorType(domain, result_type.element_type), result_type)
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    start = dims[0] if adjacent else 0
    here = builder.parallel_indices
    broadcast_point = here[start : start + len(broadcast)]
    kept = iter(here[:start] + here[start + len(broadcast) :])
    entries = []
    for value, dim, value_type in zip(op.indices, dims, index_types):
        entry = builder.index_entry(value, broadcast_index(value_type.sizes, broadcast_point))
        entries.append(builder.wrap_negative(entry, target.sizes[dim]))
    position = [index_value(dims.index(d)) if d in dims else next(kept) for d in range(target.rank)]
    value = builder.read_broadcast(op.values)
    return builder.scatter(ScatterKind.SUM, op.input, value, position, entries)


SCATTER_LOWERINGS = {
    pt.ScatterOp: lower_scatter,
    pt.ScatterAddOp: lower_scatter_add,
    pt.ScatterReduceOp: lower_scatter_reduce,
    pt.IndexPutOp: lower_index_put,
}
"""The scatters' lowerings, each to one `loop.scatter` or a list ending in it."""

__all__ = ["SCATTER_LOWERINGS", "order_dependent"]
