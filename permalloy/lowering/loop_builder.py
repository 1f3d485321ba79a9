"""
Building one loop op: its domain, its inputs, and reads through views.

`LoopBuilder` is the explicit context of one `loop.pointwise`, `loop.reduce`
or `loop.scan` under construction. Reading a tensor at an index walks back through the view
ops that produced it (view elimination), so the load reads the tensor that owns
the data at the composed, simplified index expression.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Block, BlockArgument, Region, SSAValue

from permalloy.dialects import loop
from permalloy.dialects.ptensor import SCAN_POSITION_KINDS, VIEW_OPS, FullOp, ReduceKind, ScanKind, TensorType
from permalloy.dialects.sym import index_value, parallel_index, reduction_index
from permalloy.lowering.index_algebra import (
    Index,
    broadcast_index,
    domain_bounds,
    simplify_index,
    view_input_index,
)
from permalloy.lowering.scalar_ops import BodyBuilder, compute_type, element_value


def resolve_views(value: SSAValue, index: Index) -> tuple[SSAValue, Index]:
    """The tensor owning the data of `value`, and the index that `index` of
    `value` reads in it."""
    while isinstance(value.owner, VIEW_OPS):
        index = view_input_index(value.owner, index)
        value = value.owner.operands[0]
    return value, index


class LoopBuilder:
    """The body, inputs and domain of one loop op being built."""

    def __init__(
        self,
        result_type: TensorType,
        reduction_sizes: Sequence[sympy.Expr] = (),
        scanned_dim: int | None = None,
    ):
        """A builder over the result's shape and `reduction_sizes`; with
        `scanned_dim`, of a scan: that dimension of the result is the
        reduction domain, the others the parallel one."""
        self.result_type = result_type
        self.scanned_dim = scanned_dim
        self.parallel_sizes = list(result_type.sizes)
        if scanned_dim is not None:
            reduction_sizes = [self.parallel_sizes.pop(scanned_dim)]
        self.reduction_sizes = tuple(reduction_sizes)
        self.block = Block()
        self.body = BodyBuilder(self.block)
        self.inputs: list[SSAValue] = []
        self._arguments: dict[SSAValue, BlockArgument] = {}
        self.bounds = domain_bounds(self.parallel_sizes, self.reduction_sizes)
        self._index_values: list[SSAValue] = []

    # -- the domain ----------------------------------------------------------

    @property
    def parallel_indices(self) -> Index:
        return tuple(parallel_index(i) for i in range(len(self.parallel_sizes)))

    @property
    def reduction_indices(self) -> Index:
        return tuple(reduction_index(j) for j in range(len(self.reduction_sizes)))

    def index(self, expr: sympy.Expr | int) -> SSAValue:
        """The value of an integer expression as an `index`."""
        return self.body.add(loop.IndexOp(simplify_index(sympy.sympify(expr), self.bounds)))

    # -- reads ----------------------------------------------------------------

    def _argument(self, value: SSAValue) -> BlockArgument:
        if value not in self._arguments:
            self.inputs.append(value)
            self._arguments[value] = self.block.insert_arg(value.type, len(self.block.args))
        return self._arguments[value]

    def read(
        self,
        value: SSAValue,
        index: Sequence[sympy.Expr],
        index_values: Sequence[SSAValue] = (),
        mask: SSAValue | None = None,
    ) -> SSAValue:
        """Load `value` at `index` and widen it to its compute type. `index` may
        use `v0, v1, ...` for the entries of `index_values`."""
        base, base_index = resolve_views(value, tuple(sympy.sympify(i) for i in index))
        base_type = base.type
        assert isinstance(base_type, TensorType)
        if isinstance(base.owner, FullOp):
            return self._constant_of(base.owner, base_type.element_type)
        simplified = [simplify_index(e, self.bounds) for e in base_index]
        used_values, simplified = _renumber_index_values(simplified, index_values)
        load = loop.LoadOp(
            self._argument(base),
            simplified,
            loop.scalar_type(base_type.element_type),
            used_values,
            mask,
        )
        return self.body.to_compute(self.body.add(load), base_type.element_type)

    def _constant_of(self, full: FullOp, element_type: Attribute) -> SSAValue:
        """Every element of a `ptensor.full` is its value: no load needed."""
        value = full.value
        assert isinstance(value, FloatAttr | IntegerAttr)
        number = element_value(value.value.data, element_type)
        return self.body.constant(number, compute_type(element_type))

    def read_broadcast(self, value: SSAValue) -> SSAValue:
        """Load an operand broadcast to the result's shape at the current point."""
        value_type = value.type
        assert isinstance(value_type, TensorType)
        return self.read(value, broadcast_index(value_type.sizes, self.parallel_indices))

    def index_entry(self, value: SSAValue, index: Sequence[sympy.Expr]) -> SSAValue:
        """Load an integer tensor at `index` and give it as an `index` value."""
        entry = self.read(value, index)
        if isinstance(entry.type, IntegerType) and entry.type.width.data != 64:
            entry = self.body.convert(entry, entry.type, IntegerType(64))
        return self.body.int_to_index(entry)

    def wrap_negative(self, entry: SSAValue, size: sympy.Expr) -> SSAValue:
        """An index entry with Python's negative positions counted from the
        end of `size`, kept within the dimension (`within`)."""
        body = self.body
        zero = body.constant(0, IndexType())
        negative = body.add(arith.CmpiOp(entry, zero, "slt"))
        wrapped = body.add(arith.AddiOp(entry, self.index(size)))
        return self.within(body.select(negative, wrapped, entry), size)

    def within(self, entry: SSAValue, size: sympy.Expr) -> SSAValue:
        """An index entry clamped to the positions of a dimension of `size`:
        an entry out of range, which eager reports as an error, reads or
        writes the nearest end, never memory outside the tensor."""
        body = self.body
        zero = body.constant(0, IndexType())
        last = body.add(arith.SubiOp(self.index(size), body.constant(1, IndexType())))
        below = body.select(body.add(arith.CmpiOp(entry, last, "sgt")), last, entry)
        return body.select(body.add(arith.CmpiOp(below, zero, "slt")), zero, below)

    # -- finishing --------------------------------------------------------------

    def _finish_body(self, value: SSAValue, element_type: Attribute) -> Region:
        stored = self.body.to_storage(value, element_type)
        self.block.add_op(loop.YieldOp(stored))
        return Region(self.block)

    def pointwise(self, value: SSAValue) -> loop.PointwiseOp:
        """The loop.pointwise whose body yields `value` (in compute type)."""
        body = self._finish_body(value, self.result_type.element_type)
        return loop.PointwiseOp(self.inputs, self.result_type, body)

    def reduce(self, kind: ReduceKind, value: SSAValue, value_type: Attribute) -> loop.ReduceOp:
        """The loop.reduce combining `value` (compute type of `value_type`)."""
        if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
            body = self._finish_body(value, value_type)
        else:
            body = self._finish_body(value, self.result_type.element_type)
        return loop.ReduceOp(
            kind, self.inputs, self.reduction_sizes, self.result_type, body
        )

    def scan(self, kind: ScanKind, value: SSAValue, value_type: Attribute) -> loop.ScanOp:
        """The loop.scan combining `value` (compute type of `value_type`)."""
        assert self.scanned_dim is not None
        element_type = value_type if kind in SCAN_POSITION_KINDS else self.result_type.element_type
        body = self._finish_body(value, element_type)
        return loop.ScanOp(kind, self.inputs, self.scanned_dim, self.result_type, body)

    def compute_type(self) -> Attribute:
        return compute_type(self.result_type.element_type)


def _renumber_index_values(
    index: list[sympy.Expr], index_values: Sequence[SSAValue]
) -> tuple[list[SSAValue], list[sympy.Expr]]:
    """Keep only the index values an index uses, numbered v0, v1, ... in order."""
    used = sorted(
        {int(s.name[1:]) for e in index for s in e.free_symbols if s.name[0] == "v"}
    )
    mapping = {index_value(old): index_value(new) for new, old in enumerate(used)}
    renamed = [e.xreplace(mapping) for e in index]
    return [index_values[old] for old in used], renamed
