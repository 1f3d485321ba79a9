"""
The sorts: `ptensor.sort` (torch's sort, argsort and msort) and
`ptensor.topk`, each giving values and their i64 positions along one
dimension. kthvalue is a topk of the k smallest and a select.
"""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, IntegerType, UnitAttr
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from permalloy.dialects.ptensor.checks import check_dims, check_same_element_type, check_shape, require
from permalloy.dialects.ptensor.types import TensorType, tensor_type
from permalloy.dialects.sym import format_expr


def _check_sort_results(op: IRDLOperation, source: TensorType, values: TensorType, indices: TensorType, dim: int) -> None:
    """A sort's results: the input's element type, and i64 positions of
    their shape."""
    require(source.rank >= 1, f"{op.name} takes a tensor of at least one dimension")
    check_dims([dim], source.rank, "sorted dimension")
    check_same_element_type(op.name, source, values)
    require(indices.element_type == IntegerType(64), f"{op.name} gives i64 indices, not {indices.element_type}")
    check_shape(op.name, indices, values.sizes)


@irdl_op_definition
class SortOp(IRDLOperation):
    """
    The elements of `input` sorted along `dim`, and the position along `dim`
    each came from: torch.sort (argsort and msort are its indices and its
    values along dimension 0).

    `%v, %i = ptensor.sort %x dim 1 descending stable : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8], i64>`.

    Ascending unless `descending`. NaN is greater than every number (last
    ascending, first descending), and -0.0 equals 0.0. With `stable`, equal
    elements keep their order, descending too; without it their order is
    unspecified (every lowering gives the stable order). The input has at
    least one dimension; both results have its shape.
    """

    name = "ptensor.sort"

    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    descending = opt_prop_def(UnitAttr)
    stable = opt_prop_def(UnitAttr)
    values = result_def(TensorType)
    indices = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$input `dim` $dim (`descending` $descending^)? (`stable` $stable^)? attr-dict "
        "`:` type($input) `->` type($values) `,` type($indices)"
    )

    def __init__(self, input: SSAValue, dim: int, descending: bool, stable: bool, values_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[values_type, values_type.with_element_type(IntegerType(64))],
            properties={
                "dim": IntegerAttr(dim, 64),
                "descending": UnitAttr() if descending else None,
                "stable": UnitAttr() if stable else None,
            },
        )

    @property
    def is_descending(self) -> bool:
        return self.descending is not None

    def verify_(self) -> None:
        source, values, indices = (tensor_type(v) for v in (self.input, self.values, self.indices))
        _check_sort_results(self, source, values, indices, self.dim.value.data)
        check_shape(self.name, values, source.sizes)


@irdl_op_definition
class TopkOp(IRDLOperation):
    """
    The `k` largest elements of `input` along `dim` (the smallest without
    `largest`), and their positions along `dim`: torch.topk.

    `%v, %i = ptensor.topk %x k 3 dim 1 largest sorted : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 3], f32>, !ptensor.tensor<[4, 3], i64>`.

    With `sorted` the results are in order (the largest first, or the
    smallest); without it their order is unspecified (every lowering gives
    the sorted one). NaN is greater than every number. Among equal elements,
    which positions are taken and in what order is unspecified (lowerings
    take the first ones, in order). `k` is at most the size of `dim`; the
    results have the input's shape with `k` at `dim`.
    """

    name = "ptensor.topk"

    input = operand_def(TensorType)
    k = prop_def(IntegerAttr[I64])
    dim = prop_def(IntegerAttr[I64])
    largest = opt_prop_def(UnitAttr)
    sorted = opt_prop_def(UnitAttr)
    values = result_def(TensorType)
    indices = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$input `k` $k `dim` $dim (`largest` $largest^)? (`sorted` $sorted^)? attr-dict "
        "`:` type($input) `->` type($values) `,` type($indices)"
    )

    def __init__(self, input: SSAValue, k: int, dim: int, largest: bool, sorted: bool, values_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[values_type, values_type.with_element_type(IntegerType(64))],
            properties={
                "k": IntegerAttr(k, 64),
                "dim": IntegerAttr(dim, 64),
                "largest": UnitAttr() if largest else None,
                "sorted": UnitAttr() if sorted else None,
            },
        )

    @property
    def is_largest(self) -> bool:
        return self.largest is not None

    @property
    def count(self) -> int:
        return self.k.value.data

    def verify_(self) -> None:
        source, values, indices = (tensor_type(v) for v in (self.input, self.values, self.indices))
        dim = self.dim.value.data
        _check_sort_results(self, source, values, indices, dim)
        k = self.count
        size = source.sizes[dim]
        require(k >= 0, f"ptensor.topk: k is {k}, not a count")
        require(
            not (size.is_number and k > size),
            f"ptensor.topk: k {k} is more than the {format_expr(size)} elements along dimension {dim}",
        )
        expected = list(source.sizes)
        expected[dim] = k
        check_shape(self.name, values, expected)


SORT_OPS = (SortOp, TopkOp)
