"""
`arith` semantics on tensors of scalar values, for loop bodies.

Every op applies elementwise to tensors that hold its operands at each point
of the domain (see `loop_values` for the dtypes). Integer ops follow arith's
two's-complement semantics: each op reads its operands as signed or unsigned
as arith says, computes in int64 and wraps the result to the result's width,
so i1 and the narrow types behave as their bits do (`arith.addi` on i1 is
xor; `arith.cmpi slt` reads i1 true as -1).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl
from xdsl.ir import Operation
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
IntFunction = Callable[[Tensor, Tensor], Tensor]


def _result(op: Operation, value: Tensor) -> PythonValues:
    return (check_dtype(value, op.results[0].type, op.name),)


def _signed_impl(op_type: type[Operation], function: IntFunction):
    """An integer op reading its operands as signed numbers."""

    @impl(op_type)
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        lhs, rhs = (as_signed(a) for a in args)
        return _result(op, wrap(function(lhs, rhs), op.results[0].type))

    return run


def _unsigned_impl(op_type: type[Operation], function: IntFunction):
    """An integer op reading its operands as unsigned numbers."""

    @impl(op_type)
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        lhs, rhs = (as_unsigned(a) for a in args)
        return _result(op, wrap(function(lhs, rhs), op.results[0].type))

    return run


def _float_impl(op_type: type[Operation], function: Callable[..., Tensor]):
    """A float op applied as the torch function of the same meaning."""

    @impl(op_type)
    def run(self, interpreter: Interpreter, op: Operation, args: PythonValues):
        return _result(op, function(*args))

    return run


def _divisor(b: Tensor) -> Tensor:
    # Division by zero is undefined behaviour in arith; bodies run at every
    # point, also where a select discards the quotient, so those points
    # divide by one instead of failing.
    return torch.where(b == 0, torch.ones_like(b), b)


def _truncating_div(a: Tensor, b: Tensor) -> Tensor:
    return torch.div(a, _divisor(b), rounding_mode="trunc")


def _floor_div(a: Tensor, b: Tensor) -> Tensor:
    return torch.div(a, _divisor(b), rounding_mode="floor")


def _ceil_div(a: Tensor, b: Tensor) -> Tensor:
    return -torch.div(-a, _divisor(b), rounding_mode="floor")


def _truncating_rem(a: Tensor, b: Tensor) -> Tensor:
    return torch.fmod(a, _divisor(b))


def _shift_amount(b: Tensor) -> Tensor:
    # arith gives poison for amounts of the width or more; torch gives 0
    # (left) or the sign (right), as the ptensor interpreter does.
    return b.clamp(0, 64)


def _shift_left(a: Tensor, b: Tensor) -> Tensor:
    return torch.bitwise_left_shift(a, _shift_amount(b))


def _shift_right(a: Tensor, b: Tensor) -> Tensor:
    return torch.bitwise_right_shift(a, _shift_amount(b))


_CMPI: dict[str, tuple[bool, IntFunction]] = {
    "eq": (True, torch.eq),
    "ne": (True, torch.ne),
    "slt": (True, torch.lt),
    "sle": (True, torch.le),
    "sgt": (True, torch.gt),
    "sge": (True, torch.ge),
    "ult": (False, torch.lt),
    "ule": (False, torch.le),
    "ugt": (False, torch.gt),
    "uge": (False, torch.ge),
}
"""Each cmpi predicate: whether it reads signed, and its comparison."""


def _ordered(a: Tensor, b: Tensor) -> Tensor:
    return ~(torch.isnan(a) | torch.isnan(b))


_CMPF: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "false": lambda a, b: torch.zeros(torch.broadcast_shapes(a.shape, b.shape), dtype=torch.bool),
    "oeq": torch.eq,
    "ogt": torch.gt,
    "oge": torch.ge,
    "olt": torch.lt,
    "ole": torch.le,
    "one": lambda a, b: _ordered(a, b) & torch.ne(a, b),
    "ord": _ordered,
    "ueq": lambda a, b: ~_ordered(a, b) | torch.eq(a, b),
    "ugt": lambda a, b: ~_ordered(a, b) | torch.gt(a, b),
    "uge": lambda a, b: ~_ordered(a, b) | torch.ge(a, b),
    "ult": lambda a, b: ~_ordered(a, b) | torch.lt(a, b),
    "ule": lambda a, b: ~_ordered(a, b) | torch.le(a, b),
    "une": torch.ne,
    "uno": lambda a, b: ~_ordered(a, b),
    "true": lambda a, b: torch.ones(torch.broadcast_shapes(a.shape, b.shape), dtype=torch.bool),
}
"""Each cmpf predicate. torch's comparisons are false on NaN, except `ne`."""


class ArithFunctions(InterpreterFunctions):
    """The arith ops that compute: constants, integer and float arithmetic,
    comparisons and select. Casts are in `CastFunctions`."""

    @impl(arith.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues
    ) -> PythonValues:
        value = op.value
        dtype = scalar_dtype(op.result.type)
        if isinstance(value, FloatAttr):
            return (torch.tensor(float(value.value.data), dtype=dtype),)
        if isinstance(value, IntegerAttr):
            number = torch.tensor(int(value.value.data), dtype=torch.int64)
            return (wrap(number, op.result.type),)
        raise InterpretationError(f"arith.constant of {value} is not supported")

    # -- integers -----------------------------------------------------------

    run_addi = _signed_impl(arith.AddiOp, torch.add)
    run_subi = _signed_impl(arith.SubiOp, torch.sub)
    run_muli = _signed_impl(arith.MuliOp, torch.mul)
    run_divsi = _signed_impl(arith.DivSIOp, _truncating_div)
    run_divui = _unsigned_impl(arith.DivUIOp, _truncating_div)
    run_floordivsi = _signed_impl(arith.FloorDivSIOp, _floor_div)
    run_ceildivsi = _signed_impl(arith.CeilDivSIOp, _ceil_div)
    run_ceildivui = _unsigned_impl(arith.CeilDivUIOp, _ceil_div)
    run_remsi = _signed_impl(arith.RemSIOp, _truncating_rem)
    run_remui = _unsigned_impl(arith.RemUIOp, _truncating_rem)
    run_maxsi = _signed_impl(arith.MaxSIOp, torch.maximum)
    run_minsi = _signed_impl(arith.MinSIOp, torch.minimum)
    run_maxui = _unsigned_impl(arith.MaxUIOp, torch.maximum)
    run_minui = _unsigned_impl(arith.MinUIOp, torch.minimum)
    run_andi = _signed_impl(arith.AndIOp, torch.bitwise_and)
    run_ori = _signed_impl(arith.OrIOp, torch.bitwise_or)
    run_xori = _signed_impl(arith.XOrIOp, torch.bitwise_xor)
    run_shli = _signed_impl(arith.ShLIOp, _shift_left)
    run_shrsi = _signed_impl(arith.ShRSIOp, _shift_right)

    @impl(arith.ShRUIOp)
    def run_shrui(
        self, interpreter: Interpreter, op: arith.ShRUIOp, args: PythonValues
    ) -> PythonValues:
        lhs, rhs = args
        amount = _shift_amount(as_signed(rhs))
        if width_of(op.result.type) == 64:
            # A logical shift of the bits: shift, then clear the copies of the sign.
            shifted = torch.bitwise_right_shift(lhs, amount)
            keep = ~torch.bitwise_left_shift(torch.tensor(-1), 64 - amount)
            return _result(op, torch.where(amount == 0, lhs, shifted & keep))
        shifted = torch.bitwise_right_shift(as_unsigned(lhs), amount)
        return _result(op, wrap(shifted, op.result.type))

    @impl(arith.CmpiOp)
    def run_cmpi(
        self, interpreter: Interpreter, op: arith.CmpiOp, args: PythonValues
    ) -> PythonValues:
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        signed, compare = _CMPI[predicate]
        lhs, rhs = args
        if signed or width_of(op.lhs.type) < 64:
            read = as_signed if signed else as_unsigned
            return _result(op, compare(read(lhs), read(rhs)))
        # Unsigned 64-bit order is signed order with the sign bit flipped.
        flip = torch.tensor(-(2**63), dtype=torch.int64)
        return _result(op, compare(lhs ^ flip, rhs ^ flip))

    # -- floats ---------------------------------------------------------------

    run_addf = _float_impl(arith.AddfOp, torch.add)
    run_subf = _float_impl(arith.SubfOp, torch.sub)
    run_mulf = _float_impl(arith.MulfOp, torch.mul)
    run_divf = _float_impl(arith.DivfOp, torch.div)
    run_negf = _float_impl(arith.NegfOp, torch.neg)
    run_maximumf = _float_impl(arith.MaximumfOp, torch.maximum)
    run_minimumf = _float_impl(arith.MinimumfOp, torch.minimum)
    run_maxnumf = _float_impl(arith.MaxnumfOp, torch.fmax)
    run_minnumf = _float_impl(arith.MinnumfOp, torch.fmin)

    @impl(arith.CmpfOp)
    def run_cmpf(
        self, interpreter: Interpreter, op: arith.CmpfOp, args: PythonValues
    ) -> PythonValues:
        predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        return _result(op, _CMPF[predicate](*args))

    @impl(arith.SelectOp)
    def run_select(
        self, interpreter: Interpreter, op: arith.SelectOp, args: PythonValues
    ) -> PythonValues:
        condition, on_true, on_false = args
        return _result(op, torch.where(condition, on_true, on_false))


__all__ = ["ArithFunctions"]
