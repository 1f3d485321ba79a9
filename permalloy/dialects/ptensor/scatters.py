"""
The scatters, which write or combine elements of a source into positions of
a copy of their input: `ptensor.scatter`, `ptensor.scatter_add`,
`ptensor.scatter_reduce` and `ptensor.index_put`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, IntegerAttr, UnitAttr
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects.ptensor.checks import (
    broadcast_or_fail,
    check_dims,
    check_same_element_type,
    check_shape,
    require,
)
from permalloy.dialects.ptensor.data_movement import index_result_shape
from permalloy.dialects.ptensor.kinds import ScatterKind, ScatterKindAttr
from permalloy.dialects.ptensor.types import (
    IntListAttr,
    TensorType,
    broadcast_shapes,
    is_bool,
    is_integer,
    tensor_type,
)
from permalloy.dialects.sym import format_expr


def _check_scatter_operands(name: str, target: TensorType, index: TensorType, source: TensorType, dim: int) -> None:
    """torch.scatter's rules: one rank for all three, an integer index no
    larger than the source in any dimension, nor than the input outside `dim`."""
    check_dims([dim], max(target.rank, 1), "scatter dimension")  # 0-d tensors scatter along dimension 0
    require(is_integer(index.element_type) and not is_bool(index.element_type), f"{name}: the index must be integer")
    require(
        index.rank == source.rank == target.rank,
        f"{name}: input, index and source differ in rank "
        f"({target.rank}, {index.rank} and {source.rank})",
    )
    for d, (i, s, t) in enumerate(zip(index.sizes, source.sizes, target.sizes)):
        for bound, what in ((s, "source"), (t, "input")):
            if what == "input" and d == dim:
                continue
            difference = bound - i
            require(
                not (difference.is_number and difference < 0),
                f"{name}: the index has size {format_expr(i)} in dimension {d}, "
                f"more than the {what}'s {format_expr(bound)}",
            )


class _ScatterOfSourceOp(IRDLOperation):
    """Shared structure of `ptensor.scatter` and `ptensor.scatter_add`: a copy
    of `input` that the elements of `source` land in, at `index` along `dim`."""

    input = operand_def(TensorType)
    index = operand_def(TensorType)
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$input `,` $index `,` $source `dim` $dim attr-dict `:` type($input) `,` "
        "type($index) `,` type($source) `->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, source: SSAValue, dim: int, result_type: TensorType):
        super().__init__(
            operands=[input, index, source],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, 64)},
        )

    def verify_(self) -> None:
        target, index, source, result = (
            tensor_type(v) for v in (self.input, self.index, self.source, self.result)
        )
        _check_scatter_operands(self.name, target, index, source, self.dim.value.data)
        check_same_element_type(self.name, target, source, result)
        check_shape(self.name, result, target.sizes)


@irdl_op_definition
class ScatterOp(_ScatterOfSourceOp):
    """
    torch.scatter of a source: a copy of `input` where, for `dim = 0`,
    `result[index[i][j]][j] = source[i][j]`. Where several source elements
    land on one element, which of them it holds is unspecified (torch's CPU
    kernel and the LLVM target write them in row-major order, the last one
    staying); the backward of a sort or a topk scatters a permutation.

    `%y = ptensor.scatter %x, %idx, %src dim 0 : T, I, S -> T`.
    """

    name = "ptensor.scatter"


@irdl_op_definition
class ScatterAddOp(_ScatterOfSourceOp):
    """
    torch.scatter_add: a copy of `input` where, for `dim = 0`,
    `result[index[i][j]][j] += source[i][j]`.

    `%y = ptensor.scatter_add %x, %idx, %src dim 0 : T, I, S -> T`.
    """

    name = "ptensor.scatter_add"


@irdl_op_definition
class ScatterReduceOp(IRDLOperation):
    """
    torch.scatter_reduce with a kind (`sum`, `prod`, `max` for amax, `min` for
    amin; torch's `mean` is a sum divided by counts): a copy of `input` where,
    for `dim = 0`, `result[index[i][j]][j]` combines `source[i][j]` into it.
    With `include_self` the elements of `input` take part; without, an
    element that some source value lands on combines only those values (one
    that none lands on keeps its input value).

    `%y = ptensor.scatter_reduce max %x, %idx, %src dim 0 include_self : T, I, S -> T`.
    """

    name = "ptensor.scatter_reduce"

    kind = prop_def(ScatterKindAttr)
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    include_self = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$kind $input `,` $index `,` $source `dim` $dim (`include_self` $include_self^)? "
        "attr-dict `:` type($input) `,` type($index) `,` type($source) `->` type($result)"
    )

    def __init__(
        self,
        kind: ScatterKind,
        input: SSAValue,
        index: SSAValue,
        source: SSAValue,
        dim: int,
        include_self: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input, index, source],
            result_types=[result_type],
            properties={
                "kind": ScatterKindAttr(kind),
                "dim": IntegerAttr(dim, 64),
                "include_self": UnitAttr() if include_self else None,
            },
        )

    @property
    def includes_self(self) -> bool:
        return self.include_self is not None

    def verify_(self) -> None:
        require(
            self.kind.data != ScatterKind.ASSIGN,
            "ptensor.scatter_reduce combines values: its kind is sum, prod, max or min",
        )
        target, index, source, result = (
            tensor_type(v) for v in (self.input, self.index, self.source, self.result)
        )
        _check_scatter_operands(self.name, target, index, source, self.dim.value.data)
        check_same_element_type(self.name, target, source, result)
        check_shape(self.name, result, target.sizes)


@irdl_op_definition
class IndexPutOp(IRDLOperation):
    """
    aten.index_put: a copy of `input` with `input[indices] = values` (or `+=`
    with `accumulate`), the indexing as in `ptensor.index`.

    `%y = ptensor.index_put %x[%i] dims [0], %v accumulate : T, V, [I] -> T`.
    """

    name = "ptensor.index_put"

    input = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    values = operand_def(TensorType)
    dims = prop_def(IntListAttr)
    accumulate = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$input `[` $indices `]` `dims` $dims `,` $values (`accumulate` $accumulate^)? "
        "attr-dict `:` type($input) `,` type($values) `,` `[` type($indices) `]` "
        "`->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        indices: Sequence[SSAValue],
        dims: Sequence[int],
        values: SSAValue,
        accumulate: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input, indices, values],
            result_types=[result_type],
            properties={
                "dims": IntListAttr(dims),
                "accumulate": UnitAttr() if accumulate else None,
            },
        )

    def verify_(self) -> None:
        target, values, result = (
            tensor_type(self.input),
            tensor_type(self.values),
            tensor_type(self.result),
        )
        dims = self.dims.data
        index_types = [tensor_type(v) for v in self.indices]
        require(
            len(dims) == len(index_types) >= 1,
            "ptensor.index_put: one index tensor per indexed dimension",
        )
        check_dims(dims, target.rank, "indexed dimension")
        indexed_shape = index_result_shape(
            target.sizes, dims, broadcast_or_fail(*index_types)
        )
        try:
            broadcast_shapes(values.sizes, indexed_shape)
        except ValueError as error:
            raise VerifyException(f"ptensor.index_put: values: {error}") from error
        check_same_element_type(self.name, target, values, result)
        check_shape(self.name, result, target.sizes)


SCATTER_OPS = (ScatterOp, ScatterAddOp, ScatterReduceOp, IndexPutOp)
