"""
Scans (`loop.scan`) on the LLVM target: a running value, combined in order
with the body's value at each step of the scanned dimension `r0` and stored
after every step.

    inner   (the scanned dimension contiguous: cumsum of rows) one row at a
            time, its running value a scalar: rows run in parallel across
            threads, r0 in order inside a row
    outer   (across the contiguous dimension: cumsum of columns) a chunk of
            `lanes` columns at a time (d_last vectorized), its running
            values a vector, r0 in order for each chunk

`ScanCombine` is the arithmetic of a kind. Accumulation follows torch's CPU
kernels: f32 sums and products accumulate in f64 (torch's accumulation type
on the CPU), f16 and bf16 values in f32, log-sum-exps of f32 in f32;
integers in their own width (torch's int64 accumulation gives the same bits
once stored). Max and min keep the later value on ties and propagate NaN (a
later NaN replaces an earlier one), and argmax and argmin follow them: the
position is the last one of the running extreme, as torch's cummax and
cummin give it; i1 sums and maxima are `or`, products and minima `and`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects.builtin import Float32Type, Float64Type
from xdsl.ir import Attribute

from permalloy.dialects.ptensor import ScanKind
from permalloy.targets.llvm.body import Env
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.convert import to_compute, truncate_float
from permalloy.targets.llvm.math_ops import float_function
from permalloy.targets.llvm.plan import INNER
from permalloy.targets.llvm.types import (
    I64,
    is_bool,
    is_float,
    is_half_like,
    is_unsigned,
    lanes_of,
    register_type,
    with_lanes,
)

if TYPE_CHECKING:
    from permalloy.targets.llvm.nest import StageEmitter

POSITION_KINDS = (ScanKind.ARGMAX, ScanKind.ARGMIN)
LARGEST_KINDS = (ScanKind.MAX, ScanKind.ARGMAX)
BOOL_KINDS = {ScanKind.SUM: ScanKind.MAX, ScanKind.PROD: ScanKind.MIN}

State = tuple[ir.Value, ir.Value | None]
"""A running value, and its position for argmax and argmin."""


class ScanCombine:
    """The code of one scan kind over body values of one element type."""

    def __init__(self, cg: CodeGen, kind: ScanKind, value_type: Attribute, result_type: Attribute, unsigned: bool = False):
        self.cg = cg
        if is_bool(value_type):
            kind = BOOL_KINDS.get(kind, kind)
        self.kind = kind
        self.value_type = value_type
        self.result_type = result_type
        self.is_float = is_float(value_type)
        self.unsigned = unsigned or is_unsigned(result_type) or is_bool(value_type)
        compute = Float32Type() if is_half_like(value_type) else value_type
        if isinstance(value_type, Float32Type) and kind in (ScanKind.SUM, ScanKind.PROD):
            compute = Float64Type()
        self.compute = compute
        self.acc_type = register_type(compute)

    @property
    def is_position(self) -> bool:
        return self.kind in POSITION_KINDS

    def identity(self) -> ir.Constant:
        ty, kind = self.acc_type, self.kind
        if kind == ScanKind.SUM:
            return ir.Constant(ty, 0)
        if kind == ScanKind.PROD:
            return ir.Constant(ty, 1)
        if kind == ScanKind.LOGSUMEXP:
            return ir.Constant(ty, float("-inf"))
        highest = kind not in LARGEST_KINDS  # a running minimum starts at the highest value
        if self.is_float:
            return ir.Constant(ty, float("inf") if highest else float("-inf"))
        width = ty.width
        if self.unsigned:
            return ir.Constant(ty, (1 << width) - 1 if highest else 0)
        return ir.Constant(ty, (1 << (width - 1)) - 1 if highest else -(1 << (width - 1)))

    # -- the running state in stack slots -------------------------------------------

    def allocate(self, lanes: int) -> tuple[ir.Value, ir.Value | None]:
        """Slots for a state of `lanes` lanes (a scalar state when 0), set to the identity."""
        cg = self.cg
        value = cg.alloca(with_lanes(self.acc_type, lanes), cg.splat(self.identity(), lanes))
        position = cg.alloca(with_lanes(I64, lanes), cg.const(I64, 0, lanes)) if self.is_position else None
        return value, position

    def load(self, slots: tuple[ir.Value, ir.Value | None]) -> State:
        return self.cg.read(slots[0]), self.cg.read(slots[1]) if slots[1] is not None else None

    def store(self, slots: tuple[ir.Value, ir.Value | None], state: State) -> None:
        self.cg.builder.store(state[0], slots[0])
        if slots[1] is not None:
            self.cg.builder.store(state[1], slots[1])

    # -- combining ------------------------------------------------------------------

    def widen(self, value: ir.Value) -> ir.Value:
        """A body value in the accumulation type."""
        value = to_compute(self.cg, value, self.value_type)
        if isinstance(self.compute, Float64Type) and not isinstance(self.value_type, Float64Type):
            value = self.cg.builder.fpext(value, with_lanes(self.acc_type, lanes_of(value)))
        return value

    def step(self, state: State, value: ir.Value, position: ir.Value) -> State:
        """The state after one more body value, at scanned position `position` (an i64)."""
        b, cg = self.cg.builder, self.cg
        current, positions = state
        value = cg.splat(self.widen(value), lanes_of(current))
        kind = self.kind
        if kind == ScanKind.SUM:
            return (b.fadd(current, value) if self.is_float else b.add(current, value)), None
        if kind == ScanKind.PROD:
            return (b.fmul(current, value) if self.is_float else b.mul(current, value)), None
        if kind == ScanKind.LOGSUMEXP:
            return self._log_add_exp(current, value), None
        take = self._takes(value, current)
        if positions is None:
            return b.select(take, value, current), None
        return b.select(take, value, current), b.select(take, cg.splat(position, lanes_of(current)), positions)

    def _takes(self, value: ir.Value, current: ir.Value) -> ir.Value:
        """Lanes where the new value becomes the running extreme: at least as
        extreme (the later one wins ties), or a NaN (a NaN stays until the next)."""
        b = self.cg.builder
        op = ">=" if self.kind in LARGEST_KINDS else "<="
        if not self.is_float:
            compare = b.icmp_unsigned if self.unsigned else b.icmp_signed
            return compare(op, value, current)
        return b.or_(b.fcmp_unordered("uno", value, value), b.fcmp_ordered(op, value, current))

    def _log_add_exp(self, current: ir.Value, value: ir.Value) -> ir.Value:
        """log(exp(current) + exp(value)) as torch computes it: the larger plus
        log1p(exp(smaller - larger)); equal infinities give themselves, NaN
        propagates."""
        cg, b = self.cg, self.cg.builder
        greater = b.fcmp_ordered(">", current, value)
        larger, smaller = b.select(greater, current, value), b.select(greater, value, current)
        term = float_function(cg, "exp", [b.fsub(smaller, larger)], self.compute)
        combined = b.fadd(float_function(cg, "log1p", [term], self.compute), larger)
        infinite = b.fcmp_ordered("==", cg.intrinsic("fabs", [smaller]), cg.like(smaller, float("inf")))
        same_infinity = b.and_(b.fcmp_ordered("==", smaller, larger), infinite)
        return b.select(same_infinity, larger, combined)

    def result(self, state: State) -> ir.Value:
        """What a step stores: the position for argmax/argmin, else the
        running value in the result's register type."""
        if self.is_position:
            return state[1]
        value = state[0]
        if self.is_float and self.compute != self.result_type:
            return truncate_float(self.cg, value, self.compute, self.result_type)
        return value


def scan_row(emitter: StageEmitter, env: Env, xs: ir.Value, xe: ir.Value | None) -> None:
    """The scan of one row (`inner`), or of the columns [xs, xe) of a row (`outer`)."""
    if emitter.stage.mode == INNER:
        _inner_row(emitter, env)
    else:
        _outer_row(emitter, env, xs, xe)


def _step_env(env: Env, r: ir.Value) -> Env:
    scalars = dict(env.scalars)
    scalars["r0"] = r
    return env.child(scalars=scalars)


def _inner_row(emitter: StageEmitter, env: Env) -> None:
    cg, body, scan = emitter.cg, emitter.body, emitter.scan
    body.emit_level(0, env)
    slots = scan.allocate(0)

    def step(r: ir.Value) -> None:
        here = _step_env(env, r)
        body.emit_level(1, here)
        state = scan.step(scan.load(slots), here.values[body.yielded], r)
        scan.store(slots, state)
        body.store_scalar(scan.result(state), here)

    cg.for_range(I64(0), emitter.reduction[0], step, name="r0")


def _outer_row(emitter: StageEmitter, env: Env, xs: ir.Value, xe: ir.Value) -> None:
    cg, body, scan = emitter.cg, emitter.body, emitter.scan
    body.emit_level(0, env)

    def chunk(columns: Env, _: bool) -> None:
        body.emit_level(1, columns)
        slots = scan.allocate(emitter.stage.lanes)

        def step(r: ir.Value) -> None:
            here = _step_env(columns, r)
            body.emit_level(2, here)
            state = scan.step(scan.load(slots), body.vector_value(here), r)
            scan.store(slots, state)
            body.emit_output_bases(here)
            body.store_vector(scan.result(state), here)

        cg.for_range(I64(0), emitter.reduction[0], step, name="r0")

    emitter.vector_loop(env, xs, xe, chunk)
