"""
The body of a kernel function: each group's tiles and each stage inside them.

Every program takes the block of rows `pid * XBLOCK + arange(XBLOCK)` of its
group (1-D in `flat` mode, a column `[XBLOCK, 1]` otherwise, and with a block
of inner positions too in `tiled` mode). A stage then walks its inner axis:
in one block of a static power-of-two size when it fits (`persistent`), else
in chunks of `RBLOCK`; a reduction combines the chunks into an accumulator
and reduces it to one value per row; a scan scans each chunk and carries
the running value of each row from one chunk to the next (`scans`); a
sort sorts each row in one block (`sorts`); a scatter combines each point's
value into its output atomically (`scatters`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy

from permalloy.analysis.collapse import Axis
from permalloy.dialects.buffer import KernelOp
from permalloy.dialects.loop import scalar_type
from permalloy.targets.triton.body import BodyWriter, Tile, store
from permalloy.targets.triton.exprs import TritonExpr
from permalloy.targets.triton.plan import FLAT, SCATTER, TILED, Group, KernelPlan, Stage
from permalloy.targets.triton.reductions import FAR_POSITION, Reduction
from permalloy.targets.triton.scans import Scan
from permalloy.targets.triton.scatters import write_scatter
from permalloy.targets.triton.sorts import write_sort
from permalloy.targets.triton.source import SourceWriter, Value
from permalloy.targets.triton.types import is_bool_dtype, is_unsigned, value_dtype

X, R = "x", "r"


class KernelBodyWriter:
    """Writes the statements of one planned kernel's `@triton.jit` function."""

    def __init__(self, plan: KernelPlan, w: SourceWriter):
        self.plan = plan
        self.w = w
        self.registers: dict[int, Value] = {}

    def size(self, expr: sympy.Expr) -> str:
        """A size (an expression over size symbols) as kernel source."""
        return TritonExpr(lambda name: name, self.w.helpers).text(expr)

    def operand(self, expr: sympy.Expr) -> str:
        """A size as an operand of `//` or `%`."""
        return TritonExpr(lambda name: name, self.w.helpers).atom(expr)

    def emit(self) -> None:
        w = self.w
        write_program_id(w, self.plan.index_bits)
        groups = self.plan.groups
        for position, group in enumerate(groups):
            if len(groups) == 1:
                self._group(group)
                continue
            w.line(f"if STAGE == {position}:")
            with w.indented():
                self._group(group)

    # -- groups -------------------------------------------------------------------

    def _group(self, group: Group) -> None:
        w = self.w
        rows = self.size(group.rows.numel)
        w.comment(f"rows: {_dims_text(group.rows)}")
        if group.mode in (FLAT, SCATTER):
            w.line("xindex = pid * XBLOCK + tl.arange(0, XBLOCK)")
        elif group.mode == TILED:
            w.line(f"xblocks = ({rows} + XBLOCK - 1) // XBLOCK")
            w.line("xindex = (pid % xblocks) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
        else:
            w.line("xindex = pid * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
        w.line(f"xmask = xindex < {rows}")
        variables = self._decompose("xindex", group.rows, frozenset({X}))
        for stage in group.stages:
            w.line("")
            self._stage(group, stage, variables)

    def _decompose(self, flat: str, axis: Axis, deps: frozenset[str]) -> dict[str, Value]:
        """The loop variables of `axis` from a flat position along it."""
        return decompose(self.w, flat, axis.dims, deps, self.operand)

    # -- stages -------------------------------------------------------------------

    def _stage(self, group: Group, stage: Stage, rows: dict[str, Value]) -> None:
        w = self.w
        w.comment(f"stage {stage.position}:")
        w.comment(str(stage.op))
        if stage.barrier:
            w.line("tl.debug_barrier()")
        if group.mode == FLAT:
            self._pointwise(stage, Tile(rows, {X: "xmask"}), "xmask", {X})
        elif group.mode == SCATTER:
            write_scatter(self.w, stage, Tile(rows, {X: "xmask"}), self.registers)
        elif group.mode == TILED:
            w.line("rindex = (pid // xblocks) * RBLOCK + tl.arange(0, RBLOCK)[None, :]")
            self._inner_tile(stage, rows, lambda tile: self._pointwise(stage, tile, "xmask & rmask", {X, R}))
        elif stage.is_reduce:
            self._reduce(stage, rows)
        elif stage.is_scan:
            self._scan(stage, rows)
        elif stage.is_sort:
            self._chunks(stage, rows, lambda tile: write_sort(self.w, stage, tile, self.registers))
        elif stage.inner.dims:
            self._chunks(stage, rows, lambda tile: self._pointwise(stage, tile, "xmask & rmask", {X, R}))
        else:
            self._pointwise(stage, Tile(rows, {X: "xmask"}), "xmask", {X})

    def _inner_tile(self, stage: Stage, rows: dict[str, Value], body) -> None:
        """The inner variables and mask of the chunk at `rindex`, then `body(tile)`."""
        inner = self.size(stage.inner.numel)
        self.w.line(f"rmask = rindex < {inner}")
        variables = dict(rows)
        variables.update(self._decompose("rindex", stage.inner, frozenset({R})))
        forced = frozenset() if bool(stage.inner.numel.is_positive) else frozenset({R})
        body(Tile(variables, {X: "xmask", R: "rmask"}, forced))

    def _chunks(self, stage: Stage, rows: dict[str, Value], body) -> None:
        """The inner axis in one persistent block, or in a loop of RBLOCK chunks."""
        w = self.w
        if stage.block is not None:
            w.line(f"rindex = tl.arange(0, {stage.block})[None, :]")
            self._inner_tile(stage, rows, body)
            return
        w.line(f"for roffset in range(0, {self.size(stage.inner.numel)}, RBLOCK):")
        with w.indented():
            w.line("rindex = roffset + tl.arange(0, RBLOCK)[None, :]")
            self._inner_tile(stage, rows, body)

    def _pointwise(self, stage: Stage, tile: Tile, mask: str, axes: set[str]) -> None:
        writer = BodyWriter(self.w, stage, tile, self.registers)
        value = writer.emit()
        if stage.keeps_register:
            self.registers[stage.position] = self.w.assign(value.text, value.dtype, value.deps, stem="st")
        for tensor in stage.outputs:
            address = writer.expr(stage.output_address(tensor))
            store(self.w, tensor, address, value, mask, axes)

    def _reduce(self, stage: Stage, rows: dict[str, Value]) -> None:
        w = self.w
        element = stage.result_type.element_type
        reduction = Reduction.of(
            stage.kind,  # type: ignore[arg-type]
            value_dtype(stage.op.yielded.type),
            value_dtype(scalar_type(element)),
            is_unsigned(element),
        )
        acc, position = w.fresh("acc"), w.fresh("pos")
        persistent = stage.block is not None
        if not persistent:
            w.line(f"{acc} = tl.full([XBLOCK, RBLOCK], 0, {reduction.acc_dtype}) + {reduction.identity()}")
            if reduction.is_arg:
                w.line(f"{position} = tl.full([XBLOCK, RBLOCK], 0, tl.int64) + {FAR_POSITION}")

        def body(tile: Tile) -> None:
            writer = BodyWriter(w, stage, tile, self.registers)
            value = writer.emit()
            widened = reduction.widen(value.text)
            if persistent:
                w.line(f"{acc} = tl.where(xmask & rmask, {widened}, {reduction.identity()})")
                if reduction.is_arg:
                    w.line(f"{position} = tl.where(xmask & rmask, rindex.to(tl.int64), {FAR_POSITION})")
                return
            chunk = w.fresh("v")
            w.line(f"{chunk} = {widened}")
            if reduction.is_arg:
                index = w.fresh("i")
                w.line(f"{index} = rindex.to(tl.int64)")
                best, at = w.fresh("best"), w.fresh("at")
                w.line(f"{best}, {at} = {reduction.combine_arg(w, acc, position, chunk, index)}")
                w.line(f"{acc} = tl.where(xmask & rmask, {best}, {acc})")
                w.line(f"{position} = tl.where(xmask & rmask, {at}, {position})")
            else:
                w.line(f"{acc} = tl.where(xmask & rmask, {reduction.combine(w, acc, chunk)}, {acc})")

        self._chunks(stage, rows, body)
        result_dtype = value_dtype(scalar_type(element))
        if reduction.is_arg:
            text = f"{reduction.final_arg(w, acc, position)}[:, None]"
        else:
            text = f"{reduction.final(w, acc)}[:, None]"
            if is_bool_dtype(result_dtype):
                text = f"({text})"
        value = w.assign(text, result_dtype, frozenset({X}), stem="st")
        self.registers[stage.position] = value
        for tensor in stage.outputs:
            address = BodyWriter(w, stage, Tile(rows, {X: "xmask"}), self.registers).expr(stage.output_address(tensor))
            store(w, tensor, address, value, "xmask", {X})

    def _scan(self, stage: Stage, rows: dict[str, Value]) -> None:
        """A scan's chunks, each scanned and combined with the running value
        (and position) the earlier chunks of its row left in the carry."""
        w = self.w
        element = stage.result_type.element_type
        result_dtype = value_dtype(scalar_type(element))
        scan = Scan.of(stage.kind, value_dtype(stage.op.yielded.type), result_dtype, is_unsigned(element))  # type: ignore[arg-type]
        chunked = stage.block is None
        carry = [w.fresh("carry")] + ([w.fresh("carry_pos")] if scan.is_position else [])
        if chunked:
            w.line(f"{carry[0]} = tl.full([XBLOCK, 1], 0, {scan.acc_dtype}) + {scan.identity()}")
            if scan.is_position:
                w.line(f"{carry[1]} = tl.full([XBLOCK, 1], 0, tl.int64)")

        def body(tile: Tile) -> None:
            value = BodyWriter(w, stage, tile, self.registers).emit()
            masked = f"tl.where(xmask & rmask, {scan.widen(value.text)}, {scan.identity()})"
            values = w.assign(masked, scan.acc_dtype, frozenset({X, R}), "v").text
            if scan.is_position:
                positions = w.assign("(xindex * 0 + rindex).to(tl.int64)", "tl.int64", frozenset({X, R}), "i").text
                prefix = [w.fresh("s"), w.fresh("sp")]
                w.line(f"{prefix[0]}, {prefix[1]} = {scan.scan(w, values, positions)}")
                if chunked:
                    w.line(f"{prefix[0]}, {prefix[1]} = {scan.combine_positions(w, tuple(carry), tuple(prefix))}")
                result = Value(prefix[1], "tl.int64", frozenset({X, R}))
            else:
                prefix = [w.assign(scan.scan(w, values, None), scan.acc_dtype, frozenset({X, R}), "s").text]
                if chunked:
                    w.line(f"{prefix[0]} = {scan.combine(w, carry[0], prefix[0])}")
                narrowed = scan.narrow(w, prefix[0])
                result = Value(narrowed, result_dtype, frozenset({X, R}))
                if narrowed != prefix[0]:
                    result = w.assign(narrowed, result_dtype, frozenset({X, R}), "st")
            for tensor in stage.outputs:
                address = BodyWriter(w, stage, tile, self.registers).expr(stage.output_address(tensor))
                store(w, tensor, address, result, "xmask & rmask", {X, R})
            if chunked:
                w.helpers.add("_last_column")
                for name, last in zip(carry, prefix, strict=True):
                    w.line(f"{name} = _last_column({last})")

        self._chunks(stage, rows, body)


def write_program_id(w: SourceWriter, index_bits: int | None) -> None:
    """`pid`, the program's position, 64 bits wide where the kernel's indices
    need it (`IDX64` when that depends on the sizes)."""
    w.line("pid = tl.program_id(0)")
    if index_bits == 64:
        w.line("pid = pid.to(tl.int64)")
    elif index_bits is None:
        w.line("if IDX64:")
        with w.indented():
            w.line("pid = pid.to(tl.int64)")


def decompose(
    w: SourceWriter,
    flat: str,
    dims: Sequence[tuple[sympy.Symbol, sympy.Expr]],
    deps: frozenset[str],
    operand: Callable[[sympy.Expr], str],
) -> dict[str, Value]:
    """The loop variables `dims` (row-major) from the flat position `flat`,
    each bound to its name; `operand` writes a size as an operand of `//`, `%`."""
    variables: dict[str, Value] = {}
    for i, (var, size) in enumerate(dims):
        later = sympy.Integer(1)
        for _, s in dims[i + 1 :]:
            later = later * s
        text = flat if later == 1 else f"({flat} // {operand(sympy.expand(later))})"
        if i > 0:
            text = f"{text} % {operand(size)}"
        w.line(f"{var.name} = {text}")
        variables[var.name] = Value(var.name, "tl.int64", deps)
    return variables


def _dims_text(axis: Axis) -> str:
    if not axis.dims:
        return "a single one"
    return ", ".join(f"{var.name} < {size}" for var, size in axis.dims)


def kernel_header(kernel: KernelOp) -> str:
    """The kernel's signature as a comment."""
    signature = kernel.function_type
    ins = ", ".join(str(t) for t in signature.inputs.data)
    outs = ", ".join(str(t) for t in signature.outputs.data)
    return f"buffer.kernel @{kernel.sym_name.data}({ins}) -> ({outs})"
