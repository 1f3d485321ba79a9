"""
Reduction kinds as vector accumulators.

An accumulator is one or two stack slots (value, and position for argmax and
argmin) holding a vector of partial results, one per lane. `combine` folds a
new vector of values into it (lanes off in a tail mask are left unchanged),
`horizontal` reduces the lanes to the result of a row, and `finish` converts an
accumulated value to the result's type.

Floats follow torch: f16/bf16 accumulate in f32; max and min propagate nan;
argmax/argmin give the first position of the extreme value, nan counting as
the extreme. Float sums are accumulated in blocks (`needs_blocks`): each block
starts from zero and is added to the total at its end, which keeps the error of
long sums close to that of pairwise summation.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Attribute

from permalloy.dialects.ptensor import ReduceKind
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.convert import from_compute, to_compute
from permalloy.targets.llvm.types import (
    I64,
    lanes_of,
    is_bool,
    is_float,
    is_half_like,
    is_unsigned,
    register_type,
)

ARG_KINDS = (ReduceKind.ARGMAX, ReduceKind.ARGMIN)
BOOL_KINDS = {
    ReduceKind.SUM: ReduceKind.ANY,
    ReduceKind.MAX: ReduceKind.ANY,
    ReduceKind.PROD: ReduceKind.ALL,
    ReduceKind.MIN: ReduceKind.ALL,
}


@dataclass
class Accumulator:
    """
    Stack slots of `count` partial results of `lanes` lanes each (value, and
    position for argmax/argmin); `at(i)` is the i-th of them.
    """

    value: ir.Value
    position: ir.Value | None
    value_type: ir.VectorType
    count: int = 1

    @property
    def lanes(self) -> int:
        return self.value_type.count

    def at(self, cg: CodeGen, index: ir.Value) -> Accumulator:
        b = cg.builder
        value = b.gep(self.value, [index], source_etype=self.value_type)
        position = None
        if self.position is not None:
            position = b.gep(self.position, [index], source_etype=ir.VectorType(I64, self.lanes))
        return Accumulator(value, position, self.value_type)


class Reduction:
    """The code of one reduction kind over values of one element type."""

    def __init__(
        self,
        cg: CodeGen,
        kind: ReduceKind,
        value_type: Attribute,
        result_type: Attribute,
        unsigned: bool = False,
    ):
        self.cg = cg
        if is_bool(value_type) and kind in BOOL_KINDS:
            kind = BOOL_KINDS[kind]  # a bool sum is nonzero when any value is, as torch casts it
        self.kind = kind
        self.value_type = value_type
        self.result_type = result_type
        self.is_float = is_float(value_type)
        self.unsigned = unsigned or is_unsigned(result_type) or is_bool(value_type)
        self.acc_type = register_type(Float32Type() if is_half_like(value_type) else value_type)

    @property
    def is_arg(self) -> bool:
        return self.kind in ARG_KINDS

    @property
    def needs_blocks(self) -> bool:
        return self.kind == ReduceKind.SUM and self.is_float

    def identity(self) -> ir.Constant:
        ty, kind = self.acc_type, self.kind
        if kind in (ReduceKind.SUM, ReduceKind.ANY):
            return ir.Constant(ty, 0)
        if kind in (ReduceKind.PROD, ReduceKind.ALL):
            return ir.Constant(ty, 1)
        largest = kind in (ReduceKind.MIN, ReduceKind.ARGMIN)
        if self.is_float:
            return ir.Constant(ty, float("inf") if largest else float("-inf"))
        width = ty.width
        if self.unsigned:
            return ir.Constant(ty, (1 << width) - 1 if largest else 0)
        return ir.Constant(ty, (1 << (width - 1)) - 1 if largest else -(1 << (width - 1)))

    def allocate(self, lanes: int, count: int = 1) -> Accumulator:
        vector = ir.VectorType(self.acc_type, lanes)
        value = self.cg.alloca(vector, count=count if count > 1 else 0)
        position = None
        if self.is_arg:
            position = self.cg.alloca(ir.VectorType(I64, lanes), count=count if count > 1 else 0)
        return Accumulator(value, position, vector, count)

    def _values(self, acc: Accumulator) -> ir.Value:
        return self.cg.builder.load(acc.value, typ=acc.value_type)

    def _positions(self, acc: Accumulator) -> ir.Value:
        return self.cg.builder.load(acc.position, typ=ir.VectorType(I64, acc.lanes))

    def _each(self, count: int, body) -> None:
        """body(i) for every entry index i of an accumulator of `count` entries."""
        if count == 1:
            body(None)
        else:
            self.cg.for_range(I64(0), I64(count), body, name="acc")

    def reset(self, acc: Accumulator) -> None:
        """Every partial result of `acc` to the identity."""

        def one(i: ir.Value | None) -> None:
            entry = acc if i is None else acc.at(self.cg, i)
            self.cg.builder.store(self.cg.splat(self.identity(), acc.lanes), entry.value)
            if entry.position is not None:
                self.cg.builder.store(self.cg.const(I64, 0, acc.lanes), entry.position)

        self._each(acc.count, one)

    def combine(
        self,
        acc: Accumulator,
        value: ir.Value,
        mask: ir.Value | None = None,
        position: ir.Value | None = None,
    ) -> None:
        """acc = acc (+) value on the lanes of `mask` (all when None)."""
        self.store(acc, self.step(self.load(acc), value, mask, position))

    def load(self, acc: Accumulator) -> tuple[ir.Value, ir.Value | None]:
        """The state (values, positions) held by one accumulator entry."""
        return self._values(acc), self._positions(acc) if self.is_arg else None

    def store(self, acc: Accumulator, state: tuple[ir.Value, ir.Value | None]) -> None:
        self.cg.builder.store(state[0], acc.value)
        if state[1] is not None:
            self.cg.builder.store(state[1], acc.position)

    def step(
        self,
        state: tuple[ir.Value, ir.Value | None],
        value: ir.Value,
        mask: ir.Value | None = None,
        position: ir.Value | None = None,
        widened: bool = False,
    ) -> tuple[ir.Value, ir.Value | None]:
        """A state combined with new values (vectors, or scalars for scalar
        states); `widened` values are already in the accumulator's type (the
        partial results of a split reduction), others are the body's values."""
        b = self.cg.builder
        current, positions = state
        lanes = lanes_of(current)
        if not widened:
            value = to_compute(self.cg, value, self.value_type)
        value = self.cg.splat(value, lanes)
        if self.is_arg:
            better = self._better(value, current)
            if mask is not None:
                better = b.and_(better, mask)
            return b.select(better, value, current), b.select(better, self.cg.splat(position, lanes), positions)
        if mask is not None:
            value = b.select(mask, value, self.cg.splat(self.identity(), lanes))
        return self.merge_values(current, value), None

    def merge(self, total: Accumulator, part: Accumulator) -> None:
        """total = total (+) part, entry by entry and lane by lane (blocked sums)."""

        def one(i: ir.Value | None) -> None:
            t = total if i is None else total.at(self.cg, i)
            p = part if i is None else part.at(self.cg, i)
            self.cg.builder.store(self.merge_values(self._values(t), self._values(p)), t.value)

        self._each(total.count, one)

    def merge_values(self, a: ir.Value, v: ir.Value) -> ir.Value:
        b, kind = self.cg.builder, self.kind
        if kind == ReduceKind.SUM:
            return b.fadd(a, v) if self.is_float else b.add(a, v)
        if kind == ReduceKind.PROD:
            return b.fmul(a, v) if self.is_float else b.mul(a, v)
        if kind == ReduceKind.ANY:
            return b.or_(a, v)
        if kind == ReduceKind.ALL:
            return b.and_(a, v)
        if self.is_float:
            # a nan in `a` stays (the compare fails), a nan in `v` replaces it:
            # one max/min instruction and a masked move on x86.
            op = ">" if kind == ReduceKind.MAX else "<"
            extreme = b.select(b.fcmp_ordered(op, v, a), v, a)
            return b.select(b.fcmp_unordered("uno", v, v), v, extreme)
        return self.cg.intrinsic(self._extreme_name(), [a, v])

    def _extreme_name(self) -> str:
        largest = self.kind in (ReduceKind.MAX, ReduceKind.ARGMAX)
        if self.is_float:
            return "maximum" if largest else "minimum"
        prefix = "u" if self.unsigned else "s"
        return prefix + ("max" if largest else "min")

    def _better(self, value: ir.Value, current: ir.Value) -> ir.Value:
        """Lanes where `value` strictly beats `current` (nan beats non-nan)."""
        b = self.cg.builder
        op = ">" if self.kind == ReduceKind.ARGMAX else "<"
        if not self.is_float:
            compare = b.icmp_unsigned if self.unsigned else b.icmp_signed
            return compare(op, value, current)
        strict = b.fcmp_ordered(op, value, current)
        new_nan = b.and_(b.fcmp_unordered("uno", value, value), b.fcmp_ordered("ord", current, current))
        return b.or_(strict, new_nan)

    def horizontal(self, acc: Accumulator) -> ir.Value:
        """The reduction of all lanes, as the result's register type."""
        return self.finish_state(self.lanes_state(acc))

    def lanes_state(self, acc: Accumulator) -> tuple[ir.Value, ir.Value | None]:
        """The lanes of an accumulator reduced to one scalar state (value, position)."""
        b = self.cg.builder
        values = self._values(acc)
        best = self._reduce_lanes(values)
        if not self.is_arg:
            return best, None
        lanes = values.type.count
        best_vec = self.cg.splat(best, lanes)
        if self.is_float:
            same = b.or_(
                b.fcmp_ordered("==", values, best_vec),
                b.and_(b.fcmp_unordered("uno", values, values), b.fcmp_unordered("uno", best_vec, best_vec)),
            )
        else:
            same = b.icmp_signed("==", values, best_vec)
        positions = b.select(same, self._positions(acc), self.cg.const(I64, (1 << 63) - 1, lanes))
        return best, self.cg.intrinsic("vector.reduce.smin", [positions], ret=I64)

    def finish_state(self, state: tuple[ir.Value, ir.Value | None]) -> ir.Value:
        """A scalar state as the result: the position for argmax/argmin, else the value."""
        return state[1] if self.is_arg else self.finish(state[0])

    def _reduce_lanes(self, values: ir.Value) -> ir.Value:
        kind, ty = self.kind, self.acc_type
        if kind == ReduceKind.SUM and self.is_float:
            return self.cg.intrinsic("vector.reduce.fadd", [ir.Constant(ty, -0.0), values], ret=ty, overloads=[values.type], fastmath=("reassoc",))
        if kind == ReduceKind.PROD and self.is_float:
            return self.cg.intrinsic("vector.reduce.fmul", [ir.Constant(ty, 1.0), values], ret=ty, overloads=[values.type], fastmath=("reassoc",))
        name = {
            ReduceKind.SUM: "add", ReduceKind.PROD: "mul", ReduceKind.ANY: "or", ReduceKind.ALL: "and",
        }.get(kind)  # fmt: skip
        if name is None:
            name = self._extreme_name()
            name = {"maximum": "fmaximum", "minimum": "fminimum"}.get(name, name)
        return self.cg.intrinsic("vector.reduce." + name, [values], ret=ty)

    def empty_result(self) -> ir.Value:
        """The result of reducing nothing: the identity (position 0 for arg kinds)."""
        return I64(0) if self.is_arg else self.finish(self.identity())

    def finish(self, value: ir.Value) -> ir.Value:
        """An accumulated value (scalar or vector) as the result's register type."""
        if self.is_arg:
            return value
        return from_compute(self.cg, value, self.result_type)

    def finish_vector(self, acc: Accumulator) -> ir.Value:
        """The accumulator's lanes as results (one output element per lane)."""
        return self._positions(acc) if self.is_arg else self.finish(self._values(acc))

