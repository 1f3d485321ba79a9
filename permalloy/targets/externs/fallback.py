"""
`ptensor.fallback` called from the host program: the ATen op it names, resolved
at compile time, with its constant arguments decoded then; per call only the
operands and the sizes that depend on size symbols are filled in, and the
arguments the op's schema says it writes are cloned (ptensor values are
immutable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy
import torch
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr
from xdsl.ir import Attribute

from permalloy.dialects import ptensor as pt
from permalloy.dialects.sym import SymExprAttr
from permalloy.interpreter.bindings import SizeBindings
from permalloy.interpreter.ptensor_library import (
    ArgumentDecoder,
    FallbackError,
    resolve_aten_op,
    tensor_outputs,
)
from permalloy.targets.externs.calls import ExternCall, Symbols, Tensors, size_function
from permalloy.targets.externs.recorded import RecordedCall, recordable


def fallback_call(op: pt.FallbackOp) -> ExternCall:
    """The ATen op a fallback names, with its constant arguments decoded now."""
    target = resolve_aten_op(op.target.data)
    positional = [_bound_argument(a) for a in op.args.data]
    keywords = {} if op.kwargs is None else _bound_keywords(op.kwargs)
    written = _written_positions(target, len(positional), keywords)
    results = len(op.results)

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        args = [a(tensors, symbols) if callable(a) else a for a in positional]
        kwargs = {k: v(tensors, symbols) if callable(v) else v for k, v in keywords.items()}
        for position in written:
            if isinstance(position, int):
                args[position] = args[position].clone()
            else:
                kwargs[position] = kwargs[position].clone()
        outputs = tensor_outputs(target(*args, **kwargs))
        if len(outputs) != results:
            raise FallbackError(
                f"{op.target.data} gave {len(outputs)} tensors, but the op declares "
                f"{results} results"
            )
        return tuple(outputs)

    return RecordedCall(call) if recordable(target) else call  # a native host program may call the op itself


_Bound = Any
"""An argument bound at compile time: its value, or a function `(tensors,
symbols) -> value` for what changes between calls (operands, sizes)."""


def _bound_argument(attr: Attribute) -> _Bound:
    """A fallback argument with everything constant decoded now."""
    if isinstance(attr, pt.OperandRefAttr):
        position = attr.data
        return lambda tensors, symbols: tensors[position]
    if isinstance(attr, SymExprAttr) and attr.expr.free_symbols:
        return _size_value(attr.expr)
    if isinstance(attr, ArrayAttr):
        items = [_bound_argument(a) for a in attr.data]
        if not any(callable(i) for i in items):
            return items
        return lambda tensors, symbols: [i(tensors, symbols) if callable(i) else i for i in items]
    if isinstance(attr, DictionaryAttr):
        raise FallbackError(f"a dictionary cannot be a positional argument of a torch op: {attr}")
    return ArgumentDecoder((), SizeBindings()).decode(attr)


def _size_value(expr: sympy.Expr) -> Callable[[Tensors, Symbols], int]:
    """A size expression's value under each call's symbol values."""
    size = size_function(expr)
    return lambda tensors, symbols: size(symbols)


def _bound_keywords(kwargs: Attribute) -> dict[str, _Bound]:
    if not isinstance(kwargs, DictionaryAttr):
        raise FallbackError(f"fallback kwargs must be a dictionary, got {kwargs}")
    return {name: _bound_argument(value) for name, value in kwargs.data.items()}


def _written_positions(
    target: torch._ops.OpOverload, count: int, keywords: dict[str, _Bound]
) -> list[int | str]:
    """The positions (or keyword names) of the tensor arguments the op's schema
    says it writes: they are cloned per call, since ptensor values are immutable."""
    written: list[int | str] = []
    for position, argument in enumerate(target._schema.arguments):  # noqa: SLF001
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        if position < count:
            written.append(position)
        elif argument.name in keywords:
            written.append(argument.name)
    return written
