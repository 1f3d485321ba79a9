"""
Planning of Triton kernels: which stages share rows, what stays in registers,
where temporaries and barriers go, how dimensions collapse, which tiles and
index widths kernels get. Nothing runs here; the emitted source is checked as
text where the plan shows in it.
"""

from __future__ import annotations

import pytest
import sympy

from permalloy.analysis.affine import split_affine
from permalloy.analysis.collapse import collapse
from permalloy.dialects.buffer import BufferType
from permalloy.dialects.sym import FloorDiv, symbol
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, tensor
from permalloy.targets.triton.exprs import TritonExpr
from permalloy.targets.triton.module import module_source
from permalloy.targets.triton.plan import FLAT, ROWS, TILED, plan_kernel
from permalloy.targets.triton.types import UnsupportedKernelError


def layouts_of(kernel, strides=None):
    """Contiguous layouts of a kernel's arguments and results (or `strides`)."""
    types = [*kernel.function_type.inputs.data, *kernel.function_type.outputs.data]
    result = []
    for i, t in enumerate(types):
        given = (strides or {}).get(i)
        result.append(BufferType(t.sizes, t.element_type, given))
    return result


def plan(text, strides=None):
    kernel = parse_kernel(text)
    return plan_kernel(kernel, layouts_of(kernel, strides), "triton_k")


T = tensor

SOFTMAX = f"""
buffer.kernel @softmax(%a: {T("[4, 8, 16]", "f32")}) -> ({T("[4, 8, 16]", "f32")}) {{
  %m = loop.reduce max ins(%x = %a : {T("[4, 8, 16]", "f32")}) over [16] -> {T("[4, 8, 1]", "f32")} {{
    %v = loop.load %x[d0, d1, r0] : f32
    loop.yield %v : f32
  }}
  %s = loop.reduce sum ins(%x = %a : {T("[4, 8, 16]", "f32")}, %mm = %m : {T("[4, 8, 1]", "f32")}) over [16] -> {T("[4, 8, 1]", "f32")} {{
    %v = loop.load %x[d0, d1, r0] : f32
    %w = loop.load %mm[d0, d1, 0] : f32
    %d = arith.subf %v, %w : f32
    %e = math.exp %d : f32
    loop.yield %e : f32
  }}
  %y = loop.pointwise ins(%x = %a : {T("[4, 8, 16]", "f32")}, %mm = %m : {T("[4, 8, 1]", "f32")}, %ss = %s : {T("[4, 8, 1]", "f32")}) -> {T("[4, 8, 16]", "f32")} {{
    %v = loop.load %x[d0, d1, d2] : f32
    %w = loop.load %mm[d0, d1, 0] : f32
    %t = loop.load %ss[d0, d1, 0] : f32
    %d = arith.subf %v, %w : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %t : f32
    loop.yield %q : f32
  }}
  buffer.yield %y : {T("[4, 8, 16]", "f32")}
}}
"""


def test_softmax_stages_share_rows_and_keep_row_values_in_registers():
    p = plan(SOFTMAX)
    (group,) = p.groups
    assert group.mode == ROWS and group.row_rank == 2
    assert group.rows.sizes == [32]  # d0 and d1 walk memory as one dimension
    first, second, third = group.stages
    assert first.keeps_register and second.keeps_register and not third.keeps_register
    assert {type(s) for s in third.sources.values()} == {int, type(p.inputs[0])}
    assert not any(s.barrier for s in group.stages)
    assert not p.temporaries
    assert [s.block for s in group.stages] == [16, 16, 16]
    source = module_source(p, interpret=False)
    assert "tl.debug_barrier" not in source and "RBLOCK" not in source


def test_a_row_read_across_its_columns_goes_through_a_temporary_after_a_barrier():
    text = f"""
buffer.kernel @k(%a: {T("[4, 16]", "f32")}) -> ({T("[4]", "f32")}) {{
  %e = loop.pointwise ins(%x = %a : {T("[4, 16]", "f32")}) -> {T("[4, 16]", "f32")} {{
    %v = loop.load %x[d0, d1] : f32
    %e = math.exp %v : f32
    loop.yield %e : f32
  }}
  %s = loop.reduce sum ins(%x = %e : {T("[4, 16]", "f32")}) over [16] -> {T("[4]", "f32")} {{
    %v = loop.load %x[d0, 15 - r0] : f32
    loop.yield %v : f32
  }}
  buffer.yield %s : {T("[4]", "f32")}
}}
"""
    p = plan(text)
    (group,) = p.groups
    assert [t.name for t in p.temporaries] == ["tmp0"]
    assert group.stages[1].barrier
    assert "tl.debug_barrier()" in module_source(p, interpret=False)


def test_reads_of_other_rows_split_the_kernel_into_launches():
    text = f"""
buffer.kernel @k(%a: {T("[4, 16]", "f32")}) -> ({T("[4, 16]", "f32")}) {{
  %s = loop.reduce sum ins(%x = %a : {T("[4, 16]", "f32")}) over [16] -> {T("[4]", "f32")} {{
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }}
  %y = loop.pointwise ins(%x = %a : {T("[4, 16]", "f32")}, %t = %s : {T("[4]", "f32")}) -> {T("[4, 16]", "f32")} {{
    %v = loop.load %x[d0, d1] : f32
    %w = loop.load %t[3 - d0] : f32
    %q = arith.divf %v, %w : f32
    loop.yield %q : f32
  }}
  buffer.yield %y : {T("[4, 16]", "f32")}
}}
"""
    p = plan(text)
    assert [g.mode for g in p.groups] == [ROWS, FLAT]
    assert [t.sizes for t in p.temporaries] == [(4,)]
    source = module_source(p, interpret=False)
    assert "STAGE: tl.constexpr" in source
    assert "STAGE=0" in source and "STAGE=1" in source


def test_a_transpose_gets_two_dimensional_tiles():
    text = pointwise_kernel("[64, 48]", ["f32"], "f32", "    %y = math.exp %a0 : f32", indices="[d1, d0]",
                            input_shapes=["[48, 64]"])  # fmt: skip
    p = plan(text)
    (group,) = p.groups
    assert group.mode == TILED
    assert group.rows.sizes == [64] and group.stages[0].inner.sizes == [48]
    source = module_source(p, interpret=False)
    assert "(pid // xblocks) * RBLOCK" in source


def test_a_transpose_through_a_reshape_splits_its_dimensions_into_two_dimensional_tiles():
    """Windows [4 * 16, 3, 49, 32] copied to [4 * 96, 16 * 49]: no address is
    affine in d0 or d1 until they split at 32 and 96 and at 49; then the load
    walks the 32 channels along rows and the store the 49 tokens along inner."""
    indices = "[d0 floordiv 96 * 16 + d1 floordiv 49, d0 floordiv 32 mod 3, d1 mod 49, d0 mod 32]"
    text = pointwise_kernel("[384, 784]", ["f32"], "f32", "    %y = math.exp %a0 : f32", indices=indices,
                            input_shapes=["[64, 3, 49, 32]"])  # fmt: skip
    p = plan(text)
    (group,) = p.groups
    assert group.mode == TILED
    stage = group.stages[0]
    assert group.rows.sizes == [4, 3, 32] and stage.inner.sizes == [16, 49]
    source = module_source(p, interpret=False).split("def launch")[0]
    load = next(line for line in source.splitlines() if "tl.load(" in line)
    assert "//" not in load and "%" not in load


def test_dimensions_that_addresses_divide_unevenly_stay_whole():
    indices = "[d0 floordiv 4, d0 mod 3]"
    text = pointwise_kernel("[12]", ["f32"], "f32", "    %y = math.exp %a0 : f32", indices=indices,
                            input_shapes=["[3, 3]"])  # fmt: skip
    (group,) = plan(text).groups
    assert group.mode == FLAT and group.stages[0].split is None


def test_a_contiguous_pointwise_op_is_one_flat_dimension():
    p = plan(pointwise_kernel("[s0, 8, 4]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32"))
    (group,) = p.groups
    assert group.mode == FLAT
    assert group.rows.numel == sympy.expand(32 * symbol("s0")) and len(group.rows.dims) == 1
    assert "//" not in module_source(p, interpret=False).split("def launch")[0]


@pytest.mark.parametrize("size,block", [("4096", 4096), ("3000", 4096), ("4097", None), ("s1", None), ("0", 1)])
def test_reductions_are_persistent_up_to_a_limit(size, block):
    text = f"""
buffer.kernel @k(%a: {T(f"[3, {size}]", "f32")}) -> ({T("[3]", "f32")}) {{
  %s = loop.reduce sum ins(%x = %a : {T(f"[3, {size}]", "f32")}) over [{size}] -> {T("[3]", "f32")} {{
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }}
  buffer.yield %s : {T("[3]", "f32")}
}}
"""
    p = plan(text)
    (stage,) = p.stages
    assert stage.block == block
    source = module_source(p, interpret=False)
    assert ("for roffset in range(" in source) == (block is None)


def test_index_width_follows_the_extents():
    assert plan(pointwise_kernel("[1024, 1024]", ["f32"], "f32", "    %y = math.exp %a0 : f32")).index_bits == 32
    big = plan(pointwise_kernel("[65536, 65536]", ["f32"], "f32", "    %y = math.exp %a0 : f32"))
    assert big.index_bits == 64 and "pid = pid.to(tl.int64)" in module_source(big, interpret=False)
    dynamic = plan(pointwise_kernel("[s0, 4]", ["f32"], "f32", "    %y = math.exp %a0 : f32"))
    assert dynamic.index_bits is None
    source = module_source(dynamic, interpret=False)
    assert "IDX64: tl.constexpr" in source and "idx64 = max(" in source


def test_strided_layouts_enter_addresses():
    text = pointwise_kernel("[4, 8]", ["f32"], "f32", "    %y = math.exp %a0 : f32")
    p = plan(text, strides={0: [1, 4]})
    source = module_source(p, interpret=False)
    assert "in0 + (d0 + d1 * 4)" in source or "in0 + (d1 * 4 + d0)" in source
    assert "out0 + (d0 * 8 + d1)" in source or "out0 + (d1 + d0 * 8)" in source


def test_a_kernel_returning_its_argument_is_refused():
    text = f"""
buffer.kernel @k(%a: {T("[4]", "f32")}) -> ({T("[4]", "f32")}) {{
  buffer.yield %a : {T("[4]", "f32")}
}}
"""
    with pytest.raises(UnsupportedKernelError, match="returns one of its arguments"):
        plan(text)


def test_collapse_merges_walked_dimensions_and_keeps_read_ones():
    d0, d1, d2 = symbol("d0"), symbol("d1"), symbol("d2")
    axis = collapse([(d0, 4), (d1, 3), (d2, 1)], [12 * d0 + 4 * d1 + 0 * d2, 3 * d0 + d1], set())
    assert axis.sizes == [12] and axis.substitution[d0] == 0 and axis.substitution[d2] == 0
    kept = collapse([(d0, 4), (d1, 3)], [3 * d0 + d1], {d1})
    assert kept.sizes == [4, 3]
    transposed = collapse([(d0, 4), (d1, 3)], [3 * d0 + d1, d0 + 4 * d1], set())
    assert transposed.sizes == [4, 3]


def test_operands_of_division_are_whole_products():
    """A product whose first factor is parenthesized is still wrapped as an
    operand: `xindex // (s0 // 2) * (s1 // 2)` would divide by one factor
    and multiply by the other."""
    d0, s0, s1 = symbol("d0"), symbol("s0"), symbol("s1")
    expr = TritonExpr({"d0": "d0", "s0": "s0", "s1": "s1"}, set())
    halves = FloorDiv(s0, 2) * FloorDiv(s1, 2)
    assert expr.atom(halves) == "((s0 // 2) * (s1 // 2))"
    assert expr.atom((s0 + 1) * FloorDiv(s1, 2)) == "((s0 + 1) * (s1 // 2))"
    assert expr.text(sympy.Mod(d0, (s0 + 1) * s1)) == "(d0 % (s1 * (s0 + 1)))"
    assert expr.atom(sympy.Max(s0, s1)) == "tl.maximum(s0, s1)"
    assert expr.atom(FloorDiv(s0, 2)) == "(s0 // 2)"


def test_index_expressions_use_truncating_division_only_where_it_floors():
    d0, s0, v0 = symbol("d0"), symbol("s0"), symbol("v0")
    helpers: set[str] = set()
    expr = TritonExpr({"d0": "d0", "s0": "s0", "v0": "t3"}, helpers)
    assert expr.text(FloorDiv(d0, 4)) == "(d0 // 4)"
    assert expr.text(sympy.Mod(d0 + s0, s0 * 2)) == "((d0 + s0) % (s0 * 2))"
    assert not helpers
    assert expr.text(FloorDiv(v0, 4)) == "_floordiv(t3, 4)"
    assert expr.text(sympy.Mod(v0 - 2, 4)) == "_floormod((t3 + 2), 4)"  # sympy's normal form
    assert helpers == {"_floordiv", "_floormod"}
    assert split_affine(3 * d0 + s0 * d0 + 7, d0) == (7, s0 + 3)
    assert split_affine(FloorDiv(d0, 2), d0) is None
