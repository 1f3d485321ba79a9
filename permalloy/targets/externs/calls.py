"""
What every extern call shares: its signature and the evaluation of size
expressions under one call's symbol values.

An extern call is `call(tensors, symbols) -> results`: the op's operands, and
the values of the size symbols the host program has read off its arguments,
by symbol. A library op of one result may also have a form that writes
into a tensor the host program allocated (`ExternIntoCall`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import sympy
import torch

Tensors = Sequence[torch.Tensor]
Symbols = Mapping[sympy.Symbol, int]
ExternCall = Callable[[Tensors, Symbols], tuple]
ExternIntoCall = Callable[[Tensors, torch.Tensor], object]
"""`call(tensors, out)`: a library op of one result writing it into `out`."""


def size_function(expr: sympy.Expr) -> Callable[[Symbols], int]:
    """A size expression's value under each call's symbol values; a constant
    size is computed once."""
    if not expr.free_symbols:
        value = int(expr)
        return lambda symbols: value
    return lambda symbols: int(expr.xreplace({s: sympy.Integer(v) for s, v in symbols.items()}))


def shape_function(sizes: Sequence[sympy.Expr]) -> Callable[[Symbols], list[int]]:
    """A result shape under each call's symbol values."""
    functions = [size_function(size) for size in sizes]
    if all(not size.free_symbols for size in sizes):
        shape = [int(size) for size in sizes]
        return lambda symbols: shape
    return lambda symbols: [f(symbols) for f in functions]
