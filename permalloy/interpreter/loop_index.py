"""
The iteration domain of a loop op, and index expressions evaluated over it.

A domain of parallel sizes `[P0, ..., Pm]` and reduction sizes `[R0, ..., Rk]`
is the tensor shape `[P0, ..., Pm, R0, ..., Rk]`. Each loop index is an int64
`arange` shaped to broadcast along its own dimension of that shape: `d1` has
shape `[1, P1, 1, ...]`, `r0` has its size at position `m + 1`. An integer
expression over the indices, the size symbols and the index values of a load
evaluates to an int64 tensor that broadcasts to the domain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import sympy
import torch
from xdsl.utils.exceptions import InterpretationError

from permalloy.dialects.sym import CeilDiv, FloorDiv, IntegerMod, format_expr, symbol_kind, symbol_number
from permalloy.interpreter.bindings import SizeBindings

Tensor = torch.Tensor
Value = Tensor | int


@dataclass
class Domain:
    """The shape of an iteration domain and its loop index tensors."""

    parallel: tuple[int, ...]
    reduction: tuple[int, ...] = ()
    _indices: dict[str, Tensor] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        shape = self.shape
        names = [f"d{i}" for i in range(len(self.parallel))]
        names += [f"r{j}" for j in range(len(self.reduction))]
        for position, (name, size) in enumerate(zip(names, shape)):
            view = [1] * len(shape)
            view[position] = size
            self._indices[name] = torch.arange(size, dtype=torch.int64).view(view)

    @property
    def shape(self) -> tuple[int, ...]:
        """The parallel sizes followed by the reduction sizes."""
        return (*self.parallel, *self.reduction)

    def index(self, name: str) -> Tensor:
        """The tensor of loop index `d<i>` or `r<j>`."""
        if name not in self._indices:
            raise InterpretationError(
                f"loop index {name} is not bound in a domain of parallel sizes "
                f"{list(self.parallel)} and reduction sizes {list(self.reduction)}"
            )
        return self._indices[name]


@dataclass(frozen=True)
class IndexEvaluator:
    """Evaluates integer expressions at every point of a domain."""

    domain: Domain
    bindings: SizeBindings
    index_values: Sequence[Tensor] = ()

    def evaluate(self, expr: sympy.Expr) -> Tensor:
        """The int64 tensor of `expr`'s values; it broadcasts to the domain."""
        value = self._value(sympy.sympify(expr))
        return _tensor(value)

    def _value(self, expr: sympy.Expr) -> Value:
        if expr.is_Integer:
            return int(expr)
        if expr.is_Symbol:
            return self._symbol(expr)
        arguments = [self._value(a) for a in expr.args]
        if expr.is_Add:
            return _fold(arguments, lambda a, b: a + b)
        if expr.is_Mul:
            return _fold(arguments, lambda a, b: a * b)
        if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) > 0:
            return _fold([arguments[0]] * int(expr.exp), lambda a, b: a * b)
        function = _FUNCTIONS.get(type(expr))
        if function is None:
            raise InterpretationError(
                f"cannot evaluate '{expr}' as an integer index expression"
            )
        return function(*arguments)

    def _symbol(self, symbol: sympy.Symbol) -> Value:
        kind = symbol_kind(symbol)
        if kind == "s":
            return self.bindings.value(symbol)
        if kind == "v":
            number = symbol_number(symbol)
            if number >= len(self.index_values):
                raise InterpretationError(
                    f"index value {symbol.name} is unbound: the load has "
                    f"{len(self.index_values)} index value operands"
                )
            return self.index_values[number]
        return self.domain.index(symbol.name)


def _tensor(value: Value) -> Tensor:
    if isinstance(value, Tensor):
        return value.to(torch.int64)
    return torch.tensor(value, dtype=torch.int64)


def _fold(values: Sequence[Value], combine) -> Value:
    result = values[0]
    for value in values[1:]:
        result = combine(result, value)
    return result


def _floordiv(a: Value, b: Value) -> Value:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return torch.div(_tensor(a), _tensor(b), rounding_mode="floor")


def _ceildiv(a: Value, b: Value) -> Value:
    return -_floordiv(-a, b)


def _mod(a: Value, b: Value) -> Value:
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    return torch.remainder(_tensor(a), _tensor(b))


def _min(*values: Value) -> Value:
    return _fold(values, lambda a, b: torch.minimum(_tensor(a), _tensor(b)))


def _max(*values: Value) -> Value:
    return _fold(values, lambda a, b: torch.maximum(_tensor(a), _tensor(b)))


_FUNCTIONS = {
    FloorDiv: _floordiv,
    CeilDiv: _ceildiv,
    sympy.Mod: _mod,
    IntegerMod: _mod,
    sympy.Min: _min,
    sympy.Max: _max,
}


def evaluate_sizes(
    bindings: SizeBindings, sizes: Sequence[sympy.Expr]
) -> tuple[int, ...]:
    """Concrete sizes of a domain, checked to be non-negative."""
    values = tuple(bindings.values(sizes))
    for expr, value in zip(sizes, values):
        if value < 0:
            raise InterpretationError(
                f"domain size '{format_expr(expr)}' is negative ({value})"
            )
    return values

