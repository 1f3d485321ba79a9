"""
Scalar code for the bodies of loop ops: ptensor's elementwise kinds written with
the upstream `arith` and `math` dialects, following torch's semantics.

Bodies compute in the *compute type* of a dtype: f16 and bf16 are widened to f32
on load and narrowed on store, every other dtype computes as itself.
"""

from __future__ import annotations

import math as pymath

import torch
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from permalloy.dialects.ptensor import (
    BinaryKind,
    ComparePredicate,
    UnaryKind,
    is_bool,
    is_float,
)


class UnsupportedScalarOp(NotImplementedError):
    """An elementwise function that has no scalar lowering."""


def compute_type(element_type: Attribute) -> Attribute:
    """The type a body computes in for a tensor of `element_type`: f32 for f16
    and bf16, signless integers for unsigned ones, the type itself otherwise."""
    if isinstance(element_type, Float16Type | BFloat16Type):
        return Float32Type()
    return signless(element_type)


_NARROW_FLOATS = {Float16Type: torch.float16, BFloat16Type: torch.bfloat16, Float32Type: torch.float32}


def element_value(value: float | int | bool, element_type: Attribute) -> float | int | bool:
    """`value` as an element of `element_type` holds it: a float rounded to
    the element type's precision (a float16 `ptensor.full` of 0.1 holds
    0.0999755859375, which its f32 compute type represents exactly)."""
    dtype = _NARROW_FLOATS.get(type(element_type))
    if dtype is None or not isinstance(value, float | int):
        return value
    return torch.tensor(float(value), dtype=torch.float64).to(dtype).item()


def is_unsigned(element_type: Attribute) -> bool:
    return (
        isinstance(element_type, IntegerType)
        and element_type.signedness.data == Signedness.UNSIGNED
    )


def signless(element_type: Attribute) -> Attribute:
    """arith works on signless integers; ui8 computes as i8 with unsigned ops."""
    if isinstance(element_type, IntegerType):
        return IntegerType(element_type.width.data)
    return element_type


class BodyBuilder:
    """Appends scalar ops to a loop body and returns their results."""

    def __init__(self, block: Block):
        self.block = block

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def constant(self, value: float | int | bool, value_type: Attribute) -> SSAValue:
        if is_float(value_type):
            return self.add(arith.ConstantOp(FloatAttr(float(value), value_type)))
        if isinstance(value_type, IndexType):
            return self.add(arith.ConstantOp(IntegerAttr(int(value), IndexType())))
        assert isinstance(value_type, IntegerType)
        width = value_type.width.data
        number = int(value)
        if width == 1:
            number = -1 if number else 0
        elif number >= 2 ** (width - 1):
            number -= 2**width
        return self.add(arith.ConstantOp(IntegerAttr(number, IntegerType(width))))

    # -- conversions --------------------------------------------------------

    def convert(
        self, value: SSAValue, source: Attribute, target: Attribute
    ) -> SSAValue:
        """Convert `value`, in the compute type of dtype `source`, to the compute
        type of dtype `target`, rounding as torch's `.to(target)` does."""
        if source == target:
            return value
        if is_bool(target):
            return self.nonzero(value, source)
        target_compute = compute_type(target)
        if is_float(target):
            if is_float(source):
                converted = self._resize_float(value, target_compute)
            elif is_bool(source) or is_unsigned(source):
                converted = self.add(arith.UIToFPOp(value, target_compute))
            else:
                converted = self.add(arith.SIToFPOp(value, target_compute))
            return self.round_to(converted, target)
        if is_float(source):
            return self._resize_int(self._float_to_int(value, target_compute), target_compute, unsigned=False)
        unsigned = is_unsigned(source) or is_bool(source)
        return self._resize_int(value, target_compute, unsigned)

    def _float_to_int(self, value: SSAValue, target: Attribute) -> SSAValue:
        """A float truncated towards zero as eager's CPU kernels convert it
        (x86's conversion): to i64 for 64-bit targets, else to i32 (narrower
        types then wrap); NaN, infinities and values out of that range give
        the smallest integer of the width."""
        assert isinstance(target, IntegerType)
        width = 64 if target.width.data == 64 else 32
        wide = IntegerType(width)
        bound = float(2 ** (width - 1))
        low = self.add(arith.CmpfOp(value, self.constant(-bound, value.type), "oge"))
        high = self.add(arith.CmpfOp(value, self.constant(bound, value.type), "olt"))
        in_range = self.add(arith.AndIOp(low, high))
        converted = self.add(arith.FPToSIOp(value, wide))
        return self.select(in_range, converted, self.constant(-(2 ** (width - 1)), wide))

    def round_to(self, value: SSAValue, element_type: Attribute) -> SSAValue:
        """Round a compute-type float to a narrower storage type and back, so
        that later arithmetic sees the value torch would have stored."""
        if compute_type(element_type) == element_type:
            return value
        narrow = self.add(arith.TruncFOp(value, element_type))
        return self.add(arith.ExtFOp(narrow, value.type))

    def _resize_float(self, value: SSAValue, target: Attribute) -> SSAValue:
        source_width, target_width = _float_width(value.type), _float_width(target)
        if target_width > source_width:
            return self.add(arith.ExtFOp(value, target))
        if target_width < source_width:
            return self.add(arith.TruncFOp(value, target))
        return value

    def _resize_int(self, value: SSAValue, target: Attribute, unsigned: bool) -> SSAValue:
        assert isinstance(value.type, IntegerType) and isinstance(target, IntegerType)
        source_width, target_width = value.type.width.data, target.width.data
        if target_width > source_width:
            if unsigned:
                return self.add(arith.ExtUIOp(value, target))
            return self.add(arith.ExtSIOp(value, target))
        if target_width < source_width:
            return self.add(arith.TruncIOp(value, target))
        return value

    def nonzero(self, value: SSAValue, element_type: Attribute) -> SSAValue:
        """`value != 0` as i1 (NaN counts as non-zero, as in torch)."""
        if is_bool(element_type):
            return value
        zero = self.constant(0, value.type)
        if is_float(value.type):
            return self.add(arith.CmpfOp(value, zero, "une"))
        return self.add(arith.CmpiOp(value, zero, "ne"))

    def to_compute(self, value: SSAValue, element_type: Attribute) -> SSAValue:
        """Widen a loaded value to its compute type."""
        target = compute_type(element_type)
        if target == value.type:
            return value
        return self.add(arith.ExtFOp(value, target))

    def to_storage(self, value: SSAValue, element_type: Attribute) -> SSAValue:
        """Narrow a computed value to the scalar type it is stored as."""
        target = signless(element_type)
        if value.type == target:
            return value
        return self.add(arith.TruncFOp(value, target))

    def index_to_int(self, value: SSAValue, target: Attribute) -> SSAValue:
        return self.add(arith.IndexCastOp(value, signless(target)))

    def int_to_index(self, value: SSAValue) -> SSAValue:
        return self.add(arith.IndexCastOp(value, IndexType()))

    # -- elementwise kinds ---------------------------------------------------

    def unary(self, kind: UnaryKind, x: SSAValue, element_type: Attribute) -> SSAValue:
        """`kind(x)` for x of compute type; `element_type` is the stored dtype."""
        handler = _UNARY_FLOAT_OPS.get(kind)
        if handler is not None and is_float(x.type):
            return self.add(handler(x))
        if kind == UnaryKind.NEG:
            if is_float(x.type):
                return self.add(arith.NegfOp(x))
            return self.add(arith.SubiOp(self.constant(0, x.type), x))
        if kind == UnaryKind.ABS:
            if is_float(x.type):
                return self.add(mathd.AbsFOp(x))
            return x if is_unsigned(element_type) or is_bool(x.type) else self.add(mathd.AbsIOp(x))
        if kind in (UnaryKind.FLOOR, UnaryKind.CEIL, UnaryKind.TRUNC, UnaryKind.ROUND):
            return x  # integers are already whole
        if kind == UnaryKind.SIGMOID:
            one = self.constant(1.0, x.type)
            e = self.add(mathd.ExpOp(self.add(arith.NegfOp(x))))
            return self.add(arith.DivfOp(one, self.add(arith.AddfOp(one, e))))
        if kind == UnaryKind.RECIPROCAL:
            return self.add(arith.DivfOp(self.constant(1.0, x.type), x))
        if kind == UnaryKind.ERFC:
            erf = self.add(mathd.ErfOp(x))
            return self.add(arith.SubfOp(self.constant(1.0, x.type), erf))
        if kind == UnaryKind.SIGN:
            return self._sign(x, element_type)
        if kind == UnaryKind.ISNAN:
            return self.add(arith.CmpfOp(x, x, "uno"))
        if kind == UnaryKind.ISINF:
            magnitude = self.add(mathd.AbsFOp(x))
            return self.add(arith.CmpfOp(magnitude, self.constant(pymath.inf, x.type), "oeq"))
        if kind == UnaryKind.LOGICAL_NOT:
            nonzero = self.nonzero(x, element_type)
            return self.add(arith.XOrIOp(nonzero, self.constant(True, IntegerType(1))))
        if kind == UnaryKind.BITWISE_NOT:
            return self.add(arith.XOrIOp(x, self.constant(-1 if not is_bool(x.type) else 1, x.type)))
        raise UnsupportedScalarOp(f"ptensor.unary {kind} on {element_type}")

    def _sign(self, x: SSAValue, element_type: Attribute) -> SSAValue:
        if is_bool(x.type):
            return x
        zero = self.constant(0, x.type)
        if is_float(x.type):
            positive = self.add(arith.CmpfOp(x, zero, "ogt"))
            negative = self.add(arith.CmpfOp(x, zero, "olt"))
            as_float = lambda flag: self.add(arith.UIToFPOp(flag, x.type))  # noqa: E731
            # Ordered comparisons are false for NaN: sign(NaN) is 0, as in torch.
            return self.add(arith.SubfOp(as_float(positive), as_float(negative)))
        predicate = "ugt" if is_unsigned(element_type) else "sgt"
        positive = self.add(arith.CmpiOp(x, zero, predicate))
        negative = self.add(arith.CmpiOp(x, zero, "slt"))
        as_int = lambda flag: self.add(arith.ExtUIOp(flag, x.type))  # noqa: E731
        if is_unsigned(element_type):
            return as_int(positive)
        return self.add(arith.SubiOp(as_int(positive), as_int(negative)))

    def binary(
        self, kind: BinaryKind, a: SSAValue, b: SSAValue, element_type: Attribute
    ) -> SSAValue:
        """`kind(a, b)` for operands of compute type."""
        if is_float(a.type):
            return self._binary_float(kind, a, b)
        return self._binary_int(kind, a, b, element_type)

    def _binary_float(self, kind: BinaryKind, a: SSAValue, b: SSAValue) -> SSAValue:
        simple = _BINARY_FLOAT_OPS.get(kind)
        if simple is not None:
            return self.add(simple(a, b))
        if kind == BinaryKind.FLOORDIV:
            return self._floor_divide(a, b)
        if kind == BinaryKind.REMAINDER:
            return self._adjust_remainder(self._fmod(a, b), b, is_float_type=True)
        if kind == BinaryKind.FMOD:
            return self._fmod(a, b)
        raise UnsupportedScalarOp(f"ptensor.binary {kind} on floats")

    def _fmod(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """C's fmod: `a - trunc(a / b) * b` with the sign of the dividend
        (zeros included); a finite dividend over an infinite divisor is itself."""
        quotient = self.add(mathd.TruncOp(self.add(arith.DivfOp(a, b))))
        difference = self.add(arith.SubfOp(a, self.add(arith.MulfOp(quotient, b))))
        remainder = self.add(mathd.CopySignOp(difference, a))
        infinity = self.constant(pymath.inf, a.type)
        infinite_divisor = self.add(arith.CmpfOp(self.add(mathd.AbsFOp(b)), infinity, "oeq"))
        finite_dividend = self.add(arith.CmpfOp(self.add(mathd.AbsFOp(a)), infinity, "one"))
        keep = self.add(arith.AndIOp(infinite_divisor, finite_dividend))
        return self.select(keep, a, remainder)

    def _floor_divide(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """torch's floor division of floats, `(a - fmod(a, b)) / b` rounded
        down, exact where `floor(a / b)` is not; `a / b` for a zero divisor;
        a zero quotient has the sign of `a / b`."""
        zero = self.constant(0.0, a.type)
        one = self.constant(1.0, a.type)
        quotient = self.add(arith.DivfOp(a, b))
        remainder = self._fmod(a, b)
        whole = self.add(arith.DivfOp(self.add(arith.SubfOp(a, remainder)), b))
        nonzero = self.add(arith.CmpfOp(remainder, zero, "one"))
        signs_differ = self.add(
            arith.XOrIOp(
                self.add(arith.CmpfOp(b, zero, "olt")),
                self.add(arith.CmpfOp(remainder, zero, "olt")),
            )
        )
        down = self.add(arith.AndIOp(nonzero, signs_differ))
        whole = self.select(down, self.add(arith.SubfOp(whole, one)), whole)
        floored = self.add(mathd.FloorOp(whole))
        half = self.constant(0.5, a.type)
        above_half = self.add(arith.CmpfOp(self.add(arith.SubfOp(whole, floored)), half, "ogt"))
        floored = self.select(above_half, self.add(arith.AddfOp(floored, one)), floored)
        signed_zero = self.add(mathd.CopySignOp(zero, quotient))
        floored = self.select(self.add(arith.CmpfOp(whole, zero, "une")), floored, signed_zero)
        zero_divisor = self.add(arith.CmpfOp(b, zero, "oeq"))
        return self.select(zero_divisor, quotient, floored)

    def _binary_int(
        self, kind: BinaryKind, a: SSAValue, b: SSAValue, element_type: Attribute
    ) -> SSAValue:
        unsigned = is_unsigned(element_type) or is_bool(a.type)
        if is_bool(a.type) and kind in _BOOL_AS_LOGIC:
            return self.add(_BOOL_AS_LOGIC[kind](a, b))
        ops = _BINARY_UNSIGNED_OPS if unsigned else _BINARY_SIGNED_OPS
        simple = ops.get(kind)
        if simple is not None:
            return self.add(simple(a, b))
        if kind == BinaryKind.REMAINDER and not unsigned:
            return self._adjust_remainder(self.add(arith.RemSIOp(a, b)), b, is_float_type=False)
        if kind == BinaryKind.REMAINDER:
            return self.add(arith.RemUIOp(a, b))
        if kind in (BinaryKind.SHIFT_LEFT, BinaryKind.SHIFT_RIGHT) and not is_bool(a.type):
            return self._shift(kind, a, b, unsigned)
        raise UnsupportedScalarOp(f"ptensor.binary {kind} on {element_type}")

    def _shift(self, kind: BinaryKind, a: SSAValue, b: SSAValue, unsigned: bool) -> SSAValue:
        """torch's shifts: an amount that is negative or not below the width
        gives 0, or the sign for a right shift of a signed value. arith's shifts
        are poison there, so such amounts never reach them."""
        assert isinstance(a.type, IntegerType)
        bits = a.type.width.data
        out_of_range = self.add(arith.CmpiOp(b, self.constant(bits, a.type), "uge"))
        if kind == BinaryKind.SHIFT_RIGHT and not unsigned:
            amount = self.add(arith.SelectOp(out_of_range, self.constant(bits - 1, a.type), b))
            return self.add(arith.ShRSIOp(a, amount))
        zero = self.constant(0, a.type)
        amount = self.add(arith.SelectOp(out_of_range, zero, b))
        shift = arith.ShLIOp if kind == BinaryKind.SHIFT_LEFT else arith.ShRUIOp
        return self.add(arith.SelectOp(out_of_range, zero, self.add(shift(a, amount))))

    def _adjust_remainder(
        self, remainder: SSAValue, divisor: SSAValue, is_float_type: bool
    ) -> SSAValue:
        """Python's %: the result takes the divisor's sign."""
        zero = self.constant(0, remainder.type)
        if is_float_type:
            nonzero = self.add(arith.CmpfOp(remainder, zero, "one"))
            r_negative = self.add(arith.CmpfOp(remainder, zero, "olt"))
            d_negative = self.add(arith.CmpfOp(divisor, zero, "olt"))
            shifted = self.add(arith.AddfOp(remainder, divisor))
        else:
            nonzero = self.add(arith.CmpiOp(remainder, zero, "ne"))
            r_negative = self.add(arith.CmpiOp(remainder, zero, "slt"))
            d_negative = self.add(arith.CmpiOp(divisor, zero, "slt"))
            shifted = self.add(arith.AddiOp(remainder, divisor))
        signs_differ = self.add(arith.XOrIOp(r_negative, d_negative))
        adjust = self.add(arith.AndIOp(nonzero, signs_differ))
        return self.add(arith.SelectOp(adjust, shifted, remainder))

    def compare(
        self,
        predicate: ComparePredicate,
        a: SSAValue,
        b: SSAValue,
        element_type: Attribute,
    ) -> SSAValue:
        if is_float(a.type):
            return self.add(arith.CmpfOp(a, b, _FLOAT_PREDICATES[predicate]))
        unsigned = is_unsigned(element_type) or is_bool(a.type)
        table = _UNSIGNED_PREDICATES if unsigned else _SIGNED_PREDICATES
        return self.add(arith.CmpiOp(a, b, table[predicate]))

    def select(self, condition: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.SelectOp(condition, a, b))


def _float_width(t: Attribute) -> int:
    if isinstance(t, Float16Type | BFloat16Type):
        return 16
    return 32 if isinstance(t, Float32Type) else 64


_UNARY_FLOAT_OPS = {
    UnaryKind.ABS: mathd.AbsFOp,
    UnaryKind.EXP: mathd.ExpOp,
    UnaryKind.EXP2: mathd.Exp2Op,
    UnaryKind.EXPM1: mathd.ExpM1Op,
    UnaryKind.LOG: mathd.LogOp,
    UnaryKind.LOG2: mathd.Log2Op,
    UnaryKind.LOG10: mathd.Log10Op,
    UnaryKind.LOG1P: mathd.Log1pOp,
    UnaryKind.SQRT: mathd.SqrtOp,
    UnaryKind.RSQRT: mathd.RsqrtOp,
    UnaryKind.SIN: mathd.SinOp,
    UnaryKind.COS: mathd.CosOp,
    UnaryKind.TAN: mathd.TanOp,
    UnaryKind.ASIN: mathd.AsinOp,
    UnaryKind.ACOS: mathd.AcosOp,
    UnaryKind.ATAN: mathd.AtanOp,
    UnaryKind.SINH: mathd.SinhOp,
    UnaryKind.COSH: mathd.CoshOp,
    UnaryKind.TANH: mathd.TanhOp,
    UnaryKind.ASINH: mathd.AsinhOp,
    UnaryKind.ACOSH: mathd.AcoshOp,
    UnaryKind.ATANH: mathd.AtanhOp,
    UnaryKind.ERF: mathd.ErfOp,
    UnaryKind.FLOOR: mathd.FloorOp,
    UnaryKind.CEIL: mathd.CeilOp,
    UnaryKind.ROUND: mathd.RoundEvenOp,
    UnaryKind.TRUNC: mathd.TruncOp,
}

_BINARY_FLOAT_OPS = {
    BinaryKind.ADD: arith.AddfOp,
    BinaryKind.SUB: arith.SubfOp,
    BinaryKind.MUL: arith.MulfOp,
    BinaryKind.DIV: arith.DivfOp,
    BinaryKind.POW: mathd.PowFOp,
    BinaryKind.MAXIMUM: arith.MaximumfOp,
    BinaryKind.MINIMUM: arith.MinimumfOp,
    BinaryKind.ATAN2: mathd.Atan2Op,
    BinaryKind.COPYSIGN: mathd.CopySignOp,
}

_BINARY_COMMON_INT_OPS = {
    BinaryKind.ADD: arith.AddiOp,
    BinaryKind.SUB: arith.SubiOp,
    BinaryKind.MUL: arith.MuliOp,
    BinaryKind.BITWISE_AND: arith.AndIOp,
    BinaryKind.BITWISE_OR: arith.OrIOp,
    BinaryKind.BITWISE_XOR: arith.XOrIOp,
    BinaryKind.LOGICAL_AND: arith.AndIOp,
    BinaryKind.LOGICAL_OR: arith.OrIOp,
    BinaryKind.LOGICAL_XOR: arith.XOrIOp,
}

_BINARY_SIGNED_OPS = {
    **_BINARY_COMMON_INT_OPS,
    BinaryKind.DIV: arith.DivSIOp,
    BinaryKind.FLOORDIV: arith.FloorDivSIOp,
    BinaryKind.FMOD: arith.RemSIOp,
    BinaryKind.MAXIMUM: arith.MaxSIOp,
    BinaryKind.MINIMUM: arith.MinSIOp,
}

_BINARY_UNSIGNED_OPS = {
    **_BINARY_COMMON_INT_OPS,
    BinaryKind.DIV: arith.DivUIOp,
    BinaryKind.FLOORDIV: arith.DivUIOp,
    BinaryKind.FMOD: arith.RemUIOp,
    BinaryKind.MAXIMUM: arith.MaxUIOp,
    BinaryKind.MINIMUM: arith.MinUIOp,
}

_BOOL_AS_LOGIC = {
    BinaryKind.ADD: arith.OrIOp,
    BinaryKind.MUL: arith.AndIOp,
    BinaryKind.MAXIMUM: arith.OrIOp,
    BinaryKind.MINIMUM: arith.AndIOp,
}

_FLOAT_PREDICATES = {
    ComparePredicate.EQ: "oeq",
    ComparePredicate.NE: "une",
    ComparePredicate.LT: "olt",
    ComparePredicate.LE: "ole",
    ComparePredicate.GT: "ogt",
    ComparePredicate.GE: "oge",
}
_SIGNED_PREDICATES = {
    ComparePredicate.EQ: "eq",
    ComparePredicate.NE: "ne",
    ComparePredicate.LT: "slt",
    ComparePredicate.LE: "sle",
    ComparePredicate.GT: "sgt",
    ComparePredicate.GE: "sge",
}
_UNSIGNED_PREDICATES = {
    ComparePredicate.EQ: "eq",
    ComparePredicate.NE: "ne",
    ComparePredicate.LT: "ult",
    ComparePredicate.LE: "ule",
    ComparePredicate.GT: "ugt",
    ComparePredicate.GE: "uge",
}
