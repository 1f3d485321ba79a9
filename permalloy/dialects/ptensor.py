"""
The `ptensor` dialect: value-semantic operations on ranked tensors.

This is the level the FX importer produces. Tensors have sizes that are integers
or integer expressions over size symbols (`!ptensor.tensor<[s0, 768], f32>`).
The op set is small and orthogonal:

- elementwise: `unary`, `binary`, `compare`, `where`, `cast` (with numpy-style
  broadcasting for the multi-operand ones; operands of `binary` and `compare`
  share a dtype, type promotion is made explicit by `cast`);
- reductions: `reduce` with a kind (sum, prod, max, min, argmax, argmin, any, all);
- views: `reshape`, `permute`, `expand`, `slice`, `select`, `squeeze`,
  `unsqueeze`, `as_strided`;
- data movement: `cat`, `pad`, `gather`, `index`, `scatter_add`, `index_put`;
- generators: `full`, `constant`, `iota`, `rand`;
- library ops that run as extern calls: `mm`, `bmm`, `addmm`, `convolution`,
  `attention`;
- `fallback`: any other ATen op, carried by name and run by torch.

Every op verifies the shapes and dtypes of its operands and results and says
what is wrong when they do not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import auto
import sympy
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    I64,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType as BuiltinTensorType,
    UnitAttr,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    Data,
    Dialect,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from permalloy.dialects.sym import (
    CeilDiv,
    FloorDiv,
    SymExprAttr,
    format_expr,
    parse_expr,
    product,
    symbol_kind,
)

# ---------------------------------------------------------------------------
# Attributes and types
# ---------------------------------------------------------------------------


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
        super().__init__(tuple(sympy.sympify(v) for v in values))

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


def tensor_type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def sizes_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    return sympy.simplify(a - b) == 0


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


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise VerifyException(message)


def _check_dims(dims: Sequence[int], rank: int, what: str) -> None:
    for d in dims:
        _require(0 <= d < rank, f"{what} {d} is out of range for rank {rank}")
    _require(len(set(dims)) == len(dims), f"{what}s {list(dims)} repeat a dimension")


def _check_shape(op_name: str, actual: TensorType, expected: Sequence[sympy.Expr]):
    _require(
        shapes_equal(actual.sizes, expected),
        f"{op_name}: result shape {format_shape(actual.sizes)} should be "
        f"{format_shape(expected)}",
    )


def _check_same_element_type(op_name: str, *types: TensorType):
    first = types[0].element_type
    for t in types[1:]:
        _require(
            t.element_type == first,
            f"{op_name}: element types differ ({first} and {t.element_type}); "
            "insert a ptensor.cast",
        )


# ---------------------------------------------------------------------------
# Kinds
# ---------------------------------------------------------------------------


class UnaryKind(StrEnum):
    """The functions of `ptensor.unary`."""

    NEG = auto()
    ABS = auto()
    EXP = auto()
    EXP2 = auto()
    EXPM1 = auto()
    LOG = auto()
    LOG2 = auto()
    LOG10 = auto()
    LOG1P = auto()
    SQRT = auto()
    RSQRT = auto()
    SIN = auto()
    COS = auto()
    TAN = auto()
    ASIN = auto()
    ACOS = auto()
    ATAN = auto()
    SINH = auto()
    COSH = auto()
    TANH = auto()
    ASINH = auto()
    ACOSH = auto()
    ATANH = auto()
    ERF = auto()
    ERFC = auto()
    ERFINV = auto()
    SIGMOID = auto()
    RECIPROCAL = auto()
    FLOOR = auto()
    CEIL = auto()
    ROUND = auto()
    TRUNC = auto()
    SIGN = auto()
    ISNAN = auto()
    ISINF = auto()
    LOGICAL_NOT = auto()
    BITWISE_NOT = auto()


FLOAT_ONLY_UNARY = {
    UnaryKind.EXP, UnaryKind.EXP2, UnaryKind.EXPM1, UnaryKind.LOG, UnaryKind.LOG2,
    UnaryKind.LOG10, UnaryKind.LOG1P, UnaryKind.SQRT, UnaryKind.RSQRT,
    UnaryKind.SIN, UnaryKind.COS, UnaryKind.TAN, UnaryKind.ASIN, UnaryKind.ACOS,
    UnaryKind.ATAN, UnaryKind.SINH, UnaryKind.COSH, UnaryKind.TANH,
    UnaryKind.ASINH, UnaryKind.ACOSH, UnaryKind.ATANH, UnaryKind.ERF,
    UnaryKind.ERFC, UnaryKind.ERFINV, UnaryKind.SIGMOID, UnaryKind.RECIPROCAL,
    UnaryKind.ROUND,
}  # fmt: skip
BOOL_RESULT_UNARY = {UnaryKind.ISNAN, UnaryKind.ISINF}


class BinaryKind(StrEnum):
    """The functions of `ptensor.binary`."""

    ADD = auto()
    SUB = auto()
    MUL = auto()
    DIV = auto()
    FLOORDIV = auto()
    REMAINDER = auto()
    FMOD = auto()
    POW = auto()
    MAXIMUM = auto()
    MINIMUM = auto()
    ATAN2 = auto()
    COPYSIGN = auto()
    LOGICAL_AND = auto()
    LOGICAL_OR = auto()
    LOGICAL_XOR = auto()
    BITWISE_AND = auto()
    BITWISE_OR = auto()
    BITWISE_XOR = auto()
    SHIFT_LEFT = auto()
    SHIFT_RIGHT = auto()


FLOAT_ONLY_BINARY = {BinaryKind.ATAN2, BinaryKind.COPYSIGN, BinaryKind.POW}
INT_ONLY_BINARY = {
    BinaryKind.BITWISE_AND, BinaryKind.BITWISE_OR, BinaryKind.BITWISE_XOR,
    BinaryKind.SHIFT_LEFT, BinaryKind.SHIFT_RIGHT,
}  # fmt: skip
BOOL_ONLY_BINARY = {
    BinaryKind.LOGICAL_AND, BinaryKind.LOGICAL_OR, BinaryKind.LOGICAL_XOR,
}  # fmt: skip


class ComparePredicate(StrEnum):
    """The predicates of `ptensor.compare`."""

    EQ = auto()
    NE = auto()
    LT = auto()
    LE = auto()
    GT = auto()
    GE = auto()


class ReduceKind(StrEnum):
    """The kinds of `ptensor.reduce` (and of `loop.reduce`)."""

    SUM = auto()
    PROD = auto()
    MAX = auto()
    MIN = auto()
    ARGMAX = auto()
    ARGMIN = auto()
    ANY = auto()
    ALL = auto()


class PadMode(StrEnum):
    """How `ptensor.pad` fills the new elements."""

    CONSTANT = auto()
    REFLECT = auto()
    REPLICATE = auto()


class RandomDistribution(StrEnum):
    """The distributions of `ptensor.rand`."""

    UNIFORM = auto()
    NORMAL = auto()


@irdl_attr_definition
class UnaryKindAttr(EnumAttribute[UnaryKind], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.unary_kind"


@irdl_attr_definition
class BinaryKindAttr(EnumAttribute[BinaryKind], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.binary_kind"


@irdl_attr_definition
class ComparePredicateAttr(
    EnumAttribute[ComparePredicate], SpacedOpaqueSyntaxAttribute
):
    name = "ptensor.predicate"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.reduce_kind"


@irdl_attr_definition
class PadModeAttr(EnumAttribute[PadMode], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.pad_mode"


@irdl_attr_definition
class RandomDistributionAttr(
    EnumAttribute[RandomDistribution], SpacedOpaqueSyntaxAttribute
):
    name = "ptensor.distribution"


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------


@irdl_op_definition
class UnaryOp(IRDLOperation):
    """
    An elementwise function of one tensor.

    `%y = ptensor.unary exp %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>`.
    Transcendental kinds take floats; `isnan` and `isinf` give i1;
    `logical_not` takes any dtype and gives i1.
    """

    name = "ptensor.unary"

    kind = prop_def(UnaryKindAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$kind $input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: UnaryKind, input: SSAValue, result_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"kind": UnaryKindAttr(kind)},
        )

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        kind = self.kind.data
        _check_shape(self.name, result, source.sizes)
        if kind in FLOAT_ONLY_UNARY:
            _require(
                is_float(source.element_type),
                f"ptensor.unary {kind} takes a float tensor, got {source.element_type}",
            )
        if kind == UnaryKind.BITWISE_NOT:
            _require(
                not is_float(source.element_type),
                "ptensor.unary bitwise_not takes an integer or bool tensor",
            )
        if kind in BOOL_RESULT_UNARY or kind == UnaryKind.LOGICAL_NOT:
            _require(
                is_bool(result.element_type),
                f"ptensor.unary {kind} gives an i1 tensor, got {result.element_type}",
            )
        else:
            _check_same_element_type(self.name, source, result)


@irdl_op_definition
class BinaryOp(IRDLOperation):
    """
    An elementwise function of two tensors of one dtype, with broadcasting.

    `%z = ptensor.binary add %x, %y : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[4, 8], f32>`.
    `div` is true division for floats and truncating division for integers;
    `floordiv` rounds down; `remainder` has the sign of the divisor (Python's %),
    `fmod` that of the dividend.
    """

    name = "ptensor.binary"

    kind = prop_def(BinaryKindAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$kind $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` "
        "type($result)"
    )

    def __init__(
        self, kind: BinaryKind, lhs: SSAValue, rhs: SSAValue, result_type: TensorType
    ):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"kind": BinaryKindAttr(kind)},
        )

    def verify_(self) -> None:
        lhs, rhs, result = (
            tensor_type(self.lhs),
            tensor_type(self.rhs),
            tensor_type(self.result),
        )
        kind = self.kind.data
        _check_same_element_type(self.name, lhs, rhs, result)
        _check_shape(self.name, result, _broadcast_or_fail(lhs, rhs))
        dtype = lhs.element_type
        if kind in FLOAT_ONLY_BINARY:
            _require(is_float(dtype), f"ptensor.binary {kind} takes floats, got {dtype}")
        if kind in INT_ONLY_BINARY:
            _require(
                not is_float(dtype),
                f"ptensor.binary {kind} takes integers or bools, got {dtype}",
            )
        if kind in BOOL_ONLY_BINARY:
            _require(is_bool(dtype), f"ptensor.binary {kind} takes i1, got {dtype}")


def _broadcast_or_fail(*types: TensorType) -> tuple[sympy.Expr, ...]:
    try:
        return broadcast_shapes(*(t.sizes for t in types))
    except ValueError as error:
        raise VerifyException(str(error)) from error


@irdl_op_definition
class CompareOp(IRDLOperation):
    """
    An elementwise comparison of two tensors of one dtype, giving i1, with
    broadcasting.

    `%m = ptensor.compare lt %x, %y : !ptensor.tensor<[4], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[4], i1>`.
    """

    name = "ptensor.compare"

    predicate = prop_def(ComparePredicateAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$predicate $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` "
        "type($result)"
    )

    def __init__(
        self,
        predicate: ComparePredicate,
        lhs: SSAValue,
        rhs: SSAValue,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"predicate": ComparePredicateAttr(predicate)},
        )

    def verify_(self) -> None:
        lhs, rhs, result = (
            tensor_type(self.lhs),
            tensor_type(self.rhs),
            tensor_type(self.result),
        )
        _check_same_element_type(self.name, lhs, rhs)
        _require(
            is_bool(result.element_type),
            f"ptensor.compare gives an i1 tensor, got {result.element_type}",
        )
        _check_shape(self.name, result, _broadcast_or_fail(lhs, rhs))


@irdl_op_definition
class WhereOp(IRDLOperation):
    """
    Elementwise choice: `condition ? on_true : on_false`, with broadcasting.

    `%r = ptensor.where %c, %a, %b : !ptensor.tensor<[4], i1>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[4], f32>`.
    """

    name = "ptensor.where"

    condition = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,` "
        "type($on_true) `,` type($on_false) `->` type($result)"
    )

    def __init__(
        self,
        condition: SSAValue,
        on_true: SSAValue,
        on_false: SSAValue,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[condition, on_true, on_false], result_types=[result_type]
        )

    def verify_(self) -> None:
        condition, on_true, on_false, result = (
            tensor_type(v)
            for v in (self.condition, self.on_true, self.on_false, self.result)
        )
        _require(
            is_bool(condition.element_type),
            f"ptensor.where: the condition must be i1, got {condition.element_type}",
        )
        _check_same_element_type(self.name, on_true, on_false, result)
        _check_shape(self.name, result, _broadcast_or_fail(condition, on_true, on_false))


@irdl_op_definition
class CastOp(IRDLOperation):
    """
    Elementwise conversion to another dtype, with torch's rules (float to int
    truncates towards zero; anything to i1 is `!= 0`).

    `%y = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], bf16>`.
    """

    name = "ptensor.cast"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        _check_shape(self.name, tensor_type(self.result), tensor_type(self.input).sizes)


# ---------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------


@irdl_op_definition
class FullOp(IRDLOperation):
    """
    A tensor with every element equal to a scalar.

    `%c = ptensor.full 0.5 : !ptensor.tensor<[s0, 4], f32>`. The value is a float
    attribute for float tensors and an integer one for integer and bool tensors.
    """

    name = "ptensor.full"

    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, value: float | int | bool, result_type: TensorType):
        super().__init__(
            result_types=[result_type],
            properties={"value": scalar_attr(value, result_type.element_type)},
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        value = self.value
        if isinstance(value, FloatAttr):
            printer.print_string(_format_float(value.value.data))
        else:
            printer.print_string(str(value.value.data))
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> FullOp:
        number = _parse_scalar(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        if not isinstance(result_type, TensorType):
            parser.raise_error("ptensor.full gives a !ptensor.tensor")
        op = cls(number, result_type)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        result = tensor_type(self.result)
        if is_float(result.element_type):
            _require(
                isinstance(self.value, FloatAttr),
                "ptensor.full of a float tensor needs a float value",
            )


def _parse_scalar(parser: Parser) -> float | int:
    negative = parser.parse_optional_punctuation("-") is not None
    if (keyword := parser.parse_optional_keyword_in(("inf", "nan"))) is not None:
        number: float | int = float(keyword)
    else:
        number = parser.parse_number()
    return -number if negative else number


def _format_float(value: float) -> str:
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


def scalar_attr(value: float | int | bool, element_type: Attribute) -> Attribute:
    """The attribute that holds a scalar of a ptensor element type."""
    if is_float(element_type):
        return FloatAttr(float(value), Float64Type())
    if is_bool(element_type):
        return IntegerAttr(int(bool(value)), IntegerType(64))
    return IntegerAttr(int(value), IntegerType(64))


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """
    A tensor of static shape whose elements are given.

    `%c = ptensor.constant dense<[1.0, 2.0]> : tensor<2xf32> -> !ptensor.tensor<[2], f32>`.
    """

    name = "ptensor.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$value attr-dict `->` type($result)"

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: TensorType):
        super().__init__(result_types=[result_type], properties={"value": value})

    def verify_(self) -> None:
        result = tensor_type(self.result)
        value_type = self.value.type
        _require(
            isinstance(value_type, BuiltinTensorType),
            "ptensor.constant: the value must have a builtin tensor type",
        )
        assert isinstance(value_type, BuiltinTensorType)
        _require(
            result.static_sizes() == tuple(value_type.get_shape()),
            f"ptensor.constant: the value's shape {list(value_type.get_shape())} "
            f"differs from the result's {format_shape(result.sizes)}",
        )
        _require(
            value_type.element_type == result.element_type,
            "ptensor.constant: the value's element type differs from the result's",
        )


@irdl_op_definition
class IotaOp(IRDLOperation):
    """
    A 1-D tensor `start, start + step, ...` (torch.arange).

    `%i = ptensor.iota start 0 step 1 : !ptensor.tensor<[s0], i64>`.
    """

    name = "ptensor.iota"

    start = prop_def(FloatAttr | IntegerAttr)
    step = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, start: float | int, step: float | int, result_type: TensorType):
        element_type = result_type.element_type
        super().__init__(
            result_types=[result_type],
            properties={
                "start": scalar_attr(start, element_type),
                "step": scalar_attr(step, element_type),
            },
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" start {_attr_number(self.start)}")
        printer.print_string(f" step {_attr_number(self.step)}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        parser.parse_keyword("start")
        start = _parse_scalar(parser)
        parser.parse_keyword("step")
        step = _parse_scalar(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        if not isinstance(result_type, TensorType):
            parser.raise_error("ptensor.iota gives a !ptensor.tensor")
        op = cls(start, step, result_type)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        _require(
            tensor_type(self.result).rank == 1, "ptensor.iota gives a 1-D tensor"
        )


def _attr_number(attr: Attribute) -> str:
    if isinstance(attr, FloatAttr):
        return _format_float(attr.value.data)
    assert isinstance(attr, IntegerAttr)
    return str(attr.value.data)


@irdl_op_definition
class RandOp(IRDLOperation):
    """
    A tensor of independent random floats, uniform in [0, 1) or standard normal.

    `%r = ptensor.rand uniform : !ptensor.tensor<[4, 4], f32>`. The values come
    from torch's generator at run time, so the op is not pure.
    """

    name = "ptensor.rand"

    distribution = prop_def(RandomDistributionAttr)
    result = result_def(TensorType)

    assembly_format = "$distribution attr-dict `:` type($result)"

    def __init__(self, distribution: RandomDistribution, result_type: TensorType):
        super().__init__(
            result_types=[result_type],
            properties={"distribution": RandomDistributionAttr(distribution)},
        )

    def verify_(self) -> None:
        _require(
            is_float(tensor_type(self.result).element_type),
            "ptensor.rand gives a float tensor",
        )


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------


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
        _check_dims(dims, source.rank, "reduction dimension")
        _check_shape(
            self.name, result, reduced_shape(source.sizes, dims, self.keepdim is not None)
        )
        if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
            _require(len(dims) == 1, f"ptensor.reduce {kind} reduces one dimension")
            _require(
                result.element_type == IntegerType(64),
                f"ptensor.reduce {kind} gives i64",
            )
        elif kind in (ReduceKind.ANY, ReduceKind.ALL):
            _require(is_bool(result.element_type), f"ptensor.reduce {kind} gives i1")
        else:
            _check_same_element_type(self.name, source, result)


def reduced_shape(
    sizes: Sequence[sympy.Expr], dims: Sequence[int], keepdim: bool
) -> list[sympy.Expr]:
    if keepdim:
        return [sympy.Integer(1) if i in dims else s for i, s in enumerate(sizes)]
    return [s for i, s in enumerate(sizes) if i not in dims]


# ---------------------------------------------------------------------------
# Views
# ---------------------------------------------------------------------------


class _ViewOp(IRDLOperation):
    """Shared shape of the view ops: one tensor in, one out."""

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())


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

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        _check_same_element_type(self.name, source, result)
        _require(
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

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        dims = self.dims.data
        _require(
            sorted(dims) == list(range(source.rank)),
            f"ptensor.permute: {list(dims)} is not a permutation of "
            f"{source.rank} dimensions",
        )
        _check_same_element_type(self.name, source, result)
        _check_shape(self.name, result, [source.sizes[d] for d in dims])


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

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        _check_same_element_type(self.name, source, result)
        _require(
            result.rank >= source.rank,
            "ptensor.expand cannot remove dimensions",
        )
        offset = result.rank - source.rank
        for i, size in enumerate(source.sizes):
            target = result.sizes[offset + i]
            _require(
                size == 1 or sizes_equal(size, target),
                f"ptensor.expand: dimension {i} of size {format_expr(size)} cannot "
                f"expand to {format_expr(target)}",
            )


@irdl_op_definition
class SliceOp(_ViewOp):
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

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(
            f" dim {self.dim.value.data} start {format_expr(self.start.expr)}"
            f" end {format_expr(self.end.expr)} step {self.step.value.data}"
        )
        _print_attrs_and_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> SliceOp:
        unresolved = parser.parse_unresolved_operand()
        parser.parse_keyword("dim")
        dim = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("start")
        start = parse_expr(parser)
        parser.parse_keyword("end")
        end = parse_expr(parser)
        parser.parse_keyword("step")
        step = parser.parse_integer(allow_boolean=False)
        attributes, (input,), result_type = _parse_attrs_and_types(parser, [unresolved])
        op = cls(input, dim, start, end, step, result_type)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        dim, step = self.dim.value.data, self.step.value.data
        _check_dims([dim], source.rank, "slice dimension")
        _require(step >= 1, f"ptensor.slice: step must be positive, got {step}")
        length = slice_length(self.start.expr, self.end.expr, step)
        expected = list(source.sizes)
        expected[dim] = length
        _check_same_element_type(self.name, source, result)
        _check_shape(self.name, result, expected)


def slice_length(start: sympy.Expr, end: sympy.Expr, step: int) -> sympy.Expr:
    length = CeilDiv(end - start, step) if step != 1 else end - start
    if length.is_Integer:
        return sympy.Integer(max(int(length), 0))
    return sympy.sympify(length)


@irdl_op_definition
class SelectOp(_ViewOp):
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

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(
            f" dim {self.dim.value.data} index {format_expr(self.index.expr)}"
        )
        _print_attrs_and_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        unresolved = parser.parse_unresolved_operand()
        parser.parse_keyword("dim")
        dim = parser.parse_integer(allow_boolean=False)
        parser.parse_keyword("index")
        index = parse_expr(parser)
        attributes, (input,), result_type = _parse_attrs_and_types(parser, [unresolved])
        op = cls(input, dim, index, result_type)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        dim = self.dim.value.data
        _check_dims([dim], source.rank, "select dimension")
        index = self.index.expr
        size = source.sizes[dim]
        if index.is_Integer and size.is_Integer:
            _require(
                0 <= int(index) < int(size),
                f"ptensor.select: index {index} is out of range for size {size}",
            )
        _check_same_element_type(self.name, source, result)
        _check_shape(
            self.name, result, [s for i, s in enumerate(source.sizes) if i != dim]
        )


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

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        dims = self.dims.data
        _check_dims(dims, source.rank, "squeezed dimension")
        for d in dims:
            _require(
                source.sizes[d] == 1,
                f"ptensor.squeeze: dimension {d} has size "
                f"{format_expr(source.sizes[d])}, not 1",
            )
        _check_same_element_type(self.name, source, result)
        _check_shape(
            self.name, result, [s for i, s in enumerate(source.sizes) if i not in dims]
        )


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

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        dim = self.dim.value.data
        _require(
            0 <= dim <= source.rank,
            f"ptensor.unsqueeze: dimension {dim} is out of range for rank "
            f"{source.rank}",
        )
        expected = list(source.sizes)
        expected.insert(dim, sympy.Integer(1))
        _check_same_element_type(self.name, source, result)
        _check_shape(self.name, result, expected)


@irdl_op_definition
class AsStridedOp(_ViewOp):
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

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(" strides ")
        self.strides.print_parameter(printer)
        printer.print_string(f" offset {format_expr(self.offset.expr)}")
        _print_attrs_and_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> AsStridedOp:
        unresolved = parser.parse_unresolved_operand()
        parser.parse_keyword("strides")
        strides = SymListAttr.parse_parameter(parser)
        parser.parse_keyword("offset")
        offset = parse_expr(parser)
        attributes, (input,), result_type = _parse_attrs_and_types(parser, [unresolved])
        op = cls(input, strides, offset, result_type)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        _require(
            len(self.strides.data) == result.rank,
            f"ptensor.as_strided: {len(self.strides.data)} strides for a result of "
            f"rank {result.rank}",
        )
        _check_same_element_type(self.name, source, result)


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


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


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
        _require(len(types) >= 1, "ptensor.cat needs at least one input")
        dim = self.dim.value.data
        _check_dims([dim], result.rank, "concatenation dimension")
        _check_same_element_type(self.name, *types, result)
        total: sympy.Expr = sympy.Integer(0)
        for t in types:
            _require(t.rank == result.rank, "ptensor.cat: inputs differ in rank")
            for i, (size, expected) in enumerate(zip(t.sizes, result.sizes)):
                if i != dim:
                    _require(
                        sizes_equal(size, expected),
                        f"ptensor.cat: dimension {i} has size {format_expr(size)}, "
                        f"expected {format_expr(expected)}",
                    )
            total = total + t.sizes[dim]
        _require(
            sizes_equal(total, result.sizes[dim]),
            f"ptensor.cat: the result's dimension {dim} should have size "
            f"{format_expr(total)}",
        )


@irdl_op_definition
class PadOp(IRDLOperation):
    """
    Padding before (`low`) and after (`high`) each dimension; negative amounts
    crop. `constant` fills with a value, `reflect` mirrors without repeating the
    edge, `replicate` repeats the edge.

    `%y = ptensor.pad %x constant 0.0 low [0, 1] high [0, 2] : !ptensor.tensor<[4, 4], f32> -> !ptensor.tensor<[4, 7], f32>`.
    """

    name = "ptensor.pad"

    input = operand_def(TensorType)
    mode = prop_def(PadModeAttr)
    low = prop_def(IntListAttr)
    high = prop_def(IntListAttr)
    value = opt_prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        input: SSAValue,
        mode: PadMode,
        low: Sequence[int],
        high: Sequence[int],
        value: float | int | None,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={
                "mode": PadModeAttr(mode),
                "low": IntListAttr(low),
                "high": IntListAttr(high),
                "value": None
                if value is None
                else scalar_attr(value, result_type.element_type),
            },
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f" {self.mode.data.value}")
        if self.value is not None:
            printer.print_string(f" {_attr_number(self.value)}")
        printer.print_string(" low ")
        self.low.print_parameter(printer)
        printer.print_string(" high ")
        self.high.print_parameter(printer)
        _print_attrs_and_types(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> PadOp:
        unresolved = parser.parse_unresolved_operand()
        mode = parser.parse_str_enum(PadMode)
        value = _parse_scalar(parser) if mode == PadMode.CONSTANT else None
        parser.parse_keyword("low")
        low = IntListAttr.parse_parameter(parser)
        parser.parse_keyword("high")
        high = IntListAttr.parse_parameter(parser)
        attributes, (input,), result_type = _parse_attrs_and_types(parser, [unresolved])
        op = cls(input, mode, low, high, value, result_type)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        low, high = self.low.data, self.high.data
        _require(
            len(low) == len(high) == source.rank,
            f"ptensor.pad: low and high need {source.rank} entries each",
        )
        _require(
            (self.value is not None) == (self.mode.data == PadMode.CONSTANT),
            "ptensor.pad: a value is given exactly for constant padding",
        )
        expected = [s + lo + hi for s, lo, hi in zip(source.sizes, low, high)]
        _check_same_element_type(self.name, source, result)
        _check_shape(self.name, result, expected)


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
        _check_dims([self.dim.value.data], source.rank, "gather dimension")
        _require(is_integer(index.element_type), "ptensor.gather: the index must be integer")
        _require(index.rank == source.rank, "ptensor.gather: index and input differ in rank")
        _check_same_element_type(self.name, source, result)
        _check_shape(self.name, result, index.sizes)


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
        _require(
            len(dims) == len(index_types) >= 1,
            "ptensor.index: one index tensor per indexed dimension",
        )
        _require(list(dims) == sorted(dims), "ptensor.index: dims must be increasing")
        _check_dims(dims, source.rank, "indexed dimension")
        for t in index_types:
            _require(
                is_integer(t.element_type),
                f"ptensor.index: index tensors must be integer, got {t.element_type}",
            )
        broadcast = _broadcast_or_fail(*index_types)
        _check_same_element_type(self.name, source, result)
        _check_shape(self.name, result, index_result_shape(source.sizes, dims, broadcast))


def index_result_shape(
    sizes: Sequence[sympy.Expr], dims: Sequence[int], index_shape: Sequence[sympy.Expr]
) -> list[sympy.Expr]:
    """The shape of `x[...]` with index tensors at `dims` of broadcast shape."""
    kept = [s for i, s in enumerate(sizes) if i not in dims]
    adjacent = list(dims) == list(range(dims[0], dims[0] + len(dims)))
    position = dims[0] if adjacent else 0
    return kept[:position] + list(index_shape) + kept[position:]


@irdl_op_definition
class ScatterAddOp(IRDLOperation):
    """
    torch.scatter_add: a copy of `input` where, for `dim = 0`,
    `result[index[i][j]][j] += source[i][j]`.

    `%y = ptensor.scatter_add %x, %idx, %src dim 0 : T, I, S -> T`.
    """

    name = "ptensor.scatter_add"

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

    def __init__(
        self,
        input: SSAValue,
        index: SSAValue,
        source: SSAValue,
        dim: int,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[input, index, source],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, 64)},
        )

    def verify_(self) -> None:
        target, index, source, result = (
            tensor_type(v) for v in (self.input, self.index, self.source, self.result)
        )
        _check_dims([self.dim.value.data], target.rank, "scatter dimension")
        _require(is_integer(index.element_type), "ptensor.scatter_add: the index must be integer")
        _require(
            index.rank == source.rank == target.rank,
            "ptensor.scatter_add: input, index and source differ in rank",
        )
        _check_same_element_type(self.name, target, source, result)
        _check_shape(self.name, result, target.sizes)


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
        _require(
            len(dims) == len(index_types) >= 1,
            "ptensor.index_put: one index tensor per indexed dimension",
        )
        _check_dims(dims, target.rank, "indexed dimension")
        indexed_shape = index_result_shape(
            target.sizes, dims, _broadcast_or_fail(*index_types)
        )
        try:
            broadcast_shapes(values.sizes, indexed_shape)
        except ValueError as error:
            raise VerifyException(f"ptensor.index_put: values: {error}") from error
        _check_same_element_type(self.name, target, values, result)
        _check_shape(self.name, result, target.sizes)


# ---------------------------------------------------------------------------
# Library ops
# ---------------------------------------------------------------------------


def _check_float_operands(op: IRDLOperation, *values: SSAValue) -> None:
    types = [tensor_type(v) for v in values]
    for t in types:
        _require(is_float(t.element_type), f"{op.name} takes float tensors")
    _check_same_element_type(op.name, *types)


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """
    Matrix product of two 2-D tensors, run by a library.

    `%c = ptensor.mm %a, %b : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>`.
    """

    name = "ptensor.mm"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: TensorType):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        lhs, rhs, result = (tensor_type(v) for v in (self.lhs, self.rhs, self.result))
        _check_float_operands(self, self.lhs, self.rhs, self.result)
        _require(lhs.rank == 2 and rhs.rank == 2, "ptensor.mm takes 2-D tensors")
        _require(
            sizes_equal(lhs.sizes[1], rhs.sizes[0]),
            f"ptensor.mm: inner sizes {format_expr(lhs.sizes[1])} and "
            f"{format_expr(rhs.sizes[0])} differ",
        )
        _check_shape(self.name, result, [lhs.sizes[0], rhs.sizes[1]])


@irdl_op_definition
class BatchMatmulOp(IRDLOperation):
    """
    Batched matrix product of two 3-D tensors, run by a library.

    `%c = ptensor.bmm %a, %b : !ptensor.tensor<[2, 4, 8], f32>, !ptensor.tensor<[2, 8, 16], f32> -> !ptensor.tensor<[2, 4, 16], f32>`.
    """

    name = "ptensor.bmm"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: TensorType):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        lhs, rhs, result = (tensor_type(v) for v in (self.lhs, self.rhs, self.result))
        _check_float_operands(self, self.lhs, self.rhs, self.result)
        _require(lhs.rank == 3 and rhs.rank == 3, "ptensor.bmm takes 3-D tensors")
        _require(
            sizes_equal(lhs.sizes[0], rhs.sizes[0])
            and sizes_equal(lhs.sizes[2], rhs.sizes[1]),
            f"ptensor.bmm: shapes {format_shape(lhs.sizes)} and "
            f"{format_shape(rhs.sizes)} do not multiply",
        )
        _check_shape(self.name, result, [lhs.sizes[0], lhs.sizes[1], rhs.sizes[2]])


@irdl_op_definition
class AddmmOp(IRDLOperation):
    """
    `beta * bias + alpha * (lhs @ rhs)` with a broadcast bias, run by a library.

    `%c = ptensor.addmm %bias, %a, %b : !ptensor.tensor<[16], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>`.
    """

    name = "ptensor.addmm"

    bias = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    beta = opt_prop_def(FloatAttr[Float64Type])
    alpha = opt_prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$bias `,` $lhs `,` $rhs (`beta` $beta^)? (`alpha` $alpha^)? attr-dict `:` "
        "type($bias) `,` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self,
        bias: SSAValue,
        lhs: SSAValue,
        rhs: SSAValue,
        result_type: TensorType,
        beta: float = 1.0,
        alpha: float = 1.0,
    ):
        super().__init__(
            operands=[bias, lhs, rhs],
            result_types=[result_type],
            properties={
                "beta": None if beta == 1.0 else FloatAttr(beta, Float64Type()),
                "alpha": None if alpha == 1.0 else FloatAttr(alpha, Float64Type()),
            },
        )

    def verify_(self) -> None:
        bias, lhs, rhs, result = (
            tensor_type(v) for v in (self.bias, self.lhs, self.rhs, self.result)
        )
        _check_float_operands(self, self.bias, self.lhs, self.rhs, self.result)
        _require(lhs.rank == 2 and rhs.rank == 2, "ptensor.addmm takes 2-D matrices")
        _require(
            sizes_equal(lhs.sizes[1], rhs.sizes[0]),
            "ptensor.addmm: inner sizes differ",
        )
        expected = [lhs.sizes[0], rhs.sizes[1]]
        try:
            broadcast_shapes(bias.sizes, expected)
        except ValueError as error:
            raise VerifyException(f"ptensor.addmm: bias: {error}") from error
        _check_shape(self.name, result, expected)


def _convolution_properties(
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    transposed: bool,
    output_padding: Sequence[int] | None,
) -> dict[str, Attribute | None]:
    """The properties a convolution and its backward share."""
    return {
        "stride": IntListAttr(stride),
        "padding": IntListAttr(padding),
        "dilation": IntListAttr(dilation),
        "groups": IntegerAttr(groups, 64),
        "transposed": UnitAttr() if transposed else None,
        "output_padding": IntListAttr(output_padding)
        if transposed and output_padding is not None
        else None,
    }


def convolution_geometry(op: ConvolutionOp | ConvolutionBackwardOp) -> list:
    """aten's stride, padding, dilation, transposed, output_padding and groups
    arguments of a convolution or its backward, as Python values."""
    spatial = len(op.stride.data)
    output_padding = [0] * spatial if op.output_padding is None else op.output_padding.data
    return [
        list(op.stride.data),
        list(op.padding.data),
        list(op.dilation.data),
        op.transposed is not None,
        list(output_padding),
        op.groups.value.data,
    ]


def _check_convolution_geometry(
    op: ConvolutionOp | ConvolutionBackwardOp, source: TensorType, weight: TensorType
) -> int:
    """The ranks and per-dimension lists a convolution and its backward share;
    gives the number of spatial dimensions."""
    spatial = source.rank - 2
    _require(spatial >= 1, f"{op.name} takes an input of rank 3 or more")
    _require(weight.rank == source.rank, f"{op.name}: weight rank differs")
    for name, values in (
        ("stride", op.stride.data),
        ("padding", op.padding.data),
        ("dilation", op.dilation.data),
    ):
        _require(len(values) == spatial, f"{op.name}: {name} needs {spatial} entries")
    return spatial


@irdl_op_definition
class ConvolutionOp(IRDLOperation):
    """
    N-d convolution (aten.convolution), run by a library.

    `%y = ptensor.convolution %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : ...`.
    `transposed` with `output_padding` gives the transposed convolution.
    """

    name = "ptensor.convolution"

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    stride = prop_def(IntListAttr)
    padding = prop_def(IntListAttr)
    dilation = prop_def(IntListAttr)
    groups = prop_def(IntegerAttr[I64])
    transposed = opt_prop_def(UnitAttr)
    output_padding = opt_prop_def(IntListAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `stride` $stride `padding` $padding "
        "`dilation` $dilation `groups` $groups (`transposed` $transposed^)? "
        "(`output_padding` $output_padding^)? attr-dict `:` type($input) `,` "
        "type($weight) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        groups: int,
        result_type: TensorType,
        transposed: bool = False,
        output_padding: Sequence[int] | None = None,
    ):
        super().__init__(
            operands=[input, weight, [bias] if bias is not None else []],
            result_types=[result_type],
            properties=_convolution_properties(
                stride, padding, dilation, groups, transposed, output_padding
            ),
        )

    def verify_(self) -> None:
        source, weight, result = (
            tensor_type(self.input),
            tensor_type(self.weight),
            tensor_type(self.result),
        )
        operands = [self.input, self.weight, self.result]
        if self.bias is not None:
            operands.append(self.bias)
        _check_float_operands(self, *operands)
        spatial = _check_convolution_geometry(self, source, weight)
        if self.transposed is not None:
            return
        expected = [source.sizes[0], weight.sizes[0]]
        for i in range(spatial):
            size, kernel = source.sizes[2 + i], weight.sizes[2 + i]
            expected.append(
                FloorDiv(
                    size
                    + 2 * self.padding.data[i]
                    - self.dilation.data[i] * (kernel - 1)
                    - 1,
                    self.stride.data[i],
                )
                + 1
            )
        _check_shape(self.name, result, expected)


@irdl_op_definition
class ConvolutionBackwardOp(IRDLOperation):
    """
    The gradients of a convolution (aten.convolution_backward), run by a
    library: with respect to its input, weight and bias, each computed when
    its entry of `output_mask` is 1.

    `%gx, %gw, %gb = ptensor.convolution_backward %dy, %x, %w stride [1, 1]
    padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 1] : ...`.
    The results are the masked-in gradients, in that order.
    """

    name = "ptensor.convolution_backward"

    grad_output = operand_def(TensorType)
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    stride = prop_def(IntListAttr)
    padding = prop_def(IntListAttr)
    dilation = prop_def(IntListAttr)
    groups = prop_def(IntegerAttr[I64])
    transposed = opt_prop_def(UnitAttr)
    output_padding = opt_prop_def(IntListAttr)
    output_mask = prop_def(IntListAttr)
    gradients = var_result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$grad_output `,` $input `,` $weight `stride` $stride `padding` $padding "
        "`dilation` $dilation `groups` $groups (`transposed` $transposed^)? "
        "(`output_padding` $output_padding^)? `output_mask` $output_mask attr-dict "
        "`:` type($grad_output) `,` type($input) `,` type($weight) `->` type($gradients)"
    )

    def __init__(
        self,
        grad_output: SSAValue,
        input: SSAValue,
        weight: SSAValue,
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        groups: int,
        output_mask: Sequence[bool],
        result_types: Sequence[TensorType],
        transposed: bool = False,
        output_padding: Sequence[int] | None = None,
    ):
        super().__init__(
            operands=[grad_output, input, weight],
            result_types=[result_types],
            properties={
                **_convolution_properties(
                    stride, padding, dilation, groups, transposed, output_padding
                ),
                "output_mask": IntListAttr([int(bool(m)) for m in output_mask]),
            },
        )

    def verify_(self) -> None:
        _check_float_operands(self, self.grad_output, self.input, self.weight, *self.gradients)
        source, weight = tensor_type(self.input), tensor_type(self.weight)
        _check_convolution_geometry(self, source, weight)
        mask = self.output_mask.data
        _require(
            len(mask) == 3 and all(m in (0, 1) for m in mask),
            "ptensor.convolution_backward: output_mask needs 3 entries of 0 or 1",
        )
        _require(
            len(self.gradients) == sum(mask),
            f"ptensor.convolution_backward: output_mask {list(mask)} asks for "
            f"{sum(mask)} results, not {len(self.gradients)}",
        )
        channels = (
            weight.sizes[1] * self.groups.value.data if self.transposed else weight.sizes[0]
        )
        expected = [source.sizes, weight.sizes, [channels]]
        wanted = [shape for shape, m in zip(expected, mask) if m]
        for gradient, shape in zip(self.gradients, wanted):
            _check_shape(self.name, tensor_type(gradient), list(shape))


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """
    Scaled dot-product attention `softmax(q @ k^T * scale + mask) @ v`, run by a
    library, on `[..., L, E]` queries and `[..., S, E]` keys and values.

    `%o = ptensor.attention %q, %k, %v causal scale 0.125 : ...`. The optional
    mask is boolean (true keeps) or additive float, broadcast to `[..., L, S]`.
    """

    name = "ptensor.attention"

    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    causal = opt_prop_def(UnitAttr)
    scale = opt_prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$query `,` $key `,` $value (`mask` $mask^)? (`causal` $causal^)? "
        "(`scale` $scale^)? attr-dict `:` type($query) `,` type($key) `,` "
        "type($value) (`,` type($mask)^)? `->` type($result)"
    )

    def __init__(
        self,
        query: SSAValue,
        key: SSAValue,
        value: SSAValue,
        mask: SSAValue | None,
        causal: bool,
        scale: float | None,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[query, key, value, [mask] if mask is not None else []],
            result_types=[result_type],
            properties={
                "causal": UnitAttr() if causal else None,
                "scale": None if scale is None else FloatAttr(scale, Float64Type()),
            },
        )

    def verify_(self) -> None:
        query, key, value, result = (
            tensor_type(v) for v in (self.query, self.key, self.value, self.result)
        )
        _check_float_operands(self, self.query, self.key, self.value, self.result)
        _require(query.rank >= 2, "ptensor.attention: query must have rank 2 or more")
        _require(
            query.rank == key.rank == value.rank,
            "ptensor.attention: query, key and value differ in rank",
        )
        _require(
            sizes_equal(query.sizes[-1], key.sizes[-1]),
            "ptensor.attention: query and key differ in their last size",
        )
        _require(
            sizes_equal(key.sizes[-2], value.sizes[-2]),
            "ptensor.attention: key and value differ in sequence length",
        )
        _check_shape(
            self.name, result, [*query.sizes[:-1], value.sizes[-1]]
        )



@irdl_op_definition
class EmbeddingBackwardOp(IRDLOperation):
    """
    The gradient of an embedding table, run by a library: each row of
    `grad_output [*indices.shape, D]` added into row `indices[...]` of a zero
    `[num_weights, D]` table (rows at `padding_idx` left zero; with
    `scale_by_frequency`, each row's sum divided by how often its index occurs).

    `%g = ptensor.embedding_backward %d, %i padding 0 : !ptensor.tensor<[8, 64], f32>, !ptensor.tensor<[8], i64> -> !ptensor.tensor<[1000, 64], f32>`.
    """

    name = "ptensor.embedding_backward"

    grad_output = operand_def(TensorType)
    indices = operand_def(TensorType)
    padding_idx = prop_def(IntegerAttr[I64])
    scale_by_frequency = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$grad_output `,` $indices `padding` $padding_idx (`scale_by_frequency` $scale_by_frequency^)? "
        "attr-dict `:` type($grad_output) `,` type($indices) `->` type($result)"
    )

    def __init__(
        self,
        grad_output: SSAValue,
        indices: SSAValue,
        padding_idx: int,
        scale_by_frequency: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[grad_output, indices],
            result_types=[result_type],
            properties={
                "padding_idx": IntegerAttr(padding_idx, 64),
                "scale_by_frequency": UnitAttr() if scale_by_frequency else None,
            },
        )

    def verify_(self) -> None:
        grad, indices, result = (tensor_type(v) for v in (self.grad_output, self.indices, self.result))
        _check_float_operands(self, self.grad_output, self.result)
        _require(is_integer(indices.element_type), "ptensor.embedding_backward: indices are integers")
        _require(result.rank == 2, "ptensor.embedding_backward: the result is a [num_weights, D] table")
        expected = [*indices.sizes, result.sizes[1]]
        _require(
            len(expected) == grad.rank and all(sizes_equal(a, b) for a, b in zip(grad.sizes, expected)),
            f"ptensor.embedding_backward: grad_output shape {list(grad.sizes)} should be {expected} "
            "(the indices' shape, then the table's row width)",
        )

LIBRARY_OPS: tuple[type[IRDLOperation], ...] = (
    MatmulOp,
    BatchMatmulOp,
    AddmmOp,
    ConvolutionOp,
    ConvolutionBackwardOp,
    AttentionOp,
    EmbeddingBackwardOp,
)


# ---------------------------------------------------------------------------
# Fallback
# ---------------------------------------------------------------------------


@irdl_attr_definition
class OperandRefAttr(Data[int]):
    """
    A placeholder, inside the `args` of `ptensor.fallback`, for the operand of
    that position: `#ptensor.operand<0>`.
    """

    name = "ptensor.operand"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> int:
        with parser.in_angle_brackets():
            return parser.parse_integer(allow_boolean=False)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")


@irdl_attr_definition
class NoneValueAttr(ParametrizedAttribute):
    """Python's None, inside the `args` of `ptensor.fallback`: `#ptensor.none`."""

    name = "ptensor.none"


@irdl_op_definition
class FallbackOp(IRDLOperation):
    """
    An ATen op with no ptensor equivalent, run by torch at execution.

    `%y = ptensor.fallback "aten.cumsum.default"(%x) [#ptensor.operand<0>, 1] : (T) -> T`.
    `args` lists the positional arguments: tensors as `#ptensor.operand<i>`,
    lists as arrays, None as `#ptensor.none`, bools as `i1` integers, sizes as
    `#sym.expr<...>`, devices as strings, numbers, strings and dtypes (as types)
    as themselves. `kwargs` names the keyword arguments the same way; the
    importer leaves out those that only restate defaults (`layout`,
    `pin_memory`, `memory_format`).
    """

    name = "ptensor.fallback"

    target = prop_def(StringAttr)
    args = prop_def(ArrayAttr)
    kwargs = opt_prop_def(Attribute)
    operands_ = var_operand_def(TensorType)
    results_ = var_result_def(TensorType)

    assembly_format = (
        "$target `(` $operands_ `)` $args (`kwargs` $kwargs^)? attr-dict `:` "
        "functional-type($operands_, $results_)"
    )

    def __init__(
        self,
        target: str,
        operands: Sequence[SSAValue],
        args: Sequence[Attribute],
        result_types: Sequence[TensorType],
        kwargs: Attribute | None = None,
    ):
        super().__init__(
            operands=[operands],
            result_types=[result_types],
            properties={
                "target": StringAttr(target),
                "args": ArrayAttr(args),
                "kwargs": kwargs,
            },
        )

    def verify_(self) -> None:
        referenced: set[int] = set()
        _collect_operand_refs(self.args, referenced)
        if self.kwargs is not None:
            _collect_operand_refs(self.kwargs, referenced)
        count = len(self.operands_)
        for index in referenced:
            _require(
                0 <= index < count,
                f"ptensor.fallback: #ptensor.operand<{index}> refers past the "
                f"{count} operands",
            )
        _require(
            referenced == set(range(count)),
            "ptensor.fallback: every operand must appear in the arguments",
        )


def _collect_operand_refs(attr: Attribute, into: set[int]) -> None:
    if isinstance(attr, OperandRefAttr):
        into.add(attr.data)
    elif isinstance(attr, ArrayAttr):
        for item in attr.data:
            _collect_operand_refs(item, into)
    elif isinstance(attr, DictionaryAttr):
        for item in attr.data.values():
            _collect_operand_refs(item, into)


# ---------------------------------------------------------------------------
# Shared custom syntax
# ---------------------------------------------------------------------------


def _print_attrs_and_types(printer: Printer, op: IRDLOperation) -> None:
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_list((o.type for o in op.operands), printer.print_attribute)
    printer.print_string(" -> ")
    printer.print_attribute(op.results[0].type)


def _parse_attrs_and_types(
    parser: Parser, operands: Sequence[UnresolvedOperand]
) -> tuple[dict[str, Attribute], list[SSAValue], TensorType]:
    """Parse `attr-dict : operand types -> result type`, resolving the operands."""
    attributes = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    operand_types = parser.parse_comma_separated_list(
        parser.Delimiter.NONE, parser.parse_type
    )
    if len(operand_types) != len(operands):
        parser.raise_error(
            f"expected {len(operands)} operand types, got {len(operand_types)}"
        )
    parser.parse_punctuation("->")
    result_type = parser.parse_type()
    if not isinstance(result_type, TensorType):
        parser.raise_error(f"expected a !ptensor.tensor result, got {result_type}")
    values = [parser.resolve_operand(o, t) for o, t in zip(operands, operand_types)]
    return attributes, values, result_type


ELEMENTWISE_OPS: tuple[type[IRDLOperation], ...] = (UnaryOp, BinaryOp, CompareOp, WhereOp, CastOp)

PTensor = Dialect(
    "ptensor",
    [
        UnaryOp,
        BinaryOp,
        CompareOp,
        WhereOp,
        CastOp,
        FullOp,
        ConstantOp,
        IotaOp,
        RandOp,
        ReduceOp,
        ReshapeOp,
        PermuteOp,
        ExpandOp,
        SliceOp,
        SelectOp,
        SqueezeOp,
        UnsqueezeOp,
        AsStridedOp,
        CatOp,
        PadOp,
        GatherOp,
        IndexOp,
        ScatterAddOp,
        IndexPutOp,
        MatmulOp,
        BatchMatmulOp,
        AddmmOp,
        ConvolutionOp,
        ConvolutionBackwardOp,
        AttentionOp,
        EmbeddingBackwardOp,
        FallbackOp,
    ],
    [
        TensorType,
        IntListAttr,
        SymListAttr,
        UnaryKindAttr,
        BinaryKindAttr,
        ComparePredicateAttr,
        ReduceKindAttr,
        PadModeAttr,
        RandomDistributionAttr,
        OperandRefAttr,
        NoneValueAttr,
    ],
)
