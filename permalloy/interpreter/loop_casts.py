"""
`arith` casts on tensors of scalar values, for loop bodies.

Float conversions round to nearest even (torch's `.to`); float to integer
truncates towards zero, through int64, and wraps to the target's width;
integer resizes read their operand as signed (`extsi`, `trunci`,
`index_cast`) or unsigned (`extui`, `uitofp`), as arith says.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from permalloy.interpreter.loop_values import (
    as_signed,
    as_unsigned,
    check_dtype,
    scalar_dtype,
    width_of,
    wrap,
)

Tensor = torch.Tensor
Cast = Callable[[Tensor, Attribute, Attribute], Tensor]


def _cast_impl(op_type: type[Operation], cast: Cast):
    """A cast op: `cast(value, source type, result type)`."""

    @impl(op_type)
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        (value,) = args
        source, target = op.operands[0].type, op.results[0].type
        return (check_dtype(cast(value, source, target), target, op.name),)

    return run


def _resize_float(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    return x.to(scalar_dtype(target))


def _signed_to_float(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    return as_signed(x).to(scalar_dtype(target))


def _unsigned_to_float(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    if width_of(source) < 64:
        return as_unsigned(x).to(scalar_dtype(target))
    wide = x.to(torch.float64)
    return torch.where(x < 0, wide + 2.0**64, wide).to(scalar_dtype(target))


def _float_to_int(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    # NaN, infinities and values out of range give poison in arith; they are
    # computed anyway (bodies run at every point, selected or not).
    return wrap(x.to(torch.int64), target)


def _sign_extend(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    return wrap(as_signed(x), target)


def _zero_extend(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    if width_of(source) == 64:
        return x
    return wrap(as_unsigned(x), target)


def _index_cast(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    """index -> iN truncates; iN -> index sign-extends."""
    if isinstance(source, IndexType):
        return wrap(x, target)
    return as_signed(x)


def _bitcast(x: Tensor, source: Attribute, target: Attribute) -> Tensor:
    if width_of_any(source) != width_of_any(target):
        raise InterpretationError(f"bitcast from {source} to {target} changes the width")
    return x.view(scalar_dtype(target))


def width_of_any(scalar_type: Attribute) -> int:
    """The bit width of any scalar type."""
    dtype = scalar_dtype(scalar_type)
    if dtype == torch.bool:
        return 1
    if dtype.is_floating_point:
        return torch.finfo(dtype).bits
    return torch.iinfo(dtype).bits


class CastFunctions(InterpreterFunctions):
    """The casts of arith between integers, indices and floats."""

    run_extf = _cast_impl(arith.ExtFOp, _resize_float)
    run_truncf = _cast_impl(arith.TruncFOp, _resize_float)
    run_sitofp = _cast_impl(arith.SIToFPOp, _signed_to_float)
    run_uitofp = _cast_impl(arith.UIToFPOp, _unsigned_to_float)
    run_fptosi = _cast_impl(arith.FPToSIOp, _float_to_int)
    run_fptoui = _cast_impl(arith.FPToUIOp, _float_to_int)
    run_extsi = _cast_impl(arith.ExtSIOp, _sign_extend)
    run_extui = _cast_impl(arith.ExtUIOp, _zero_extend)
    run_trunci = _cast_impl(arith.TruncIOp, _sign_extend)
    run_index_cast = _cast_impl(arith.IndexCastOp, _index_cast)
    run_bitcast = _cast_impl(arith.BitcastOp, _bitcast)
