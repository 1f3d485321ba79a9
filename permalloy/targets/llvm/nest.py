"""
The loop nests of a group of stages: `run(ptrs, syms, lo, hi)` computes work
items `[lo, hi)` (see `plan` for the nest shapes and the groups).

A group of one pointwise or `outer` stage counts its items as output elements
in row-major order (a thread's range may start and end inside a row), of its
parallel domain for an `outer` reduction or scan; other groups count rows,
and every stage of the group computes its part of a row in turn. The row
loop walks the outer parallel indices with an odometer (one division per
thread, not per row); vectorized loops run full chunks of `lanes` unmasked
and one masked chunk for the tail. A scan's part of a row is `scans.scan_row`,
a sort's row `sorts.sort_row`, a scatter's points are
`scatters.scatter_points` (on one thread);
only a reduction to a single value is split across threads along r0.
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
from permalloy.targets.llvm.plan import INNER, POINTWISE, SCATTER, SORT, StagePlan
from permalloy.targets.llvm.reductions import Accumulator, Reduction
from permalloy.targets.llvm.scans import ScanCombine, scan_row
from permalloy.targets.llvm.scatters import scatter_points
from permalloy.targets.llvm.sorts import sort_row
from permalloy.targets.llvm.types import I64, byte_size, is_unsigned

SUM_BLOCK_CHUNKS = 64  # chunks per block of a blocked float sum along a vector loop
SUM_BLOCK_ROWS = 256  # iterations per block of a blocked float sum along r
JAM = 4  # reduction iterations an `outer` reduction combines in registers
TILE_BYTES = 12288  # accumulators of an `outer` reduction's column tile: well inside L1


PARTIAL_BYTES = 16  # one thread's partial result of a split reduction: value, then position
MAX_SPLIT = 64  # threads a split reduction uses at most


def runs_alone(group: list[StagePlan]) -> bool:
    """Whether a group runs on one thread whatever its size: a scatter's,
    whose points may land on one element."""
    return group[0].mode == SCATTER


def counts_elements(group: list[StagePlan]) -> bool:
    """Whether a group's work items are output elements (else rows)."""
    return len(group) == 1 and group[0].mode not in (INNER, SORT)


def splits_reduction(group: list[StagePlan]) -> bool:
    """Whether a group is one reduction to a single value, split across threads along r0."""
    stage = group[0]
    single = len(group) == 1 and stage.mode == INNER and stage.kind is not None
    return single and product(s for _, s in stage.row_dims()) == 1


def work_items(group: list[StagePlan]) -> sympy.Expr:
    """The number of work items of a group (see the module docstring)."""
    if counts_elements(group):
        return product(group[0].parallel)
    if splits_reduction(group):
        return group[0].reduction[0]
    return product(size for _, size in group[0].row_dims())


def alignment(group: list[StagePlan]) -> int:
    """Work items are shared among threads in multiples of this."""
    vectorized = counts_elements(group) or (splits_reduction(group) and len(group[0].reduction) == 1)
    return group[0].lanes if vectorized else 1


def work_volume(group: list[StagePlan]) -> sympy.Expr:
    """Points of all iteration domains of a group: how much work it is."""
    return sympy.expand(sum((product(s.parallel) * product(s.reduction) for s in group), sympy.Integer(0)))


class NestEmitter:
    """Writes the body of `run` for one group of stages into a CodeGen."""

    def __init__(self, cg: CodeGen, group: list[StagePlan], env: Env, pointers: dict[int, ir.Value], zero):
        self.cg = cg
        self.group = group
        self.env = env
        self.stages = [StageEmitter(cg, stage, env, pointers, zero) for stage in group]

    def emit(self, lo: ir.Value, hi: ir.Value, partial: ir.Value | None = None) -> None:
        """The loop nest over work items [lo, hi); a split reduction's partial result to `partial`."""
        for stage in self.stages:
            stage.body.emit_level(-1, self.env)
        first = self.stages[0]
        if first.stage.mode == SCATTER:
            scatter_points(first, self.env, lo, hi)
            return
        if partial is not None:
            first.inner_split(self.env.child(), lo, hi, partial)
            return
        if counts_elements(self.group):
            first.element_rows(lo, hi, first.row)
            return

        def row(env: Env, _: ir.Value) -> None:
            for stage in self.stages:
                width = stage.parallel[-1] if stage.stage.mode == POINTWISE else None
                stage.row(env, I64(0), width)

        first.row_loop(self.env, lo, hi, row)


class StageEmitter:
    """The code of one stage for one row (or part of a row)."""

    def __init__(self, cg: CodeGen, stage: StagePlan, env: Env, pointers: dict[int, ir.Value], zero):
        self.cg = cg
        self.b = cg.builder
        self.stage = stage
        self.env = env
        self.body = BodyEmitter(cg, stage, pointers, zero)
        self.parallel = [emit_expr(cg, e, env.scalars) for e in stage.parallel]
        self.reduction = [emit_expr(cg, e, env.scalars) for e in stage.reduction]
        self.red = None
        self.scan = None
        op = stage.op
        if stage.kind is not None:
            self.red = Reduction(cg, stage.kind, op.yielded.type, op.result.type.element_type, _unsigned(stage))
        if stage.scan_kind is not None:
            self.scan = ScanCombine(cg, stage.scan_kind, op.yielded.type, op.result.type.element_type, _unsigned(stage))

    def row(self, env: Env, xs: ir.Value, xe: ir.Value | None) -> None:
        """Columns [xs, xe) of d_last (pointwise, outer) or one output (inner) of a
        row; a scan's row, or its columns [xs, xe) (outer); a sort's row."""
        if self.stage.mode == SORT:
            sort_row(self, env)
            return
        if self.scan is not None:
            scan_row(self, env, xs, xe)
            return
        if self.red is None:
            self._pointwise_row(env, xs, xe)
            return
        shape = self._inner_row if self.stage.mode == INNER else (lambda e, empty: self._outer_row(e, xs, xe, empty))
        volume = product(self.stage.reduction)
        if volume.is_Integer:
            shape(env, int(volume) == 0)
            return
        empty = self.b.icmp_signed("==", emit_expr(self.cg, volume, env.scalars), I64(0))
        with self.b.if_else(empty) as (then, otherwise):
            with then:
                shape(env.child(), True)
            with otherwise:
                shape(env.child(), False)

    # -- rows ----------------------------------------------------------------

    def element_rows(self, lo: ir.Value, hi: ir.Value, per_row) -> None:
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

        self.row_loop(self.env, first_row, b.add(last_row, I64(1)), row)

    def row_loop(self, env: Env, first: ir.Value, end: ir.Value, body: Callable[[Env, ir.Value], None]) -> None:
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

    # -- loops ---------------------------------------------------------------

    def vector_loop(
        self,
        env: Env,
        start: ir.Value,
        end: ir.Value,
        chunk: Callable[[Env, bool], None],
        blocked: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        """
        Chunks of `lanes` over [start, end), the last one masked. With `blocked`,
        full chunks run in blocks of SUM_BLOCK_CHUNKS, `blocked(run_block)`
        wrapping each block; chunk's flag says whether it runs in a block.
        """
        b, lanes = self.b, self.stage.lanes
        main_end = b.add(start, b.mul(b.sdiv(b.sub(end, start), I64(lanes)), I64(lanes)))

        def full(x: ir.Value) -> None:
            chunk(self.body.enter_vector(env, x, lanes, None), blocked is not None)

        if blocked is None:
            self.cg.for_range(start, main_end, full, step=lanes, name="x")
        else:
            block = lanes * SUM_BLOCK_CHUNKS

            def one_block(xb: ir.Value) -> None:
                block_end = _min(b, b.add(xb, I64(block)), main_end)
                blocked(lambda: self.cg.for_range(xb, block_end, full, step=lanes, name="x"))

            self.cg.for_range(start, main_end, one_block, step=block, name="xb")

        def tail() -> None:
            mask = lane_mask(self.cg, main_end, end, lanes)
            chunk(self.body.enter_vector(env, main_end, lanes, mask), False)

        self.cg.if_then(b.icmp_signed("<", main_end, end), tail, name="tail")

    def _seq_loops(self, env: Env, names: list[str], innermost: Callable[[Env], None], bounds=None) -> None:
        """
        Nested loops over reduction variables `names`, each emitting its level's
        body ops; the first runs over `bounds` (lo, hi) when given, else its size.
        """
        if not names:
            innermost(env)
            return
        name = names[0]
        level = self.stage.var_level[name]
        lo, hi = bounds if bounds is not None else (I64(0), self.reduction[int(name[1:])])

        def iteration(i: ir.Value) -> None:
            scalars = dict(env.scalars)
            scalars[name] = i
            inner = env.child(scalars=scalars)
            self.body.emit_level(level, inner)
            self._seq_loops(inner, names[1:], innermost)

        self.cg.for_range(lo, hi, iteration, name=name)

    def _position(self, env: Env, vector: bool) -> ir.Value:
        """Row-major position in the reduction domain, for argmax/argmin."""
        sizes = self.stage.reduction
        position = sum((sympy.Symbol(f"r{j}") * product(sizes[j + 1 :]) for j in range(len(sizes))), sympy.Integer(0))
        return emit_expr(self.cg, sympy.expand(position), self.body.expr_env(env, vector))

    def _blocks(self, total: Accumulator, part: Accumulator):
        """A `blocked` wrapper: reset `part`, run the block, add `part` to `total`."""

        def wrap(run_block: Callable[[], None]) -> None:
            self.red.reset(part)
            run_block()
            self.red.merge(total, part)

        return wrap

    # -- the three shapes --------------------------------------------------------

    def _pointwise_row(self, env: Env, xs: ir.Value, xe: ir.Value) -> None:
        self.body.emit_level(0, env)
        self.body.emit_output_bases(env)

        def chunk(inner: Env, _: bool) -> None:
            self.body.emit_level(1, inner)
            self.body.store_vector(self.body.vector_value(inner), inner)

        self.vector_loop(env, xs, xe, chunk)

    def _inner_row(self, env: Env, empty: bool, split=None) -> None:
        """One output of an `inner` reduction; with `split` = (lo, hi, partial), the
        part of a single reduction with r0 in [lo, hi), stored as a partial result."""
        red, lanes = self.red, self.stage.lanes
        if empty:
            self.body.store_scalar(red.empty_result(), env)
            return
        total = red.allocate(lanes)
        red.reset(total)
        part = red.allocate(lanes) if red.needs_blocks else None
        self.body.emit_level(0, env)
        m = len(self.stage.reduction)

        def chunk(inner: Env, in_block: bool) -> None:
            self.body.emit_level(m, inner)
            position = self._position(inner, True) if red.is_arg else None
            red.combine(part if in_block else total, self.body.vector_value(inner), inner.mask, position)

        vector_bounds = split[:2] if split is not None and m == 1 else (I64(0), self.reduction[-1])

        def innermost(outer: Env) -> None:
            blocked = self._blocks(total, part) if part is not None else None
            self.vector_loop(outer, *vector_bounds, chunk, blocked)

        outer_bounds = split[:2] if split is not None and m > 1 else None
        self._seq_loops(env, [f"r{j}" for j in range(m - 1)], innermost, outer_bounds)
        if split is None:
            self.body.store_scalar(red.horizontal(total), env)
        else:
            store_partial(self.cg, red, split[2], red.lanes_state(total))

    def inner_split(self, env: Env, lo: ir.Value, hi: ir.Value, partial: ir.Value) -> None:
        """The part of a single reduction with r0 in [lo, hi), as a partial result."""
        self._inner_row(env, False, (lo, hi, partial))

    def finish_split(self, partials: ir.Value) -> None:
        """Combine the MAX_SPLIT partial results at `partials` and store the result."""
        red, cg = self.red, self.cg
        value = cg.alloca(red.acc_type, red.identity())
        position = cg.alloca(I64, I64(0))

        def combine(i: ir.Value) -> None:
            entry = cg.builder.gep(partials, [cg.builder.mul(i, I64(PARTIAL_BYTES))], source_etype=ir.IntType(8))
            state = (cg.read(value), cg.read(position) if red.is_arg else None)
            new_value, new_position = load_partial(cg, red, entry)
            state = red.step(state, new_value, None, new_position, widened=True)
            cg.builder.store(state[0], value)
            if state[1] is not None:
                cg.builder.store(state[1], position)

        cg.for_range(I64(0), I64(MAX_SPLIT), combine, name="partial")
        result = red.finish_state((cg.read(value), cg.read(position) if red.is_arg else None))
        self.body.store_scalar(result, self.env)

    def _outer_row(self, env: Env, xs: ir.Value, xe: ir.Value, empty: bool) -> None:
        red, lanes, b = self.red, self.stage.lanes, self.b
        if empty:
            self.body.emit_output_bases(env)
            self.vector_loop(env, xs, xe, lambda inner, _: self.body.store_vector(red.empty_result(), inner))
            return
        self.body.emit_level(0, env)
        self.body.emit_output_bases(env)
        chunks = self._tile_chunks()
        total = red.allocate(lanes, chunks)
        part = red.allocate(lanes, chunks) if red.needs_blocks else None
        tile = lanes * chunks
        names = [f"r{j}" for j in range(len(self.stage.reduction))]
        size = self.reduction[-1]

        def one_tile(start: ir.Value) -> None:
            end = _min(b, b.add(start, I64(tile)), xe)
            red.reset(total)

            def last_loop(outer: Env) -> None:
                if part is None:
                    self._jammed_rows(outer, I64(0), size, start, end, total)
                    return

                def one_block(rb: ir.Value) -> None:
                    red.reset(part)
                    block_end = _min(b, b.add(rb, I64(SUM_BLOCK_ROWS)), size)
                    self._jammed_rows(outer, rb, block_end, start, end, part)
                    red.merge(total, part)

                self.cg.for_range(I64(0), size, one_block, step=SUM_BLOCK_ROWS, name=names[-1] + "b")

            self._seq_loops(env, names[:-1], last_loop)

            def store(vector: Env, _: bool) -> None:
                result = red.finish_vector(total.at(self.cg, self._chunk_index(vector, start)))
                self.body.store_vector(result, vector)

            self.vector_loop(env, start, end, store)

        self.cg.for_range(xs, xe, one_tile, step=tile, name="tile")

    def _jammed_rows(self, env: Env, lo: ir.Value, hi: ir.Value, start: ir.Value, end: ir.Value, acc) -> None:
        """
        Iterations [lo, hi) of the last reduction loop over the columns [start,
        end) of a tile, JAM at a time: each chunk's partial result is loaded once,
        combined with JAM rows in registers and stored once.
        """
        b, red = self.b, self.red
        last = f"r{len(self.stage.reduction) - 1}"
        last_level, deepest = self.stage.var_level[last], self.stage.vector_level

        def rows(r: ir.Value, count: int) -> None:
            def chunk(vector: Env, _: bool) -> None:
                target = acc.at(self.cg, self._chunk_index(vector, start))
                state = red.load(target)
                for u in range(count):
                    scalars = dict(vector.scalars)
                    scalars[last] = b.add(r, I64(u)) if u else r
                    row = vector.child(scalars=scalars)
                    self.body.emit_level(last_level, row)
                    self.body.emit_level(deepest, row)
                    position = self._position(row, False) if red.is_arg else None
                    state = red.step(state, self.body.vector_value(row), None, position)
                red.store(target, state)

            self.vector_loop(env, start, end, chunk)

        full_end = b.add(lo, b.mul(b.sdiv(b.sub(hi, lo), I64(JAM)), I64(JAM)))
        self.cg.for_range(lo, full_end, lambda r: rows(r, JAM), step=JAM, name=last)
        self.cg.for_range(full_end, hi, lambda r: rows(r, 1), name=last)

    def _tile_chunks(self) -> int:
        """Chunks per column tile: as many as keep the accumulators within TILE_BYTES."""
        acc_bytes = byte_size(self.red.acc_type) + (8 if self.red.is_arg else 0)
        return max(2, min(64, TILE_BYTES // (self.stage.lanes * acc_bytes)))

    def _chunk_index(self, env: Env, tile_start: ir.Value) -> ir.Value:
        start = env.scalars[self.stage.vector_var]
        return self.b.udiv(self.b.sub(start, tile_start), I64(self.stage.lanes))


def store_partial(cg: CodeGen, red: Reduction, entry: ir.Value, state) -> None:
    """A scalar state (value, position) into a partial-result entry."""
    cg.builder.store(state[0], entry)
    if state[1] is not None:
        cg.builder.store(state[1], cg.builder.gep(entry, [I64(8)], source_etype=ir.IntType(8)))


def load_partial(cg: CodeGen, red: Reduction, entry: ir.Value):
    value = cg.builder.load(entry, typ=red.acc_type)
    position = None
    if red.is_arg:
        position = cg.builder.load(cg.builder.gep(entry, [I64(8)], source_etype=ir.IntType(8)), typ=I64)
    return value, position


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _unsigned(stage: StagePlan) -> bool:
    """Whether a reduction's values are unsigned integers: loaded from an unsigned tensor."""
    owner = stage.op.yielded.owner
    return isinstance(owner, LoadOp) and is_unsigned(stage.inputs[owner.source].element)


__all__ = ["NestEmitter", "StageEmitter", "alignment", "counts_elements", "runs_alone", "splits_reduction", "work_items", "work_volume"]
