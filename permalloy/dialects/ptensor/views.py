"""
The view ops, one tensor in and one out with the same elements seen another
way: `ptensor.reshape`, `permute`, `expand`, `slice`, `select`, `squeeze`,
`unsqueeze` and `as_strided`. Lowering to loops folds them into the index
expressions of their readers.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import I64, IntegerAttr
from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure

from permalloy.dialects.ptensor.checks import (
    check_dims,
    check_same_element_type,
    check_shape,
    require,
)
from permalloy.dialects.ptensor.syntax import CustomSyntaxOp
from permalloy.dialects.ptensor.types import (
    IntListAttr,
    SymListAttr,
    TensorType,
    format_shape,
    sizes_equal,
    tensor_type,
)
from permalloy.dialects.sym import CeilDiv, SymExprAttr, format_expr, parse_expr, product


class ViewCanonicalization(HasCanonicalizationPatternsTrait):
    """The views' canonicalization patterns: a view that changes nothing
    disappears, permutes and reshapes of their own kind compose, a constant
    element of an iota folds (`canonicalization.py`)."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from permalloy.dialects.ptensor.canonicalization import (
            ComposePermutes,
            ComposeReshapes,
            EraseIdentityView,
            FoldSelectOfIota,
        )

        return (EraseIdentityView(), ComposePermutes(), ComposeReshapes(), FoldSelectOfIota())


class _ViewOp(IRDLOperation):
    """
    Shared shape of the view ops: one tensor in, one out, of the same element
    type. A view checks what is particular to it in `verify_view`, and says in
    `is_identity` whether it shows its input unchanged.
    """

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ViewCanonicalization())

    def is_identity(self) -> bool:
        """Whether the result is the input, element for element."""
        return False

    def _same_type(self) -> bool:
        return self.input.type == self.result.type

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        expected = self.verify_view(source, result)
        check_same_element_type(self.name, source, result)
        if expected is not None:
            check_shape(self.name, result, expected)

    def verify_view(
        self, source: TensorType, result: TensorType
    ) -> Sequence[sympy.Expr] | None:
        """Check the op's properties against its input and result; give the
        result shape they determine, or None where they determine none."""
        raise NotImplementedError


@irdl_op_definition
class ReshapeOp(_ViewOp):
    """
    The same elements in row-major order under another shape.

    `%y = ptensor.reshape %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[32], f32>`.
    """

    name = "ptensor.reshape"

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def is_identity(self) -> bool:
        return self._same_type()

    def verify_view(self, source: TensorType, result: TensorType) -> None:
        require(
            sizes_equal(source.numel(), result.numel()),
            f"ptensor.reshape: {format_shape(source.sizes)} and "
            f"{format_shape(result.sizes)} have different numbers of elements",
        )


@irdl_op_definition
class PermuteOp(_ViewOp):
    """
    A permutation of the dimensions: result dimension i is input dimension
    `dims[i]`.

    `%y = ptensor.permute %x [1, 0] : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8, 4], f32>`.
    """

    name = "ptensor.permute"

    dims = prop_def(IntListAttr)

    assembly_format = "$input $dims attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dims": IntListAttr(dims)},
        )

    def is_identity(self) -> bool:
        return list(self.dims.data) == list(range(len(self.dims.data)))

    def verify_view(self, source: TensorType, result: TensorType) -> list[sympy.Expr]:
        dims = self.dims.data
        require(
            sorted(dims) == list(range(source.rank)),
            f"ptensor.permute: {list(dims)} is not a permutation of "
            f"{source.rank} dimensions",
        )
        return [source.sizes[d] for d in dims]


@irdl_op_definition
class ExpandOp(_ViewOp):
    """
    Broadcasting to a larger shape: size-1 dimensions are repeated and new
    leading dimensions added.

    `%y = ptensor.expand %x : !ptensor.tensor<[1, 8], f32> -> !ptensor.tensor<[4, 8], f32>`.
    """

    name = "ptensor.expand"

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def is_identity(self) -> bool:
        return self._same_type()

    def verify_view(self, source: TensorType, result: TensorType) -> None:
        require(result.rank >= source.rank, "ptensor.expand cannot remove dimensions")
        offset = result.rank - source.rank
        for i, size in enumerate(source.sizes):
            target = result.sizes[offset + i]
            require(
                size == 1 or sizes_equal(size, target),
                f"ptensor.expand: dimension {i} of size {format_expr(size)} cannot "
                f"expand to {format_expr(target)}",
            )


@irdl_op_definition
class SliceOp(_ViewOp, CustomSyntaxOp):
    """
    Elements `start, start + step, ...` below `end` along one dimension.

    `%y = ptensor.slice %x dim 1 start 0 end s0 step 2 : ...`. Start and end are
    integer expressions already clamped to the dimension.
    """

    name = "ptensor.slice"

    dim = prop_def(IntegerAttr[I64])
    start = prop_def(SymExprAttr)
    end = prop_def(SymExprAttr)
    step = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        input: SSAValue,
        dim: int,
        start: sympy.Expr | int,
        end: sympy.Expr | int,
        step: int,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "dim": IntegerAttr(dim, 64),
                "start": SymExprAttr(start),
                "end": SymExprAttr(end),
                "step": IntegerAttr(step, 64),
            },
        )

    def print_properties(self, printer: Printer) -> None:
        printer.print_string(
            f" dim {self.dim.value.data} start {format_expr(self.start.expr)}"
            f" end {format_expr(self.end.expr)} step {self.step.value.data}"
        )

    @classmethod
    def parse_properties(cls, parser: Parser) -> tuple:
        parser.parse_keyword("dim")
        dim = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("start")
        start = parse_expr(parser)
        parser.parse_keyword("end")
        end = parse_expr(parser)
        parser.parse_keyword("step")
        return dim, start, end, parser.parse_integer(allow_boolean=False)

    def is_identity(self) -> bool:
        # From 0 with the input's length: every element in order (with a
        # step above 1, the end being clamped, only of a length of 0 or 1).
        return self.start.expr == 0 and self._same_type()

    def verify_view(self, source: TensorType, result: TensorType) -> list[sympy.Expr]:
        dim, step = self.dim.value.data, self.step.value.data
        check_dims([dim], source.rank, "slice dimension")
        require(step >= 1, f"ptensor.slice: step must be positive, got {step}")
        expected = list(source.sizes)
        expected[dim] = slice_length(self.start.expr, self.end.expr, step)
        return expected


def slice_length(start: sympy.Expr, end: sympy.Expr, step: int) -> sympy.Expr:
    length = CeilDiv(end - start, step) if step != 1 else end - start
    if length.is_Integer:
        return sympy.Integer(max(int(length), 0))
    return sympy.sympify(length)


@irdl_op_definition
class SelectOp(_ViewOp, CustomSyntaxOp):
    """
    One index along one dimension, which disappears.

    `%y = ptensor.select %x dim 0 index 2 : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[8], f32>`.
    The index is a non-negative integer expression.
    """

    name = "ptensor.select"

    dim = prop_def(IntegerAttr[I64])
    index = prop_def(SymExprAttr)

    def __init__(
        self,
        input: SSAValue,
        dim: int,
        index: sympy.Expr | int,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, 64), "index": SymExprAttr(index)},
        )

    def print_properties(self, printer: Printer) -> None:
        printer.print_string(
            f" dim {self.dim.value.data} index {format_expr(self.index.expr)}"
        )

    @classmethod
    def parse_properties(cls, parser: Parser) -> tuple:
        parser.parse_keyword("dim")
        dim = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("index")
        return dim, parse_expr(parser)

    def verify_view(self, source: TensorType, result: TensorType) -> list[sympy.Expr]:
        dim = self.dim.value.data
        check_dims([dim], source.rank, "select dimension")
        index = self.index.expr
        size = source.sizes[dim]
        if index.is_Integer and size.is_Integer:
            require(
                0 <= int(index) < int(size),
                f"ptensor.select: index {index} is out of range for size {size}",
            )
        return [s for i, s in enumerate(source.sizes) if i != dim]


@irdl_op_definition
class SqueezeOp(_ViewOp):
    """
    Removes size-1 dimensions.

    `%y = ptensor.squeeze %x dims [1] : !ptensor.tensor<[4, 1], f32> -> !ptensor.tensor<[4], f32>`.
    """

    name = "ptensor.squeeze"

    dims = prop_def(IntListAttr)

    assembly_format = (
        "$input `dims` $dims attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dims": IntListAttr(sorted(dims))},
        )

    def is_identity(self) -> bool:
        return not self.dims.data

    def verify_view(self, source: TensorType, result: TensorType) -> list[sympy.Expr]:
        dims = self.dims.data
        check_dims(dims, source.rank, "squeezed dimension")
        for d in dims:
            require(
                source.sizes[d] == 1,
                f"ptensor.squeeze: dimension {d} has size "
                f"{format_expr(source.sizes[d])}, not 1",
            )
        return [s for i, s in enumerate(source.sizes) if i not in dims]


@irdl_op_definition
class UnsqueezeOp(_ViewOp):
    """
    Inserts a size-1 dimension at position `dim` of the result.

    `%y = ptensor.unsqueeze %x dim 0 : !ptensor.tensor<[8], f32> -> !ptensor.tensor<[1, 8], f32>`.
    """

    name = "ptensor.unsqueeze"

    dim = prop_def(IntegerAttr[I64])

    assembly_format = "$input `dim` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dim: int, result_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, 64)},
        )

    def verify_view(self, source: TensorType, result: TensorType) -> list[sympy.Expr]:
        dim = self.dim.value.data
        require(
            0 <= dim <= source.rank,
            f"ptensor.unsqueeze: dimension {dim} is out of range for rank "
            f"{source.rank}",
        )
        expected = list(source.sizes)
        expected.insert(dim, sympy.Integer(1))
        return expected


@irdl_op_definition
class AsStridedOp(_ViewOp, CustomSyntaxOp):
    """
    A view of the input's contiguous storage with explicit sizes, strides and
    offset (in elements).

    `%y = ptensor.as_strided %x strides [1, 4] offset 0 : !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 4], f32>`.
    The input is read in row-major order as if it were contiguous.
    """

    name = "ptensor.as_strided"

    strides = prop_def(SymListAttr)
    offset = prop_def(SymExprAttr)

    def __init__(
        self,
        input: SSAValue,
        strides: Sequence[sympy.Expr | int],
        offset: sympy.Expr | int,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"strides": SymListAttr(strides), "offset": SymExprAttr(offset)},
        )

    def print_properties(self, printer: Printer) -> None:
        printer.print_string(" strides ")
        self.strides.print_parameter(printer)
        printer.print_string(f" offset {format_expr(self.offset.expr)}")

    @classmethod
    def parse_properties(cls, parser: Parser) -> tuple:
        parser.parse_keyword("strides")
        strides = SymListAttr.parse_parameter(parser)
        parser.parse_keyword("offset")
        return strides, parse_expr(parser)

    def is_identity(self) -> bool:
        # Row-major strides (any for a dimension of size 1) from offset 0 read
        # the input's row-major storage in its own order.
        sizes = tensor_type(self.result).sizes
        dense = [product(sizes[d + 1 :]) for d in range(len(sizes))]
        return (
            self._same_type()
            and self.offset.expr == 0
            and all(
                size == 1 or stride == expected
                for size, stride, expected in zip(sizes, self.strides.data, dense)
            )
        )

    def verify_view(self, source: TensorType, result: TensorType) -> None:
        require(
            len(self.strides.data) == result.rank,
            f"ptensor.as_strided: {len(self.strides.data)} strides for a result of "
            f"rank {result.rank}",
        )


VIEW_OPS: tuple[type[IRDLOperation], ...] = (
    ReshapeOp,
    PermuteOp,
    ExpandOp,
    SliceOp,
    SelectOp,
    SqueezeOp,
    UnsqueezeOp,
    AsStridedOp,
)
