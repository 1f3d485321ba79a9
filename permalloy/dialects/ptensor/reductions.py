"""
`ptensor.reduce`, a reduction of some dimensions by a kind (sum, prod, max,
min, argmax, argmin, any, all), and the shape it gives.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import IntegerType, UnitAttr
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

from permalloy.dialects.ptensor.checks import (
    check_dims,
    check_same_element_type,
    check_shape,
    require,
)
from permalloy.dialects.ptensor.kinds import ReduceKind, ReduceKindAttr
from permalloy.dialects.ptensor.types import (
    IntListAttr,
    TensorType,
    is_bool,
    tensor_type,
)


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """
    A reduction over some dimensions.

    `%s = ptensor.reduce sum %x dims [1] keepdim : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 1], f32>`.
    `argmax` and `argmin` reduce one dimension and give i64 positions (the first
    one on ties); `any` and `all` give i1; the others keep the dtype.
    """

    name = "ptensor.reduce"

    kind = prop_def(ReduceKindAttr)
    dims = prop_def(IntListAttr)
    keepdim = opt_prop_def(UnitAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$kind $input `dims` $dims (`keepdim` $keepdim^)? attr-dict `:` "
        "type($input) `->` type($result)"
    )

    def __init__(
        self,
        kind: ReduceKind,
        input: SSAValue,
        dims: Sequence[int],
        keepdim: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "kind": ReduceKindAttr(kind),
                "dims": IntListAttr(sorted(dims)),
                "keepdim": UnitAttr() if keepdim else None,
            },
        )

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        kind, dims = self.kind.data, self.dims.data
        check_dims(dims, source.rank, "reduction dimension")
        check_shape(
            self.name, result, reduced_shape(source.sizes, dims, self.keepdim is not None)
        )
        if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
            require(len(dims) == 1, f"ptensor.reduce {kind} reduces one dimension")
            require(
                result.element_type == IntegerType(64),
                f"ptensor.reduce {kind} gives i64",
            )
        elif kind in (ReduceKind.ANY, ReduceKind.ALL):
            require(is_bool(result.element_type), f"ptensor.reduce {kind} gives i1")
        else:
            check_same_element_type(self.name, source, result)


def reduced_shape(
    sizes: Sequence[sympy.Expr], dims: Sequence[int], keepdim: bool
) -> list[sympy.Expr]:
    if keepdim:
        return [sympy.Integer(1) if i in dims else s for i, s in enumerate(sizes)]
    return [s for i, s in enumerate(sizes) if i not in dims]
