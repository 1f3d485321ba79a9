"""
The LLVM module of one kernel: an entry function, and per stage a `run`
function (its loop nest over a range of work items) and an OpenMP `worker`.

    i32 @k(ptr %data, ptr %syms, i32 %nthreads)          ; the entry, see __init__
    internal void @k.run0(ptr %ptrs, ptr %syms, i64 %lo, i64 %hi)
    internal void @k.worker0(ptr %args)                  ; args = {ptrs, syms}

For each group of stages in order, the entry computes the number of work
items. Small groups (under `parallel_threshold` points of work), a scatter's
group, or one thread, run `run(0, items)` directly; others call `GOMP_parallel(worker, args, n, 0)` with
`n = min(nthreads, useful threads)`, and each worker runs its contiguous share
of the items, taken from `omp_get_thread_num()` and `omp_get_num_threads()`.
Temporaries (loop results read by later stages and not returned) are
allocated with `aligned_alloc` and freed before returning. A reduction to a
single value is split along r0: each thread reduces its range into a partial
result (`args[2]` holds them), and the entry combines them in thread order.
The entry returns the kernel's status: 0, or `STATUS_ZERO_DIVISOR` when an
integer division met a zero divisor (a stack word whose pointer follows the
temporaries in the pointer array, set by any thread that meets one).
"""

from __future__ import annotations

import re

import sympy
from llvmlite import ir

from permalloy.dialects.sym import product
from permalloy.targets.llvm.arith_ops import may_divide_by_zero
from permalloy.targets.llvm.body import STATUS_SLOT, Env
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.exprs import emit_expr
from permalloy.targets.llvm.nest import (
    MAX_SPLIT,
    PARTIAL_BYTES,
    NestEmitter,
    StageEmitter,
    alignment,
    runs_alone,
    splits_reduction,
    store_partial,
    work_items,
    work_volume,
)
from permalloy.targets.llvm.plan import KernelPlan, StagePlan
from permalloy.targets.llvm.types import I32, I64, PTR, VOID, byte_size, memory_type

DEFAULT_PARALLEL_THRESHOLD = 32768


def llvm_name(name: str) -> str:
    """A kernel symbol as a plain LLVM identifier."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


class KernelEmitter:
    """Builds the LLVM module of one planned kernel."""

    def __init__(
        self,
        plan: KernelPlan,
        name: str,
        *,
        triple: str = "",
        threads: bool = True,
        parallel_threshold: int = DEFAULT_PARALLEL_THRESHOLD,
        avx512: bool = False,
    ):
        self.plan = plan
        self.avx512 = avx512
        self.name = llvm_name(name)
        self.threads = threads
        self.threshold = parallel_threshold
        self.module = ir.Module(name=self.name)
        if triple:
            self.module.triple = triple
        zero_type = ir.ArrayType(I64, 8)
        self.zero = ir.GlobalVariable(self.module, zero_type, self.name + ".zero")
        self.zero.global_constant = True
        self.zero.linkage = "internal"
        self.zero.initializer = ir.Constant(zero_type, None)
        self.status_slot = None
        if any(may_divide_by_zero(op) for stage in plan.stages for op in stage.op.body.block.ops):
            self.status_slot = plan.num_args + len(plan.temporaries)

    def emit(self) -> ir.Module:
        runs, workers = [], []
        for k, group in enumerate(self.plan.groups):
            runs.append(self._emit_run(group, k))
            workers.append(self._emit_worker(group, k, runs[-1]) if self.threads and not runs_alone(group) else None)
        self._emit_entry(runs, workers)
        return self.module

    # -- helpers ---------------------------------------------------------------

    def _symbols(self, cg: CodeGen, syms: ir.Value) -> dict[str, ir.Value]:
        b = cg.builder
        return {
            name: b.load(b.gep(syms, [I64(i)], source_etype=I64), typ=I64, name=name)
            for i, name in enumerate(self.plan.symbols)
        }

    def _pointer(self, cg: CodeGen, ptrs: ir.Value, slot: int) -> ir.Value:
        b = cg.builder
        return b.load(b.gep(ptrs, [I64(slot)], source_etype=PTR), typ=PTR)

    def _value(self, cg: CodeGen, expr: sympy.Expr, scalars: dict[str, ir.Value]) -> ir.Value:
        return emit_expr(cg, sympy.sympify(expr), scalars)

    # -- functions ---------------------------------------------------------------

    def _emit_run(self, group: list[StagePlan], k: int) -> ir.Function:
        split = splits_reduction(group)
        arguments = [PTR, PTR, I64, I64] + ([PTR] if split else [])
        fn = ir.Function(self.module, ir.FunctionType(VOID, arguments), f"{self.name}.run{k}")
        fn.linkage = "internal"
        cg = CodeGen(self.module, fn, self.avx512)
        ptrs, syms, lo, hi = fn.args[:4]
        env = Env(scalars=self._symbols(cg, syms))
        NestEmitter(cg, group, env, self._pointers(cg, ptrs, group), self.zero).emit(
            lo, hi, fn.args[4] if split else None
        )
        cg.builder.ret_void()
        return fn

    def _pointers(self, cg: CodeGen, ptrs: ir.Value, group: list[StagePlan]) -> dict[int, ir.Value]:
        slots = {t.slot for stage in group for t in (*stage.inputs.values(), *stage.outputs)}
        pointers = {slot: self._pointer(cg, ptrs, slot) for slot in sorted(slots)}
        if self.status_slot is not None:
            pointers[STATUS_SLOT] = self._pointer(cg, ptrs, self.status_slot)
        return pointers

    def _emit_worker(self, group: list[StagePlan], k: int, run: ir.Function) -> ir.Function:
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR]), f"{self.name}.worker{k}")
        fn.linkage = "internal"
        cg = CodeGen(self.module, fn)
        b = cg.builder
        ptrs = self._pointer(cg, fn.args[0], 0)
        syms = self._pointer(cg, fn.args[0], 1)
        total = self._value(cg, work_items(group), self._symbols(cg, syms))
        tid = b.sext(b.call(cg.declare("omp_get_thread_num", I32, []), []), I64)
        count = b.sext(b.call(cg.declare("omp_get_num_threads", I32, []), []), I64)
        align = I64(alignment(group))
        share = b.sdiv(b.add(total, b.sub(count, I64(1))), count)
        share = b.mul(b.sdiv(b.add(share, b.sub(align, I64(1))), align), align)
        lo = _min(b, b.mul(tid, share), total)
        hi = _min(b, b.add(lo, share), total)
        extra = []
        if splits_reduction(group):
            partials = self._pointer(cg, fn.args[0], 2)
            extra = [b.gep(partials, [b.mul(tid, I64(PARTIAL_BYTES))], source_etype=ir.IntType(8))]
        cg.if_then(b.icmp_signed("<", lo, hi), lambda: b.call(run, [ptrs, syms, lo, hi, *extra]))
        b.ret_void()
        return fn

    def _emit_entry(self, runs: list[ir.Function], workers: list[ir.Function | None]) -> None:
        fn = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR, I32]), self.name)
        cg = CodeGen(self.module, fn)
        b = cg.builder
        data, syms, nthreads = fn.args
        scalars = self._symbols(cg, syms)
        ptrs, temporaries = self._allocate_temporaries(cg, data, scalars)
        status = None
        if self.status_slot is not None:
            status = cg.alloca(I32, I32(0), name="status")
            b.store(status, b.gep(ptrs, [I64(self.status_slot)], source_etype=PTR))
        args = cg.alloca(PTR, name="args", count=3)
        b.store(ptrs, b.gep(args, [I64(0)], source_etype=PTR))
        b.store(syms, b.gep(args, [I64(1)], source_etype=PTR))
        threads = b.sext(nthreads, I64)
        for group, run, worker in zip(self.plan.groups, runs, workers):
            total = self._value(cg, work_items(group), scalars)
            work = self._value(cg, work_volume(group), scalars)
            # A group with no result element writes nothing, and must not run:
            # its loads hoisted above empty loops would read empty tensors.
            results = self._value(cg, sum((s.result_elements for s in group), sympy.Integer(0)), scalars)
            total = b.select(b.icmp_signed(">", results, I64(0)), total, I64(0))
            align = alignment(group)
            useful = b.sdiv(b.add(total, I64(align - 1)), I64(align))
            count = _min(b, threads, useful)
            finisher, extra = None, []
            if splits_reduction(group):
                count = _min(b, count, I64(MAX_SPLIT))
                finisher = StageEmitter(cg, group[0], Env(scalars=dict(scalars)), self._pointers(cg, ptrs, group), self.zero)
                extra = [self._partials(cg, finisher)]
                b.store(extra[0], b.gep(args, [I64(2)], source_etype=PTR))

            def serial(run=run, total=total, extra=extra) -> None:
                b.call(run, [ptrs, syms, I64(0), total, *extra])

            if worker is None:
                cg.if_then(b.icmp_signed(">", total, I64(0)), serial)
                if finisher is not None:
                    finisher.finish_split(extra[0])
                continue
            wide = b.and_(b.icmp_signed(">", count, I64(1)), b.icmp_signed(">=", work, I64(self.threshold)))
            with b.if_else(wide) as (parallel, alone):
                with parallel:
                    gomp = cg.declare("GOMP_parallel", VOID, [PTR, PTR, I32, I32])
                    function = ir.FormattedConstant(PTR, worker.get_reference())
                    b.call(gomp, [function, args, b.trunc(count, I32), I32(0)])
                with alone:
                    cg.if_then(b.icmp_signed(">", total, I64(0)), serial)
            if finisher is not None:
                finisher.finish_split(extra[0])
        free = cg.declare("free", VOID, [PTR])
        for pointer in temporaries:
            b.call(free, [pointer])
        b.ret(I32(0) if status is None else b.load(status, typ=I32))

    def _partials(self, cg: CodeGen, stage: StageEmitter) -> ir.Value:
        """MAX_SPLIT partial results of a split reduction, each the identity."""
        partials = cg.alloca(I64, count=MAX_SPLIT * PARTIAL_BYTES // 8, name="partials")
        identity = (stage.red.identity(), I64(0) if stage.red.is_arg else None)

        def reset(i: ir.Value) -> None:
            entry = cg.builder.gep(partials, [cg.builder.mul(i, I64(PARTIAL_BYTES))], source_etype=ir.IntType(8))
            store_partial(cg, stage.red, entry, identity)

        cg.for_range(I64(0), I64(MAX_SPLIT), reset, name="partial")
        return partials

    def _allocate_temporaries(self, cg: CodeGen, data: ir.Value, scalars) -> tuple[ir.Value, list[ir.Value]]:
        if not self.plan.temporaries and self.status_slot is None:
            return data, []
        b = cg.builder
        count = self.plan.num_args + len(self.plan.temporaries) + (self.status_slot is not None)
        ptrs = cg.alloca(PTR, name="ptrs", count=count)
        for slot in range(self.plan.num_args):
            pointer = self._pointer(cg, data, slot)
            b.store(pointer, b.gep(ptrs, [I64(slot)], source_etype=PTR))
        aligned_alloc = cg.declare("aligned_alloc", PTR, [I64, I64])
        allocated = []
        for tensor in self.plan.temporaries:
            elements = self._value(cg, product(tensor.sizes), scalars)
            size = b.mul(elements, I64(byte_size(memory_type(tensor.element))))
            size = b.and_(b.add(size, I64(127)), I64(-64))  # a multiple of 64, never 0
            pointer = b.call(aligned_alloc, [I64(64), size])
            b.store(pointer, b.gep(ptrs, [I64(tensor.slot)], source_etype=PTR))
            allocated.append(pointer)
        return ptrs, allocated


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)
