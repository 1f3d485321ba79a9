"""
The `sym` dialect: integer expressions over size symbols and loop indices.

Sizes of tensors and index expressions of loads are both integer expressions.
They are held as sympy expressions inside one attribute, `#sym.expr<...>`, so that
passes can simplify and compare them with sympy, and they print and parse with a
small, MLIR-affine-like grammar:

    expr   := term (('+' | '-') term)*
    term   := factor (('*' | 'floordiv' | 'ceildiv' | 'mod') factor)*
    factor := integer | name | '-' factor | '(' expr ')'
            | ('min' | 'max') '(' expr (',' expr)* ')'

Names carry their meaning in their first letter, which also fixes the sympy
assumptions attached to them:

    s0, s1, ...   size symbols (positive integers), from Dynamo's SymInts
    d0, d1, ...   loop indices of the parallel (output) domain (non-negative)
    r0, r1, ...   loop indices of a reduction domain (non-negative)
    v0, v1, ...   index values computed in a loop body (integers), such as the
                  entries of an index tensor in a gather

Examples: `#sym.expr<d0 * 8 + d1>`, `#sym.expr<(s0 + 1) floordiv 2>`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import sympy
from xdsl.ir import Data, Dialect
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

_NAME_PATTERN = re.compile(r"^([sdrv])(\d+)$")

_ASSUMPTIONS = {
    "s": {"integer": True, "positive": True},
    "d": {"integer": True, "nonnegative": True},
    "r": {"integer": True, "nonnegative": True},
    "v": {"integer": True},
}

SYMBOL_KINDS = {
    "s": "size symbol",
    "d": "parallel loop index",
    "r": "reduction loop index",
    "v": "index value",
}


def symbol(name: str) -> sympy.Symbol:
    """The sympy symbol for a name such as `s0` or `d1`, with its assumptions."""
    match = _NAME_PATTERN.match(name)
    if match is None:
        raise ValueError(
            f"'{name}' is not a valid symbol name: expected a letter among "
            f"{', '.join(sorted(_ASSUMPTIONS))} followed by digits (s0, d1, r0, v0)"
        )
    return sympy.Symbol(name, **_ASSUMPTIONS[match.group(1)])


def parallel_index(i: int) -> sympy.Symbol:
    """The i-th index of a parallel (output) domain, `d<i>`."""
    return symbol(f"d{i}")


def reduction_index(i: int) -> sympy.Symbol:
    """The i-th index of a reduction domain, `r<i>`."""
    return symbol(f"r{i}")


def index_value(i: int) -> sympy.Symbol:
    """The i-th index value operand of a load, `v<i>`."""
    return symbol(f"v{i}")


def symbol_kind(sym: sympy.Symbol) -> str:
    """The first letter of a symbol's name: 's', 'd', 'r' or 'v'."""
    return sym.name[0]


def symbol_number(sym: sympy.Symbol) -> int:
    """The number in a symbol's name: 3 for `d3`."""
    return int(sym.name[1:])


class FloorDiv(sympy.Function):
    """Integer division rounding towards negative infinity: `a floordiv b`."""

    is_integer = True

    @classmethod
    def eval(cls, base: sympy.Expr, divisor: sympy.Expr):  # type: ignore[override]
        if divisor == 0:
            raise ZeroDivisionError("floordiv by zero in an index expression")
        if base.is_Integer and divisor.is_Integer:
            return sympy.Integer(int(base) // int(divisor))
        if divisor == 1:
            return base
        if base == 0:
            return sympy.Integer(0)
        if divisor.is_Integer:
            return _exact_quotient(base, int(divisor))
        quotient = sympy.cancel(base / divisor)
        if quotient.is_integer:
            return quotient
        return None


class IntegerMod(sympy.Mod):
    """`a mod b` of index expressions: sympy's `Mod`, but for the product
    of a factor and a `mod` by the same divisor, which sympy 1.14 evaluates
    as the product itself (`Mod(2 * Mod(x, 7), 7)` as `2 * Mod(x, 7)`, 12 at
    `x = 6` where the remainder is 5); here it is the remainder of the
    factor times the inner value (`Mod(2 * x, 7)`). Every `mod` permalloy
    builds is one, so that substituting into it evaluates it so too."""

    @classmethod
    def eval(cls, p: sympy.Expr, q: sympy.Expr):  # type: ignore[override]
        if isinstance(p, sympy.Mul) and any(isinstance(a, sympy.Mod) and a.args[1] == q for a in p.args):
            inner = sympy.Mul(*(a.args[0] if isinstance(a, sympy.Mod) and a.args[1] == q else a for a in p.args))
            return cls(inner, q)
        return super().eval(p, q)


def _exact_quotient(base: sympy.Expr, divisor: int) -> sympy.Expr | None:
    """`base / divisor` where every term of `base` (index expressions are
    sums of integer-valued terms) has a coefficient `divisor` divides, else
    None: what cancelling and asking sympy whether the quotient is an integer
    finds for an integer divisor, without either (the two cost most of a
    reshape's lowering)."""
    split = split_multiples(base, divisor)
    if split is None:
        quotient = sympy.cancel(base / divisor)
        return quotient if quotient.is_integer else None
    quotient, rest = split
    return quotient if rest == 0 else None


def split_multiples(base: sympy.Expr, divisor: int) -> tuple[sympy.Expr, sympy.Expr] | None:
    """`base` as `divisor * quotient + rest`, the terms whose integer
    coefficient `divisor` divides making the quotient; None where a term of
    `base` is not integer-valued."""
    terms = sympy.sympify(base).as_coefficients_dict()
    if not all(term.is_integer for term in terms):
        return None
    multiples = {t: c for t, c in terms.items() if c.is_Integer and int(c) % divisor == 0}
    quotient = sympy.Add(*(t * (int(c) // divisor) for t, c in multiples.items()))
    rest = sympy.Add(*(t * c for t, c in terms.items() if t not in multiples))
    return quotient, rest


class CeilDiv(sympy.Function):
    """Integer division rounding towards positive infinity: `a ceildiv b`."""

    is_integer = True

    @classmethod
    def eval(cls, base: sympy.Expr, divisor: sympy.Expr):  # type: ignore[override]
        if divisor == 0:
            raise ZeroDivisionError("ceildiv by zero in an index expression")
        if base.is_Integer and divisor.is_Integer:
            return sympy.Integer(-(-int(base) // int(divisor)))
        if divisor == 1:
            return base
        quotient = sympy.cancel(base / divisor)
        if quotient.is_integer:
            return quotient
        return None


def _is_symbol_start(name: str) -> bool:
    return _NAME_PATTERN.match(name) is not None


def parse_expr(parser: AttrParser) -> sympy.Expr:
    """Parse one integer expression with the grammar of this module's docstring."""
    result = _parse_term(parser)
    while True:
        if parser.parse_optional_punctuation("+") is not None:
            result = result + _parse_term(parser)
        elif parser.parse_optional_punctuation("-") is not None:
            result = result - _parse_term(parser)
        else:
            return result if isinstance(result, sympy.Expr) else sympy.sympify(result)


def _parse_term(parser: AttrParser) -> sympy.Expr:
    result = _parse_factor(parser)
    while True:
        if parser.parse_optional_punctuation("*") is not None:
            result = result * _parse_factor(parser)
        elif parser.parse_optional_keyword("floordiv") is not None:
            result = FloorDiv(result, _parse_factor(parser))
        elif parser.parse_optional_keyword("ceildiv") is not None:
            result = CeilDiv(result, _parse_factor(parser))
        elif parser.parse_optional_keyword("mod") is not None:
            result = IntegerMod(result, _parse_factor(parser))
        else:
            return result


def _parse_factor(parser: AttrParser) -> sympy.Expr:
    if parser.parse_optional_punctuation("-") is not None:
        return -_parse_factor(parser)
    if (value := parser.parse_optional_integer(allow_boolean=False)) is not None:
        return sympy.Integer(value)
    if parser.parse_optional_punctuation("(") is not None:
        inner = parse_expr(parser)
        parser.parse_punctuation(")", " to close a parenthesized expression")
        return inner
    for function_name, function in (("min", sympy.Min), ("max", sympy.Max)):
        if parser.parse_optional_keyword(function_name) is not None:
            arguments = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, lambda: parse_expr(parser)
            )
            return function(*arguments)
    name = parser.parse_optional_identifier()
    if name is None:
        parser.raise_error(
            "expected an integer expression (an integer, a symbol such as s0 or "
            "d0, '-', '(' or min/max)"
        )
    if not _is_symbol_start(name):
        parser.raise_error(
            f"unknown name '{name}' in an integer expression: names are s<N> "
            "(size symbols), d<N> (parallel indices), r<N> (reduction indices) "
            "or v<N> (index values)"
        )
    return symbol(name)


def parse_expr_list(parser: AttrParser) -> list[sympy.Expr]:
    """Parse `[e0, e1, ...]`."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parse_expr(parser)
    )


# Precedence levels for printing: a sub-expression is parenthesized when its
# level is lower than its context requires.
_SUM, _PRODUCT, _ATOM = 0, 1, 2


def format_expr(expr: sympy.Expr | int) -> str:
    """Print an integer expression in the grammar `parse_expr` reads."""
    text, _ = _format(sympy.sympify(expr))
    return text


def format_expr_list(exprs: Iterable[sympy.Expr | int]) -> str:
    """Print `[e0, e1, ...]`."""
    return "[" + ", ".join(format_expr(e) for e in exprs) + "]"


def _wrap(item: tuple[str, int], level: int) -> str:
    text, item_level = item
    return f"({text})" if item_level < level else text


def _format(expr: sympy.Expr) -> tuple[str, int]:
    if expr.is_Integer:
        value = int(expr)
        return (str(value), _ATOM) if value >= 0 else (str(value), _SUM)
    if expr.is_Symbol:
        return expr.name, _ATOM
    if expr.is_Add:
        return _format_sum(expr), _SUM
    if expr.is_Mul:
        return _format_product(expr)
    if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) > 0:
        base = _wrap(_format(expr.base), _ATOM)
        return " * ".join([base] * int(expr.exp)), _PRODUCT
    if isinstance(expr, FloorDiv | CeilDiv | sympy.Mod):
        keyword = "mod" if isinstance(expr, sympy.Mod) else {FloorDiv: "floordiv", CeilDiv: "ceildiv"}[type(expr)]
        lhs = _wrap(_format(expr.args[0]), _PRODUCT)
        rhs = _wrap(_format(expr.args[1]), _ATOM)
        return f"{lhs} {keyword} {rhs}", _PRODUCT
    if isinstance(expr, sympy.Min | sympy.Max):
        name = "min" if isinstance(expr, sympy.Min) else "max"
        arguments = sorted((format_expr(a) for a in expr.args))
        return f"{name}({', '.join(arguments)})", _ATOM
    raise ValueError(f"'{expr}' is not an integer expression that IR can hold")


def _format_sum(expr: sympy.Expr) -> str:
    terms = sorted(expr.args, key=_term_order)
    pieces: list[str] = []
    for term in terms:
        coefficient, rest = term.as_coeff_Mul()
        negative = coefficient.is_negative
        magnitude = -term if negative else term
        text = _wrap(_format(magnitude), _PRODUCT)
        if not pieces:
            # A leading minus binds to the first operand: `-(s0 mod 16)`, not `-s0 mod 16`.
            text = f"({text})" if negative and _has_division(magnitude) and not text.startswith("(") else text
            pieces.append(f"-{text}" if negative else text)
        else:
            pieces.append(f"- {text}" if negative else f"+ {text}")
    return " ".join(pieces)


def _has_division(term: sympy.Expr) -> bool:
    """Whether a term is, or multiplies, a `floordiv`, `ceildiv` or `mod`."""
    factors = term.args if term.is_Mul else (term,)
    return any(isinstance(f, FloorDiv | CeilDiv | sympy.Mod) for f in factors)


def _term_order(term: sympy.Expr) -> tuple[int, str]:
    # Constants last, then by the printed form of the term without its sign.
    coefficient, rest = term.as_coeff_Mul()
    if rest == 1:
        return (1, "")
    return (0, format_expr(rest))


def _format_product(expr: sympy.Expr) -> tuple[str, int]:
    coefficient, rest = expr.as_coeff_Mul()
    if not coefficient.is_Integer:
        raise ValueError(f"'{expr}' has a non-integer coefficient")
    if coefficient == -1:
        return "-" + _wrap(_format(rest), _ATOM), _SUM
    factors = sorted(
        (_wrap(_format(f), _ATOM) for f in sympy.Mul.make_args(rest)),
    )
    if coefficient != 1:
        factors.append(_wrap(_format(coefficient), _ATOM))
    return " * ".join(factors), _PRODUCT


def expr_symbols(expr: sympy.Expr) -> set[sympy.Symbol]:
    """The symbols an expression mentions."""
    return set(expr.free_symbols)  # type: ignore[arg-type]


def as_int(expr: sympy.Expr) -> int | None:
    """The value of a constant expression, or None for a symbolic one."""
    return int(expr) if expr.is_Integer else None


def product(exprs: Sequence[sympy.Expr | int]) -> sympy.Expr:
    """The product of sizes: the number of elements of a shape."""
    result = sympy.Integer(1)
    for e in exprs:
        result = result * e
    return sympy.sympify(result)


@irdl_attr_definition
class SymExprAttr(Data[sympy.Expr]):
    """
    An integer expression over size symbols, loop indices and index values.

    `#sym.expr<d0 * 8 + d1>`. The expression is held as a sympy expression, so
    equal expressions in different spellings are one attribute once simplified.
    """

    name = "sym.expr"

    def __init__(self, expr: sympy.Expr | int):
        super().__init__(sympy.sympify(expr))

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> sympy.Expr:
        with parser.in_angle_brackets():
            return parse_expr(parser)

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(format_expr(self.data))

    @property
    def expr(self) -> sympy.Expr:
        return self.data


Sym = Dialect("sym", [], [SymExprAttr])
