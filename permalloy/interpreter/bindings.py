"""
Values of size symbols while the interpreter runs a function.

Tensor types name their sizes with integer expressions over size symbols
(`!ptensor.tensor<[s0, 2 * s1], f32>`). When a function is called, its symbols
are bound from the shapes of the actual arguments (and from index arguments
that carry a `ptensor.symbol` attribute); every size an op needs is then the
value of its expression under those bindings. Each function call binds its
symbols in a scope of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any
from contextlib import contextmanager
from dataclasses import dataclass

import sympy
import torch
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError

from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import format_expr
from permalloy.dtypes import torch_dtype


class ShapeMismatchError(InterpretationError):
    """A run-time value contradicts the type the IR declares for it."""


class UnboundSymbolError(InterpretationError):
    """A size expression needs a symbol that no argument has bound."""


@dataclass(frozen=True)
class SizeConstraint:
    """An actual size that a declared size expression must equal."""

    expr: sympy.Expr
    actual: int
    where: str
    """Where the size comes from, for messages: `argument 1, dimension 0`."""


class SizeBindings:
    """
    The values of size symbols, in a stack of scopes (one per function call).

    Binding is by matching: a declared size that is a lone unbound symbol binds
    it; a declared size with one unbound symbol is solved for it; a declared
    size with no unbound symbol is checked against the actual size.
    """

    def __init__(self) -> None:
        self._scopes: list[dict[sympy.Symbol, int]] = [{}]

    @contextmanager
    def scope(self) -> Iterator[None]:
        """A fresh scope of bindings, discarded on exit."""
        self._scopes.append({})
        try:
            yield
        finally:
            self._scopes.pop()

    @property
    def current(self) -> dict[sympy.Symbol, int]:
        """The bindings of the innermost scope."""
        return self._scopes[-1]

    def value(self, expr: sympy.Expr | int) -> int:
        """The integer value of a size expression under the current bindings."""
        if isinstance(expr, int):
            return expr
        if expr.is_Integer:
            return int(expr)
        result = self._substitute(sympy.sympify(expr))
        if not result.is_Integer:
            unbound = ", ".join(sorted(s.name for s in result.free_symbols))
            raise UnboundSymbolError(
                f"size '{format_expr(expr)}' needs unbound symbol(s) {unbound}; "
                "symbols are bound from the function's arguments"
            )
        return int(result)

    def values(self, exprs: Sequence[sympy.Expr | int]) -> list[int]:
        """The integer values of several size expressions."""
        return [self.value(e) for e in exprs]

    def shape(self, tensor_type: TensorType) -> list[int]:
        """The concrete shape of a tensor type."""
        return self.values(tensor_type.sizes)

    def match(self, constraints: Sequence[SizeConstraint]) -> None:
        """
        Bind the unbound symbols of the constraints and check all of them.

        Constraints are taken in any order: lone symbols bind first, then sizes
        with one unbound symbol are solved for it; a size with more unbound
        symbols waits until others have bound enough of them.
        """
        pending = list(constraints)
        while pending:
            remaining = [c for c in pending if not self._try_match(c, solve=False)]
            if len(remaining) == len(pending):
                remaining = [c for c in pending if not self._try_match(c, solve=True)]
            if len(remaining) == len(pending):
                first = remaining[0]
                raise UnboundSymbolError(
                    f"{first.where}: cannot bind the symbols of size "
                    f"'{format_expr(first.expr)}' from the actual size {first.actual}"
                )
            pending = remaining

    def match_tensor(self, declared: TensorType, value: object, where: str) -> None:
        """Check a tensor's rank, dtype and sizes against a type, binding symbols."""
        self.match(tensor_constraints(declared, value, where))

    def _substitute(self, expr: sympy.Expr) -> sympy.Expr:
        return expr.xreplace({s: sympy.Integer(v) for s, v in self.current.items()})

    def _try_match(self, constraint: SizeConstraint, solve: bool) -> bool:
        """
        Match one constraint; False when it has to wait: two or more unbound
        symbols, or one that only solving an equation would bind and `solve`
        is off.
        """
        if constraint.expr.is_Integer:
            self._check(constraint, constraint.expr)
            return True
        value = self._substitute(constraint.expr)
        unbound = sorted(value.free_symbols, key=lambda s: s.name)
        if not unbound:
            self._check(constraint, value)
            return True
        if len(unbound) > 1 or not (solve or value == unbound[0]):
            return False
        symbol = unbound[0]
        solution = self._solve(value, symbol, constraint)
        self._bind(symbol, solution, constraint)
        self._check(constraint, self._substitute(constraint.expr))
        return True

    def _solve(
        self, value: sympy.Expr, symbol: sympy.Symbol, constraint: SizeConstraint
    ) -> int:
        if value == symbol:
            return constraint.actual
        try:
            candidates = sympy.solve(sympy.Eq(value, constraint.actual), symbol)
        except NotImplementedError:
            raise UnboundSymbolError(
                f"{constraint.where}: cannot solve the declared size "
                f"'{format_expr(constraint.expr)}' = {constraint.actual} for "
                f"{symbol.name}; bind it from another argument"
            ) from None
        solutions = [s for s in candidates if s.is_Integer]
        if not solutions:
            raise ShapeMismatchError(
                f"{constraint.where}: size {constraint.actual} contradicts the "
                f"declared size '{format_expr(constraint.expr)}': no integer "
                f"{symbol.name} gives it"
            )
        return int(solutions[0])

    def _bind(self, symbol: sympy.Symbol, value: int, constraint: SizeConstraint):
        if value < 1:
            raise ShapeMismatchError(
                f"{constraint.where}: size {constraint.actual} would bind size "
                f"symbol {symbol.name} to {value}, but size symbols are positive"
            )
        self.current[symbol] = value

    def _check(self, constraint: SizeConstraint, value: sympy.Expr) -> None:
        if int(value) == constraint.actual:
            return
        expr = constraint.expr
        message = (
            f"{constraint.where}: size {constraint.actual} contradicts the declared "
            f"size {format_expr(expr)}"
        )
        if not expr.is_Integer:
            known = ", ".join(
                f"{s.name} = {self.current[s]}"
                for s in sorted(expr.free_symbols, key=lambda s: s.name)
            )
            message += f", which is {int(value)} with {known}"
        raise ShapeMismatchError(message)


def tensor_constraints(
    declared: TensorType, value: object, where: str
) -> list[SizeConstraint]:
    """
    Check a value's kind, rank and dtype against a tensor type, and give the
    constraints its sizes put on the type's size expressions.
    """
    if not isinstance(value, torch.Tensor):
        raise ShapeMismatchError(
            f"{where}: expected a tensor of type {declared}, got "
            f"{type(value).__name__}"
        )
    if value.dim() != declared.rank:
        raise ShapeMismatchError(
            f"{where}: rank {value.dim()} (shape {list(value.shape)}) contradicts "
            f"the declared type {declared}"
        )
    dtype = torch_dtype(declared.element_type)
    if value.dtype != dtype:
        raise ShapeMismatchError(
            f"{where}: dtype {value.dtype} contradicts the declared type "
            f"{declared} ({dtype})"
        )
    return [
        SizeConstraint(expr, size, f"{where}, dimension {i}")
        for i, (expr, size) in enumerate(zip(declared.sizes, value.shape))
    ]


def check_values(
    bindings: SizeBindings,
    declared: Sequence[Attribute],
    values: Sequence[Any],
    where: str,
) -> None:
    """
    Check values against their declared types (tensor types only), binding the
    symbols they introduce. `where` has a `{}` for the position.
    """
    constraints: list[SizeConstraint] = []
    for i, (declared_type, value) in enumerate(zip(declared, values, strict=True)):
        if isinstance(declared_type, TensorType):
            constraints.extend(
                tensor_constraints(declared_type, value, where.format(i))
            )
    bindings.match(constraints)
