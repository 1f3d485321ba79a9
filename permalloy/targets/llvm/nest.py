"""
The loop nest of one stage: `run(ptrs, syms, lo, hi)` computes work items
`[lo, hi)` of a stage (see `plan` for the three nest shapes).

Work items are output elements in row-major order for `pointwise` and `outer`
stages (a thread's range may start and end inside a row), and output rows for
`inner` reductions. The row loop walks the outer parallel indices with an
odometer (one division per thread, not per row); the vectorized loop runs full
chunks of `lanes` unmasked and one masked chunk for the tail.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy
from llvmlite import ir

from permalloy.dialects.loop import LoadOp
from permalloy.dialects.sym import product
from permalloy.targets.llvm.body import BodyEmitter, Env
from permalloy.targets.llvm.codegen import CodeGen, lane_mask
from permalloy.targets.llvm.exprs import emit_expr
from permalloy.targets.llvm.plan import INNER, OUTER, POINTWISE, StagePlan
from permalloy.targets.llvm.reductions import Accumulator, Reduction
from permalloy.targets.llvm.types import I64, is_unsigned

SUM_BLOCK_CHUNKS = 64  # chunks per block of a blocked float sum along a vector loop
SUM_BLOCK_ROWS = 256  # iterations per block of a blocked float sum along r


def work_items(stage: StagePlan) -> sympy.Expr:
    """The number of work items of a stage (see the module docstring)."""
    return product(stage.parallel)


class StageEmitter:
    """Writes the body of `run` for one stage into a CodeGen."""

    def __init__(self, cg: CodeGen, stage: StagePlan, env: Env, pointers: dict[int, ir.Value], zero: ir.Value):
        self.cg = cg
        self.b = cg.builder
        self.stage = stage
        self.env = env
        self.body = BodyEmitter(cg, stage, pointers, zero)
        self.parallel = [emit_expr(cg, e, env.scalars) for e in stage.parallel]
        self.reduction = [emit_expr(cg, e, env.scalars) for e in stage.reduction]
        self.red = None
        if stage.kind is not None:
            op = stage.op
            self.red = Reduction(cg, stage.kind, op.yielded.type, op.result.type.element_type, _unsigned(stage))

    def emit(self, lo: ir.Value, hi: ir.Value) -> None:
        self.body.emit_level(-1, self.env)
        if self.red is None:
            self._element_rows(lo, hi, self._pointwise_row)
            return
        volume = I64(1)
        for size in self.reduction:
            volume = self.b.mul(volume, size)
        empty = self.b.icmp_signed("==", volume, I64(0))
        with self.b.if_else(empty) as (then, otherwise):
            with then:
                self._rows(lo, hi, empty=True)
            with otherwise:
                self._rows(lo, hi, empty=False)

    def _rows(self, lo: ir.Value, hi: ir.Value, empty: bool) -> None:
        if self.stage.mode == INNER:
            self._row_loop(self.env, lo, hi, lambda env, row: self._inner_row(env, empty))
        else:
            self._element_rows(lo, hi, lambda env, xs, xe: self._outer_row(env, xs, xe, empty))

    # -- rows ----------------------------------------------------------------

    def _element_rows(self, lo: ir.Value, hi: ir.Value, per_row: Callable[[Env, ir.Value, ir.Value], None]) -> None:
        """Rows of the element range [lo, hi), each with its [xs, xe) along d_last."""
        b = self.b
        width = self.parallel[-1]
        first_row, first_col = b.sdiv(lo, width), b.srem(lo, width)
        last = b.sub(hi, I64(1))
        last_row, last_end = b.sdiv(last, width), b.add(b.srem(last, width), I64(1))

        def row(env: Env, index: ir.Value) -> None:
            xs = b.select(b.icmp_signed("==", index, first_row), first_col, I64(0))
            xe = b.select(b.icmp_signed("==", index, last_row), last_end, width)
            per_row(env, xs, xe)

        self._row_loop(self.env, first_row, b.add(last_row, I64(1)), row)

    def _row_loop(self, env: Env, first: ir.Value, end: ir.Value, body: Callable[[Env, ir.Value], None]) -> None:
        """Rows [first, end) of the row dimensions, their indices kept as an odometer."""
        b = self.b
        dims = [(name, self.parallel[int(name[1:])]) for name, _ in self.stage.row_dims()]
        slots = []
        remaining = first
        for name, size in reversed(dims):
            slots.append(self.cg.alloca(I64, b.urem(remaining, size), name=name))
            remaining = b.udiv(remaining, size)
        slots.reverse()

        def row(index: ir.Value) -> None:
            scalars = dict(env.scalars)
            for (name, _), slot in zip(dims, slots):
                scalars[name] = self.cg.read(slot)
            body(env.child(scalars=scalars), index)
            carry = ir.Constant(ir.IntType(1), 1)
            for (name, size), slot in reversed(list(zip(dims, slots))):
                bumped = b.add(self.cg.read(slot), b.zext(carry, I64))
                carry = b.and_(carry, b.icmp_signed("==", bumped, size))
                b.store(b.select(carry, I64(0), bumped), slot)

        self.cg.for_range(first, end, row, name="row")

    # -- vectorized loop -----------------------------------------------------------

    def _vector_loop(
        self,
        env: Env,
        start: ir.Value,
        end: ir.Value,
        chunk: Callable[[Env, Accumulator | None], None],
        blocks: tuple[Accumulator, Accumulator] | None = None,
    ) -> None:
        """Chunks of `lanes` over [start, end), the last one masked; blocked sums when `blocks`."""
        b, lanes = self.b, self.stage.lanes
        main_end = b.add(start, b.mul(b.sdiv(b.sub(end, start), I64(lanes)), I64(lanes)))
        total = blocks[0] if blocks else None

        def full(x: ir.Value, target: Accumulator | None) -> None:
            chunk(self.body.enter_vector(env, x, lanes, None), target)

        if blocks is None:
            self.cg.for_range(start, main_end, lambda x: full(x, None), step=lanes, name="x")
        else:
            block = lanes * SUM_BLOCK_CHUNKS

            def one_block(xb: ir.Value) -> None:
                self.red.reset(blocks[1], lanes)
                block_end = b.add(xb, I64(block))
                block_end = b.select(b.icmp_signed("<", block_end, main_end), block_end, main_end)
                self.cg.for_range(xb, block_end, lambda x: full(x, blocks[1]), step=lanes, name="x")
                self.red.merge(total, blocks[1])

            self.cg.for_range(start, main_end, one_block, step=block, name="xb")

        def tail() -> None:
            mask = lane_mask(self.cg, main_end, end, lanes)
            chunk(self.body.enter_vector(env, main_end, lanes, mask), total)

        self.cg.if_then(b.icmp_signed("<", main_end, end), tail, name="tail")

    def _seq_loops(self, env: Env, first: int, names: list[str], innermost: Callable[[Env], None]) -> None:
        """Nested sequential loops over reduction variables `names` at levels first, first+1, ..."""
        if not names:
            innermost(env)
            return
        name, level = names[0], first
        size = self.reduction[int(name[1:])]

        def iteration(i: ir.Value) -> None:
            scalars = dict(env.scalars)
            scalars[name] = i
            inner = env.child(scalars=scalars)
            self.body.emit_level(level, inner)
            self._seq_loops(inner, first + 1, names[1:], innermost)

        self.cg.for_range(I64(0), size, iteration, name=name)

    def _position(self, env: Env, vector: bool) -> ir.Value:
        """Row-major position in the reduction domain, for argmax/argmin."""
        sizes = self.stage.reduction
        position = sum((sympy.Symbol(f"r{j}") * product(sizes[j + 1 :]) for j in range(len(sizes))), sympy.Integer(0))
        return emit_expr(self.cg, sympy.expand(position), self.body.expr_env(env, vector))

    # -- the three shapes --------------------------------------------------------

    def _pointwise_row(self, env: Env, xs: ir.Value, xe: ir.Value) -> None:
        self.body.emit_level(0, env)
        self.body.emit_output_bases(env)

        def chunk(inner: Env, _: Accumulator | None) -> None:
            self.body.emit_level(1, inner)
            self.body.store_vector(self.body.vector_value(inner), inner)

        self._vector_loop(env, xs, xe, chunk)

    def _inner_row(self, env: Env, empty: bool) -> None:
        red, lanes = self.red, self.stage.lanes
        if empty:
            self.body.store_scalar(red.empty_result(), env)
            return
        total = red.allocate(lanes)
        red.reset(total, lanes)
        blocks = (total, red.allocate(lanes)) if red.needs_blocks else None
        self.body.emit_level(0, env)
        m = len(self.stage.reduction)
        outer_names = [f"r{j}" for j in range(m - 1)]

        def innermost(outer: Env) -> None:
            def chunk(inner: Env, target: Accumulator | None) -> None:
                self.body.emit_level(m, inner)
                position = self._position(inner, True) if red.is_arg else None
                red.combine(target or total, self.body.vector_value(inner), lanes, inner.mask, position)

            self._vector_loop(outer, I64(0), self.reduction[-1], chunk, blocks)

        self._seq_loops(env, 1, outer_names, innermost)
        self.body.store_scalar(red.horizontal(total), env)

    def _outer_row(self, env: Env, xs: ir.Value, xe: ir.Value, empty: bool) -> None:
        red, lanes = self.red, self.stage.lanes
        if not empty:
            self.body.emit_level(0, env)
        self.body.emit_output_bases(env)
        total = red.allocate(lanes)
        part = red.allocate(lanes) if red.needs_blocks else None

        def chunk(inner: Env, _: Accumulator | None) -> None:
            if empty:
                self.body.store_vector(red.empty_result(), inner)
                return
            self.body.emit_level(1, inner)
            red.reset(total, lanes)
            names = [f"r{j}" for j in range(len(self.stage.reduction))]

            def combine(deepest: Env, target: Accumulator) -> None:
                position = self._position(deepest, False) if red.is_arg else None
                red.combine(target, self.body.vector_value(deepest), lanes, None, position)

            self._seq_loops_blocked(inner, names, combine, total, part)
            self.body.store_vector(red.finish_vector(total), inner)

        self._vector_loop(env, xs, xe, chunk)

    def _seq_loops_blocked(self, env: Env, names: list[str], combine, total: Accumulator, part: Accumulator | None) -> None:
        """The reduction loops of an `outer` stage, the innermost blocked for float sums."""
        if part is None:
            self._seq_loops(env, 2, names, lambda deepest: combine(deepest, total))
            return
        b, lanes = self.b, self.stage.lanes
        last = names[-1]
        size = self.reduction[int(last[1:])]
        level = 1 + len(names)

        def blocked(outer: Env) -> None:
            def one_block(rb: ir.Value) -> None:
                self.red.reset(part, lanes)
                block_end = b.add(rb, I64(SUM_BLOCK_ROWS))
                block_end = b.select(b.icmp_signed("<", block_end, size), block_end, size)

                def iteration(i: ir.Value) -> None:
                    scalars = dict(outer.scalars)
                    scalars[last] = i
                    deepest = outer.child(scalars=scalars)
                    self.body.emit_level(level, deepest)
                    combine(deepest, part)

                self.cg.for_range(rb, block_end, iteration, name=last)
                self.red.merge(total, part)

            self.cg.for_range(I64(0), size, one_block, step=SUM_BLOCK_ROWS, name=last + "b")

        self._seq_loops(env, 2, names[:-1], blocked)


def _unsigned(stage: StagePlan) -> bool:
    """Whether a reduction's values are unsigned integers: loaded from an unsigned tensor."""
    owner = stage.op.yielded.owner
    return isinstance(owner, LoadOp) and is_unsigned(stage.inputs[owner.source].element)


__all__ = ["StageEmitter", "work_items", "POINTWISE", "OUTER"]
