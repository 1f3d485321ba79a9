"""
Sorts (`loop.sort`) on the LLVM target: rows in parallel across threads,
each row sorted on its thread in two stack buffers.

A row's values become integer *keys* whose unsigned order is the sort's
order, its position in their low bits:

    key = (image(value) << H) | position      H = 32 (i64 keys) or 64 (i128)

The image of a value is unsigned-ordered: an integer's bits with the sign
bit flipped; a float's bits with every bit flipped if it is negative, else
the sign bit set, after -0.0 became 0.0 and every NaN the largest image
(NaN above +inf, as torch orders it); all of it complemented for a
descending sort. Values of 32 bits or fewer (f16 and bf16 through f32, i8
and i16 sign-extended) take i64 keys, 64-bit ones i128 keys. The keys are
all different, so any sort of them is the stable sort of the values, equal
values keeping their order, descending too.

The keys of a row of at most `INSERTION_LIMIT` are sorted by insertion;
longer rows by a least-significant-digit radix sort over the image's bytes
(the position bits are in order already): one pass counts every byte's
digits, then each byte whose digits are not all equal takes a counting
pass from one buffer into the other. The positions of the first `k` keys
are the result. A sort keeping few positions of a long row (a topk's)
selects them instead: each key is inserted into the sorted `k` smallest
so far when it is smaller than the largest of them. The row's length is
static (the lowering leaves rows of symbolic length to torch), and so is
the algorithm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute

from permalloy.targets.llvm.body import Env
from permalloy.targets.llvm.codegen import CodeGen
from permalloy.targets.llvm.convert import to_compute
from permalloy.targets.llvm.types import I32, I64, PTR, VOID, UnsupportedKernelError, is_float

if TYPE_CHECKING:
    from permalloy.targets.llvm.nest import StageEmitter

INSERTION_LIMIT = 32
"""The longest row sorted by insertion; longer ones take a radix sort."""
SELECT_LIMIT = 32
SELECT_RATIO = 4
"""A sort keeping at most `SELECT_LIMIT` positions of rows at least
`SELECT_RATIO` times longer (a topk's) selects them instead of sorting."""

DIGIT_BITS = 8
RADIX = 1 << DIGIT_BITS


def value_bits(value_type: Attribute) -> int:
    """The bits of a value's image: 64 for 64-bit values, else 32."""
    if isinstance(value_type, IntegerType):
        return 64 if value_type.width.data == 64 else 32
    return 64 if value_type.name == "f64" else 32


def sort_row(emitter: StageEmitter, env: Env) -> None:
    """One row of a sort stage: its keys, their sort, the first `k` positions."""
    stage, cg, body = emitter.stage, emitter.cg, emitter.body
    b = cg.builder
    op = stage.op
    length = stage.reduction[0]
    if not length.is_Integer:
        raise UnsupportedKernelError("the LLVM target sorts rows of a static length")
    n, k = int(length), int(op.count)
    if n == 0 or k == 0:
        return  # nothing to store (the entry does not even run such a group)
    bits = value_bits(op.yielded.type)
    key_type = ir.IntType(2 * bits)
    selects = k <= SELECT_LIMIT and k * SELECT_RATIO <= n
    keys = cg.alloca(key_type, count=k if selects else n, name="keys")
    if selects:
        cg.for_range(I64(0), I64(k), lambda i: b.store(ir.Constant(key_type, -1), b.gep(keys, [i], source_etype=key_type)))
    body.emit_level(0, env)

    def key_of(r: ir.Value) -> None:
        here = _at(env, r)
        body.emit_level(1, here)
        image = value_image(cg, here.values[body.yielded], op.yielded.type, bits, op.is_descending)
        key = b.or_(b.shl(b.zext(image, key_type), ir.Constant(key_type, bits)), b.zext(r, key_type))
        if selects:
            _keep_smallest(cg, keys, key, k)
        else:
            b.store(key, b.gep(keys, [r], source_etype=key_type))

    cg.for_range(I64(0), I64(n), key_of, name="r0")
    if not selects:
        b.call(_sorter(cg, key_type, n, bits), [keys])
    count = I64(k)

    def position(j: ir.Value) -> None:
        key = b.load(b.gep(keys, [j], source_etype=key_type), typ=key_type)
        low = b.trunc(key, ir.IntType(bits))
        index = low if bits == 64 else b.zext(low, I64)
        body.store_scalar(index, _at(env, j))

    cg.for_range(I64(0), count, position, name="j")


def _at(env: Env, r: ir.Value) -> Env:
    scalars = dict(env.scalars)
    scalars["r0"] = r
    return env.child(scalars=scalars)


def value_image(cg: CodeGen, value: ir.Value, value_type: Attribute, bits: int, descending: bool) -> ir.Value:
    """The unsigned-ordered image (`bits` wide) of a body value (see the module docstring)."""
    b = cg.builder
    wide = ir.IntType(bits)
    sign = ir.Constant(wide, -(1 << (bits - 1)))  # the sign bit alone
    if is_float(value_type):
        value = to_compute(cg, value, value_type)
        raw = b.bitcast(value, wide)
        zero = b.fcmp_ordered("==", value, ir.Constant(value.type, 0.0))
        raw = b.select(zero, ir.Constant(wide, 0), raw)
        negative = b.icmp_signed("<", raw, ir.Constant(wide, 0))
        image = b.select(negative, b.not_(raw), b.or_(raw, sign))
        image = b.select(b.fcmp_unordered("uno", value, value), ir.Constant(wide, -1), image)
    else:
        if value.type.width < bits:
            value = b.sext(value, wide)
        image = b.xor(value, sign)
    return b.not_(image) if descending else image


def _keep_smallest(cg: CodeGen, kept: ir.Value, key: ir.Value, k: int) -> None:
    """Insert `key` into the `k` smallest keys so far (in order, the absent
    ones all ones) when it is smaller than the largest of them."""
    b = cg.builder
    key_type = key.type
    last = b.gep(kept, [I64(k - 1)], source_etype=key_type)

    def insert() -> None:
        _shift_in(cg, kept, key, I64(k - 1))

    cg.if_then(b.icmp_unsigned("<", key, b.load(last, typ=key_type)), insert, name="keep")


def _shift_in(cg: CodeGen, keys: ir.Value, key: ir.Value, start: ir.Value) -> None:
    """Place `key` among the sorted `keys[0:start]`, moving the larger ones
    up by one (over `keys[start]`)."""
    b = cg.builder
    key_type = key.type
    slot = cg.alloca(I64, start, name="j")
    check = b.append_basic_block("shift.cond")
    look = b.append_basic_block("shift.look")
    shift = b.append_basic_block("shift.body")
    done = b.append_basic_block("shift.end")
    b.branch(check)
    b.position_at_end(check)
    j = cg.read(slot)
    b.cbranch(b.icmp_signed(">", j, I64(0)), look, done)
    b.position_at_end(look)
    previous = b.load(b.gep(keys, [b.sub(j, I64(1))], source_etype=key_type), typ=key_type)
    b.cbranch(b.icmp_unsigned(">", previous, key), shift, done)
    b.position_at_end(shift)
    b.store(previous, b.gep(keys, [j], source_etype=key_type))
    b.store(b.sub(j, I64(1)), slot)
    b.branch(check)
    b.position_at_end(done)
    b.store(key, b.gep(keys, [cg.read(slot)], source_etype=key_type))


def _sorter(cg: CodeGen, key_type: ir.IntType, n: int, bits: int) -> ir.Function:
    """The module's function sorting `n` keys in place (made once per kind of row)."""
    name = f"{cg.function.name.split('.')[0]}.sort_{key_type.width}_{n}"
    existing = cg.module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(cg.module, ir.FunctionType(VOID, [PTR]), name)
    fn.linkage = "internal"
    sorter = CodeGen(cg.module, fn)
    if n <= INSERTION_LIMIT:
        _insertion_sort(sorter, fn.args[0], key_type, n)
    else:
        _radix_sort(sorter, fn.args[0], key_type, n, bits)
    sorter.builder.ret_void()
    return fn


def _insertion_sort(cg: CodeGen, keys: ir.Value, key_type: ir.IntType, n: int) -> None:
    """Each key moved down past the larger keys before it."""
    b = cg.builder

    def insert(i: ir.Value) -> None:
        _shift_in(cg, keys, b.load(b.gep(keys, [i], source_etype=key_type), typ=key_type), i)

    cg.for_range(I64(1), I64(n), insert, name="i")


def _radix_sort(cg: CodeGen, keys: ir.Value, key_type: ir.IntType, n: int, bits: int) -> None:
    """A least-significant-digit radix sort of the image bytes, between `keys`
    and a scratch buffer, skipping the bytes all keys share."""
    b = cg.builder
    digits = bits // DIGIT_BITS
    scratch = cg.alloca(key_type, count=n, name="scratch")
    counts = cg.alloca(I32, count=digits * RADIX, name="counts")
    cg.for_range(I64(0), I64(digits * RADIX), lambda i: b.store(I32(0), b.gep(counts, [i], source_etype=I32)), name="c")

    def digit(key: ir.Value, p: int) -> ir.Value:
        shifted = b.lshr(key, ir.Constant(key_type, bits + p * DIGIT_BITS))
        return b.zext(b.trunc(shifted, ir.IntType(DIGIT_BITS)), I64)

    def count(i: ir.Value) -> None:
        key = b.load(b.gep(keys, [i], source_etype=key_type), typ=key_type)
        for p in range(digits):
            at = b.gep(counts, [b.add(digit(key, p), I64(p * RADIX))], source_etype=I32)
            b.store(b.add(b.load(at, typ=I32), I32(1)), at)

    cg.for_range(I64(0), I64(n), count, name="i")
    source = cg.alloca(PTR, keys, name="source")
    target = cg.alloca(PTR, scratch, name="target")
    for p in range(digits):
        _radix_pass(cg, source, target, counts, key_type, n, p, digit)
    moved = b.icmp_unsigned("!=", cg.read(source), keys)

    def copy_back() -> None:
        memcpy = cg.declare("llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, ir.IntType(1)])
        b.call(memcpy, [keys, cg.read(source), I64(n * key_type.width // 8), ir.Constant(ir.IntType(1), 0)])

    cg.if_then(moved, copy_back, name="copy")


def _radix_pass(cg: CodeGen, source, target, counts, key_type: ir.IntType, n: int, p: int, digit) -> None:
    """The counting pass of byte `p` from `source` to `target` (then swapped),
    unless every key has the same byte `p`."""
    b = cg.builder
    base = I64(p * RADIX)
    first = b.load(cg.read(source), typ=key_type)
    shared = b.load(b.gep(counts, [b.add(digit(first, p), base)], source_etype=I32), typ=I32)

    def run() -> None:
        offset = cg.alloca(I32, I32(0), name="offset")

        def prefix(d: ir.Value) -> None:
            at = b.gep(counts, [b.add(d, base)], source_etype=I32)
            here = b.load(at, typ=I32)
            b.store(cg.read(offset), at)
            b.store(b.add(cg.read(offset), here), offset)

        cg.for_range(I64(0), I64(RADIX), prefix, name="d")
        src, dst = cg.read(source), cg.read(target)

        def move(i: ir.Value) -> None:
            key = b.load(b.gep(src, [i], source_etype=key_type), typ=key_type)
            at = b.gep(counts, [b.add(digit(key, p), base)], source_etype=I32)
            slot = b.load(at, typ=I32)
            b.store(key, b.gep(dst, [b.zext(slot, I64)], source_etype=key_type))
            b.store(b.add(slot, I32(1)), at)

        cg.for_range(I64(0), I64(n), move, name="i")
        b.store(dst, source)
        b.store(src, target)

    cg.if_then(b.icmp_signed("!=", shared, I32(n)), run, name=f"pass{p}")
