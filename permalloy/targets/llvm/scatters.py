"""
A scatter's loop nest on the CPU: the points of its domain in row-major
order, one at a time on one thread (the kernel entry never hands a scatter's
group to OpenMP), each loading the element it lands on, combining its value
into it and storing it back. Points that land on one element combine in the
domain's order, as torch's CPU kernels combine them, so sums round alike and
no two threads race on an element.
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Attribute

from permalloy.dialects.loop import ScatterOp
from permalloy.dialects.ptensor import ScatterKind
from permalloy.targets.llvm.body import Env
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.convert import from_compute, from_memory, to_compute, to_memory
from permalloy.targets.llvm.exprs import emit_expr
from permalloy.targets.llvm.types import is_float, is_unsigned, memory_type


def scatter_points(emitter, env: Env, lo: ir.Value, hi: ir.Value) -> None:
    """Points [lo, hi) of the domain of `emitter`'s scatter stage (a `nest.StageEmitter`)."""
    stage, body, cg = emitter.stage, emitter.body, emitter.cg
    op = stage.op
    assert isinstance(op, ScatterOp)
    terminator = op.terminator
    (output,) = stage.outputs
    element = memory_type(output.element)

    def point(here: Env, _: ir.Value) -> None:
        body.emit_level(0, here)
        names = body.expr_env(here, False, terminator.index_values)
        offset = emit_expr(cg, stage.output_addresses[0], names)
        ptr = cg.element_ptr(body.pointers[output.slot], element, offset)
        old = from_memory(cg, cg.builder.load(ptr, typ=element), output.element)
        new = combine(cg, op.kind.data, old, here.values[terminator.value], output.element)
        cg.builder.store(to_memory(cg, new, output.element), ptr)

    emitter.row_loop(env, lo, hi, point)


def combine(cg: CodeGen, kind: ScatterKind, old: ir.Value, new: ir.Value, element: Attribute) -> ir.Value:
    """`new` combined into `old` by `kind`, as torch combines one element:
    f16 and bf16 in f32, rounded once; a NaN on either side of a max or min
    gives NaN."""
    if kind == ScatterKind.ASSIGN:
        return new
    b = cg.builder
    if is_float(element):
        a, v = to_compute(cg, old, element), to_compute(cg, new, element)
        if kind == ScatterKind.SUM:
            result = b.fadd(a, v)
        elif kind == ScatterKind.PROD:
            result = b.fmul(a, v)
        else:
            better = b.fcmp_ordered(">" if kind == ScatterKind.MAX else "<", v, a)
            takes = b.or_(better, b.fcmp_unordered("uno", v, v))
            result = b.select(takes, v, a)
        return from_compute(cg, result, element)
    if kind == ScatterKind.SUM:
        return b.add(old, new)
    if kind == ScatterKind.PROD:
        return b.mul(old, new)
    compare = b.icmp_unsigned if is_unsigned(element) else b.icmp_signed
    return b.select(compare(">" if kind == ScatterKind.MAX else "<", new, old), new, old)
