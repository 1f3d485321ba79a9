"""
The data-movement ops, which copy elements to new positions: `ptensor.cat`,
`ptensor.pad`, `ptensor.gather` and `ptensor.index` (advanced indexing); the scatters,
which combine elements into positions, are in `scatters`.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import I64, FloatAttr, IntegerAttr
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
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from permalloy.dialects.ptensor.checks import (
    broadcast_or_fail,
    check_dims,
    check_same_element_type,
    check_shape,
    require,
)
from permalloy.dialects.ptensor.kinds import PadMode, PadModeAttr
from permalloy.dialects.ptensor.syntax import CustomSyntaxOp, format_scalar, parse_scalar
from permalloy.dialects.ptensor.types import (
    IntListAttr,
    SymListAttr,
    TensorType,
    is_integer,
    scalar_attr,
    sizes_equal,
    tensor_type,
)
from permalloy.dialects.sym import format_expr


@irdl_op_definition
class CatOp(IRDLOperation):
    """
    Concatenation along one dimension.

    `%y = ptensor.cat %a, %b dim 0 : !ptensor.tensor<[2, 8], f32>, !ptensor.tensor<[s0, 8], f32> -> !ptensor.tensor<[s0 + 2, 8], f32>`.
    """

    name = "ptensor.cat"

    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$inputs `dim` $dim attr-dict `:` type($inputs) `->` type($result)"
    )

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: TensorType):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, 64)},
        )

    def verify_(self) -> None:
        types = [tensor_type(v) for v in self.inputs]
        result = tensor_type(self.result)
        require(len(types) >= 1, "ptensor.cat needs at least one input")
        dim = self.dim.value.data
        check_dims([dim], result.rank, "concatenation dimension")
        check_same_element_type(self.name, *types, result)
        total: sympy.Expr = sympy.Integer(0)
        for t in types:
            require(t.rank == result.rank, "ptensor.cat: inputs differ in rank")
            for i, (size, expected) in enumerate(zip(t.sizes, result.sizes)):
                if i != dim:
                    require(
                        sizes_equal(size, expected),
                        f"ptensor.cat: dimension {i} has size {format_expr(size)}, "
                        f"expected {format_expr(expected)}",
                    )
            total = total + t.sizes[dim]
        require(
            sizes_equal(total, result.sizes[dim]),
            f"ptensor.cat: the result's dimension {dim} should have size "
            f"{format_expr(total)}",
        )


@irdl_op_definition
class PadOp(CustomSyntaxOp):
    """
    Padding before (`low`) and after (`high`) each dimension; negative amounts
    crop. `constant` fills with a value, `reflect` mirrors without repeating the
    edge, `replicate` repeats the edge. Constant padding takes size
    expressions (`high [0, 16 - s0 mod 16]`: a mask padded to a multiple of
    16 keys), the other modes integers.

    `%y = ptensor.pad %x constant 0.0 low [0, 1] high [0, 2] : !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 7], f32>`.
    """

    name = "ptensor.pad"

    input = operand_def(TensorType)
    mode = prop_def(PadModeAttr)
    low = prop_def(SymListAttr)
    high = prop_def(SymListAttr)
    value = opt_prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue,
        mode: PadMode,
        low: Sequence[sympy.Expr | int],
        high: Sequence[sympy.Expr | int],
        value: float | int | None,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "mode": PadModeAttr(mode),
                "low": SymListAttr(low),
                "high": SymListAttr(high),
                "value": None
                if value is None
                else scalar_attr(value, result_type.element_type),
            },
        )

    def print_properties(self, printer: Printer) -> None:
        printer.print_string(f" {self.mode.data.value}")
        if self.value is not None:
            printer.print_string(f" {format_scalar(self.value)}")
        printer.print_string(" low ")
        self.low.print_parameter(printer)
        printer.print_string(" high ")
        self.high.print_parameter(printer)

    @classmethod
    def parse_properties(cls, parser: Parser) -> tuple:
        mode = parser.parse_str_enum(PadMode)
        value = parse_scalar(parser) if mode == PadMode.CONSTANT else None
        parser.parse_keyword("low")
        low = SymListAttr.parse_parameter(parser)
        parser.parse_keyword("high")
        high = SymListAttr.parse_parameter(parser)
        return mode, low, high, value

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        low, high = self.low.data, self.high.data
        require(
            len(low) == len(high) == source.rank,
            f"ptensor.pad: low and high need {source.rank} entries each",
        )
        require(
            (self.value is not None) == (self.mode.data == PadMode.CONSTANT),
            "ptensor.pad: a value is given exactly for constant padding",
        )
        require(
            self.mode.data == PadMode.CONSTANT or all(a.is_Integer for a in (*low, *high)),
            f"ptensor.pad: {self.mode.data.value} padding takes integer amounts",
        )
        expected = [s + lo + hi for s, lo, hi in zip(source.sizes, low, high)]
        check_same_element_type(self.name, source, result)
        check_shape(self.name, result, expected)


@irdl_op_definition
class GatherOp(IRDLOperation):
    """
    torch.gather: `result[i][j] = input[i][index[i][j]]` for `dim = 1`, in any
    rank. The result has the index's shape.

    `%y = ptensor.gather %x, %idx dim 1 : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 2], i64> -> !ptensor.tensor<[4, 2], f32>`.
    """

    name = "ptensor.gather"

    input = operand_def(TensorType)
    index = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$input `,` $index `dim` $dim attr-dict `:` type($input) `,` type($index) "
        "`->` type($result)"
    )

    def __init__(
        self, input: SSAValue, index: SSAValue, dim: int, result_type: TensorType
    ):
        super().__init__(
            operands=[input, index],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, 64)},
        )

    def verify_(self) -> None:
        source, index, result = (
            tensor_type(self.input),
            tensor_type(self.index),
            tensor_type(self.result),
        )
        check_dims([self.dim.value.data], source.rank, "gather dimension")
        require(is_integer(index.element_type), "ptensor.gather: the index must be integer")
        require(index.rank == source.rank, "ptensor.gather: index and input differ in rank")
        check_same_element_type(self.name, source, result)
        check_shape(self.name, result, index.sizes)


@irdl_op_definition
class IndexOp(IRDLOperation):
    """
    Advanced indexing (`x[idx0, :, idx2]`, aten.index.Tensor): the dimensions
    listed in `dims` are indexed by the index tensors, which broadcast together.
    When the indexed dimensions are adjacent, the broadcast index shape replaces
    them in place; otherwise it comes first.

    `%y = ptensor.index %w[%ids] dims [0] : !ptensor.tensor<[100, 16], f32>, !ptensor.tensor<[2, 5], i64> -> !ptensor.tensor<[2, 5, 16], f32>`.
    Negative entries in an index count from the end of their dimension.
    """

    name = "ptensor.index"

    input = operand_def(TensorType)
    indices = var_operand_def(TensorType)
    dims = prop_def(IntListAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$input `[` $indices `]` `dims` $dims attr-dict `:` type($input) `,` "
        "type($indices) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        indices: Sequence[SSAValue],
        dims: Sequence[int],
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input, indices],
            result_types=[result_type],
            properties={"dims": IntListAttr(dims)},
        )

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        dims = self.dims.data
        index_types = [tensor_type(v) for v in self.indices]
        require(
            len(dims) == len(index_types) >= 1,
            "ptensor.index: one index tensor per indexed dimension",
        )
        require(list(dims) == sorted(dims), "ptensor.index: dims must be increasing")
        check_dims(dims, source.rank, "indexed dimension")
        for t in index_types:
            require(
                is_integer(t.element_type),
                f"ptensor.index: index tensors must be integer, got {t.element_type}",
            )
        broadcast = broadcast_or_fail(*index_types)
        check_same_element_type(self.name, source, result)
        check_shape(self.name, result, index_result_shape(source.sizes, dims, broadcast))


def index_result_shape(
    sizes: Sequence[sympy.Expr], dims: Sequence[int], index_shape: Sequence[sympy.Expr]
) -> list[sympy.Expr]:
    """The shape of `x[...]` with index tensors at `dims` of broadcast shape."""
    kept = [s for i, s in enumerate(sizes) if i not in dims]
    adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims)))
    position = dims[0] if adjacent else 0
    return kept[:position] + list(index_shape) + kept[position:]
