"""
Translation of one loop body into Triton statements, inside a stage's tile.

`BodyWriter.emit()` writes one statement per body op (loads, `loop.index`,
arith and math) and returns the yielded value. Loop variables are tensors
laid out along the tile axes (`x` rows, `r` inner), so every value carries the
axes it varies along; masks and pointers are combined with `tl.broadcast`
where a load's address varies along fewer axes than its mask.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import sympy
from xdsl.ir import Operation, SSAValue

from permalloy.dialects.loop import IndexOp, LoadOp, ScatterYieldOp, YieldOp
from permalloy.targets.triton.arith import ARITH, result_dtype
from permalloy.targets.triton.exprs import TritonExpr
from permalloy.targets.triton.math_ops import translate_math
from permalloy.targets.triton.plan import Stage, TensorRef
from permalloy.targets.triton.source import SourceWriter, Value
from permalloy.targets.triton.types import UnsupportedKernelError, is_bool_dtype, value_dtype


@dataclass
class Tile:
    """Where a stage's body runs: its loop variables and masks."""

    variables: Mapping[str, Value]
    """Each loop variable (`d0`, `r1`) surviving in the stage, as a value."""
    masks: Mapping[str, str]
    """The mask of each axis of the tile (`x`, and `r` when there is one)."""
    forced: frozenset[str] = frozenset()
    """Axes every load is masked along (an inner axis that may be empty)."""


@dataclass
class BodyWriter:
    """Writes the body of one stage."""

    w: SourceWriter
    stage: Stage
    tile: Tile
    registers: Mapping[int, Value]
    values: dict[SSAValue, Value] = field(default_factory=dict)

    def emit(self) -> Value:
        """Translate every body op; the yielded value (a scatter's positions
        are then among `values`)."""
        for op in self.stage.op.body.block.ops:
            if isinstance(op, YieldOp | ScatterYieldOp):
                return self.values[op.value]
            self.values[op.results[0]] = self._translate(op)
        raise UnsupportedKernelError("a loop body without loop.yield")

    def emit_ops(self, ops: Iterable[Operation]) -> None:
        """Translate some of the body's ops, in order (a factor of a matrix
        product), leaving their values in `values`."""
        for op in ops:
            self.values[op.results[0]] = self._translate(op)

    # -- expressions --------------------------------------------------------------

    def expr(self, expr: sympy.Expr, index_values=()) -> Value:
        """An integer expression as text, with the axes it varies along."""
        names: dict[str, str] = {}
        deps: set[str] = set()
        for sym in expr.free_symbols:
            kind = sym.name[0]
            if kind == "s":
                names[sym.name] = sym.name
            elif kind == "v":
                value = self.values[index_values[int(sym.name[1:])]]
                names[sym.name] = value.text
                deps |= value.deps
            else:
                variable = self.tile.variables.get(sym.name)
                if variable is None:
                    raise UnsupportedKernelError(f"loop variable {sym.name} is unbound in stage {self.stage.position}")
                names[sym.name] = variable.text
                deps |= variable.deps
        text = TritonExpr(names, self.w.helpers).text(expr)
        return Value(text, "tl.int64", frozenset(deps))

    # -- ops ------------------------------------------------------------------------

    def _translate(self, op: Operation) -> Value:
        if isinstance(op, LoadOp):
            return self._load(op)
        if isinstance(op, IndexOp):
            index = self.expr(self.stage.index_expr(op))
            return self.w.assign(f"({index.text}).to(tl.int64)" if index.deps else
                                 f"tl.full([], {index.text}, tl.int64)", "tl.int64", index.deps)  # fmt: skip
        args = [self.values[v] for v in op.operands]
        deps = frozenset().union(*(a.deps for a in args)) if args else frozenset()
        if op.name in ARITH:
            text = ARITH[op.name](self.w, op, args)
        elif op.name.startswith("math."):
            text = translate_math(self.w, op, args)
        else:
            raise UnsupportedKernelError(f"the Triton target cannot translate {op.name} in a loop body")
        dtype = result_dtype(op)
        if is_bool_dtype(dtype) and not deps and args:
            text = scalar_bool(text)
        return self.w.assign(text, dtype, deps)

    def _load(self, op: LoadOp) -> Value:
        source = self.stage.sources[op.source]
        if op in self.stage.register_reads:
            assert isinstance(source, int)
            return self.registers[source]
        assert isinstance(source, TensorRef)
        address = self.expr(self.stage.load_address(op), op.index_values)
        mask_value = self.values[op.mask] if op.mask is not None else None
        axes = set(address.deps) | set(self.tile.forced) | {"x"}
        if mask_value is not None:
            axes |= mask_value.deps
        axes &= set(self.tile.masks)
        masks = [self.tile.masks[a] for a in sorted(axes, reverse=True)]
        if mask_value is not None:
            masks.append(mask_value.text)
        pointer = source.name if address.text == "0" else f"{source.name} + {address.text}"
        mask = " & ".join(masks)
        if not axes <= address.deps:
            pointer_name, mask_name = self.w.fresh("p"), self.w.fresh("m")
            self.w.line(f"{pointer_name}, {mask_name} = tl.broadcast({pointer}, {mask})")
            pointer, mask = pointer_name, mask_name
        loaded = f"tl.load({pointer}, mask={mask}, other=0)"
        dtype = value_dtype(op.result.type)
        if source.dtype != dtype:
            loaded += f".to({dtype}, bitcast=True)"
        return self.w.assign(loaded, dtype, frozenset(axes))


def scalar_bool(text: str) -> str:
    """
    A 0-d i1 computed from 0-d operands (a comparison of constants), rebuilt
    as an i1 scalar. Triton's interpreter keeps a comparison's result with
    its operands' element type, so broadcasting it to a block (for `&`, `|`,
    `^` with a block of booleans) would give floats.
    """
    return f"tl.where({text}, True, False)"


def store(w: SourceWriter, tensor: TensorRef, address: Value, value: Value, mask: str, mask_axes: set[str]) -> None:
    """Store `value` (a body value) to `tensor` at `address`, where `mask` holds."""
    text = value.text
    if tensor.dtype != value.dtype:
        text = f"{text}.to({tensor.dtype}, bitcast=True)"
    pointer = tensor.name if address.text == "0" else f"{tensor.name} + {address.text}"
    if not mask_axes <= address.deps:
        pointer_name, mask_name = w.fresh("p"), w.fresh("m")
        w.line(f"{pointer_name}, {mask_name} = tl.broadcast({pointer}, {mask})")
        pointer, mask = pointer_name, mask_name
    w.line(f"tl.store({pointer}, {text}, mask={mask})")
