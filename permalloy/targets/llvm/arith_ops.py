"""
Translation of `arith` ops to LLVM, on scalars or vectors alike.

Each translator receives the op and the LLVM values of its operands, already
made uniform in lanes, and returns the value of its result. Float arithmetic on
f16/bf16 computes in f32. Integer division never traps: a zero divisor is
replaced by one, and `INT_MIN / -1` wraps. Where a divisor may be zero
(`may_divide_by_zero`), the body emitter also records it in the kernel's
status word, and the launch raises as torch does.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Operation

from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.convert import (
    extend_float,
    f32_to_bf16,
    from_compute,
    to_compute,
    truncate_float,
)
from permalloy.targets.llvm.types import (
    F32,
    UnsupportedKernelError,
    is_bf16,
    is_half_like,
    lanes_of,
    register_type,
    with_lanes,
)

Translator = Callable[[CodeGen, Operation, list[ir.Value]], ir.Value]

FCMP_PREDICATES = (
    "false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true".split()
)
ICMP_PREDICATES = {
    0: ("==", True), 1: ("!=", True), 2: ("<", True), 3: ("<=", True),
    4: (">", True), 5: (">=", True), 6: ("<", False), 7: ("<=", False),
    8: (">", False), 9: (">=", False),
}  # fmt: skip


def result_type(cg: CodeGen, op: Operation, args: list[ir.Value]) -> ir.Type:
    lanes = lanes_of(args[0]) if args else 0
    return with_lanes(register_type(op.results[0].type), lanes)


def _float_binary(method: str) -> Translator:
    def translate(cg: CodeGen, op: Operation, args: list[ir.Value]) -> ir.Value:
        t = op.results[0].type
        lhs, rhs = (to_compute(cg, a, t) for a in args)
        return from_compute(cg, getattr(cg.builder, method)(lhs, rhs), t)

    return translate


def _float_intrinsic(name: str) -> Translator:
    def translate(cg: CodeGen, op: Operation, args: list[ir.Value]) -> ir.Value:
        t = op.results[0].type
        values = [to_compute(cg, a, t) for a in args]
        return from_compute(cg, cg.intrinsic(name, values), t)

    return translate


def _int_binary(method: str) -> Translator:
    return lambda cg, op, args: getattr(cg.builder, method)(*args)


def _int_intrinsic(name: str) -> Translator:
    return lambda cg, op, args: cg.intrinsic(name, args)


def _negf(cg: CodeGen, op: Operation, args: list[ir.Value]) -> ir.Value:
    t = op.results[0].type
    return from_compute(cg, cg.builder.fneg(to_compute(cg, args[0], t)), t)


INTEGER_DIVISIONS = frozenset(
    {"arith.divsi", "arith.remsi", "arith.divui", "arith.remui", "arith.floordivsi", "arith.ceildivsi"}
)


def may_divide_by_zero(op: Operation) -> bool:
    """Whether `op` is an integer division whose divisor is not a nonzero constant."""
    if op.name not in INTEGER_DIVISIONS:
        return False
    divisor = op.operands[1].owner
    if isinstance(divisor, arith.ConstantOp) and isinstance(divisor.value, IntegerAttr):
        return divisor.value.value.data == 0
    return True


def _safe_divisor(cg: CodeGen, den: ir.Value) -> ir.Value:
    b = cg.builder
    return b.select(b.icmp_signed("==", den, cg.like(den, 0)), cg.like(den, 1), den)


def _signed_division(cg: CodeGen, num: ir.Value, den: ir.Value, method: str) -> ir.Value:
    """sdiv/srem with zero divisors made one and `x / -1` computed as `-x`."""
    b = cg.builder
    den = _safe_divisor(cg, den)
    minus_one = b.icmp_signed("==", den, cg.like(den, -1))
    safe = b.select(minus_one, cg.like(den, 1), den)
    result = getattr(b, method)(num, safe)
    if method == "sdiv":
        return b.select(minus_one, b.sub(cg.like(num, 0), num), result)
    return b.select(minus_one, cg.like(num, 0), result)


def _divsi(cg, op, args):
    return _signed_division(cg, args[0], args[1], "sdiv")


def _remsi(cg, op, args):
    return _signed_division(cg, args[0], args[1], "srem")


def _divui(cg, op, args):
    return cg.builder.udiv(args[0], _safe_divisor(cg, args[1]))


def _remui(cg, op, args):
    return cg.builder.urem(args[0], _safe_divisor(cg, args[1]))


def _floordivsi(cg, op, args):
    b = cg.builder
    num, den = args
    quotient = _signed_division(cg, num, den, "sdiv")
    remainder = _signed_division(cg, num, den, "srem")
    zero = cg.like(num, 0)
    adjust = b.and_(
        b.icmp_signed("!=", remainder, zero),
        b.icmp_signed("<", b.xor(remainder, den), zero),
    )
    return b.sub(quotient, b.zext(adjust, quotient.type))


def _ceildivsi(cg, op, args):
    b = cg.builder
    num, den = args
    quotient = _signed_division(cg, num, den, "sdiv")
    remainder = _signed_division(cg, num, den, "srem")
    zero = cg.like(num, 0)
    adjust = b.and_(
        b.icmp_signed("!=", remainder, zero),
        b.icmp_signed(">=", b.xor(remainder, den), zero),
    )
    return b.add(quotient, b.zext(adjust, quotient.type))


def _constant(cg: CodeGen, op: Operation, args: list[ir.Value]) -> ir.Value:
    assert isinstance(op, arith.ConstantOp)
    value = op.value
    ty = register_type(op.result.type)
    if isinstance(value, FloatAttr):
        number = value.value.data
        if is_bf16(op.result.type):
            return f32_to_bf16(cg, ir.Constant(F32, number))
        return ir.Constant(ty, number)
    if isinstance(value, IntegerAttr):
        number = value.value.data
        if ty.width == 1:
            number = number & 1
        return ir.Constant(ty, number)
    raise UnsupportedKernelError(f"arith.constant {value} is not a scalar constant")


def _cmpf(cg, op, args):
    t = op.operands[0].type
    lhs, rhs = (to_compute(cg, a, t) for a in args)
    predicate = FCMP_PREDICATES[op.predicate.value.data]
    return cg.builder.fcmp_ordered(predicate, lhs, rhs)


def _cmpi(cg, op, args):
    symbol, signed = ICMP_PREDICATES[op.predicate.value.data]
    b = cg.builder
    return (b.icmp_signed if signed else b.icmp_unsigned)(symbol, *args)


def _select(cg, op, args):
    cond, lhs, rhs = cg.match(*args)
    return cg.builder.select(cond, lhs, rhs)


def _cast(method: str) -> Translator:
    return lambda cg, op, args: getattr(cg.builder, method)(args[0], result_type(cg, op, args))


def _float_to_int(method: str) -> Translator:
    def translate(cg, op, args):
        value = to_compute(cg, args[0], op.operands[0].type)
        return getattr(cg.builder, method)(value, result_type(cg, op, args))

    return translate


def _int_to_float(method: str) -> Translator:
    def translate(cg, op, args):
        t = op.results[0].type
        compute = F32 if is_half_like(t) else register_type(t)
        value = getattr(cg.builder, method)(args[0], with_lanes(compute, lanes_of(args[0])))
        return from_compute(cg, value, t)

    return translate


def _extf(cg, op, args):
    return extend_float(cg, args[0], op.operands[0].type, op.results[0].type)


def _truncf(cg, op, args):
    return truncate_float(cg, args[0], op.operands[0].type, op.results[0].type)


def _index_cast(cg, op, args):
    src = args[0].type
    dst = result_type(cg, op, args)
    src_width = (src.element if lanes_of(args[0]) else src).width
    dst_width = (dst.element if lanes_of(args[0]) else dst).width
    if src_width == dst_width:
        return args[0]
    method = "sext" if dst_width > src_width else "trunc"
    return getattr(cg.builder, method)(args[0], dst)


def _bitcast(cg, op, args):
    dst = result_type(cg, op, args)
    return args[0] if args[0].type == dst else cg.builder.bitcast(args[0], dst)


ARITH: dict[str, Translator] = {
    "arith.constant": _constant,
    "arith.addf": _float_binary("fadd"),
    "arith.subf": _float_binary("fsub"),
    "arith.mulf": _float_binary("fmul"),
    "arith.divf": _float_binary("fdiv"),
    "arith.remf": _float_binary("frem"),
    "arith.negf": _negf,
    "arith.maximumf": _float_intrinsic("maximum"),
    "arith.minimumf": _float_intrinsic("minimum"),
    "arith.maxnumf": _float_intrinsic("maxnum"),
    "arith.minnumf": _float_intrinsic("minnum"),
    "arith.addi": _int_binary("add"),
    "arith.subi": _int_binary("sub"),
    "arith.muli": _int_binary("mul"),
    "arith.andi": _int_binary("and_"),
    "arith.ori": _int_binary("or_"),
    "arith.xori": _int_binary("xor"),
    "arith.shli": _int_binary("shl"),
    "arith.shrsi": _int_binary("ashr"),
    "arith.shrui": _int_binary("lshr"),
    "arith.divsi": _divsi,
    "arith.divui": _divui,
    "arith.remsi": _remsi,
    "arith.remui": _remui,
    "arith.floordivsi": _floordivsi,
    "arith.ceildivsi": _ceildivsi,
    "arith.maxsi": _int_intrinsic("smax"),
    "arith.minsi": _int_intrinsic("smin"),
    "arith.maxui": _int_intrinsic("umax"),
    "arith.minui": _int_intrinsic("umin"),
    "arith.cmpf": _cmpf,
    "arith.cmpi": _cmpi,
    "arith.select": _select,
    "arith.extf": _extf,
    "arith.truncf": _truncf,
    "arith.sitofp": _int_to_float("sitofp"),
    "arith.uitofp": _int_to_float("uitofp"),
    "arith.fptosi": _float_to_int("fptosi"),
    "arith.fptoui": _float_to_int("fptoui"),
    "arith.extsi": _cast("sext"),
    "arith.extui": _cast("zext"),
    "arith.trunci": _cast("trunc"),
    "arith.index_cast": _index_cast,
    "arith.index_castui": _cast("zext"),
    "arith.bitcast": _bitcast,
}

