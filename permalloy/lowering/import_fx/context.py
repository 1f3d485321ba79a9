"""
The state of one import: the block being filled, the values of the FX nodes
imported so far, the size symbols, and helpers that converters share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from torch import fx
from torch.utils._sympy import functions as torch_functions
from xdsl.ir import Attribute, Block, Operation, SSAValue

from permalloy import dtypes
from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import CeilDiv, FloorDiv
from permalloy.lowering.import_fx.errors import GraphImportError
from permalloy.lowering.index_algebra import always_nonnegative, row_major_strides
from permalloy.lowering.import_fx.symbols import SymbolTable

Scalar = bool | int | float | sympy.Expr
"""A non-tensor number argument: Python's, or a size expression (a SymInt)."""


@dataclass
class ImportContext:
    """What converters read and write while one FX graph is imported."""

    block: Block
    symbols: SymbolTable = field(default_factory=SymbolTable)
    values: dict[fx.Node, Any] = field(default_factory=dict)
    """The value of each imported node: an SSA value for a tensor, a tuple for
    several results, a number or a size expression for a scalar."""
    fallback_ops: list[str] = field(default_factory=list)
    fallback_reasons: list[str] = field(default_factory=list)
    """Why each op of `fallback_ops` fell back."""
    declined: str | None = None
    """Why the converter of the node being imported declined it (`decline`)."""
    extern_ops: list[str] = field(default_factory=list)
    output_examples: list[Any] = field(default_factory=list)
    """The example value of each tensor result, with the strides eager gives it
    where they differ from the example's (else None), for its layout."""
    node: fx.Node | None = None
    """The node being imported, for error messages."""

    # -- building -----------------------------------------------------------

    def emit(self, op: Operation) -> SSAValue:
        """Append an op to the block; its first result."""
        self.block.add_op(op)
        return op.results[0]

    def decline(self, reason: str) -> None:
        """A converter's refusal of the node being imported, which then becomes
        `ptensor.fallback`: `return ctx.decline("why")`."""
        self.declined = reason

    def error(self, message: str) -> GraphImportError:
        return GraphImportError(message, self.node.name if self.node else None)

    # -- types --------------------------------------------------------------

    def element_type(self, dtype: torch.dtype) -> Attribute:
        try:
            return dtypes.element_type(dtype)
        except dtypes.UnsupportedDtypeError as error:
            raise self.error(str(error)) from None

    def shape(self, sizes: Sequence[int | torch.SymInt]) -> list[sympy.Expr]:
        return [self.symbols.convert(s) for s in sizes]

    def type_of(self, value: torch.Tensor) -> TensorType:
        """The ptensor type of a (fake) tensor."""
        return TensorType(self.shape(value.shape), self.element_type(value.dtype))

    def result_type(self, node: fx.Node, index: int | None = None) -> TensorType:
        """The ptensor type of a node's tensor result (or of result `index`)."""
        value = node.meta["val"]
        if index is not None:
            value = value[index]
        return self.type_of(value)

    @staticmethod
    def meta(arg: Any) -> Any:
        """The example value of a node argument: a FakeTensor, SymInt or number."""
        return arg.meta.get("val") if isinstance(arg, fx.Node) else arg

    # -- arguments ----------------------------------------------------------

    def tensor(self, arg: Any) -> SSAValue:
        """The SSA value of a tensor argument."""
        value = self.values.get(arg) if isinstance(arg, fx.Node) else None
        if not isinstance(value, SSAValue):
            raise self.error(f"expected a tensor argument, got {arg!r}")
        return value

    def scalar(self, arg: Any) -> Scalar:
        """A number argument, with SymInts as size expressions."""
        if isinstance(arg, fx.Node):
            arg = self.values[arg]
        if isinstance(arg, torch.SymFloat | torch.SymBool):
            if arg.node.is_constant():
                return arg.node.maybe_as_float() if isinstance(arg, torch.SymFloat) else bool(arg)
            raise self.error(
                f"the symbolic scalar '{arg}' ({type(arg).__name__}) cannot be "
                "represented: ptensor numbers are constants or integer size expressions"
            )
        if isinstance(arg, torch.SymInt):
            arg = self.symbols.convert(arg)
        if isinstance(arg, sympy.Basic):
            return int(arg) if arg.is_Integer else arg
        return arg

    def sizes(self, arg: Sequence[Any]) -> list[Scalar]:
        """A list of sizes or indices, each an int or a size expression."""
        return [self.scalar(a) for a in arg]

    # -- values -------------------------------------------------------------

    def cast(self, value: SSAValue, element_type: Attribute) -> SSAValue:
        """`value` converted to `element_type` (itself when it already is)."""
        source = ptensor.tensor_type(value)
        if source.element_type == element_type:
            return value
        return self.emit(ptensor.CastOp(value, source.with_element_type(element_type)))

    def conform(self, value: SSAValue, sizes: Sequence[sympy.Expr]) -> SSAValue:
        """
        `value`, broadcastable to `sizes` (right-aligned) as the IR proves it:
        where a size of `value` is written differently from the result's and
        equal to it, or to 1, only under Dynamo's guards (`x[:, 5::2]` of a
        dynamic size that is 1 there), a `ptensor.as_strided` view of it with
        the result's size, or 1.
        """
        source = ptensor.tensor_type(value)
        offset = len(sizes) - source.rank
        if offset < 0:
            return value
        wanted = list(source.sizes)
        for dim, size in enumerate(source.sizes):
            target = sympy.sympify(sizes[offset + dim])
            if size == 1 or ptensor.sizes_equal(size, target):
                continue
            if self.symbols.equal_under_guards(size, target):
                wanted[dim] = target
            elif self.symbols.equal_under_guards(size, sympy.Integer(1)):
                wanted[dim] = sympy.Integer(1)
            else:
                return value
        if wanted == list(source.sizes):
            return value
        strides = row_major_strides(source.sizes)
        result = TensorType(wanted, source.element_type)
        return self.emit(ptensor.AsStridedOp(value, strides, 0, result))

    def full(self, number: Scalar, element_type: Attribute) -> SSAValue:
        """A 0-d tensor holding a number (or a size expression's value)."""
        if isinstance(number, sympy.Basic):
            return self.cast(self.size_value(number), element_type)
        return self.emit(ptensor.FullOp(number, TensorType([], element_type)))

    def size_value(self, expr: sympy.Expr) -> SSAValue:
        """
        A 0-d i64 tensor holding the value of a size expression: element `e` of
        `iota` over `[e + 1]` (negated when `e` is never positive).
        """
        bounds = self.symbols.lower_bounds()
        negate = not _never_negative(expr, bounds) and _never_negative(-expr, bounds)
        magnitude = -expr if negate else expr
        if not _never_negative(magnitude, bounds):
            raise self.error(
                f"cannot materialize size expression '{expr}' of unknown sign"
            )
        i64 = self.element_type(torch.int64)
        iota = self.emit(ptensor.IotaOp(0, 1, TensorType([magnitude + 1], i64)))
        value = self.emit(ptensor.SelectOp(iota, 0, magnitude, TensorType([], i64)))
        if negate:
            value = self.emit(
                ptensor.UnaryOp(ptensor.UnaryKind.NEG, value, TensorType([], i64))
            )
        return value

    def operand(self, arg: Any, element_type: Attribute) -> SSAValue:
        """A tensor or number argument as a tensor of `element_type`."""
        if isinstance(arg, fx.Node) and isinstance(self.values.get(arg), SSAValue):
            return self.cast(self.tensor(arg), element_type)
        value = self.values.get(arg) if isinstance(arg, fx.Node) else arg
        if isinstance(value, torch.SymFloat) and not value.node.is_constant():
            return self.cast(self.float_value(value.node.expr), element_type)
        return self.full(self.scalar(arg), element_type)

    def float_value(self, expr: sympy.Basic) -> SSAValue:
        """
        A 0-d f64 tensor computing a float expression of sizes (a SymFloat's,
        such as the `n / (n - 1)` of an unbiased variance): sizes through
        `size_value`, arithmetic as ptensor ops.
        """
        f64 = self.element_type(torch.float64)
        scalar = TensorType([], f64)
        if expr.is_Number:
            return self.emit(ptensor.FullOp(float(expr), scalar))
        if isinstance(expr, torch_functions.ToFloat):
            return self.float_value(expr.args[0])
        if isinstance(expr, torch_functions.FloatTrueDiv | torch_functions.IntTrueDiv):
            kind = ptensor.BinaryKind.DIV
            parts = [self.float_value(a) for a in expr.args]
            return self.emit(ptensor.BinaryOp(kind, parts[0], parts[1], scalar))
        if isinstance(expr, sympy.Pow | torch_functions.FloatPow) and expr.args[1].is_Integer:
            exponent = int(expr.args[1])
            if exponent > 0:
                base = self.float_value(expr.args[0])
                result = base
                for _ in range(exponent - 1):
                    result = self.emit(ptensor.BinaryOp(ptensor.BinaryKind.MUL, result, base, scalar))
                return result
        if expr.is_Add or expr.is_Mul:
            if all(a.is_integer for a in expr.args):
                return self.cast(self.size_value(self.symbols.convert(expr)), f64)
            kind = ptensor.BinaryKind.ADD if expr.is_Add else ptensor.BinaryKind.MUL
            parts = [self.float_value(a) for a in expr.args]
            result = parts[0]
            for part in parts[1:]:
                result = self.emit(ptensor.BinaryOp(kind, result, part, scalar))
            return result
        try:
            size = self.symbols.convert(expr)
        except GraphImportError:
            size = None
        if size is None or not bool(getattr(expr, "is_integer", False)):
            raise self.error(
                f"the symbolic number '{expr}' cannot be computed: supported are "
                "sizes and their +, *, integer powers and true divisions"
            )
        return self.cast(self.size_value(size), f64)


def _never_negative(expr: sympy.Expr, lower_bounds: dict[sympy.Symbol, int]) -> bool:
    """Whether a size expression is non-negative for every value of its
    symbols at or above their lower bounds (sympy's assumptions, or the index
    algebra's rules, which know that `floordiv` and `mod` of sizes are
    non-negative), writing each symbol as its bound plus a non-negative rest."""
    if bool(expr.is_nonnegative) or always_nonnegative(expr, {}):
        return True
    shifted = {
        s: bound - 1 + s for s, bound in lower_bounds.items() if bound > 1 and s in expr.free_symbols
    }
    if not shifted:
        return False
    moved = sympy.expand(expr.xreplace(shifted))
    if bool(moved.is_nonnegative) or always_nonnegative(moved, {}):
        return True
    low = _lower_bound(expr, lower_bounds)
    return low is not None and low >= 0


def _lower_bound(expr: sympy.Expr, lower_bounds: dict[sympy.Symbol, int]) -> sympy.Expr | int | None:
    """A lower bound of a size expression over symbols at or above their
    lower bounds (a size symbol's is 0 where none is given), by interval
    arithmetic: sums, products, floor and ceiling divisions by positive
    constants, and min and max; None where it finds none. It knows that
    `s floordiv 2 - 1` is non-negative for `s >= 2`, which rewriting `s` as
    `1 + s'` does not show."""
    interval = _interval(sympy.sympify(expr), lower_bounds)
    return None if interval is None else interval[0]


_INFINITY = sympy.oo


def _interval(e: sympy.Expr, lower_bounds: dict[sympy.Symbol, int]) -> tuple[Any, Any] | None:
    """`(low, high)` bounding `e`, with `sympy.oo` for no bound; None where the
    expression is not one `_lower_bound` knows."""
    if e.is_Integer:
        return (int(e), int(e))
    if e.is_Symbol:
        return (lower_bounds.get(e, 0), _INFINITY) if e.is_nonnegative else None
    parts = [_interval(a, lower_bounds) for a in e.args]
    if any(p is None for p in parts):
        return None
    if e.is_Add:
        return (sum(p[0] for p in parts), sum(p[1] for p in parts))
    if e.is_Mul:
        # a constant coefficient of either sign, times non-negative factors
        coefficient, factors = (int(e.args[0]), parts[1:]) if e.args[0].is_Integer else (1, parts)
        if any(low < 0 for low, _ in factors):
            return None
        low = sympy.prod([low for low, _ in factors])
        high = 0 if any(high == 0 for _, high in factors) else sympy.prod([high for _, high in factors])
        return (coefficient * low, coefficient * high) if coefficient >= 0 else (coefficient * high, coefficient * low)
    if isinstance(e, sympy.Min | sympy.Max):
        pick = min if isinstance(e, sympy.Min) else max
        return (pick(p[0] for p in parts), pick(p[1] for p in parts))
    if isinstance(e, FloorDiv | CeilDiv) and e.args[1].is_Integer and int(e.args[1]) > 0:
        divide = sympy.floor if isinstance(e, FloorDiv) else sympy.ceiling
        (low, high), divisor = parts[0], int(e.args[1])
        return tuple(b if b in (_INFINITY, -_INFINITY) else int(divide(sympy.Rational(b, divisor))) for b in (low, high))
    return None
