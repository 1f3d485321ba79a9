"""
`func` semantics for the interpreter, with size symbols bound at each call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType
from xdsl.interpreter import Interpreter, PythonValues, impl_callable, register_impls
from xdsl.interpreters.func import FuncFunctions

from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import SymExprAttr
from permalloy.interpreter.bindings import (
    ShapeMismatchError,
    SizeBindings,
    SizeConstraint,
    check_values,
    tensor_constraints,
)

SYMBOL_ARG_ATTR = "ptensor.symbol"
"""The argument attribute that names the size symbol an index argument holds."""


@register_impls
class SymbolicFuncFunctions(FuncFunctions):
    """
    `func.func`, `func.call` and `func.return`, where each call opens a scope of
    size bindings: the callee's size symbols are bound from its arguments, and
    its results are checked against its declared result types.
    """

    def __init__(self, bindings: SizeBindings):
        self.bindings = bindings

    @impl_callable(func.FuncOp)
    def call_func(
        self, interpreter: Interpreter, op: func.FuncOp, args: tuple[Any, ...]
    ) -> PythonValues:
        with self.bindings.scope():
            bind_arguments(self.bindings, op, args)
            results = FuncFunctions.call_func(self, interpreter, op, args)
            check_values(
                self.bindings,
                op.function_type.outputs.data,
                results,
                f"result {{}} of @{op.sym_name.data}",
            )
        return results


def bind_arguments(
    bindings: SizeBindings, op: func.FuncOp, args: Sequence[Any]
) -> None:
    """Bind the size symbols of a function from its actual arguments."""
    name = op.sym_name.data
    inputs = op.function_type.inputs.data
    if len(args) != len(inputs):
        raise ShapeMismatchError(
            f"@{name} takes {len(inputs)} arguments, got {len(args)}"
        )
    constraints: list[SizeConstraint] = []
    for i, (declared, value) in enumerate(zip(inputs, args)):
        where = f"argument {i} of @{name}"
        if isinstance(declared, TensorType):
            constraints.extend(tensor_constraints(declared, value, where))
        elif isinstance(declared, IndexType):
            constraints.extend(_index_constraint(op, i, value, where))
    bindings.match(constraints)


def _index_constraint(
    op: func.FuncOp, position: int, value: Any, where: str
) -> list[SizeConstraint]:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ShapeMismatchError(
            f"{where}: expected a Python int for an index argument, got "
            f"{type(value).__name__}"
        )
    if op.arg_attrs is None:
        return []
    symbol = op.arg_attrs.data[position].data.get(SYMBOL_ARG_ATTR)
    if symbol is None:
        return []
    if not isinstance(symbol, SymExprAttr):
        raise ShapeMismatchError(
            f"{where}: the '{SYMBOL_ARG_ATTR}' attribute must be a #sym.expr, "
            f"got {symbol}"
        )
    return [SizeConstraint(symbol.expr, value, where)]
