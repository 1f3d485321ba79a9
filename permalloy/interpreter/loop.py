"""
The executable reference semantics of the loop dialect, on torch tensors.

A loop op runs vectorized: its body is evaluated once for the whole iteration
domain. Each SSA value of the body is a tensor holding its value at every
point (or one that broadcasts to the domain, such as a constant); loop indices
are `arange`s along their own dimension (`loop_index.Domain`), a load is
advanced indexing of its input at the tensors of its index expressions, and
arith and math ops are elementwise torch ops (`loop_arith`, `loop_casts`,
`loop_math`). `loop.pointwise` gives the yielded tensor broadcast to its
domain; `loop.reduce` combines it over the trailing reduction dimensions;
`loop.scan` keeps every prefix of its combination along its reduction
dimension, which then moves to its place in the result; `loop.sort` gives
the positions of its stable sort along that dimension; `loop.scatter`
combines it into a copy of its init at the positions its terminator gives.

Every load is checked: an unmasked position outside its input is an error, so
a lowering that builds a wrong index expression fails loudly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from xdsl.interpreter import (
    Interpreter,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.utils.exceptions import InterpretationError

from permalloy.dialects import loop
from permalloy.dialects.loop import scalar_type
from permalloy.dialects.ptensor import ReduceKind, ScanKind, ScatterKind, TensorType
from permalloy.dialects.sym import format_expr
from permalloy.interpreter.bindings import SizeBindings, check_values
from permalloy.interpreter.loop_arith import ArithFunctions
from permalloy.interpreter.loop_casts import CastFunctions
from permalloy.interpreter.loop_index import Domain, IndexEvaluator, evaluate_sizes
from permalloy.interpreter.loop_math import MathFunctions
from permalloy.interpreter.loop_values import (
    as_unsigned,
    check_dtype,
    is_unsigned,
    load_view,
    store_as,
    wrap,
)

Tensor = torch.Tensor


class OutOfBoundsLoadError(InterpretationError):
    """A `loop.load` that reads outside its input where its mask is true."""


@register_impls
class LoopFunctions(ArithFunctions, CastFunctions, MathFunctions):
    """
    Interpreter functions for the loop dialect and for the arith and math ops
    of loop bodies. Sizes are evaluated with the `SizeBindings` given at
    construction, shared with the `func` implementations that bind them.
    """

    def __init__(self, bindings: SizeBindings):
        self.bindings = bindings
        self._domains: list[Domain] = []

    # -- domains ----------------------------------------------------------------

    @contextmanager
    def _in_domain(self, domain: Domain) -> Iterator[None]:
        self._domains.append(domain)
        try:
            yield
        finally:
            self._domains.pop()

    @property
    def domain(self) -> Domain:
        """The domain of the innermost loop op being run."""
        if not self._domains:
            raise InterpretationError("loop body ops run only inside a loop op")
        return self._domains[-1]

    def _run_body(
        self, interpreter: Interpreter, op: loop.LoopOp, args: PythonValues
    ) -> tuple[Domain, Tensor]:
        """The yielded value of `op`'s body, broadcast to its whole domain."""
        check_values(
            self.bindings, [v.type for v in op.inputs], args, f"{op.name} input {{}}"
        )
        domain = Domain(
            evaluate_sizes(self.bindings, op.parallel_sizes),
            evaluate_sizes(self.bindings, op.reduction_sizes),
        )
        with self._in_domain(domain):
            inputs = tuple(load_view(contents(a)) for a in args)
            (value,) = interpreter.run_ssacfg_region(op.body, inputs, op.name)
        return domain, value.expand(domain.shape)

    # -- loop ops -----------------------------------------------------------------

    @impl(loop.PointwiseOp)
    def run_pointwise(
        self, interpreter: Interpreter, op: loop.PointwiseOp, args: PythonValues
    ) -> PythonValues:
        _, value = self._run_body(interpreter, op, args)
        element_type = _tensor_type(op).element_type
        return (store_as(value.contiguous(), element_type),)

    @impl(loop.ReduceOp)
    def run_reduce(
        self, interpreter: Interpreter, op: loop.ReduceOp, args: PythonValues
    ) -> PythonValues:
        domain, value = self._run_body(interpreter, op, args)
        flat = value.reshape(*domain.parallel, math.prod(domain.reduction))
        result_type = _tensor_type(op)
        reduced = reduce_last(op.kind.data, flat, result_type)
        return (store_as(reduced, result_type.element_type),)

    @impl(loop.ScanOp)
    def run_scan(
        self, interpreter: Interpreter, op: loop.ScanOp, args: PythonValues
    ) -> PythonValues:
        _, value = self._run_body(interpreter, op, args)
        result_type = _tensor_type(op)
        scanned = scan_last(op.kind.data, value, result_type)
        return (store_as(scanned.movedim(-1, op.scanned_dim).contiguous(), result_type.element_type),)

    @impl(loop.SortOp)
    def run_sort(
        self, interpreter: Interpreter, op: loop.SortOp, args: PythonValues
    ) -> PythonValues:
        """Each row's positions in the stable order of the body's values,
        the first `count` of them moved to the sorted dimension."""
        _, value = self._run_body(interpreter, op, args)
        if value.dtype == torch.bool:
            value = -value.to(torch.int8)  # i1 compares as a signed number: true is -1
        positions = torch.sort(value, dim=-1, descending=op.is_descending, stable=True).indices
        count = self.bindings.value(op.count)
        return (positions[..., :count].movedim(-1, op.sorted_dim).contiguous(),)

    @impl(loop.ScatterOp)
    def run_scatter(
        self, interpreter: Interpreter, op: loop.ScatterOp, args: PythonValues
    ) -> PythonValues:
        """The body's values and positions over the whole domain, combined
        into a copy of `init` in the domain's row-major order."""
        *inputs, init = args
        check_values(self.bindings, [v.type for v in op.inputs], inputs, f"{op.name} input {{}}")
        domain = Domain(evaluate_sizes(self.bindings, op.parallel_sizes), ())
        with self._in_domain(domain):
            loaded = tuple(load_view(contents(a)) for a in inputs)
            value, *index_values = interpreter.run_ssacfg_region(op.body, loaded, op.name)
            evaluator = IndexEvaluator(domain, self.bindings, index_values)
            positions = [evaluator.evaluate(e).expand(domain.shape) for e in op.result_index]
        result_type = _tensor_type(op)
        result = contents(init).clone()
        shape = tuple(result.shape)
        flat = torch.zeros(domain.shape, dtype=torch.int64)
        for position, size in zip(positions, shape):
            if bool(((position < 0) | (position >= size)).any()):
                raise OutOfBoundsLoadError(f"{op.name} writes outside its result of shape {list(shape)}")
            flat = flat * size + position
        values = store_as(value.expand(domain.shape).contiguous(), result_type.element_type)
        combined = combine_scattered(op.kind.data, result.reshape(-1), flat.reshape(-1), values.reshape(-1))
        return (combined.reshape(shape),)

    @impl_terminator(loop.ScatterYieldOp)
    def run_scatter_yield(
        self, interpreter: Interpreter, op: loop.ScatterYieldOp, args: PythonValues
    ) -> tuple[ReturnedValues, PythonValues]:
        return ReturnedValues(args), ()

    @impl(loop.IndexOp)
    def run_index(
        self, interpreter: Interpreter, op: loop.IndexOp, args: PythonValues
    ) -> PythonValues:
        evaluator = IndexEvaluator(self.domain, self.bindings)
        return (evaluator.evaluate(op.expr.expr),)

    @impl(loop.LoadOp)
    def run_load(
        self, interpreter: Interpreter, op: loop.LoadOp, args: PythonValues
    ) -> PythonValues:
        source, *rest = args
        index_values = rest[: len(op.index_values)]
        mask = rest[len(op.index_values)] if op.mask is not None else None
        evaluator = IndexEvaluator(self.domain, self.bindings, index_values)
        positions = [evaluator.evaluate(e) for e in op.indices.data]
        value = gather(op, load_view(contents(source)), positions, mask)
        return (check_dtype(value, op.result.type, op.name),)

    @impl_terminator(loop.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: loop.YieldOp, args: PythonValues
    ) -> tuple[ReturnedValues, PythonValues]:
        return ReturnedValues(args), ()

    @impl(loop.FusedOp)
    def run_fused(
        self, interpreter: Interpreter, op: loop.FusedOp, args: PythonValues
    ) -> PythonValues:
        """The members run in order; the yielded results leave."""
        inputs = tuple(contents(a) for a in args)
        return tuple(interpreter.run_ssacfg_region(op.body, inputs, op.name))

    @impl_terminator(loop.FusedYieldOp)
    def run_fused_yield(
        self, interpreter: Interpreter, op: loop.FusedYieldOp, args: PythonValues
    ) -> tuple[ReturnedValues, PythonValues]:
        return ReturnedValues(args), ()


SCATTER_REDUCTIONS = {ScatterKind.SUM: "sum", ScatterKind.PROD: "prod", ScatterKind.MAX: "amax", ScatterKind.MIN: "amin"}


def combine_scattered(kind: ScatterKind, flat: Tensor, positions: Tensor, values: Tensor) -> Tensor:
    """`values` combined by `kind` into `flat` at `positions` (1-D tensors)."""
    if values.dtype == torch.bool and kind != ScatterKind.ASSIGN:
        widened = combine_scattered(kind, flat.to(torch.int64), positions, values.to(torch.int64))
        return widened != 0
    if kind == ScatterKind.ASSIGN:
        return flat.index_put((positions,), values)
    return flat.scatter_reduce(0, positions, values, SCATTER_REDUCTIONS[kind])


def contents(value: Any) -> Tensor:
    """The tensor of an input: a tensor, or the elements of a buffer."""
    return value if isinstance(value, Tensor) else value.tensor


def _tensor_type(op: loop.LoopOp) -> TensorType:
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    return result_type


def gather(
    op: loop.LoadOp, source: Tensor, positions: Sequence[Tensor], mask: Tensor | None
) -> Tensor:
    """
    `source` at `positions` (one int64 tensor per dimension, broadcast
    together); where `mask` is false the result is zero and nothing is read.
    """
    shape = torch.broadcast_shapes(
        *(p.shape for p in positions), *(() if mask is None else (mask.shape,))
    )
    positions = [p.expand(shape) for p in positions]
    if mask is not None:
        mask = mask.expand(shape)
        if source.numel() == 0:
            _check_all_masked(op, mask)
            return torch.zeros(shape, dtype=source.dtype)
        positions = [torch.where(mask, p, 0) for p in positions]
    for dim, (position, size) in enumerate(zip(positions, source.shape)):
        _check_in_bounds(op, dim, position, size)
    value = source[tuple(positions)] if positions else source.expand(shape)
    if mask is None:
        return value
    return torch.where(mask, value, torch.zeros((), dtype=source.dtype))


def _check_in_bounds(op: loop.LoadOp, dim: int, position: Tensor, size: int) -> None:
    if position.numel() == 0:
        return
    low, high = int(position.min()), int(position.max())
    if low < 0 or high >= size:
        expr = op.indices.data[dim]
        raise OutOfBoundsLoadError(
            f"loop.load reads positions {low} to {high} of dimension {dim} "
            f"(size {size}) at index '{format_expr(expr)}'"
        )


def _check_all_masked(op: loop.LoadOp, mask: Tensor) -> None:
    if bool(mask.any()):
        raise OutOfBoundsLoadError("loop.load reads an empty input where its mask is true")


def reduce_last(kind: ReduceKind, x: Tensor, result_type: TensorType) -> Tensor:
    """
    Combine `x` over its last dimension by `kind`: sums and products accumulate
    in float64 (floats) or int64 (integers) and are then cast; max and min
    propagate NaN and order integers as the result's element type does
    (unsigned for ui8); argmax and argmin give the position of the first
    extreme (NaN counting as the extreme, as in torch), reading integers as
    signed, since a body yields signless values; any and all of i1 values.
    """
    if kind in (ReduceKind.ANY, ReduceKind.ALL):
        return torch.any(x, -1) if kind == ReduceKind.ANY else torch.all(x, -1)
    if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
        return _arg_extreme(kind, x)
    if x.dtype == torch.bool:
        return _bool_reduce(kind, x)
    if kind in (ReduceKind.SUM, ReduceKind.PROD):
        return _accumulate(kind, x)
    if is_unsigned(result_type.element_type):
        # Unsigned order: the signless bits read as unsigned numbers.
        x = as_unsigned(x)
    extreme = torch.amax(x, -1) if kind == ReduceKind.MAX else torch.amin(x, -1)
    return wrap(extreme, scalar_type(result_type.element_type))


def scan_last(kind: ScanKind, x: Tensor, result_type: TensorType) -> Tensor:
    """
    Every prefix of the combination of `x` along its last dimension by
    `kind`, as torch's CPU kernels compute it: sums, products and
    log-sum-exps accumulate in float64 (floats) or int64 (integers) and are
    then cast; max and min (and their positions, the last on ties, NaN
    counting as the extreme) order integers as the result's element type
    does (unsigned for ui8) and read the positions' values as signed, since
    a body yields signless values; i1 sums and maxima are `or`, products and
    minima `and`.
    """
    if x.dtype == torch.bool and kind in (ScanKind.SUM, ScanKind.PROD):
        kind = ScanKind.MAX if kind == ScanKind.SUM else ScanKind.MIN
    if kind in (ScanKind.SUM, ScanKind.PROD, ScanKind.LOGSUMEXP):
        wide = torch.float64 if x.dtype.is_floating_point else torch.int64
        combine = {ScanKind.SUM: torch.cumsum, ScanKind.PROD: torch.cumprod}.get(kind, torch.logcumsumexp)
        return combine(x.to(wide), -1).to(x.dtype)
    if kind in (ScanKind.MAX, ScanKind.MIN) and is_unsigned(result_type.element_type):
        x = as_unsigned(x)
    extreme = torch.cummax if kind in (ScanKind.MAX, ScanKind.ARGMAX) else torch.cummin
    values, positions = extreme(x, -1)
    if kind in (ScanKind.ARGMAX, ScanKind.ARGMIN):
        return positions
    return values if x.dtype == torch.bool else wrap_like(values, result_type)


def wrap_like(values: Tensor, result_type: TensorType) -> Tensor:
    """Values in the body's dtype of `result_type` (unsigned ones wrapped back to signless bits)."""
    if values.dtype.is_floating_point:
        return values
    return wrap(values, scalar_type(result_type.element_type))


def _accumulate(kind: ReduceKind, x: Tensor) -> Tensor:
    wide = torch.float64 if x.dtype.is_floating_point else torch.int64
    combine = torch.sum if kind == ReduceKind.SUM else torch.prod
    result = combine(x.to(wide), -1)
    return result.to(x.dtype)


def _bool_reduce(kind: ReduceKind, x: Tensor) -> Tensor:
    """Sums and maxima of i1 are `or`; products and minima are `and`."""
    if kind in (ReduceKind.SUM, ReduceKind.MAX):
        return torch.any(x, -1)
    return torch.all(x, -1)


def _arg_extreme(kind: ReduceKind, x: Tensor) -> Tensor:
    if x.shape[-1] == 0:
        raise InterpretationError(f"loop.reduce {kind} over an empty domain")
    if x.dtype == torch.bool:
        x = x.to(torch.int8)
    if kind == ReduceKind.ARGMAX:
        return torch.argmax(x, -1)
    return torch.argmin(x, -1)


__all__ = ["LoopFunctions", "OutOfBoundsLoadError", "gather", "reduce_last", "scan_last"]
