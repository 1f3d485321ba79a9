"""
Helper functions that generated kernels call, written into each kernel's module.

Triton's `tl.math` (exp, log, sqrt, sin, erf, floor, ...) runs both on GPUs
and in Triton's CPU interpreter (`TRITON_INTERPRET=1`); `libdevice` (tanh,
expm1, atan, pow, ...) does not run in the interpreter. Each function missing
from `tl.math` is therefore a helper with two bodies: the GPU one calls
`libdevice`, the interpreted one computes in float64 from `tl.math`
primitives (the interpreter computes with numpy, so float64 formulas are
accurate to well below float32 rounding). Helpers also hold the integer
division semantics of `arith` and the combine functions of reductions and
scans, which are the same in both modes, the sorts of rows (`tl.sort` and
`tl.topk` on a GPU, a bitonic network of gathers in the interpreter), and the
rounding to bfloat16 (the interpreter truncates; the helper rounds to
nearest even from the bits).

`helper_source(names, interpret)` gives the text of the named helpers and of
the helpers they call, in a stable order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Helper:
    """A `@triton.jit` function: its GPU body, its interpreted body, what it calls."""

    gpu: str
    interpreted: str | None = None
    needs: tuple[str, ...] = ()

    def body(self, interpret: bool) -> str:
        return self.interpreted if interpret and self.interpreted is not None else self.gpu


def _jit(signature: str, *lines: str) -> str:
    return "@triton.jit\ndef " + signature + ":\n" + "".join(f"    {line}\n" for line in lines)


def _libdevice(name: str, arity: int = 1) -> str:
    args = ", ".join("xyz"[:arity])
    return _jit(f"_{name}({args})", f"return libdevice.{name}({args})")


def _f64(name: str, *lines: str) -> str:
    """An interpreted body of one argument: `y` is it in float64, `r` the result."""
    return _jit(f"_{name}(x)", "y = x.to(tl.float64)", *lines, "return r.to(x.dtype)")


def _atan_series() -> str:
    """Horner form of atan(t) / t for |t| <= tan(pi / 16), to 24 terms."""
    text = "0.0"
    for k in reversed(range(12)):
        text = f"({(-1) ** k / (2 * k + 1)!r} + t2 * {text})"
    return text


_PI = 3.141592653589793
_HALF_PI = 1.5707963267948966

_MATH: dict[str, Helper] = {
    "expm1": Helper(
        _libdevice("expm1"),
        _f64("expm1", "r = tl.where(y == 0, y, tl.where(tl.abs(y) < 1e-5, y + 0.5 * y * y, tl.exp(y) - 1.0))"),
    ),
    "log1p": Helper(_libdevice("log1p"), _f64("log1p", "r = tl.where(tl.abs(y) < 1e-5, y - 0.5 * y * y, tl.log(1.0 + y))")),
    "log10": Helper(_libdevice("log10"), _f64("log10", "r = tl.log(y) * 0.4342944819032518")),
    "tan": Helper(_libdevice("tan"), _f64("tan", "r = tl.sin(y) / tl.cos(y)")),
    "sinh": Helper(
        _libdevice("sinh"),
        _f64("sinh", "r = tl.where(tl.abs(y) < 1e-5, y + y * y * y / 6.0, 0.5 * (tl.exp(y) - tl.exp(-y)))"),
    ),
    "cosh": Helper(_libdevice("cosh"), _f64("cosh", "r = 0.5 * (tl.exp(y) + tl.exp(-y))")),
    "tanh": Helper(
        _libdevice("tanh"),
        _f64(
            "tanh",
            "e = tl.exp(-2.0 * tl.abs(y))",
            "m = (1.0 - e) / (1.0 + e)",
            "m = tl.where(tl.abs(y) < 1e-5, tl.abs(y) - tl.abs(y) * y * y / 3.0, m)",
            "r = tl.where(y == 0, y, tl.where(y < 0, -m, m))",  # tanh(-0) is -0
        ),
    ),
    "asinh": Helper(
        _libdevice("asinh"),
        _f64(
            "asinh",
            "a = tl.abs(y)",
            "m = tl.where(a < 1e-5, a - a * a * a / 6.0, tl.log(a + tl.sqrt(a * a + 1.0)))",
            "r = tl.where(y == 0, y, tl.where(y < 0, -m, m))",  # asinh(-0) is -0
        ),
    ),
    "acosh": Helper(_libdevice("acosh"), _f64("acosh", "r = tl.log(y + tl.sqrt(y * y - 1.0))")),
    "atanh": Helper(
        _libdevice("atanh"),
        _f64("atanh", "r = tl.where(tl.abs(y) < 1e-5, y + y * y * y / 3.0, 0.5 * tl.log((1.0 + y) / (1.0 - y)))"),
    ),
    "atan": Helper(_libdevice("atan"), _f64("atan", "r = _atan_f64(y)"), ("atan_f64",)),
    "asin": Helper(_libdevice("asin"), _f64("asin", "r = _atan_f64(y / tl.sqrt(1.0 - y * y))"), ("atan_f64",)),
    "acos": Helper(
        _libdevice("acos"), _f64("acos", f"r = {_HALF_PI!r} - _atan_f64(y / tl.sqrt(1.0 - y * y))"), ("atan_f64",)
    ),
    "atan2": Helper(
        _libdevice("atan2", 2),
        _jit(
            "_atan2(x, y2)",
            "y = x.to(tl.float64)",
            "z = y2.to(tl.float64)",
            "a = _atan_f64(y / z)",
            f"left = tl.where(y >= 0, a + {_PI!r}, a - {_PI!r})",
            f"axis = tl.where(y > 0, {_HALF_PI!r}, tl.where(y < 0, -{_HALF_PI!r}, 0.0 * y))",
            "r = tl.where(z > 0, a, tl.where(z < 0, left, axis))",
            "return r.to(x.dtype)",
        ),
        ("atan_f64",),
    ),
    # C's pow (libdevice's follows it): 1 for a zero exponent or a base of 1
    # (NaN included) and for a base of -1 to an infinite power; the sign of
    # the base (zeros and infinities included) for odd integer exponents; NaN
    # for a finite negative base to a finite non-integer power. Both operands
    # are broadcast first: comparisons of 0-d values do not combine with
    # blocks in the interpreter.
    "pow": Helper(
        _libdevice("pow", 2),
        _jit(
            "_pow(x, y2)",
            "y, z = tl.broadcast(x.to(tl.float64), y2.to(tl.float64))",
            "a = tl.abs(y)",
            "r = tl.exp(z * tl.log(a))",
            "whole = tl.floor(z) == z",
            "odd = whole & (z - 2.0 * tl.floor(z * 0.5) == 1.0)",
            "r = tl.where(odd & (y.to(tl.int64, bitcast=True) < 0), -r, r)",
            "r = tl.where((y < 0) & (a != float('inf')) & ~whole, float('nan'), r)",
            "one = (z == 0) | (y == 1) | ((a == 1) & (tl.abs(z) == float('inf')))",
            "r = tl.where(one, 1.0, r)",
            "return r.to(x.dtype)",
        ),
    ),
    "trunc": Helper(_libdevice("trunc"), _jit("_trunc(x)", "return tl.where(x < 0, tl.ceil(x), tl.floor(x))")),
    "roundeven": Helper(
        _jit("_roundeven(x)", "return libdevice.rint(x)"),
        _f64(
            "roundeven",
            "f = tl.floor(y)",
            "d = y - f",
            "even = f * 0.5 == tl.floor(f * 0.5)",
            "r = tl.where(d > 0.5, f + 1.0, tl.where(d < 0.5, f, tl.where(even, f, f + 1.0)))",
        ),
    ),
    "round": Helper(
        _libdevice("round"),
        _f64("round", "m = tl.floor(tl.abs(y) + 0.5)", "r = tl.where(y < 0, -m, m)"),
    ),
    "copysign": Helper(
        _libdevice("copysign", 2),
        _jit(
            "_copysign(x, y2)",
            "negative = y2.to(tl.float64).to(tl.int64, bitcast=True) < 0",
            "return tl.where(negative, -tl.abs(x), tl.abs(x))",
        ),
    ),
    "cbrt": Helper(
        _libdevice("cbrt"),
        _f64("cbrt", "m = tl.exp(tl.log(tl.abs(y)) / 3.0)", "r = tl.where(y < 0, -m, m)"),
    ),
}

_INTEGER: dict[str, Helper] = {
    "atan_f64": Helper(
        _jit(
            "_atan_f64(y)",
            "a = tl.abs(y)",
            "inverted = a > 1.0",
            "t = tl.where(inverted, 1.0 / tl.where(inverted, a, 1.0), a)",
            "t = t / (1.0 + tl.sqrt(1.0 + t * t))",
            "t = t / (1.0 + tl.sqrt(1.0 + t * t))",
            "t2 = t * t",
            f"m = 4.0 * t * {_atan_series()}",
            f"m = tl.where(inverted, {_HALF_PI!r} - m, m)",
            "return tl.where(y == 0, y, tl.where(y < 0, -m, m))",  # atan(-0) is -0
        )
    ),
    "floordiv": Helper(
        _jit(
            "_floordiv(a, b)",
            "q = a // b",
            "r = a % b",
            "return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)",
        )
    ),
    "floormod": Helper(
        _jit("_floormod(a, b)", "r = a % b", "return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)")
    ),
    "safe_divisor": Helper(
        _jit("_safe_divisor(b)", "return tl.where(b == 0, tl.full([], 1, b.dtype), b)")
    ),
    "divsi": Helper(
        _jit(
            "_divsi(a, b)",
            "d = _safe_divisor(b)",
            "minus_one = d == -1",
            "q = a // tl.where(minus_one, tl.full([], 1, d.dtype), d)",
            "return tl.where(minus_one, -a, q)",
        ),
        needs=("safe_divisor",),
    ),
    "remsi": Helper(
        _jit(
            "_remsi(a, b)",
            "d = _safe_divisor(b)",
            "minus_one = d == -1",
            "r = a % tl.where(minus_one, tl.full([], 1, d.dtype), d)",
            "return tl.where(minus_one, r - r, r)",
        ),
        needs=("safe_divisor",),
    ),
    "floordivsi": Helper(
        _jit(
            "_floordivsi(a, b)",
            "d = _safe_divisor(b)",
            "q = _divsi(a, d)",
            "r = _remsi(a, d)",
            "return tl.where((r != 0) & ((r ^ d) < 0), q - 1, q)",
        ),
        needs=("safe_divisor", "divsi", "remsi"),
    ),
    "ceildivsi": Helper(
        _jit(
            "_ceildivsi(a, b)",
            "d = _safe_divisor(b)",
            "q = _divsi(a, d)",
            "r = _remsi(a, d)",
            "return tl.where((r != 0) & ((r ^ d) >= 0), q + 1, q)",
        ),
        needs=("safe_divisor", "divsi", "remsi"),
    ),
    "divui": Helper(_jit("_divui(a, b)", "return a // _safe_divisor(b)"), needs=("safe_divisor",)),
    "remui": Helper(_jit("_remui(a, b)", "return a % _safe_divisor(b)"), needs=("safe_divisor",)),
}

_CONVERSIONS: dict[str, Helper] = {
    "to_bf16": Helper(
        _jit("_to_bf16(x)", "return x.to(tl.float32).to(tl.bfloat16)"),
        _jit(
            "_to_bf16(x)",
            "bits = x.to(tl.float32).to(tl.uint32, bitcast=True)",
            "one = tl.full([], 1, tl.uint32)",
            "sixteen = tl.full([], 16, tl.uint32)",
            "rounded = (bits + tl.full([], 0x7FFF, tl.uint32) + ((bits >> sixteen) & one)) >> sixteen",
            "rounded = tl.where(x != x, tl.full([], 0x7FC0, tl.uint32), rounded)",
            "return rounded.to(tl.uint16).to(tl.bfloat16, bitcast=True)",
        ),
    ),
}

_REDUCTION: dict[str, Helper] = {
    "prod": Helper(_jit("_prod(a, b)", "return a * b")),
    "max_nan": Helper(_jit("_max_nan(a, b)", "return tl.where((a > b) | (a != a), a, b)")),
    "min_nan": Helper(_jit("_min_nan(a, b)", "return tl.where((a < b) | (a != a), a, b)")),
    "argmax": Helper(
        _jit(
            "_argmax(a, ia, b, ib)",
            "a_nan = a != a",
            "b_nan = b != b",
            "wins = (a > b) | (a_nan & ~b_nan)",
            "ties = ((a == b) | (a_nan & b_nan)) & (ia < ib)",
            "keep = wins | ties",
            "return tl.where(keep, a, b), tl.where(keep, ia, ib)",
        )
    ),
    "argmin": Helper(
        _jit(
            "_argmin(a, ia, b, ib)",
            "a_nan = a != a",
            "b_nan = b != b",
            "wins = (a < b) | (a_nan & ~b_nan)",
            "ties = ((a == b) | (a_nan & b_nan)) & (ia < ib)",
            "keep = wins | ties",
            "return tl.where(keep, a, b), tl.where(keep, ia, ib)",
        )
    ),
}

_FAR = "tl.full([], 4611686018427387904, tl.int64)"

# Under the interpreter, row reductions use `tl.reduce` and `tl.associative_scan`
# with the standard library's combine functions, which it computes with numpy
# (custom combine functions run one element at a time there), and never call
# the standard library's `@triton.jit` functions (tl.sum, tl.max, ...): those
# only run in the interpreter when Triton was imported with it enabled.
_SUM = "tl.reduce({}, 1, tl.standard._sum_combine)"
_MAX = "tl.reduce({}, 1, tl.standard._elementwise_max)"
_MIN = "tl.reduce({}, 1, tl.standard._elementwise_min)"
_SIMPLE = {"max": _MAX, "min": _MIN}


def _row_simple(which: str) -> Helper:
    """Sum, or max or min of integers, of each row."""
    gpu = {"sum": "return tl.sum(acc, 1)", "max": "return tl.max(acc, 1)", "min": "return tl.min(acc, 1)"}[which]
    interpreted = {"sum": _SUM, **_SIMPLE}[which].format("acc")
    return Helper(_jit(f"_row_{which}(acc)", gpu), _jit(f"_row_{which}(acc)", f"return {interpreted}"))


def _row_extreme(which: str) -> Helper:
    """NaN-propagating max or min of each row of floats."""
    return Helper(
        _jit(f"_row_{which}_nan(acc)", f"return tl.reduce(acc, 1, _{which}_nan)"),
        _jit(
            f"_row_{which}_nan(acc)",
            f"has_nan = {_MAX.format('(acc != acc).to(tl.int8)')} > 0",
            f"extreme = {_SIMPLE[which].format('acc')}",
            "return tl.where(has_nan, extreme - extreme + float('nan'), extreme)",
        ),
        (f"{which}_nan",),
    )


def _row_arg(which: str) -> Helper:
    """The first position of each row's extreme (NaN first) from per-lane
    best values and positions."""
    return Helper(
        _jit(
            f"_row_arg{which}(acc, position)",
            f"_, found = tl.reduce((acc, position), 1, _arg{which})",
            "return found",
        ),
        _jit(
            f"_row_arg{which}(acc, position)",
            "nan = acc != acc",
            f"has_nan = {_MAX.format('nan.to(tl.int8)')}[:, None] > 0",
            f"best = {_SIMPLE[which].format('acc')}[:, None]",
            "chosen = tl.where(has_nan, nan, acc == best)",
            f"return {_MIN.format(f'tl.where(chosen, position, {_FAR})')}",
        ),
        (f"arg{which}",),
    )


_ROWS: dict[str, Helper] = {
    "row_sum": _row_simple("sum"),
    "row_max": _row_simple("max"),
    "row_min": _row_simple("min"),
    "row_max_nan": _row_extreme("max"),
    "row_min_nan": _row_extreme("min"),
    "row_argmax": _row_arg("max"),
    "row_argmin": _row_arg("min"),
    "row_prod": Helper(
        _jit("_row_prod(acc)", "return tl.reduce(acc, 1, _prod)"),
        _jit(
            "_row_prod(acc)",
            "last = tl.arange(0, acc.shape[1])[None, :] == acc.shape[1] - 1",
            "products = tl.associative_scan(acc, 1, tl.standard._prod_combine)",
            f"return {_SUM.format('tl.where(last, products, 0)')}",
        ),
        ("prod",),
    ),
}

def _running_extreme(which: str) -> Helper:
    """The combination of a running max or min `a` with the later `b`: `b`
    when at least as extreme (the later value wins ties) or NaN (a NaN stays
    until the next)."""
    op = ">=" if which == "max" else "<="
    return Helper(_jit(f"_cum{which}(a, b)", f"return tl.where((b != b) | (b {op} a), b, a)"))


def _running_position(which: str) -> Helper:
    """`_cum{which}` over (value, position) pairs: the position follows the value."""
    op = ">=" if which == "max" else "<="
    return Helper(
        _jit(
            f"_cumarg{which}(a, ia, b, ib)",
            f"take = (b != b) | (b {op} a)",
            "return tl.where(take, b, a), tl.where(take, ib, ia)",
        )
    )


_SCANS: dict[str, Helper] = {
    "scan_sum": Helper(
        _jit("_scan_sum(v)", "return tl.cumsum(v, 1)"),
        _jit("_scan_sum(v)", "return tl.associative_scan(v, 1, tl.standard._sum_combine)"),
    ),
    "scan_prod": Helper(
        _jit("_scan_prod(v)", "return tl.cumprod(v, 1)"),
        _jit("_scan_prod(v)", "return tl.associative_scan(v, 1, tl.standard._prod_combine)"),
    ),
    "cummax": _running_extreme("max"),
    "cummin": _running_extreme("min"),
    "cumargmax": _running_position("max"),
    "cumargmin": _running_position("min"),
    "log_add_exp": Helper(
        _jit(
            "_log_add_exp(a, b)",
            "greater = a > b",
            "larger = tl.where(greater, a, b)",
            "smaller = tl.where(greater, b, a)",
            "same_infinity = (smaller == larger) & (tl.abs(smaller) == float('inf'))",
            "difference = tl.where(same_infinity, 0.0, smaller) - tl.where(same_infinity, 0.0, larger)",
            "return tl.where(same_infinity, larger, _log1p(tl.exp(difference)) + larger)",
        ),
        needs=("log1p",),
    ),
    "any_lane": Helper(
        _jit("_any_lane(m)", "return tl.max(m.to(tl.int32), 0) > 0"),
        _jit("_any_lane(m)", "return tl.reduce(m.to(tl.int32), 0, tl.standard._elementwise_max) > 0"),
    ),
    "last_column": Helper(
        _jit(
            "_last_column(s)",
            "last = tl.arange(0, s.shape[1])[None, :] == s.shape[1] - 1",
            "return tl.sum(tl.where(last, s, 0), 1)[:, None].to(s.dtype)",
        ),
        _jit(
            "_last_column(s)",
            "last = tl.arange(0, s.shape[1])[None, :] == s.shape[1] - 1",
            f"return {_SUM.format('tl.where(last, s, 0)')}[:, None].to(s.dtype)",
        ),
    ),
}

# Under the interpreter a row's sort is a bitonic network written with
# `tl.gather` (the standard library's `tl.sort` and `tl.topk` are
# `@triton.jit` functions): each step compares every lane with the lane
# whose position differs in one bit and keeps the smaller or the larger.
_BITONIC = (
    "i = tl.arange(0, N)[None, :] + tl.full(x.shape, 0, tl.int32)",
    "k = 2",
    "while k <= N:",
    "    j = k // 2",
    "    while j >= 1:",
    "        y = tl.gather(x, i ^ j, 1)",
    "        keeps_smaller = ((i & j) == 0) == ((i & k) == 0)",
    "        x = tl.where(keeps_smaller, tl.minimum(x, y), tl.maximum(x, y))",
    "        j = j // 2",
    "    k = k * 2",
    "return x",
)

_SORTS: dict[str, Helper] = {
    "sort_rows": Helper(
        _jit("_sort_rows(x, N: tl.constexpr)", "return tl.sort(x, 1)"),
        _jit("_sort_rows(x, N: tl.constexpr)", *_BITONIC),
    ),
    "smallest_rows": Helper(
        _jit("_smallest_rows(x, N: tl.constexpr, K: tl.constexpr)", "return ~tl.topk(~x, K, 1)"),
        _jit(
            "_smallest_rows(x, N: tl.constexpr, K: tl.constexpr)",
            "first = tl.arange(0, K)[None, :] + tl.full([x.shape[0], K], 0, tl.int32)",
            "return tl.gather(_sort_rows(x, N), first, 1)",
        ),
        needs=("sort_rows",),
    ),
}

HELPERS: dict[str, Helper] = {**_MATH, **_INTEGER, **_CONVERSIONS, **_REDUCTION, **_ROWS, **_SCANS, **_SORTS}
"""Every helper, by the name it is called with less its leading underscore."""

LIBDEVICE_MATH = tuple(_MATH)
"""The math functions that are helpers rather than `tl.math` calls."""


def helper_source(names: Iterable[str], interpret: bool) -> str:
    """The text of the helpers `names` (with a leading underscore or not) and of
    those they call, each once, callees first."""
    return "\n\n".join(HELPERS[name].body(interpret) for name in _with_callees(names))


def _with_callees(names: Iterable[str]) -> list[str]:
    """The helpers `names` (without their leading underscore) and those they
    call, each once, callees first."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        name = name.removeprefix("_")
        if name in ordered:
            return
        helper = HELPERS[name]
        for callee in helper.needs:
            visit(callee)
        ordered.append(name)

    for name in sorted(n.removeprefix("_") for n in names):
        visit(name)
    return ordered


def uses_libdevice(names: Iterable[str], interpret: bool) -> bool:
    """Whether the text of the helpers, or of a helper they call, calls `libdevice`."""
    return not interpret and any("libdevice." in HELPERS[name].gpu for name in _with_callees(names))
