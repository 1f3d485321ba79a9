"""
Translation of a loop body, level by level, into the loop nest around it.

`BodyEmitter.emit_level(level, env)` writes the body ops planned at `level`
(see `plan`) where the builder stands, so that each is computed once per
iteration of the deepest loop it depends on. Values live in an `Env`: scalars
outside the vectorized loop, vectors of `env.lanes` inside it. Loads that are
affine in the vectorized variable get their row base pointer computed at the
level of the rest of their address; in the vector loop they are one pointer
plus the loop counter (a unit stride is a plain vector load, another stride a
gather), and in the masked tail of a loop every vector load is masked.

An integer division whose divisor may be zero sets the kernel's status word
(the pointer at `STATUS_SLOT`) to `STATUS_ZERO_DIVISOR` when an active lane
divides by zero; the launch then raises as torch does on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy
from llvmlite import ir
from xdsl.ir import Operation, SSAValue

from permalloy.analysis.affine import split_affine
from permalloy.dialects.loop import IndexOp, LoadOp, ScatterYieldOp, YieldOp
from permalloy.dialects.sym import symbol
from permalloy.targets.llvm.arith_ops import ARITH, may_divide_by_zero
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.convert import from_memory, to_memory
from permalloy.targets.llvm.exprs import emit_expr
from permalloy.targets.llvm.math_ops import emit_math
from permalloy.targets.llvm.plan import StagePlan, Tensor
from permalloy.targets.llvm.types import (
    I64,
    UnsupportedKernelError,
    lanes_of,
    memory_type,
)

STATUS_SLOT = -1
STATUS_ZERO_DIVISOR = 1


@dataclass
class Env:
    """Values visible where code is being emitted."""

    values: dict[SSAValue, ir.Value] = field(default_factory=dict)
    scalars: dict[str, ir.Value] = field(default_factory=dict)
    bases: dict[object, ir.Value] = field(default_factory=dict)
    lanes: int = 0
    mask: ir.Value | None = None
    vector_index: ir.Value | None = None

    def child(self, **changes) -> Env:
        env = Env(dict(self.values), dict(self.scalars), dict(self.bases), self.lanes, self.mask, self.vector_index)
        for key, value in changes.items():
            setattr(env, key, value)
        return env


class BodyEmitter:
    """Emits the body of one stage's loop op."""

    def __init__(self, cg: CodeGen, stage: StagePlan, pointers: dict[int, ir.Value], zero: ir.Value):
        self.cg = cg
        self.stage = stage
        self.pointers = pointers
        self.zero = zero
        self.ops = [op for op in stage.op.body.block.ops if not isinstance(op, YieldOp | ScatterYieldOp)]
        self.vector_symbol = symbol(stage.vector_var) if stage.vector_var else None

    @property
    def yielded(self) -> SSAValue:
        return self.stage.op.yielded

    def enter_vector(self, env: Env, start: ir.Value, lanes: int, mask: ir.Value | None) -> Env:
        """The environment of one chunk of the vectorized loop starting at `start`."""
        scalars = dict(env.scalars)
        scalars[self.stage.vector_var] = start
        return env.child(scalars=scalars, lanes=lanes, mask=mask, vector_index=None)

    def vector_index(self, env: Env) -> ir.Value:
        """The vectorized variable's value in each lane of the chunk (made on first use)."""
        if env.vector_index is None:
            start = env.scalars[self.stage.vector_var]
            env.vector_index = self.cg.builder.add(self.cg.splat(start, env.lanes), self.cg.iota(env.lanes))
        return env.vector_index

    def expr_env(self, env: Env, vector: bool, index_values=()) -> dict[str, ir.Value]:
        names = dict(env.scalars)
        if vector:
            names[self.stage.vector_var] = self.vector_index(env)
        for i, value in enumerate(index_values):
            names[f"v{i}"] = env.values[value]
        return names

    def emit_level(self, level: int, env: Env) -> None:
        for op in self.ops:
            load = self.stage.loads.get(op)
            if load is not None and load.kind == "affine" and load.rest_level == level:
                self._emit_base(op, env)
            if self.stage.levels[op] == level:
                env.values[op.results[0]] = self._translate(op, env)

    def _emit_base(self, op: LoadOp, env: Env) -> None:
        plan = self.stage.loads[op]
        tensor = self.stage.inputs[op.source]
        offset = emit_expr(self.cg, plan.rest, self.expr_env(env, False, op.index_values))
        env.bases[op] = self.cg.element_ptr(self.pointers[tensor.slot], memory_type(tensor.element), offset)

    def _translate(self, op: Operation, env: Env) -> ir.Value:
        if isinstance(op, LoadOp):
            return self._load(op, env)
        if isinstance(op, IndexOp):
            vector = op in self.stage.vectors
            return emit_expr(self.cg, self.stage.index_exprs[op], self.expr_env(env, vector))
        args = self.cg.match(*(env.values[v] for v in op.operands))
        if op.name in ARITH:
            if may_divide_by_zero(op):
                self._check_divisor(args[1], env.mask)
            return ARITH[op.name](self.cg, op, args)
        if op.name.startswith("math."):
            return emit_math(self.cg, op, args)
        raise UnsupportedKernelError(f"the LLVM target cannot translate {op.name} in a loop body")

    def _check_divisor(self, divisor: ir.Value, mask: ir.Value | None) -> None:
        """Sets the status word when an active lane's divisor is zero."""
        cg, b = self.cg, self.cg.builder
        zero = b.icmp_unsigned("==", divisor, cg.like(divisor, 0))
        if mask is not None:
            zero = b.and_(zero, mask if lanes_of(zero) else cg.any_lane(mask))
        found = cg.any_lane(zero)
        status = self.pointers[STATUS_SLOT]
        cg.if_then(found, lambda: b.store(ir.Constant(ir.IntType(32), STATUS_ZERO_DIVISOR), status), "zero_divisor")

    def _load(self, op: LoadOp, env: Env) -> ir.Value:
        plan = self.stage.loads[op]
        tensor = self.stage.inputs[op.source]
        element = memory_type(tensor.element)
        mask = env.values[op.mask] if op.mask is not None else None
        cg, b = self.cg, self.cg.builder
        if op not in self.stage.vectors or plan.kind == "uniform":
            offset = emit_expr(cg, plan.address, self.expr_env(env, False, op.index_values))
            ptr = cg.element_ptr(self.pointers[tensor.slot], element, offset)
            if mask is not None:
                ptr = b.select(cg.any_lane(mask), ptr, self.zero)
            value = cg.load(ptr, element, 0, None)
            if mask is not None:
                value, mask = cg.match(value, mask)
                value = b.select(mask, value, cg.like(value, 0))
            return from_memory(cg, value, tensor.element)
        lanes = env.lanes
        if mask is not None:
            mask = cg.splat(mask, lanes)
            if env.mask is not None:
                mask = b.and_(mask, env.mask)
        else:
            mask = env.mask
        if plan.kind == "affine":
            base = env.bases[op]
            start = env.scalars[self.stage.vector_var]
            if plan.coefficient == 1:
                value = cg.load(cg.element_ptr(base, element, start), element, lanes, mask)
                return from_memory(cg, value, tensor.element)
            stride = cg.splat(emit_expr(cg, plan.coefficient, env.scalars), lanes)
            offsets = b.mul(self.vector_index(env), stride)
            value = cg.gather(cg.element_ptr(base, element, offsets), element, mask)
            return from_memory(cg, value, tensor.element)
        offsets = cg.splat(emit_expr(cg, plan.address, self.expr_env(env, True, op.index_values)), lanes)
        value = cg.gather(cg.element_ptr(self.pointers[tensor.slot], element, offsets), element, mask)
        return from_memory(cg, value, tensor.element)

    # -- results -------------------------------------------------------------

    def output_address(self, tensor: Tensor) -> sympy.Expr:
        return self.stage.output_addresses[self.stage.outputs.index(tensor)]

    def emit_output_bases(self, env: Env) -> None:
        """Row base pointers of the outputs (the part of their address before d_last)."""
        for tensor in self.stage.outputs:
            split = split_affine(self.output_address(tensor), self.vector_symbol)
            rest = split[0] if split is not None else sympy.Integer(0)
            offset = emit_expr(self.cg, rest, env.scalars) if split is not None else I64(0)
            element = memory_type(tensor.element)
            env.bases[tensor] = self.cg.element_ptr(self.pointers[tensor.slot], element, offset)

    def store_scalar(self, value: ir.Value, env: Env) -> None:
        """Store one value per output (the result of a row's reduction)."""
        for tensor in self.stage.outputs:
            offset = emit_expr(self.cg, self.output_address(tensor), env.scalars)
            element = memory_type(tensor.element)
            ptr = self.cg.element_ptr(self.pointers[tensor.slot], element, offset)
            self.cg.store(to_memory(self.cg, value, tensor.element), ptr, None)

    def store_vector(self, value: ir.Value, env: Env) -> None:
        """Store the lanes of a chunk of the vectorized d_last to every output."""
        cg = self.cg
        value = cg.splat(value, env.lanes)
        for tensor in self.stage.outputs:
            element = memory_type(tensor.element)
            stored = to_memory(cg, value, tensor.element)
            split = split_affine(self.output_address(tensor), self.vector_symbol)
            if split is not None and split[1] == 1:
                ptr = cg.element_ptr(env.bases[tensor], element, env.scalars[self.stage.vector_var])
                cg.store(stored, ptr, env.mask)
                continue
            if split is not None:
                stride = cg.splat(emit_expr(cg, split[1], env.scalars), env.lanes)
                ptrs = cg.element_ptr(env.bases[tensor], element, cg.builder.mul(self.vector_index(env), stride))
            else:
                offsets = emit_expr(cg, self.output_address(tensor), self.expr_env(env, True))
                ptrs = cg.element_ptr(self.pointers[tensor.slot], element, cg.splat(offsets, env.lanes))
            cg.scatter(stored, ptrs, env.mask)

    def vector_value(self, env: Env) -> ir.Value:
        """The yielded value in the current chunk, as a vector of its lanes."""
        value = env.values[self.yielded]
        return self.cg.splat(value, env.lanes) if env.lanes and not lanes_of(value) else value
