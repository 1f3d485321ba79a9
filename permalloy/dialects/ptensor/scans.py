"""
`ptensor.scan`, a cumulative reduction along one dimension by a kind (sum,
prod, logsumexp, max, min, argmax, argmin): torch's cumsum, cumprod,
logcumsumexp, cummax and cummin.
"""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IntegerAttr, IntegerType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from permalloy.dialects.ptensor.checks import (
    check_dims,
    check_same_element_type,
    check_shape,
    require,
)
from permalloy.dialects.ptensor.kinds import SCAN_POSITION_KINDS, ScanKind, ScanKindAttr
from permalloy.dialects.ptensor.types import TensorType, is_float, tensor_type


@irdl_op_definition
class ScanOp(IRDLOperation):
    """
    A scan along dimension `dim`: each element of the result combines, by
    `kind`, the input's elements before it along `dim` and itself.

    `%c = ptensor.scan sum %x dim 1 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>`.

    `sum` and `prod` are torch's cumsum and cumprod (the importer casts the
    input to the result's dtype first), `logsumexp` is logcumsumexp (floats),
    `max` and `min` are the values of cummax and cummin, `argmax` and `argmin`
    their i64 positions, as torch gives them: on ties the last position of
    the running extreme, a NaN counting as the extreme and a later NaN taking
    an earlier one's place. The input has at least one dimension; the result
    has its shape.
    """

    name = "ptensor.scan"

    kind = prop_def(ScanKindAttr)
    dim = prop_def(IntegerAttr[I64])
    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$kind $input `dim` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: ScanKind, input: SSAValue, dim: int, result_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"kind": ScanKindAttr(kind), "dim": IntegerAttr(dim, 64)},
        )

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        kind = self.kind.data
        require(source.rank >= 1, "ptensor.scan takes a tensor of at least one dimension")
        check_dims([self.dim.value.data], source.rank, "scan dimension")
        check_shape(self.name, result, source.sizes)
        if kind in SCAN_POSITION_KINDS:
            require(result.element_type == IntegerType(64), f"ptensor.scan {kind} gives i64")
            return
        if kind == ScanKind.LOGSUMEXP:
            require(is_float(source.element_type), "ptensor.scan logsumexp takes a float tensor")
        check_same_element_type(self.name, source, result)
