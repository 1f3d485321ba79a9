"""
The enumerations that select what an op computes (the function of
`ptensor.unary` and `ptensor.binary`, the predicate of `ptensor.compare`, the
kind of `ptensor.reduce`, `ptensor.scan` and `ptensor.scatter_reduce`, the mode of `ptensor.pad`, the distribution of
`ptensor.rand`, the transform of `ptensor.fft`), the attributes that hold them, and which dtypes each kind takes.
"""

from __future__ import annotations

from enum import auto

from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.str_enum import StrEnum


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


class ScatterKind(StrEnum):
    """
    How `ptensor.scatter_reduce` and `loop.scatter` combine a value with the
    element it lands on: `sum`, `prod`, `max` and `min` (a NaN on either side
    gives NaN, as torch's amax and amin), or `assign`, which replaces it
    (`loop.scatter` only: every value landing on one element is the same,
    such as the identity written before a reduction that leaves the old
    elements out).
    """

    ASSIGN = auto()
    SUM = auto()
    PROD = auto()
    MAX = auto()
    MIN = auto()


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


class ScanKind(StrEnum):
    """
    The kinds of `ptensor.scan` (and of `loop.scan`): the running sum,
    product, log-sum-exp, maximum or minimum along a dimension, and the
    position of the running maximum or minimum.
    """

    SUM = auto()
    PROD = auto()
    LOGSUMEXP = auto()
    MAX = auto()
    MIN = auto()
    ARGMAX = auto()
    ARGMIN = auto()


SCAN_POSITION_KINDS = {ScanKind.ARGMAX: ScanKind.MAX, ScanKind.ARGMIN: ScanKind.MIN}
"""The scan kinds that give positions (i64), each with the kind of the values it follows."""


class PadMode(StrEnum):
    """How `ptensor.pad` fills the new elements."""

    CONSTANT = auto()
    REFLECT = auto()
    REPLICATE = auto()


class RandomDistribution(StrEnum):
    """The distributions of `ptensor.rand`."""

    UNIFORM = auto()
    NORMAL = auto()


class FftKind(StrEnum):
    """The transforms of `ptensor.fft`, torch's `_fft_r2c`, `_fft_c2c` and
    `_fft_c2r`: real to complex, complex to complex, complex to real."""

    R2C = auto()
    C2C = auto()
    C2R = auto()


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
class ScanKindAttr(EnumAttribute[ScanKind], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.scan_kind"


@irdl_attr_definition
class ScatterKindAttr(EnumAttribute[ScatterKind], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.scatter_kind"


@irdl_attr_definition
class PadModeAttr(EnumAttribute[PadMode], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.pad_mode"


@irdl_attr_definition
class RandomDistributionAttr(
    EnumAttribute[RandomDistribution], SpacedOpaqueSyntaxAttribute
):
    name = "ptensor.distribution"


@irdl_attr_definition
class FftKindAttr(EnumAttribute[FftKind], SpacedOpaqueSyntaxAttribute):
    name = "ptensor.fft_kind"
