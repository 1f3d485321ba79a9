"""
Translation of `arith` ops to Triton expressions.

Each translator gets the op and its operands as `Value`s and returns the text
of the result. Triton computes on signless integers as arith does; unsigned
operations go through `.to(tl.uintN, bitcast=True)`, and i1 operands of
arithmetic are widened first (arith reads i1 true as -1 when signed). Integer
division never traps: a zero divisor is replaced by one and `INT_MIN / -1`
wraps, as on the other targets (helpers `_divsi`, `_remsi`, ...).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Operation

from permalloy.targets.triton.source import SourceWriter, Value
from permalloy.targets.triton.types import (
    UnsupportedKernelError,
    float_constant,
    int_constant,
    int_width,
    is_bool_dtype,
    unsigned,
    value_dtype,
)

Translator = Callable[[SourceWriter, Operation, list[Value]], str]


def result_dtype(op: Operation) -> str:
    return value_dtype(op.results[0].type)


def convert(w: SourceWriter, text: str, source: str, target: str) -> str:
    """`text` (of dtype `source`) as a value of dtype `target`, rounding to
    nearest even. bfloat16 goes through float32 and the `_to_bf16` helper,
    since Triton's interpreter truncates and converts other types bit-wise."""
    if source == target:
        return text
    if target == "tl.bfloat16":
        w.helpers.add("_to_bf16")
        return f"_to_bf16({text})"
    if source == "tl.bfloat16" and target != "tl.float32":
        return f"{text}.to(tl.float32).to({target})"
    return f"{text}.to({target})"


def _binary(symbol: str) -> Translator:
    return lambda w, op, a: f"{a[0].text} {symbol} {a[1].text}"


def _signed(v: Value) -> str:
    """An integer operand as a signed number (i1 true is -1)."""
    return f"(-({v.text}.to(tl.int8)))" if is_bool_dtype(v.dtype) else v.text


def _unsigned(v: Value) -> str:
    """An integer operand as an unsigned number."""
    if is_bool_dtype(v.dtype):
        return f"{v.text}.to(tl.uint8)"
    return f"{v.text}.to({unsigned(v.dtype)}, bitcast=True)"


def _from_integer(text: str, dtype: str, was_unsigned: bool) -> str:
    """An integer result back in the signless type `dtype`."""
    if is_bool_dtype(dtype):
        return f"(({text}) != 0)"
    return f"({text}).to({dtype}, bitcast=True)" if was_unsigned else text


def _int_function(template: str, signed: bool, helper: str | None = None) -> Translator:
    def translate(w: SourceWriter, op: Operation, a: list[Value]) -> str:
        if helper:
            w.helpers.add(helper)
        read = _signed if signed else _unsigned
        text = template.format(*(read(v) for v in a))
        return _from_integer(text, result_dtype(op), not signed)

    return translate


def _bool_or(arith_symbol: str, bool_symbol: str) -> Translator:
    def translate(w: SourceWriter, op: Operation, a: list[Value]) -> str:
        symbol = bool_symbol if is_bool_dtype(a[0].dtype) else arith_symbol
        return f"{a[0].text} {symbol} {a[1].text}"

    return translate


def _constant(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    assert isinstance(op, arith.ConstantOp)
    dtype = result_dtype(op)
    value = op.value
    if isinstance(value, FloatAttr):
        if dtype == "tl.bfloat16":
            return convert(w, float_constant(float(value.value.data), "tl.float32"), "tl.float32", dtype)
        return float_constant(float(value.value.data), dtype)
    if isinstance(value, IntegerAttr):
        return int_constant(int(value.value.data), dtype)
    raise UnsupportedKernelError(f"arith.constant {value} is not a scalar constant")


_CMPF = {
    "false": "({a} != {a}) & ({a} == {a})",
    "oeq": "{a} == {b}",
    "ogt": "{a} > {b}",
    "oge": "{a} >= {b}",
    "olt": "{a} < {b}",
    "ole": "{a} <= {b}",
    "one": "({a} < {b}) | ({a} > {b})",
    "ord": "({a} == {a}) & ({b} == {b})",
    "ueq": "~(({a} < {b}) | ({a} > {b}))",
    "ugt": "~({a} <= {b})",
    "uge": "~({a} < {b})",
    "ult": "~({a} >= {b})",
    "ule": "~({a} > {b})",
    "une": "{a} != {b}",
    "uno": "({a} != {a}) | ({b} != {b})",
    "true": "({a} != {a}) | ({a} == {a})",
}
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}  # fmt: skip


def _cmpf(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]  # type: ignore[attr-defined]
    return "(" + _CMPF[predicate].format(a=a[0].text, b=a[1].text) + ")"


def _cmpi(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]  # type: ignore[attr-defined]
    symbol = _CMPI[predicate]
    if predicate in ("eq", "ne"):
        return f"({a[0].text} {symbol} {a[1].text})"
    read = _unsigned if predicate.startswith("u") else _signed
    return f"({read(a[0])} {symbol} {read(a[1])})"


def _select(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    return f"tl.where({a[0].text}, {a[1].text}, {a[2].text})"


def _to(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    return convert(w, a[0].text, a[0].dtype, result_dtype(op))


def _sign_extend(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    dtype = result_dtype(op)
    if is_bool_dtype(a[0].dtype):
        return f"(-({a[0].text}.to({dtype})))"
    return f"{a[0].text}.to({dtype})"


def _zero_extend(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    dtype = result_dtype(op)
    if is_bool_dtype(a[0].dtype) or a[0].dtype == dtype:
        return f"{a[0].text}.to({dtype})"
    return f"{_unsigned(a[0])}.to({unsigned(dtype)}).to({dtype}, bitcast=True)"


def _truncate(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    dtype = result_dtype(op)
    if is_bool_dtype(dtype):
        return f"(({a[0].text} & 1) != 0)"
    return f"{a[0].text}.to({dtype})"


def _resize(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    """index_cast: narrower results truncate, wider ones sign-extend."""
    source, target = a[0].dtype, result_dtype(op)
    if source == target:
        return a[0].text
    if is_bool_dtype(target) or (not is_bool_dtype(source) and int_width(target) < int_width(source)):
        return _truncate(w, op, a)
    return _sign_extend(w, op, a)


def _sitofp(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    source = "tl.int8" if is_bool_dtype(a[0].dtype) else a[0].dtype
    return convert(w, _signed(a[0]), source, result_dtype(op))


def _uitofp(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    return convert(w, _unsigned(a[0]), unsigned(a[0].dtype) if not is_bool_dtype(a[0].dtype) else "tl.uint8", result_dtype(op))


def _fptoui(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    dtype = result_dtype(op)
    if is_bool_dtype(dtype):
        return f"({a[0].text} != 0)"
    return f"{convert(w, a[0].text, a[0].dtype, unsigned(dtype))}.to({dtype}, bitcast=True)"


def _bitcast(w: SourceWriter, op: Operation, a: list[Value]) -> str:
    dtype = result_dtype(op)
    return a[0].text if a[0].dtype == dtype else f"{a[0].text}.to({dtype}, bitcast=True)"


_NAN_MAX = "tl.maximum({}, {}, propagate_nan=tl.PropagateNan.ALL)"
_NAN_MIN = "tl.minimum({}, {}, propagate_nan=tl.PropagateNan.ALL)"

ARITH: dict[str, Translator] = {
    "arith.constant": _constant,
    "arith.addf": _binary("+"),
    "arith.subf": _binary("-"),
    "arith.mulf": _binary("*"),
    "arith.divf": _binary("/"),
    # a product, not `-x`: Triton 3.6 negates as `0 - x`, which makes -0.0 of 0.0 positive
    "arith.negf": lambda w, op, a: f"({a[0].text} * -1.0)",
    "arith.maximumf": lambda w, op, a: _NAN_MAX.format(a[0].text, a[1].text),
    "arith.minimumf": lambda w, op, a: _NAN_MIN.format(a[0].text, a[1].text),
    "arith.maxnumf": lambda w, op, a: f"tl.maximum({a[0].text}, {a[1].text})",
    "arith.minnumf": lambda w, op, a: f"tl.minimum({a[0].text}, {a[1].text})",
    "arith.addi": _bool_or("+", "^"),
    "arith.subi": _bool_or("-", "^"),
    "arith.muli": _bool_or("*", "&"),
    "arith.andi": _binary("&"),
    "arith.ori": _binary("|"),
    "arith.xori": _binary("^"),
    "arith.shli": _int_function("{} << {}", signed=True),
    "arith.shrsi": _int_function("{} >> {}", signed=True),
    "arith.shrui": _int_function("{} >> {}", signed=False),
    "arith.divsi": _int_function("_divsi({}, {})", signed=True, helper="_divsi"),
    "arith.remsi": _int_function("_remsi({}, {})", signed=True, helper="_remsi"),
    "arith.floordivsi": _int_function("_floordivsi({}, {})", signed=True, helper="_floordivsi"),
    "arith.ceildivsi": _int_function("_ceildivsi({}, {})", signed=True, helper="_ceildivsi"),
    "arith.divui": _int_function("_divui({}, {})", signed=False, helper="_divui"),
    "arith.remui": _int_function("_remui({}, {})", signed=False, helper="_remui"),
    "arith.maxsi": _int_function("tl.maximum({}, {})", signed=True),
    "arith.minsi": _int_function("tl.minimum({}, {})", signed=True),
    "arith.maxui": _int_function("tl.maximum({}, {})", signed=False),
    "arith.minui": _int_function("tl.minimum({}, {})", signed=False),
    "arith.cmpf": _cmpf,
    "arith.cmpi": _cmpi,
    "arith.select": _select,
    "arith.extf": _to,
    "arith.truncf": _to,
    "arith.sitofp": _sitofp,
    "arith.uitofp": _uitofp,
    "arith.fptosi": _to,
    "arith.fptoui": _fptoui,
    "arith.extsi": _sign_extend,
    "arith.extui": _zero_extend,
    "arith.trunci": _truncate,
    "arith.index_cast": _resize,
    "arith.index_castui": _zero_extend,
    "arith.bitcast": _bitcast,
}
"""Each arith op, by name, as a Triton expression of its operands."""
