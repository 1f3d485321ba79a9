"""The `plan-memory` pass."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from permalloy.analysis.in_place import loads_only_at_its_point
from permalloy.analysis.out_forms import writes_into
from permalloy.dialects import buffer as buf
from permalloy.dialects import loop
from permalloy.dialects import ptensor as pt
from permalloy.dialects.sym import SymExprAttr
from permalloy.dtypes import torch_dtype
from permalloy.lowering.index_algebra import always_nonnegative

FRESH_RESULT_OPS: tuple[type[Operation], ...] = (
    *pt.LIBRARY_OPS,
    pt.FullOp,
    pt.IotaOp,
    pt.RandOp,
)
"""Ops whose extern call gives a new tensor on every call. Other externs
(fallbacks run any ATen op) may return a view of an input, and a constant's
tensor is made once and kept by the host program, so their results are never
written over or handed to another allocation."""

PEAK_ATTR = "permalloy.peak_intermediate_bytes"
"""Function attribute: the planned peak of bytes held by the buffers the
program allocates: an integer when sizes are constants, else a `#sym.expr`
over the size symbols (a `max` of the totals at the program points no other
provably dominates)."""


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """
    Plans the memory of host programs: liveness, reuse, in-place updates, frees.

    Expects buffer-level functions (the output of `convert-loop-to-buffer`).
    A library call with an `out=` form (the matrix products,
    `analysis.out_forms`) first gets a buffer allocated for it to write its
    result into (`buffer.writes_last_input`), rather than a new tensor from
    the library on every call. Then, walking each function in order, with the
    last use of every allocation known (uses through views included):
    - a pointwise kernel whose input buffer dies at its launch, and which reads
      that input only at the position it writes, writes its result in place;
    - otherwise a `buffer.alloc` takes the memory of a dead allocation of the
      same element type that is large enough (the smallest such), as a
      `buffer.view` of it;
    - an allocation is freed (`buffer.dealloc`) right after its last use.
    Graph inputs are never written or reused, nor are the results of extern
    calls that may alias their inputs (fallbacks); an in-place update needs the
    only input using that memory. Buffers the function returns live to its
    end. The planned peak of allocated bytes is recorded on the function as
    `permalloy.peak_intermediate_bytes`, an integer, or a `#sym.expr` when
    sizes are symbolic. `reuse=false` and `in-place=false` turn those
    decisions off.

    With symbolic sizes every decision holds for all values of the symbols:
    a donor is large enough when its bytes minus the needed ones are provably
    non-negative (`s0 * 32` holds `s0 * 16`, never `64`), and an in-place
    update needs the input's layout provably equal to the result's (written
    over through a `buffer.view` when the two are spelled differently).

    Before:
    ```
    %a = buffer.alloc : !buffer.buffer<[64], f32>
    buffer.launch @neg ins(%x : ...) outs(%a : ...)
    %b = buffer.alloc : !buffer.buffer<[64], f32>
    buffer.launch @exp ins(%a : ...) outs(%b : ...)
    ```
    After:
    ```
    %a = buffer.alloc : !buffer.buffer<[64], f32>
    buffer.launch @neg ins(%x : ...) outs(%a : ...)
    buffer.launch @exp ins(%a : ...) outs(%a : ...)
    ```
    """

    name = "plan-memory"

    reuse: bool = True
    in_place: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = {k.sym_name.data: k for k in op.ops if isinstance(k, buf.KernelOp)}
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if function.body.blocks:
                allocate_library_results(function)
                _Planner(function, kernels, self.reuse, self.in_place).run()


def memory_root(value: SSAValue) -> SSAValue:
    """The allocation (or argument) whose memory a buffer value uses."""
    while True:
        owner = value.owner
        if isinstance(owner, buf.ViewOp):
            value = owner.source
        elif isinstance(owner, buf.ExternOp) and owner.writes_last_input:
            value = owner.inputs[-1]
        else:
            return value


def allocate_library_results(function: func.FuncOp) -> None:
    """Give each library call with an `out=` form (`analysis.out_forms`) a
    buffer of its result's layout to write into, allocated just before it:
    the call is marked `buffer.writes_last_input` and its result's readers
    read that buffer, which planning then places like any allocation."""
    for extern in [o for o in function.body.block.ops if isinstance(o, buf.ExternOp)]:
        if extern.writes_last_input or extern.WRITES_FIRST_INPUT in extern.attributes or not writes_into(extern):
            continue
        (result,) = extern.results
        alloc = buf.AllocOp(buf.buffer_type(result))
        alloc.result.name_hint = result.name_hint
        Rewriter.insert_op(alloc, InsertPoint.before(extern))
        extern.operands = [*extern.operands, alloc.result]
        extern.body.block.insert_arg(buf.buffer_type(result).tensor_type(), len(extern.body.block.args))
        extern.attributes[buf.ExternOp.WRITES_LAST_INPUT] = UnitAttr()
        result.replace_all_uses_with(alloc.result)
        result.name_hint = None


def buffer_bytes(layout: buf.BufferType) -> sympy.Expr:
    """The bytes a layout spans, from its offset to its last element."""
    item = torch_dtype(layout.element_type).itemsize
    extent: sympy.Expr = sympy.Integer(1)
    for size, stride in zip(layout.sizes, layout.strides.data):
        extent = extent + (size - 1) * stride
    return sympy.expand((extent + layout.offset.expr) * item)


def _at_least(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether `a >= b` for every positive value of the size symbols."""
    if a.is_Integer and b.is_Integer:
        return int(a) >= int(b)
    difference = sympy.expand(a - b)
    if difference.is_Integer:
        return int(difference) >= 0
    return bool(difference.is_nonnegative) or always_nonnegative(difference, {})


def _provably_equal(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether two size expressions are equal for every value of the symbols."""
    return a == b or sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0


def same_layout(a: buf.BufferType, b: buf.BufferType) -> bool:
    """Whether two buffer layouts are provably the same memory layout."""
    return (
        a.element_type == b.element_type
        and len(a.sizes) == len(b.sizes)
        and all(_provably_equal(x, y) for x, y in zip(a.sizes, b.sizes))
        and all(_provably_equal(x, y) for x, y in zip(a.strides.data, b.strides.data))
        and _provably_equal(a.offset.expr, b.offset.expr)
    )


def peak_of(totals: list[sympy.Expr]) -> sympy.Expr:
    """The largest of byte totals for every value of the size symbols: the
    totals no other provably covers, under one `max` when several remain."""
    kept: list[sympy.Expr] = []
    for total in totals:
        if any(_at_least(other, total) for other in kept):
            continue
        kept = [other for other in kept if not _at_least(total, other)]
        kept.append(total)
    if not kept:
        return sympy.Integer(0)
    return sympy.Max(*kept)


@dataclass
class _Planner:
    """The state of planning one function."""

    function: func.FuncOp
    kernels: dict[str, buf.KernelOp]
    reuse: bool
    in_place: bool
    last_use: dict[SSAValue, int] = field(default_factory=dict)
    free: list[SSAValue] = field(default_factory=list)
    """Dead allocations that may be written over, in the order they died."""
    sizes: dict[SSAValue, sympy.Expr] = field(default_factory=dict)
    """The bytes of the buffers `_bytes_of` was asked for."""
    dying: dict[int, list[SSAValue]] = field(default_factory=dict)
    """By position, the roots whose last use was set there (an entry is
    stale where the last use moved on since)."""
    rank: dict[SSAValue, int] = field(default_factory=dict)
    """Each root's place in `last_use`, the order in which roots that die
    together become free."""

    def run(self) -> None:
        ops = list(self.function.body.block.ops)
        self._liveness(ops)
        self.rank = {root: index for index, root in enumerate(self.last_use)}
        for root, last in self.last_use.items():
            self.dying.setdefault(last, []).append(root)
        for position, op in enumerate(ops):
            if isinstance(op, buf.AllocOp):
                self._place(op, position, ops)
            dead = {root for root in self.dying.pop(position, ()) if self.last_use.get(root) == position}
            for root in sorted(dead, key=self.rank.__getitem__):
                if self._writable(root) and root not in self.free:
                    self.free.append(root)
        self._insert_frees(ops)
        self._record_peak()

    def _bytes_of(self, root: SSAValue) -> sympy.Expr:
        """The bytes of the buffer `root`, computed once."""
        if root not in self.sizes:
            self.sizes[root] = buffer_bytes(buf.buffer_type(root))
        return self.sizes[root]

    def _set_last_use(self, root: SSAValue, position: int) -> None:
        """Move the last use of `root` (a root `last_use` has) to `position`."""
        self.last_use[root] = position
        self.dying.setdefault(position, []).append(root)

    def _return(self) -> func.ReturnOp:
        terminator = self.function.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        return terminator

    def _liveness(self, ops: list[Operation]) -> None:
        for position, op in enumerate(ops):
            for value in op.operands:
                if isinstance(value.type, buf.BufferType):
                    self.last_use[memory_root(value)] = position
            for result in op.results:
                if isinstance(result.type, buf.BufferType):
                    self.last_use.setdefault(memory_root(result), position)
        end = len(ops)
        for value in self._return().arguments:
            self.last_use[memory_root(value)] = end

    def _owned(self, root: SSAValue) -> bool:
        return isinstance(root.owner, buf.AllocOp | buf.ExternOp)

    def _writable(self, root: SSAValue) -> bool:
        """Whether the program may write over `root` once its value is dead:
        its own allocations and the new tensors of extern calls."""
        owner = root.owner
        if isinstance(owner, buf.ExternOp):
            return isinstance(owner.library_op, FRESH_RESULT_OPS)
        return isinstance(owner, buf.AllocOp)

    def _place(self, alloc: buf.AllocOp, position: int, ops: list[Operation]) -> None:
        result = alloc.result
        target = self._in_place_target(alloc, position, ops) if self.in_place else None
        if target is not None:
            result.replace_all_uses_with(target)
            root = memory_root(target)
            self._set_last_use(root, max(self.last_use[root], self.last_use.pop(result)))
            alloc.detach()
            alloc.erase()
            return
        donor = self._donor(buf.buffer_type(result)) if self.reuse else None
        if donor is None:
            return
        view = buf.ViewOp(donor, buf.buffer_type(result))
        alloc.parent_block().insert_op_before(view, alloc)  # type: ignore[union-attr]
        view.result.name_hint = result.name_hint
        result.replace_all_uses_with(view.result)
        self._set_last_use(donor, self.last_use.pop(result))
        self.free.remove(donor)
        # the view stands where the allocation was (an unused allocation's
        # last use is there), so a free after it has a place to go
        ops[position] = view
        alloc.detach()
        alloc.erase()

    def _donor(self, layout: buf.BufferType) -> SSAValue | None:
        """The smallest dead allocation that can hold `layout`."""
        needed = buffer_bytes(layout)
        fitting = [
            d
            for d in self.free
            if buf.buffer_type(d).element_type == layout.element_type and _at_least(self._bytes_of(d), needed)
        ]
        if not fitting:
            return None
        sizes = {d: self._bytes_of(d) for d in fitting}
        for donor in fitting:
            if all(_at_least(sizes[other], sizes[donor]) for other in fitting):
                return donor
        return min(fitting, key=lambda d: sympy.default_sort_key(sizes[d]))

    def _in_place_target(self, alloc: buf.AllocOp, position: int, ops: list[Operation]) -> SSAValue | None:
        """An input of the launch writing `alloc` that dies there and that its
        pointwise kernel reads only where it writes."""
        launch = ops[position + 1] if position + 1 < len(ops) else None
        if not isinstance(launch, buf.LaunchOp) or list(launch.outputs) != [alloc.result]:
            return None
        kernel = self.kernels.get(launch.kernel.root_reference.data)
        if kernel is None:
            return None
        layout = buf.buffer_type(alloc.result)
        roots = [memory_root(v) for v in launch.inputs]
        for index, value in enumerate(launch.inputs):
            root = roots[index]
            if (
                self._writable(root)
                and self.last_use.get(root) == position + 1
                and isinstance(value.type, buf.BufferType)
                and same_layout(value.type, layout)
                and roots.count(root) == 1
                and _reads_only_where_it_writes(kernel, index)
            ):
                if value.type == layout:
                    return value
                # the same layout spelled differently: write through a view
                view = buf.ViewOp(value, layout)
                alloc.parent_block().insert_op_before(view, alloc)  # type: ignore[union-attr]
                ops[position] = view
                return view.result
        return None

    def _insert_frees(self, ops: list[Operation]) -> None:
        """Free each allocation right after its last use; returned buffers and
        inputs are the caller's."""
        for root, last in self.last_use.items():
            if self._owned(root) and last < len(ops):
                ops[last].parent_block().insert_op_after(buf.DeallocOp(root), ops[last])  # type: ignore[union-attr]

    def _record_peak(self) -> None:
        live: dict[SSAValue, sympy.Expr] = {}
        totals: list[sympy.Expr] = []
        total: sympy.Expr = sympy.Integer(0)
        for op in self.function.body.block.ops:
            for result in op.results:
                if memory_root(result) is not result:
                    continue  # a call writing into a buffer of the program's
                if isinstance(op, buf.AllocOp | buf.ExternOp) and isinstance(result.type, buf.BufferType):
                    live[result] = buffer_bytes(buf.buffer_type(result))
                    total = sympy.expand(total + live[result])
            if isinstance(op, buf.DeallocOp) and op.buffer in live:
                total = sympy.expand(total - live.pop(op.buffer))
            totals.append(total)
        peak = peak_of(totals)
        self.function.attributes[PEAK_ATTR] = (
            IntegerAttr(int(peak), 64) if peak.is_Integer else SymExprAttr(peak)
        )


def _reads_only_where_it_writes(kernel: buf.KernelOp, index: int) -> bool:
    """Whether the kernel is one pointwise op that reads its argument `index`
    only at the point it computes (so writing that point over it is safe)."""
    members = [op for op in kernel.body.block.ops if not isinstance(op, buf.YieldOp)]
    if len(members) != 1 or not isinstance(members[0], loop.PointwiseOp):
        return False
    return loads_only_at_its_point(members[0], kernel.body.block.args[index])
