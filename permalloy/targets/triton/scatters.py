"""
A scatter's stage on the GPU: programs over blocks of its flattened domain,
each point combining its value into the element it lands on with an atomic
read-modify-write, since points of any program may land on one element.

    sum        tl.atomic_add (f32, f64, f16, i32, i64)
    max, min   tl.atomic_max / tl.atomic_min for i32 and i64; for floats a
               compare-and-swap loop on the element's bits, so that a NaN on
               either side gives NaN (Triton's float max is an integer trick
               that orders NaN by its bits)
    prod       a compare-and-swap loop (f32, f64, i32, i64)
    assign     a plain store (every value landing on one element is the same)

Elements of 8 and 16 bits (i8, u8, i16, f16, bf16; bf16 sums too, which
not every GPU adds atomically) take a compare-and-swap loop on the aligned
32-bit word that holds them, replacing their bits only (as CUDA's own
half-precision atomics do on older GPUs; the caching allocator's blocks are
whole words).

A float sum or product combines in an order that changes from run to run:
with `torch.use_deterministic_algorithms` on, the pipeline leaves those
scatters to torch's kernels (`convert-ptensor-to-loop{deterministic-scatters}`).
"""

from __future__ import annotations

from permalloy.dialects.loop import ScatterOp
from permalloy.dialects.ptensor import ScatterKind
from permalloy.targets.triton.body import BodyWriter, Tile, store
from permalloy.targets.triton.plan import Stage
from permalloy.targets.triton.source import SourceWriter
from permalloy.targets.triton.types import UnsupportedKernelError, is_float_dtype

ADD_DTYPES = {"tl.float32", "tl.float64", "tl.float16", "tl.int32", "tl.int64"}
BITS = {"tl.float32": "tl.int32", "tl.float64": "tl.int64", "tl.int32": "tl.int32", "tl.int64": "tl.int64"}
"""The element types a compare-and-swap loop takes, with the integers of their bits."""
NARROW = {"tl.int8": (8, "tl.int8"), "tl.uint8": (8, "tl.uint8"), "tl.int16": (16, "tl.int16"),
          "tl.float16": (16, "tl.int16"), "tl.bfloat16": (16, "tl.int16")}  # fmt: skip
"""The element types combined within their 32-bit word: their width and the integers of their bits."""


def write_scatter(w: SourceWriter, stage: Stage, tile: Tile, registers) -> None:
    """The stage's body over the block, then the combination into its output."""
    op = stage.op
    assert isinstance(op, ScatterOp)
    writer = BodyWriter(w, stage, tile, registers)
    value = writer.emit()
    (tensor,) = stage.outputs
    address = writer.expr(stage.output_address(tensor), op.terminator.index_values)
    kind, dtype = op.kind.data, tensor.dtype
    if kind == ScatterKind.ASSIGN:
        store(w, tensor, address, value, "xmask", {"x"})
        return
    spread = "" if "x" in address.deps else " + xindex * 0"  # one element for the whole block
    pointer = w.assign(f"{tensor.name} + {address.text}{spread}", "ptr", address.deps | {"x"}, "p").text
    converted = value.text if value.dtype == dtype else f"{value.text}.to({dtype})"
    if kind == ScatterKind.SUM and dtype in ADD_DTYPES:
        w.line(f"tl.atomic_add({pointer}, {converted}, mask=xmask, sem='relaxed')")
        return
    if dtype in NARROW:
        _word_compare_and_swap(w, tensor.name, pointer, converted, kind, dtype)
        return
    if kind in (ScatterKind.MAX, ScatterKind.MIN) and not is_float_dtype(dtype):
        _require(dtype in BITS, kind, dtype)
        function = "atomic_max" if kind == ScatterKind.MAX else "atomic_min"
        w.line(f"tl.{function}({pointer}, {converted}, mask=xmask, sem='relaxed')")
        return
    _require(dtype in BITS, kind, dtype)
    _compare_and_swap(w, tensor.name, pointer, converted, kind, dtype)


def _compare_and_swap(w: SourceWriter, base: str, pointer: str, value: str, kind: ScatterKind, dtype: str) -> None:
    """
    Each lane reads its element, combines, and swaps the result in if the
    element still holds what it read; a lane whose swap failed combines
    again with the element it found, until every lane succeeded. Lanes out
    of the block's range swap an element of the output with itself.
    """
    bits = BITS[dtype]
    v, old, new, todo, seen, safe = (w.fresh(s) for s in ("v", "old", "new", "todo", "seen", "p"))
    w.line(f"{v} = {value}")
    w.line(f"{safe} = tl.where(xmask, {pointer}, {base})")
    w.line(f"{old} = tl.load({safe}, mask=xmask, other=0)")
    w.line(f"{todo} = xmask")
    w.helpers.add("any_lane")
    w.line(f"while _any_lane({todo}):")
    with w.indented():
        w.line(f"{new} = tl.where({todo}, {_combined(kind, old, v)}, {old})")
        words = f"{safe}.to(tl.pointer_type({bits}))"
        swap = f"tl.atomic_cas({words}, {old}.to({bits}, bitcast=True), {new}.to({bits}, bitcast=True), sem='relaxed')"
        w.line(f"{seen} = {swap}.to({dtype}, bitcast=True)")
        w.line(f"{todo} = {todo} & ({seen}.to({bits}, bitcast=True) != {old}.to({bits}, bitcast=True))")
        w.line(f"{old} = {seen}")


def _word_compare_and_swap(w: SourceWriter, base: str, pointer: str, value: str, kind: ScatterKind, dtype: str) -> None:
    """The loop of `_compare_and_swap` on the 32-bit word holding each
    element: the element's bits are taken out at their shift, combined
    (f16 and bf16 in f32, rounded once) and put back."""
    width, bits = NARROW[dtype]
    ones = (1 << width) - 1
    v, address, word, shift, old, element, new, todo, seen = (
        w.fresh(s) for s in ("v", "a", "word", "shift", "old", "e", "new", "todo", "seen")
    )
    w.line(f"{v} = {value}")
    w.line(f"{address} = tl.where(xmask, {pointer}, {base}).to(tl.int64, bitcast=True)")
    w.line(f"{word} = ({address} & -4).to(tl.pointer_type(tl.int32), bitcast=True)")
    w.line(f"{shift} = (({address} & 3) * 8).to(tl.int32)")
    w.line(f"{old} = tl.load({word}, mask=xmask, other=0)")
    w.line(f"{todo} = xmask")
    w.helpers.add("any_lane")
    w.line(f"while _any_lane({todo}):")
    with w.indented():
        w.line(f"{element} = (({old} >> {shift}) & {ones}).to({bits}).to({dtype}, bitcast=True)")
        combined = _combined(kind, element, v)
        if dtype in ("tl.float16", "tl.bfloat16"):
            combined = f"({_combined(kind, f'{element}.to(tl.float32)', f'{v}.to(tl.float32)')}).to({dtype})"
        w.line(f"{new} = ({combined}).to({bits}, bitcast=True).to(tl.int32) & {ones}")
        replaced = f"({old} & ~({ones} << {shift})) | ({new} << {shift})"
        w.line(f"{new} = tl.where({todo}, {replaced}, {old})")
        w.line(f"{seen} = tl.atomic_cas({word}, {old}, {new}, sem='relaxed')")
        w.line(f"{todo} = {todo} & ({seen} != {old})")
        w.line(f"{old} = {seen}")


def _combined(kind: ScatterKind, old: str, value: str) -> str:
    if kind == ScatterKind.SUM:
        return f"({old} + {value})"
    if kind == ScatterKind.PROD:
        return f"{old} * {value}"
    better = ">" if kind == ScatterKind.MAX else "<"
    # a NaN value wins too; tested in a select of its own rather than or-ed
    # with the comparison, which Triton's interpreter cannot do for a scalar
    # value (a constant) against a block
    return f"tl.where({value} {better} {old}, {value}, tl.where({value} != {value}, {value}, {old}))"


def _require(supported: bool, kind: ScatterKind, dtype: str) -> None:
    if not supported:
        raise UnsupportedKernelError(f"the Triton target has no atomic {kind} scatter of {dtype} elements")
