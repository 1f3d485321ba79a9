"""
A sort's stage on the GPU: one block of rows per program, each row sorted
whole in registers by `tl.sort`, which sorts one tensor (a bitonic network
along the row's block, its length a power of two, at most
`plan.PERSISTENT_LIMIT`).

To sort values and keep their positions, each element becomes one int64
*key* whose signed order is the sort's order, its position in the low 32
bits:

    key = (image(value) << 32) | position

The image of a value is an int32 ordered as the values: an integer's own
value (8 and 16 bits sign-extended); a float's bits (f16 and bf16 through
f32) with the bits other than the sign flipped if it is negative, after
-0.0 became 0.0 and every NaN the largest int32 (NaN above +inf, as torch
orders it); complemented for a descending sort. The keys are all
different, so their sort is the stable sort of the values, equal values
keeping their order, descending too. Lanes past the row's end take the
largest key, which no element has (its position would be 2**32 - 1), and
sort last. The first `k` positions of each sorted row are stored; where
they are fewer than half the block (a topk's), `tl.topk` selects the
smallest keys (the power of two above `k`) without sorting the others.
Under Triton's interpreter both are a bitonic network of gathers
(`compat`).

Values of 64 bits have no room in such keys: the pipeline leaves their
sorts to torch (`convert-ptensor-to-loop{sort-max-bits=32}`), and this
stage refuses them, as it refuses rows longer than one block.
"""

from __future__ import annotations

from permalloy.dialects.loop import SortOp
from permalloy.targets.triton.body import BodyWriter, Tile, store
from permalloy.targets.triton.configs import pow2_ceil
from permalloy.targets.triton.exprs import TritonExpr
from permalloy.targets.triton.plan import Stage
from permalloy.targets.triton.source import SourceWriter, Value
from permalloy.targets.triton.types import UnsupportedKernelError, float_width, int_width, is_bool_dtype, is_float_dtype

LARGEST_KEY = "0x7FFFFFFFFFFFFFFF"
POSITION_MASK = "0xFFFFFFFF"


def check_sortable(stage: Stage, value_dtype: str) -> None:
    """Refuse a sort whose row is not one block or whose values have 64 bits."""
    if stage.block is None:
        raise UnsupportedKernelError("the Triton target sorts rows of at most 4096 elements of a static length")
    wide = float_width(value_dtype) > 32 if is_float_dtype(value_dtype) else int_width(value_dtype) > 32
    if wide:
        raise UnsupportedKernelError(f"the Triton target sorts values of at most 32 bits, not {value_dtype}")


def write_sort(w: SourceWriter, stage: Stage, tile: Tile, registers) -> None:
    """The keys of the block's rows, their sort (or the selection of the `k`
    smallest keys, when fewer than the block's are kept), and the first `k`
    positions stored."""
    op = stage.op
    assert isinstance(op, SortOp)
    value = BodyWriter(w, stage, tile, registers).emit()
    check_sortable(stage, value.dtype)
    count = op.count
    if count == 0:
        return
    image = _image(w, value)
    if op.is_descending:
        image = w.assign(f"~{image}", "tl.int32", value.deps, "img").text
    key = f"({image}.to(tl.int64) << 32) | rindex.to(tl.int64)"
    keys = w.assign(f"tl.where(xmask & rmask, {key}, {LARGEST_KEY})", "tl.int64", frozenset({"x", "r"}), "key")
    block = stage.block
    kept = pow2_ceil(int(count)) if count.is_Integer else block
    if kept < block:
        w.helpers.add("smallest_rows")
        ordered = w.assign(f"_smallest_rows({keys.text}, {block}, {kept})", "tl.int64", keys.deps, "sorted")
        (variable, _), = stage.inner.dims
        first = w.assign(f"tl.arange(0, {kept})[None, :]", "tl.int64", frozenset({"r"}), "j")
        tile = Tile({**tile.variables, variable.name: first}, {"x": "xmask", "r": f"({first.text} < {_size(w, count)})"})
        mask = f"xmask & {tile.masks['r']}"
    else:
        w.helpers.add("sort_rows")
        ordered = w.assign(f"_sort_rows({keys.text}, {block})", "tl.int64", keys.deps, "sorted")
        mask = f"xmask & (rindex < {_size(w, count)})"
    positions = w.assign(f"{ordered.text} & {POSITION_MASK}", "tl.int64", keys.deps, "pos")
    for tensor in stage.outputs:
        address = BodyWriter(w, stage, tile, registers).expr(stage.output_address(tensor))
        store(w, tensor, address, positions, mask, {"x", "r"})


def _size(w: SourceWriter, size) -> str:
    return TritonExpr(lambda name: name, w.helpers).atom(size)


def _image(w: SourceWriter, value: Value) -> str:
    """The int32 image of a body value (see the module docstring)."""
    dtype = value.dtype
    if is_bool_dtype(dtype):
        return w.assign(f"tl.where({value.text}, -1, 0).to(tl.int32)", "tl.int32", value.deps, "img").text
    if not is_float_dtype(dtype):
        return w.assign(f"{value.text}.to(tl.int32)", "tl.int32", value.deps, "img").text
    number = value.text if dtype == "tl.float32" else f"{value.text}.to(tl.float32)"
    v = w.assign(number, "tl.float32", value.deps, "v").text
    bits = w.assign(f"tl.where({v} == 0, 0, {v}.to(tl.int32, bitcast=True))", "tl.int32", value.deps, "bits").text
    ordered = f"{bits} ^ (({bits} >> 31) & 0x7FFFFFFF)"
    return w.assign(f"tl.where({v} != {v}, 0x7FFFFFFF, {ordered})", "tl.int32", value.deps, "img").text
