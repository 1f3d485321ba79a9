"""
The canonicalization patterns of the ptensor ops, which xDSL's `canonicalize`
pass applies (each op names its own through a `HasCanonicalizationPatternsTrait`:
`ViewCanonicalization`, `ElementwiseCanonicalization`):

- views that show their input unchanged disappear (`EraseIdentityView`), a
  permute of a permute is one permute (`ComposePermutes`) and a reshape of a
  reshape one reshape (`ComposeReshapes`);
- a cast to the dtype its input has disappears (`EraseIdentityCast`);
- the size arithmetic the importer writes as ops (a size's value as an element
  of an iota, negated, cast to f64, combined with `ptensor.binary`) folds into
  a `ptensor.full` where its operands are constants (`FoldSelectOfIota`,
  `FoldNegOfFull`, `FoldCastOfFull`, `FoldBinaryOfFulls`), only where the
  constant is exactly what the ops compute.

Sizes themselves are `#sym.expr` attributes, which sympy keeps simplified: a
size computed from constants is already a constant.
"""

from __future__ import annotations

import struct

from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from permalloy.dialects.ptensor.elementwise import BinaryOp, CastOp, UnaryOp
from permalloy.dialects.ptensor.generators import FullOp, IotaOp
from permalloy.dialects.ptensor.kinds import BinaryKind, UnaryKind
from permalloy.dialects.ptensor.types import is_float, is_integer, tensor_type
from permalloy.dialects.ptensor.views import VIEW_OPS, PermuteOp, ReshapeOp, SelectOp

Number = int | float


# -- views and casts ------------------------------------------------------------


class EraseIdentityView(RewritePattern):
    """
    A view that shows its input unchanged is its input: a permute in the
    identity order, and a reshape, expand, slice from 0, squeeze of no
    dimension or row-major `as_strided` whose result type is its input's
    (each view's `is_identity`).

    `%y = ptensor.reshape %x : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 8], f32>`
    becomes `%x`.
    """

    def match_and_rewrite(self, op, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, VIEW_OPS) and op.is_identity():
            rewriter.replace_all_uses_with(op.result, op.input)
            rewriter.erase(op)


class ComposePermutes(RewritePattern):
    """
    A permute of a permute is one permute of the first's input: result
    dimension `i` is dimension `inner[outer[i]]` of it.

    `permute [1, 2, 0]` of `permute [0, 2, 1]` of `%x` becomes
    `permute [2, 1, 0]` of `%x`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PermuteOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, PermuteOp):
            return
        dims = [inner.dims.data[d] for d in op.dims.data]
        rewriter.replace(op, PermuteOp(inner.input, dims, tensor_type(op.result)))


class ComposeReshapes(RewritePattern):
    """
    A reshape of a reshape is one reshape of the first's input: both keep
    the elements in row-major order.

    `%y = ptensor.reshape %r` of `%r = ptensor.reshape %x` becomes
    `%y = ptensor.reshape %x`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if isinstance(inner, ReshapeOp):
            rewriter.replace(op, ReshapeOp(inner.input, tensor_type(op.result)))


class EraseIdentityCast(RewritePattern):
    """
    A cast to its input's own type is its input.

    `%y = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>`
    becomes `%x`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter, /) -> None:
        if op.input.type == op.result.type:
            rewriter.replace_all_uses_with(op.result, op.input)
            rewriter.erase(op)


# -- size arithmetic ------------------------------------------------------------


class FoldSelectOfIota(RewritePattern):
    """
    An element at a constant index of an integer iota is a constant: the
    importer writes a size's value as element `e` of `iota start 0 step 1`
    over `[e + 1]`, a constant once `e` is one.

    `ptensor.select` at `index 5` of `ptensor.iota start 0 step 1 :
    !ptensor.tensor<[6], i64>` becomes `ptensor.full 5 : !ptensor.tensor<[], i64>`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SelectOp, rewriter: PatternRewriter, /) -> None:
        iota = op.input.owner
        index = op.index.expr
        result = tensor_type(op.result)
        if not isinstance(iota, IotaOp) or not index.is_Integer or not is_integer(result.element_type):
            return
        value = int(iota.start.value.data) + int(index) * int(iota.step.value.data)
        if exactly(value, result.element_type) is not None:
            rewriter.replace(op, FullOp(value, result))


class FoldNegOfFull(RewritePattern):
    """
    The negation of a constant is a constant (of a signed integer or float
    dtype; not where it overflows).

    `ptensor.unary neg` of `ptensor.full 3 : !ptensor.tensor<[], i64>` becomes
    `ptensor.full -3 : !ptensor.tensor<[], i64>`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnaryOp, rewriter: PatternRewriter, /) -> None:
        full = op.input.owner
        result = tensor_type(op.result)
        if op.kind.data != UnaryKind.NEG or not isinstance(full, FullOp):
            return
        value = held(full.value, tensor_type(full.result).element_type)
        if value is None or not _signed(result.element_type):
            return
        negated = exactly(-value, result.element_type)
        if negated is not None:
            rewriter.replace(op, FullOp(negated, result))


class FoldCastOfFull(RewritePattern):
    """
    A cast of a constant that the new dtype holds exactly is that constant in
    the new dtype: a size's value cast to f64, a float holding an integer cast
    to an integer. Casts that round or truncate stay.

    `ptensor.cast` of `ptensor.full 12 : !ptensor.tensor<[], i64>` to f64
    becomes `ptensor.full 12.0 : !ptensor.tensor<[], f64>`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter, /) -> None:
        full = op.input.owner
        if not isinstance(full, FullOp):
            return
        value = held(full.value, tensor_type(full.result).element_type)
        result = tensor_type(op.result)
        converted = None if value is None else exactly(value, result.element_type)
        if converted is not None:
            rewriter.replace(op, FullOp(converted, result))


FOLDED_BINARY = {
    BinaryKind.ADD: lambda a, b: a + b,
    BinaryKind.SUB: lambda a, b: a - b,
    BinaryKind.MUL: lambda a, b: a * b,
}
"""The kinds `FoldBinaryOfFulls` computes on signed integers and f64 (f64 `div` too)."""


class FoldBinaryOfFulls(RewritePattern):
    """
    Addition, subtraction and multiplication of two constants of a signed
    integer dtype (when the result fits) or of f64, and division of two f64
    constants (by a nonzero one), are a constant: Python's integers and
    floats compute what torch does, IEEE double arithmetic being correctly
    rounded; results that overflow or are not finite stay ops. The
    result's shape is the operands' broadcast.

    `ptensor.binary mul` of `ptensor.full 0.5` and `ptensor.full 3.0` (f64)
    becomes `ptensor.full 1.5 : !ptensor.tensor<[], f64>`.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BinaryOp, rewriter: PatternRewriter, /) -> None:
        lhs, rhs = op.lhs.owner, op.rhs.owner
        result = tensor_type(op.result)
        element_type = result.element_type
        if not isinstance(lhs, FullOp) or not isinstance(rhs, FullOp):
            return
        if tensor_type(op.lhs).element_type != element_type:
            return
        if not (isinstance(element_type, Float64Type | IntegerType) and _signed(element_type)):
            return
        a, b = held(lhs.value, element_type), held(rhs.value, element_type)
        kind = op.kind.data
        if a is None or b is None:
            return
        if kind in FOLDED_BINARY:
            value = FOLDED_BINARY[kind](a, b)
        elif kind == BinaryKind.DIV and isinstance(element_type, Float64Type) and b != 0:
            value = a / b
        else:
            return
        folded = exactly(value, element_type)
        if folded is not None:
            rewriter.replace(op, FullOp(folded, result))


# -- numbers of a dtype -----------------------------------------------------------


_FLOAT_FORMATS = {Float32Type: "f", Float16Type: "e"}
"""`struct` formats that round a Python float to a narrower float dtype."""


def held(attr: Attribute, element_type: Attribute) -> Number | None:
    """The number a `ptensor.full` of `element_type` holds (a float value
    rounded to a narrower float dtype), or None where it is not known here
    (bf16, non-finite values)."""
    if isinstance(attr, IntegerAttr):
        return exactly(attr.value.data, element_type)
    if isinstance(attr, FloatAttr):
        value = attr.value.data
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return _round_float(value, element_type)
    return None


def exactly(value: Number, element_type: Attribute) -> Number | None:
    """`value` as a number of `element_type` when that dtype holds it exactly,
    else None."""
    if isinstance(element_type, IntegerType):
        if isinstance(value, float) and not value.is_integer():
            return None
        number = int(value)
        low, high = _integer_range(element_type)
        return number if low <= number <= high else None
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    rounded = _round_float(float(value), element_type)
    return rounded if rounded is not None and rounded == value else None


def _round_float(value: float, element_type: Attribute) -> float | None:
    if isinstance(element_type, Float64Type):
        return value
    form = _FLOAT_FORMATS.get(type(element_type))
    if form is None:
        return None
    try:
        return struct.unpack(form, struct.pack(form, value))[0]
    except OverflowError:
        return None


def _integer_range(element_type: IntegerType) -> tuple[int, int]:
    width = element_type.width.data
    if width == 1:
        return 0, 1
    if element_type.signedness.data == Signedness.UNSIGNED:
        return 0, 2**width - 1
    return -(2 ** (width - 1)), 2 ** (width - 1) - 1


def _signed(element_type: Attribute) -> bool:
    """Floats and signed integers other than bool: the dtypes negation keeps
    in range (but for the most negative integer)."""
    if isinstance(element_type, IntegerType):
        return is_integer(element_type) and element_type.signedness.data != Signedness.UNSIGNED
    return is_float(element_type)
