"""
The checks the ptensor verifiers share: ranges of dimensions, result shapes,
equal element types, broadcasting, float operands. Each raises a
`VerifyException` that says what does not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects.ptensor.types import (
    TensorType,
    broadcast_shapes,
    format_shape,
    is_float,
    shapes_equal,
    tensor_type,
)


def require(condition: bool, message: str | Callable[[], str]) -> None:
    """Raise `message` (or what a callable `message` gives: checks that run
    for every op of a module format theirs only when they fail) unless
    `condition` holds."""
    if not condition:
        raise VerifyException(message() if callable(message) else message)


def check_dims(dims: Sequence[int], rank: int, what: str) -> None:
    for d in dims:
        require(0 <= d < rank, f"{what} {d} is out of range for rank {rank}")
    require(len(set(dims)) == len(dims), f"{what}s {list(dims)} repeat a dimension")


def check_shape(op_name: str, actual: TensorType, expected: Sequence[sympy.Expr]):
    require(
        shapes_equal(actual.sizes, expected),
        f"{op_name}: result shape {format_shape(actual.sizes)} should be "
        f"{format_shape(expected)}",
    )


def check_same_element_type(op_name: str, *types: TensorType):
    first = types[0].element_type
    for t in types[1:]:
        require(
            t.element_type == first,
            f"{op_name}: element types differ ({first} and {t.element_type}); "
            "insert a ptensor.cast",
        )


def broadcast_or_fail(*types: TensorType) -> tuple[sympy.Expr, ...]:
    """The broadcast shape of `types`, which must broadcast together."""
    try:
        return broadcast_shapes(*(t.sizes for t in types))
    except ValueError as error:
        raise VerifyException(str(error)) from error


def check_float_operands(op: Operation, *values: SSAValue) -> None:
    """`values` are float tensors of one dtype."""
    types = [tensor_type(v) for v in values]
    for t in types:
        require(is_float(t.element_type), f"{op.name} takes float tensors")
    check_same_element_type(op.name, *types)
