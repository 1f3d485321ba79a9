"""
The `!ptensor.tensor` type, the list attributes it and the ops are built from,
and the questions asked of element types and shapes: which dtypes are floats,
integers or bools, whether symbolic shapes are equal, how they broadcast.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import (
    Attribute,
    Data,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects.sym import CeilDiv, FloorDiv, format_expr, parse_expr, product, split_multiples, symbol_kind


@irdl_attr_definition
class IntListAttr(Data[tuple[int, ...]]):
    """A list of integers, printed `[1, 0, 2]`: dimensions, strides, paddings."""

    name = "ptensor.ints"

    def __init__(self, values: Sequence[int]):
        super().__init__(tuple(int(v) for v in values))

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[int, ...]:
        return tuple(
            parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: parser.parse_integer(allow_boolean=False),
            )
        )

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("[" + ", ".join(str(v) for v in self.data) + "]")


@irdl_attr_definition
class SymListAttr(Data[tuple[sympy.Expr, ...]]):
    """A list of integer expressions, printed `[s0, 4, d0 + 1]`."""

    name = "ptensor.exprs"

    def __init__(self, values: Sequence[sympy.Expr | int]):
        super().__init__(tuple(v if isinstance(v, sympy.Expr) else sympy.sympify(v) for v in values))

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> tuple[sympy.Expr, ...]:
        return tuple(
            parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_expr(parser)
            )
        )

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string("[" + ", ".join(format_expr(v) for v in self.data) + "]")


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """
    A ranked tensor whose sizes are integers or expressions over size symbols.

    `!ptensor.tensor<[2, s0, 768], f32>`; a scalar is `!ptensor.tensor<[], f32>`.
    """

    name = "ptensor.tensor"

    shape: SymListAttr
    element_type: Attribute

    def __init__(self, shape: Sequence[sympy.Expr | int], element_type: Attribute):
        super().__init__(SymListAttr(shape), element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape = SymListAttr.parse_parameter(parser)
            parser.parse_punctuation(",", " between the shape and the element type")
            element_type = parser.parse_type()
        return [SymListAttr(shape), element_type]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            self.shape.print_parameter(printer)
            printer.print_string(", ")
            printer.print_attribute(self.element_type)

    def verify(self) -> None:
        if not is_element_type(self.element_type):
            raise VerifyException(
                f"ptensor element type must be one of {ELEMENT_TYPE_NAMES}, "
                f"got {self.element_type}"
            )
        for size in self.shape.data:
            if not size.is_integer:
                raise VerifyException(f"size '{format_expr(size)}' is not an integer")
            if size.is_Integer and int(size) < 0:
                raise VerifyException(f"size {size} is negative")
            bad = [s for s in size.free_symbols if symbol_kind(s) != "s"]
            if bad:
                raise VerifyException(
                    f"size '{format_expr(size)}' may only use size symbols (s0, s1, "
                    f"...), not {', '.join(sorted(s.name for s in bad))}"
                )

    @property
    def sizes(self) -> tuple[sympy.Expr, ...]:
        return self.shape.data

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    def numel(self) -> sympy.Expr:
        return product(self.sizes)

    def static_sizes(self) -> tuple[int, ...] | None:
        """The sizes as integers, or None when any is symbolic."""
        if all(s.is_Integer for s in self.sizes):
            return tuple(int(s) for s in self.sizes)
        return None

    def with_shape(self, shape: Sequence[sympy.Expr | int]) -> TensorType:
        return TensorType(shape, self.element_type)

    def with_element_type(self, element_type: Attribute) -> TensorType:
        return TensorType(self.sizes, element_type)


ELEMENT_TYPE_NAMES = "f16, bf16, f32, f64, i1, i8, ui8, i16, i32, i64"


def is_float(element_type: Attribute) -> bool:
    return isinstance(
        element_type, Float16Type | BFloat16Type | Float32Type | Float64Type
    )


def is_bool(element_type: Attribute) -> bool:
    return isinstance(element_type, IntegerType) and element_type.width.data == 1


def is_integer(element_type: Attribute) -> bool:
    """Integers other than bool."""
    return isinstance(element_type, IntegerType) and element_type.width.data > 1


def is_element_type(element_type: Attribute) -> bool:
    if is_float(element_type):
        return True
    if isinstance(element_type, IntegerType):
        return element_type.width.data in (1, 8, 16, 32, 64)
    return False


def scalar_attr(value: float | int | bool, element_type: Attribute) -> Attribute:
    """The attribute that holds a scalar of a ptensor element type."""
    if is_float(element_type):
        return FloatAttr(float(value), Float64Type())
    if is_bool(element_type):
        return IntegerAttr(int(bool(value)), IntegerType(64))
    return IntegerAttr(int(value), IntegerType(64))


def tensor_type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def sizes_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether two sizes are equal for every value of their symbols. Ceiling
    divisions are compared as the floor divisions they equal (`a ceildiv b` is
    `(a + b - 1) floordiv b`), so that `(s0 ceildiv 2 + 1) floordiv 2` and
    `s0 ceildiv 2 ceildiv 2` (a slice of a slice, each with step 2) agree, and
    the multiples of a floor division's divisor come out of it
    (`(s0 - 2) floordiv 2` is `s0 floordiv 2 - 1`), so that
    `(s0 - 3) ceildiv 2`, the length of `x[3::2]`, and torch's
    `s0 floordiv 2 - 1` agree."""
    if a == b or sympy.simplify(a - b) == 0:
        return True
    a, b = sympy.sympify(a), sympy.sympify(b)
    if not any(side.has(CeilDiv, FloorDiv) for side in (a, b)):
        return False
    return sympy.simplify(_normal_divisions(a) - _normal_divisions(b)) == 0


def _normal_divisions(expr: sympy.Expr) -> sympy.Expr:
    """`expr` with each ceiling division by a positive integer written as a
    floor division, and the terms of a floor division by an integer that the
    integer divides taken out of it: `(a + k d) floordiv d` is
    `a floordiv d + k` for integer-valued terms."""
    floors = expr.replace(
        lambda e: isinstance(e, CeilDiv) and e.args[1].is_Integer and e.args[1] > 0,
        lambda e: FloorDiv(e.args[0] + e.args[1] - 1, e.args[1]),
    )
    return floors.replace(lambda e: isinstance(e, FloorDiv) and e.args[1].is_Integer, _divisible_terms_out)


def _divisible_terms_out(division: sympy.Expr) -> sympy.Expr:
    base, divisor = division.args
    split = split_multiples(base, int(divisor))
    if split is None or split[0] == 0:
        return division
    quotient, rest = split
    return FloorDiv(rest, divisor) + quotient


def shapes_equal(a: Sequence[sympy.Expr], b: Sequence[sympy.Expr]) -> bool:
    return len(a) == len(b) and all(sizes_equal(x, y) for x, y in zip(a, b))


def broadcast_shapes(*shapes: Sequence[sympy.Expr]) -> tuple[sympy.Expr, ...]:
    """Numpy-style broadcasting of symbolic shapes; raises ValueError on a mismatch."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[sympy.Expr] = []
    for position in range(rank):
        size: sympy.Expr = sympy.Integer(1)
        for shape in shapes:
            index = len(shape) - rank + position
            if index < 0:
                continue
            other = shape[index]
            if other == 1:
                continue
            if size == 1:
                size = other
            elif not sizes_equal(size, other):
                raise ValueError(
                    f"shapes {[format_shape(s) for s in shapes]} do not broadcast: "
                    f"size {format_expr(size)} against {format_expr(other)}"
                )
        result.append(size)
    return tuple(result)


def format_shape(shape: Sequence[sympy.Expr]) -> str:
    return "[" + ", ".join(format_expr(s) for s in shape) + "]"
