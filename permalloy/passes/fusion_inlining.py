"""
Vertical fusion: a `loop.pointwise` producer's body inlined at its readers.

A load of a producer's result at index `I` is replaced by the producer's body
with its indices `d_i` replaced by `I[i]`: the producer's own loads read at
composed index expressions (simplified in the reader's domain), so a permuted,
broadcast or reshaped read does not block fusion. Whether to inline is a cost
decision (`InliningCost`): inlining never duplicates a producer that is costly
to recompute, nor copies a cheap producer's loads of whole tensors into
so many readers that they read more than writing it once would cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from permalloy.dialects import loop
from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import is_float
from permalloy.dialects.sym import index_value, parallel_index, symbol_kind
from permalloy.lowering.index_algebra import domain_bounds, simplify_index

CHEAP_OPS = 6
"""A producer body with at most this many scalar ops (constants aside), none
of them `math` (but `INSTRUCTION_MATH` where the cost allows it), is cheap
enough to recompute at each read."""

INSTRUCTION_MATH = frozenset(
    {"math.sqrt", "math.rsqrt", "math.absf", "math.absi", "math.copysign", "math.fma",
     "math.floor", "math.ceil", "math.trunc", "math.roundeven"}
)
"""Math ops that a GPU runs as one instruction, and a CPU as one vector
instruction. Recomputed at each element of a memory-bound kernel they cost
next to nothing, where a kernel of their own costs a launch: a batch norm's
`1 / sqrt(var + eps)` per channel (on the CPU, a `[2, 16, 96, 96]` batch
norm with ReLU recomputing it ran in 54 us against 59 us with the `sqrt` in
a kernel of its own)."""


def body_size(op: loop.LoopOp) -> int:
    """The number of scalar ops in a loop op's body (loads and yield excluded)."""
    return sum(
        1
        for o in op.body.block.ops
        if not isinstance(o, loop.LoadOp | loop.YieldOp)
    )


PADDED_READ_OPS = (loop.IndexOp, arith.CmpiOp, arith.AndIOp, arith.SelectOp, arith.ConstantOp)
"""The ops of a padded read besides its load: the bounds test on its index
and the choice of the fill value."""


def is_padded_read(producer: loop.PointwiseOp) -> bool:
    """Whether a producer is one load, masked by a test of its index, as a
    constant padding lowers: recomputed at each read, it is an address
    computation and a masked load, as cheap as a plain read."""
    ops = [o for o in producer.body.block.ops if not isinstance(o, loop.YieldOp)]
    loads = [o for o in ops if isinstance(o, loop.LoadOp)]
    others = [o for o in ops if not isinstance(o, loop.LoadOp)]
    return len(loads) == 1 and all(isinstance(o, PADDED_READ_OPS) for o in others)


def is_cheap(producer: loop.PointwiseOp, instruction_math: bool = False) -> bool:
    """Whether a producer costs little enough to recompute at each read: a
    padded read, or at most `CHEAP_OPS` computing ops and no math, or with
    `instruction_math` none beyond `INSTRUCTION_MATH`."""
    if is_padded_read(producer):
        return True
    ops = list(producer.body.block.ops)
    allowed = INSTRUCTION_MATH if instruction_math else frozenset()
    has_math = any(o.name.startswith("math.") and o.name not in allowed for o in ops)
    computing = [o for o in ops if not isinstance(o, loop.LoadOp | loop.YieldOp | arith.ConstantOp)]
    return not has_math and len(computing) <= CHEAP_OPS


def _numel(op: loop.LoopOp) -> sympy.Expr:
    """The points of a loop op's domain, parallel and reduction."""
    total: sympy.Expr = sympy.Integer(1)
    for size in (*op.parallel_sizes, *op.reduction_sizes):
        total = total * size
    return sympy.sympify(total)


def reads_per_element(producer: loop.PointwiseOp) -> sympy.Expr | None:
    """How many times the readers of `producer` read each of its elements, if
    all its readers are loop ops (None when a host op or a result reads it)."""
    total: sympy.Expr = sympy.Integer(0)
    for use in producer.result.uses:
        reader = use.operation
        if not isinstance(reader, loop.LoopOp) or use.index >= len(reader.inputs):
            return None  # a host op, or the init of a scatter: the elements must exist
        argument = reader.body.block.args[use.index]
        loads = [u.operation for u in argument.uses if isinstance(u.operation, loop.LoadOp)]
        total = total + len(loads) * _numel(reader) / _numel(producer)
    return sympy.simplify(total)


def whole_tensor_reads(producer: loop.PointwiseOp) -> sympy.Expr:
    """How many elements of its inputs a producer reads from memory for each
    of its points, over the inputs it reads whole: those with a load whose
    index varies with every dimension of the producer's domain longer than
    one (broadcast reads, loads at constant indices, gathers' tables and
    constants aside). Each such
    input counts its distinct loads, but no more than its elements per point
    of the producer: a 2x2 average pooling with stride 2 reads 4 elements a
    point from an input 4 times its size, a 3x3 one with stride 1 reads its
    9 elements a point from an input of about its size, once each from
    memory, and a slice reads 1. Each reader inlining the producer repeats
    these reads."""
    varying = {
        parallel_index(i)
        for i, size in enumerate(producer.parallel_sizes)
        if sympy.sympify(size) != 1
    }
    loads: dict[SSAValue, set[tuple]] = {}
    for op in producer.body.block.ops:
        if isinstance(op, loop.LoadOp) and not op.index_values:
            used = set().union(*(sympy.sympify(e).free_symbols for e in op.indices.data))
            # a load at constant indices reads one element however many
            # points read it (a producer of one point reads nothing whole)
            if used and varying <= used:
                loads.setdefault(op.source, set()).add(tuple(op.indices.data))
    points = _numel(producer)
    total: sympy.Expr = sympy.Integer(0)
    for source, indices in loads.items():
        per_point = sympy.Integer(1)
        if len(indices) > 1 and isinstance(source.type, pt.TensorType):
            ratio = sympy.simplify(sympy.Mul(*source.type.sizes) / points)
            if ratio.is_number and ratio.is_finite:  # a producer of no points reads nothing
                per_point = sympy.Integer(max(1, min(len(indices), int(sympy.floor(ratio)))))
        total = total + per_point
    return sympy.sympify(total)


def repeated_reads(reads: sympy.Expr, inputs: sympy.Expr) -> bool:
    """Whether inlining a producer read `reads` times per element, reading
    `inputs` elements of whole tensors per point (`whole_tensor_reads`),
    reads more than computing it once: inlined, each read loads them
    (`reads * inputs`); computed once, in the kernel of one reader, it loads
    them once, writes its result and the other readers load that (`inputs +
    1 + reads - 1`). The former is larger when `(reads - 1) * (inputs - 1) >
    1`: a residual stream `h + a + b` read by a norm and the next residual
    add; DenseNet's 2x2 pooling read by the concatenation of every later
    layer of its block."""
    excess = sympy.expand((reads - 1) * (inputs - 1) - 1)
    return bool(excess.is_positive)


@dataclass(frozen=True)
class InliningCost:
    """When a producer may be inlined into its readers."""

    max_kernel_size: int
    max_recompute: int
    instruction_math: bool = False
    """Whether `INSTRUCTION_MATH` ops leave a producer cheap (the GPU's rule)."""

    def allows(self, producer: loop.PointwiseOp, reader: loop.LoopOp) -> bool:
        return self.refusal(producer, reader) is None

    def refusal(self, producer: loop.PointwiseOp, reader: loop.LoopOp) -> tuple[str, str] | None:
        """The rule (`fusion_decisions.INLINE_RULES`) by which `allows` refuses,
        and the numbers it compared; None when it allows."""
        size = body_size(reader) + body_size(producer)
        if size > self.max_kernel_size:
            return "max-kernel-size", f"{size} ops together, max-kernel-size={self.max_kernel_size}"
        cheap = is_cheap(producer, self.instruction_math)
        inputs = whole_tensor_reads(producer)
        reads = reads_per_element(producer) if inputs > 1 or not cheap else None
        if reads is not None and repeated_reads(reads, inputs):
            return "repeated-reads", f"each element read {reads} times, {inputs} elements of whole tensors read per element"
        if cheap:
            return None
        # reads == 1: every element computed once, wherever it is read; a few
        # recomputations cost less than writing the producer and reading it back.
        # A count over size symbols (a broadcast over s0 rows) must be provably
        # small: s0 may be large.
        if reads is None:
            return "read-by-host", f"{body_size(producer)} ops or math, read outside loop ops"
        if not bool(sympy.expand(self.max_recompute - reads).is_nonnegative):
            return "max-recompute", f"each element read {reads} times, max-recompute={self.max_recompute}"
        return None


def inline_producer(reader: loop.LoopOp, position: int) -> None:
    """Inline the pointwise producing `reader`'s input `position` at every load
    of it in `reader`'s body, then drop that input if nothing reads it."""
    producer = reader.inputs[position].owner
    assert isinstance(producer, loop.PointwiseOp)
    argument = reader.body.block.args[position]
    bounds = domain_bounds(reader.parallel_sizes, reader.reduction_sizes)
    for use in list(argument.uses):
        load = use.operation
        if isinstance(load, loop.LoadOp):
            _inline_at(reader, producer, load, bounds)
    if not argument.uses:
        _remove_input(reader, position)


def _input_argument(reader: loop.LoopOp, value: SSAValue) -> BlockArgument:
    """The body argument standing for `value`, added if it is a new input."""
    for operand, argument in zip(reader.inputs, reader.body.block.args):
        if operand == value:
            return argument
    block = reader.body.block
    argument = block.insert_arg(value.type, len(block.args))
    reader.operands = [*reader.inputs, value, *reader.operands[len(reader.inputs) :]]
    return argument


def _remove_input(reader: loop.LoopOp, position: int) -> None:
    operands = list(reader.operands)
    del operands[position]
    reader.operands = operands
    reader.body.block.erase_arg(reader.body.block.args[position])


def _inline_at(reader: loop.LoopOp, producer: loop.PointwiseOp, load: loop.LoadOp, bounds) -> None:
    block = load.parent_block()
    assert block is not None
    index = load.indices.data
    substitution = {parallel_index(i): e for i, e in enumerate(index)}
    mapping: dict[SSAValue, SSAValue] = {}
    for producer_arg, operand in zip(producer.body.block.args, producer.inputs):
        mapping[producer_arg] = _input_argument(reader, operand)
    value: SSAValue | None = None
    for op in producer.body.block.ops:
        if isinstance(op, loop.YieldOp):
            value = mapping[op.value]
            break
        for new in _translate(op, mapping, substitution, load, bounds):
            block.insert_op_before(new, load)
        mapping.update(zip(op.results, new.results))
    assert value is not None
    if load.mask is not None:
        zero = _zero(value)
        block.insert_op_before(zero, load)
        select = arith.SelectOp(load.mask, value, zero.results[0])
        block.insert_op_before(select, load)
        value = select.results[0]
    load.result.replace_all_uses_with(value)
    load.detach()
    load.erase()


def _zero(value: SSAValue) -> Operation:
    """The constant zero of a value's type: what a masked-off load gives."""
    if is_float(value.type):
        return arith.ConstantOp(FloatAttr(0.0, value.type))  # type: ignore[arg-type]
    return arith.ConstantOp(IntegerAttr(0, value.type))  # type: ignore[arg-type]


def _translate(op: Operation, mapping, substitution, at: loop.LoadOp, bounds) -> list[Operation]:
    """Copies of a producer body op for the reader's body, at the load `at`;
    the last one stands for `op`."""
    if isinstance(op, loop.LoadOp):
        own_values = [mapping[v] for v in op.index_values]
        shift = len(at.index_values)
        renumber = {index_value(k): index_value(shift + k) for k in range(len(own_values))}
        indices = [
            simplify_index(e.xreplace(renumber).xreplace(substitution), bounds)
            for e in op.indices.data
        ]
        used, indices = _keep_used_values(indices, [*at.index_values, *own_values])
        # The reader's mask guards the whole inlined body: where it is false
        # the body's value is replaced by zero, and its loads must not read.
        extra: list[Operation] = []
        mask = at.mask
        if op.mask is not None:
            mask = mapping[op.mask]
            if at.mask is not None:
                extra.append(arith.AndIOp(mask, at.mask))
                mask = extra[-1].results[0]
        source = mapping[op.source]
        return [*extra, loop.LoadOp(source, indices, op.result.type, used, mask)]
    if isinstance(op, loop.IndexOp):
        return [loop.IndexOp(simplify_index(op.expr.expr.xreplace(substitution), bounds))]
    return [op.clone(value_mapper=mapping)]


def _keep_used_values(indices, values):
    used = sorted(
        {int(s.name[1:]) for e in indices for s in e.free_symbols if symbol_kind(s) == "v"}
    )
    renumber = {index_value(old): index_value(new) for new, old in enumerate(used)}
    return [values[old] for old in used], [e.xreplace(renumber) for e in indices]


INDEX_VALUES_REFUSAL = ("index-values", "the producer's loop.index needs the reader's indices, which use index values")
"""The rule and detail of a refusal by `can_inline`."""


def can_inline(reader: loop.LoopOp, producer: loop.PointwiseOp) -> bool:
    """Structural conditions: the producer's `loop.index` ops over its
    indices need indices the reader can express (no index values). One over
    sizes alone (`loop.index 56`, the size a negative index wraps by) is the
    same wherever it is read: a roll's gather, inlined into the next roll's,
    keeps it."""
    uses_indices = any(
        isinstance(o, loop.IndexOp) and any(symbol_kind(s) == "d" for s in o.expr.expr.free_symbols)
        for o in producer.body.block.ops
    )
    if not uses_indices:
        return True
    for argument, operand in zip(reader.body.block.args, reader.inputs):
        if operand != producer.result:
            continue
        for use in argument.uses:
            load = use.operation
            if isinstance(load, loop.LoadOp) and load.index_values:
                return False
    return True
