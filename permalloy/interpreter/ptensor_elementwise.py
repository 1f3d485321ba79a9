"""
Reference semantics of the elementwise, generator, reduction and scan ops of ptensor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from xdsl.interpreter import Interpreter, PythonValues

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import (
    BinaryKind,
    ComparePredicate,
    RandomDistribution,
    ReduceKind,
    ScanKind,
    UnaryKind,
)
from permalloy.interpreter.ptensor_common import (
    PTensorFunctionsBase,
    dtype_of,
    scalar_value,
    tensor_impl,
    tensor_type_of,
)

Tensor = torch.Tensor

UNARY_FUNCTIONS: dict[UnaryKind, Callable[[Tensor], Tensor]] = {
    UnaryKind.NEG: torch.neg,
    UnaryKind.ABS: torch.abs,
    UnaryKind.EXP: torch.exp,
    UnaryKind.EXP2: torch.exp2,
    UnaryKind.EXPM1: torch.expm1,
    UnaryKind.LOG: torch.log,
    UnaryKind.LOG2: torch.log2,
    UnaryKind.LOG10: torch.log10,
    UnaryKind.LOG1P: torch.log1p,
    UnaryKind.SQRT: torch.sqrt,
    UnaryKind.RSQRT: torch.rsqrt,
    UnaryKind.SIN: torch.sin,
    UnaryKind.COS: torch.cos,
    UnaryKind.TAN: torch.tan,
    UnaryKind.ASIN: torch.asin,
    UnaryKind.ACOS: torch.acos,
    UnaryKind.ATAN: torch.atan,
    UnaryKind.SINH: torch.sinh,
    UnaryKind.COSH: torch.cosh,
    UnaryKind.TANH: torch.tanh,
    UnaryKind.ASINH: torch.asinh,
    UnaryKind.ACOSH: torch.acosh,
    UnaryKind.ATANH: torch.atanh,
    UnaryKind.ERF: torch.erf,
    UnaryKind.ERFC: torch.erfc,
    UnaryKind.ERFINV: torch.erfinv,
    UnaryKind.SIGMOID: torch.sigmoid,
    UnaryKind.RECIPROCAL: torch.reciprocal,
    UnaryKind.FLOOR: torch.floor,
    UnaryKind.CEIL: torch.ceil,
    UnaryKind.ROUND: torch.round,
    UnaryKind.TRUNC: torch.trunc,
    UnaryKind.SIGN: torch.sign,
    UnaryKind.ISNAN: torch.isnan,
    UnaryKind.ISINF: torch.isinf,
    UnaryKind.LOGICAL_NOT: torch.logical_not,
    UnaryKind.BITWISE_NOT: torch.bitwise_not,
}
"""The torch function of each `ptensor.unary` kind."""


def true_or_truncating_div(lhs: Tensor, rhs: Tensor) -> Tensor:
    """`ptensor.binary div`: true division of floats, truncating of integers."""
    if lhs.is_floating_point():
        return torch.div(lhs, rhs)
    return torch.div(lhs, rhs, rounding_mode="trunc")


def floor_div(lhs: Tensor, rhs: Tensor) -> Tensor:
    """`ptensor.binary floordiv`: division rounding towards negative infinity."""
    return torch.div(lhs, rhs, rounding_mode="floor")


BINARY_FUNCTIONS: dict[BinaryKind, Callable[[Tensor, Tensor], Tensor]] = {
    BinaryKind.ADD: torch.add,
    BinaryKind.SUB: torch.sub,
    BinaryKind.MUL: torch.mul,
    BinaryKind.DIV: true_or_truncating_div,
    BinaryKind.FLOORDIV: floor_div,
    BinaryKind.REMAINDER: torch.remainder,
    BinaryKind.FMOD: torch.fmod,
    BinaryKind.POW: torch.pow,
    BinaryKind.MAXIMUM: torch.maximum,
    BinaryKind.MINIMUM: torch.minimum,
    BinaryKind.ATAN2: torch.atan2,
    BinaryKind.COPYSIGN: torch.copysign,
    BinaryKind.LOGICAL_AND: torch.logical_and,
    BinaryKind.LOGICAL_OR: torch.logical_or,
    BinaryKind.LOGICAL_XOR: torch.logical_xor,
    BinaryKind.BITWISE_AND: torch.bitwise_and,
    BinaryKind.BITWISE_OR: torch.bitwise_or,
    BinaryKind.BITWISE_XOR: torch.bitwise_xor,
    BinaryKind.SHIFT_LEFT: torch.bitwise_left_shift,
    BinaryKind.SHIFT_RIGHT: torch.bitwise_right_shift,
}
"""The torch function of each `ptensor.binary` kind."""

COMPARE_FUNCTIONS: dict[ComparePredicate, Callable[[Tensor, Tensor], Tensor]] = {
    ComparePredicate.EQ: torch.eq,
    ComparePredicate.NE: torch.ne,
    ComparePredicate.LT: torch.lt,
    ComparePredicate.LE: torch.le,
    ComparePredicate.GT: torch.gt,
    ComparePredicate.GE: torch.ge,
}
"""The torch function of each `ptensor.compare` predicate."""


def reduce_tensor(
    kind: ReduceKind, x: Tensor, dims: Sequence[int], keepdim: bool, dtype: torch.dtype
) -> Tensor:
    """
    `ptensor.reduce`: reduce `dims` of `x` to a tensor of `dtype`.

    An empty `dims` reduces nothing (unlike `torch.sum(x, [])`, which reduces
    everything).
    """
    if not dims:
        return x.ne(0) if kind in (ReduceKind.ANY, ReduceKind.ALL) else x.to(dtype)
    dims = list(dims)
    match kind:
        case ReduceKind.SUM:
            return torch.sum(x, dims, keepdim=keepdim, dtype=dtype)
        case ReduceKind.PROD:
            for d in sorted(dims, reverse=True):
                x = torch.prod(x, d, keepdim=keepdim, dtype=dtype)
            return x
        case ReduceKind.MAX:
            return torch.amax(x, dims, keepdim=keepdim)
        case ReduceKind.MIN:
            return torch.amin(x, dims, keepdim=keepdim)
        case ReduceKind.ARGMAX:
            return torch.argmax(x, dims[0], keepdim=keepdim)
        case ReduceKind.ARGMIN:
            return torch.argmin(x, dims[0], keepdim=keepdim)
        case ReduceKind.ANY:
            return torch.any(x, dims, keepdim=keepdim)
        case ReduceKind.ALL:
            return torch.all(x, dims, keepdim=keepdim)


def scan_tensor(kind: ScanKind, x: Tensor, dim: int, dtype: torch.dtype) -> Tensor:
    """`ptensor.scan`: the scan of `x` along `dim`, as a tensor of `dtype`."""
    match kind:
        case ScanKind.SUM:
            return torch.cumsum(x, dim, dtype=dtype)
        case ScanKind.PROD:
            return torch.cumprod(x, dim, dtype=dtype)
        case ScanKind.LOGSUMEXP:
            return torch.logcumsumexp(x, dim)
        case ScanKind.MAX:
            return torch.cummax(x, dim).values
        case ScanKind.MIN:
            return torch.cummin(x, dim).values
        case ScanKind.ARGMAX:
            return torch.cummax(x, dim).indices
        case ScanKind.ARGMIN:
            return torch.cummin(x, dim).indices


def arange(start: float | int, step: float | int, count: int, dtype: torch.dtype):
    """`count` values `start, start + step, ...` exactly as torch.arange gives them."""
    if step == 0 or count == 0:
        return torch.full((count,), start, dtype=dtype)
    if dtype.is_floating_point:
        # Half a step short of the next value: torch.arange gives `count` values.
        end = start + (count - 0.5) * step
    else:
        end = start + count * step
    return torch.arange(start, end, step, dtype=dtype)


class ElementwiseFunctions(PTensorFunctionsBase):
    """Elementwise ops, generators, reductions and scans."""

    @tensor_impl(ptensor.UnaryOp)
    def run_unary(
        self, interpreter: Interpreter, op: ptensor.UnaryOp, args: PythonValues
    ) -> PythonValues:
        return (UNARY_FUNCTIONS[op.kind.data](args[0]),)

    @tensor_impl(ptensor.BinaryOp)
    def run_binary(
        self, interpreter: Interpreter, op: ptensor.BinaryOp, args: PythonValues
    ) -> PythonValues:
        return (BINARY_FUNCTIONS[op.kind.data](*args),)

    @tensor_impl(ptensor.CompareOp)
    def run_compare(
        self, interpreter: Interpreter, op: ptensor.CompareOp, args: PythonValues
    ) -> PythonValues:
        return (COMPARE_FUNCTIONS[op.predicate.data](*args),)

    @tensor_impl(ptensor.WhereOp)
    def run_where(
        self, interpreter: Interpreter, op: ptensor.WhereOp, args: PythonValues
    ) -> PythonValues:
        return (torch.where(*args),)

    @tensor_impl(ptensor.CastOp)
    def run_cast(
        self, interpreter: Interpreter, op: ptensor.CastOp, args: PythonValues
    ) -> PythonValues:
        return (args[0].to(dtype_of(op.result)),)

    @tensor_impl(ptensor.FullOp)
    def run_full(
        self, interpreter: Interpreter, op: ptensor.FullOp, args: PythonValues
    ) -> PythonValues:
        element_type = tensor_type_of(op.result).element_type
        value = scalar_value(op.value, element_type)
        return (torch.full(self.shape(op.result), value, dtype=dtype_of(op.result)),)

    @tensor_impl(ptensor.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: ptensor.ConstantOp, args: PythonValues
    ) -> PythonValues:
        values = torch.tensor(op.value.get_values(), dtype=dtype_of(op.result))
        return (values.reshape(self.shape(op.result)),)

    @tensor_impl(ptensor.IotaOp)
    def run_iota(
        self, interpreter: Interpreter, op: ptensor.IotaOp, args: PythonValues
    ) -> PythonValues:
        element_type = tensor_type_of(op.result).element_type
        start = scalar_value(op.start, element_type)
        step = scalar_value(op.step, element_type)
        (count,) = self.shape(op.result)
        return (arange(start, step, count, dtype_of(op.result)),)

    @tensor_impl(ptensor.RandOp)
    def run_rand(
        self, interpreter: Interpreter, op: ptensor.RandOp, args: PythonValues
    ) -> PythonValues:
        generate = (
            torch.rand
            if op.distribution.data == RandomDistribution.UNIFORM
            else torch.randn
        )
        return (generate(self.shape(op.result), dtype=dtype_of(op.result)),)

    @tensor_impl(ptensor.ReduceOp)
    def run_reduce(
        self, interpreter: Interpreter, op: ptensor.ReduceOp, args: PythonValues
    ) -> PythonValues:
        result = reduce_tensor(
            op.kind.data,
            args[0],
            op.dims.data,
            op.keepdim is not None,
            dtype_of(op.result),
        )
        return (result,)

    @tensor_impl(ptensor.ScanOp)
    def run_scan(
        self, interpreter: Interpreter, op: ptensor.ScanOp, args: PythonValues
    ) -> PythonValues:
        return (scan_tensor(op.kind.data, args[0], op.dim.value.data, dtype_of(op.result)),)
