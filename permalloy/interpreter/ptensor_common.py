"""
What the ptensor op implementations share: the size bindings they evaluate
sizes with, and the checking of their results against the declared types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImpl,
    PythonValues,
    impl,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.dialects.builtin import FloatAttr, IntegerAttr

from permalloy.dialects.ptensor import TensorType, is_bool, is_float
from permalloy.dtypes import torch_dtype
from permalloy.interpreter.bindings import SizeBindings, check_values

_Op = TypeVar("_Op", bound=Operation)
_Functions = TypeVar("_Functions", bound="PTensorFunctionsBase")

TensorImpl = Callable[[_Functions, Interpreter, _Op, PythonValues], PythonValues]


class PTensorFunctionsBase(InterpreterFunctions):
    """
    The state of the ptensor op implementations: the size bindings, shared
    with the `func` implementations that bind them at each call.
    """

    def __init__(self, bindings: SizeBindings):
        self.bindings = bindings

    def shape(self, value: SSAValue) -> list[int]:
        """The concrete shape of a tensor-typed SSA value."""
        return self.bindings.shape(tensor_type_of(value))

    def size(self, expr: Any) -> int:
        """The concrete value of a size expression."""
        return self.bindings.value(expr)


def tensor_impl(
    op_type: type[_Op],
) -> Callable[[TensorImpl[_Functions, _Op]], OpImpl[_Functions, _Op]]:
    """
    Like xDSL's `impl`, for ops on tensors: after the op runs, its results are
    checked against their declared types (rank, dtype, sizes under the current
    bindings), and symbols that only results mention are bound.
    """

    def annotate(function: TensorImpl[_Functions, _Op]) -> OpImpl[_Functions, _Op]:
        def run(
            functions: _Functions, interpreter: Interpreter, op: _Op, args: PythonValues
        ) -> PythonValues:
            results = function(functions, interpreter, op, args)
            check_values(
                functions.bindings,
                [r.type for r in op.results],
                results,
                f"{op.name} result {{}}",
            )
            return results

        run.__name__ = function.__name__
        run.__doc__ = function.__doc__
        return impl(op_type)(run)

    return annotate


def tensor_type_of(value: SSAValue) -> TensorType:
    """The ptensor type of an SSA value."""
    assert isinstance(value.type, TensorType), f"{value.type} is not a ptensor type"
    return value.type


def dtype_of(value: SSAValue) -> torch.dtype:
    """The torch dtype of a tensor-typed SSA value."""
    return torch_dtype(tensor_type_of(value).element_type)


def scalar_value(attr: Attribute, element_type: Attribute) -> float | int | bool:
    """The Python number of a FloatAttr or IntegerAttr, for an element type."""
    assert isinstance(attr, FloatAttr | IntegerAttr)
    number = attr.value.data
    if is_bool(element_type):
        return bool(number)
    if is_float(element_type):
        return float(number)
    return int(number)
