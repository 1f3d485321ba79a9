"""
The algorithms behind `plan-memory`, on buffer IR written as text: when a
kernel may write over an input (`_reads_only_where_it_writes`), which buffers
the program may write over (`_writable`), sizes in bytes and the choice of a
dead buffer to reuse (`buffer_bytes`, `_at_least`, the donor), and the recorded
peak. Every function of the pass's lit test runs before and after the pass,
with the buffer interpreter (which rejects a use after a free) and compiled
for the CPU (where writing over a buffer still to be read shows).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sympy
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from permalloy.compiler import _planned_peak, planned_peak_expr
from permalloy.dialects import buffer as buf
from permalloy.dialects import make_context
from permalloy.dialects.sym import FloorDiv, SymExprAttr, symbol
from permalloy.dtypes import torch_dtype
from permalloy.interpreter.levels import run_module_function, with_only_function
from permalloy.passes import build_pipeline
from permalloy.passes.plan_memory import (
    PEAK_ATTR,
    _at_least,
    buffer_bytes,
    _Planner,
    _reads_only_where_it_writes,
    same_layout,
    peak_of,
)
from permalloy.targets.host import build_host_program
from permalloy.targets.registry import kernel_target

LIT_TEST = Path(__file__).parents[1] / "filecheck" / "passes" / "plan_memory.mlir"
SYMBOLIC_LIT_TEST = LIT_TEST.with_name("plan_memory_symbolic.mlir")

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def T(shape: str, dtype: str = "f32") -> str:
    return f"!ptensor.tensor<[{shape}], {dtype}>"


def B(shape: str, dtype: str = "f32", layout: str = "") -> str:
    return f"!buffer.buffer<[{shape}], {dtype}{layout}>"


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def buffer_type(text: str) -> buf.BufferType:
    module = parse(f"func.func @f(%x: {text}) {{\n  func.return\n}}")
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    result = function.function_type.inputs.data[0]
    assert isinstance(result, buf.BufferType)
    return result


def kernel(body: str, inputs: list[str], results: list[str]) -> buf.KernelOp:
    """A module holding one `buffer.kernel @k` with `body` (which yields)."""
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(inputs))
    module = parse(f"buffer.kernel @k({params}) -> ({', '.join(results)}) {{\n{body}\n}}")
    return next(op for op in module.ops if isinstance(op, buf.KernelOp))


def pointwise_kernel(loads: list[tuple[int, str]], shape: str = "4, 4", extra: str = "") -> buf.KernelOp:
    """One loop.pointwise over two [4, 4] inputs summing the given loads
    (input number, index)."""
    lines = [f"    %v{i} = loop.load %x{arg}[{index}]{extra if i == 0 else ''} : f32" for i, (arg, index) in enumerate(loads)]
    total = "%v0"
    for i in range(1, len(loads)):
        lines.append(f"    %s{i} = arith.addf {total}, %v{i} : f32")
        total = f"%s{i}"
    body = (
        f"  %r = loop.pointwise ins(%x0 = %a0 : {T(shape)}, %x1 = %a1 : {T(shape)}) -> {T(shape)} {{\n"
        + "\n".join(lines)
        + f"\n    loop.yield {total} : f32\n  }}\n  buffer.yield %r : {T(shape)}"
    )
    return kernel(body, [T(shape), T(shape)], [T(shape)])


# --------------------------------------------------------------------------
# _reads_only_where_it_writes
# --------------------------------------------------------------------------


def test_a_pointwise_kernel_reading_at_its_own_point_may_write_over_that_input():
    k = pointwise_kernel([(0, "d0, d1"), (1, "d1, d0")])
    assert _reads_only_where_it_writes(k, 0)
    assert not _reads_only_where_it_writes(k, 1), "input 1 is read transposed"


@pytest.mark.parametrize(
    "loads",
    [
        [(0, "d0, d1"), (0, "d0, 0")],  # the row's first element as well
        [(0, "d0, 3 - d1")],
        [(0, "d1, d1")],
        [(0, "0, 0")],
    ],
)
def test_any_other_read_of_the_input_forbids_writing_over_it(loads):
    assert not _reads_only_where_it_writes(pointwise_kernel([*loads, (1, "d0, d1")]), 0)


def test_a_masked_read_forbids_writing_over_the_input():
    body = f"""  %r = loop.pointwise ins(%x = %a0 : {T('4, 4')}) -> {T('4, 4')} {{
    %i = loop.index d1
    %two = loop.index 2
    %m = arith.cmpi slt, %i, %two : index
    %v = loop.load %x[d0, d1] if %m : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {T('4, 4')}"""
    assert not _reads_only_where_it_writes(kernel(body, [T("4, 4")], [T("4, 4")]), 0)


def test_a_gathered_read_forbids_writing_over_the_input():
    body = f"""  %r = loop.pointwise ins(%x = %a0 : {T('4')}, %i = %a1 : {T('4', 'i64')}) -> {T('4')} {{
    %j = loop.load %i[d0] : i64
    %k = arith.index_cast %j : i64 to index
    %v = loop.load %x[v0] (%k) : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {T('4')}"""
    assert not _reads_only_where_it_writes(kernel(body, [T("4"), T("4", "i64")], [T("4")]), 0)


def test_only_single_pointwise_kernels_write_in_place():
    reduce_body = f"""  %r = loop.reduce sum ins(%x = %a0 : {T('4, 1')}) over [1] -> {T('4, 1')} {{
    %v = loop.load %x[d0, d1 + r0] : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {T('4, 1')}"""
    assert not _reads_only_where_it_writes(kernel(reduce_body, [T("4, 1")], [T("4, 1")]), 0)
    two_body = f"""  %r = loop.pointwise ins(%x = %a0 : {T('4')}) -> {T('4')} {{
    %v = loop.load %x[d0] : f32
    loop.yield %v : f32
  }}
  %s = loop.pointwise ins(%x = %r : {T('4')}) -> {T('4')} {{
    %v = loop.load %x[d0] : f32
    %w = arith.negf %v : f32
    loop.yield %w : f32
  }}
  buffer.yield %s : {T('4')}"""
    assert not _reads_only_where_it_writes(kernel(two_body, [T("4")], [T("4")]), 0)


# --------------------------------------------------------------------------
# Bytes, sizes, donors, writable buffers
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        (B("4, 4"), 64),
        (B("4, 4", "f16"), 32),
        (B("4, 4", "i64"), 128),
        (B("4, 4", "f32", ", strides [1, 4]"), 64),
        (B("2, 3", "f32", ", strides [5, 2], offset 3"), (1 + 5 + 4 + 3) * 4),
        (B("3, 4", "f32", ", strides [0, 1]"), 16),
        (B("", "f32"), 4),
        (B("s0, 4"), 16 * symbol("s0")),
    ],
)
def test_bytes_span_the_layout_from_the_start_of_its_memory(layout, expected):
    assert sympy.expand(buffer_bytes(buffer_type(layout)) - expected) == 0


def test_at_least_decides_only_what_holds_for_every_size():
    s0, s1 = symbol("s0"), symbol("s1")
    assert _at_least(sympy.Integer(64), sympy.Integer(64))
    assert not _at_least(sympy.Integer(63), sympy.Integer(64))
    assert _at_least(32 * s0, 16 * s0)
    assert not _at_least(16 * s0, 32 * s0)
    assert not _at_least(16 * s0, sympy.Integer(64)), "s0 may be 1"
    assert not _at_least(16 * s0, 16 * s1)


def _planner_over(allocs: list[tuple[str, str]]) -> tuple[_Planner, dict[str, object]]:
    lines = [f"  %{name} = buffer.alloc : {t}" for name, t in allocs]
    module = parse("func.func @f() {\n" + "\n".join(lines) + "\n  func.return\n}")
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    planner = _Planner(function, {}, reuse=True, in_place=True)
    values = {op.results[0].name_hint: op.results[0] for op in function.body.block.ops if op.results}
    return planner, values


def test_the_donor_is_the_smallest_dead_buffer_of_the_type_that_fits():
    planner, v = _planner_over(
        [("big", B("16, 4")), ("mid", B("8, 4")), ("small", B("2, 4")), ("ints", B("8, 4", "i32"))]
    )
    planner.free = [v["big"], v["mid"], v["small"], v["ints"]]
    assert planner._donor(buffer_type(B("4, 4"))) is v["mid"]
    assert planner._donor(buffer_type(B("2, 4"))) is v["small"]
    assert planner._donor(buffer_type(B("16, 4"))) is v["big"]
    assert planner._donor(buffer_type(B("17, 4"))) is None
    assert planner._donor(buffer_type(B("4, 4", "i32"))) is v["ints"]
    assert planner._donor(buffer_type(B("4, 4", "f16"))) is None, "no reuse across element types"


def test_a_symbolic_donor_holds_what_it_provably_can():
    planner, v = _planner_over([("rows", B("s0, 8")), ("fixed", B("64"))])
    planner.free = [v["rows"], v["fixed"]]
    assert planner._donor(buffer_type(B("s0, 4"))) is v["rows"]
    assert planner._donor(buffer_type(B("16"))) is v["fixed"], "s0 * 32 bytes may be less than 64"
    assert planner._donor(buffer_type(B("s0, 16"))) is None


def test_writable_buffers_are_allocations_and_new_tensors_of_extern_calls():
    """Constants are not: the host program makes each once and keeps it."""
    module = parse(
        f"""
func.func @f(%x: {B('4, 4')}) {{
  %a = buffer.alloc : {B('4, 4')}
  %m = buffer.extern ins(%p = %x : {B('4, 4')}, %q = %x : {B('4, 4')}) -> ({B('4, 4')}) {{
    %r = ptensor.mm %p, %q : {T('4, 4')}, {T('4, 4')} -> {T('4, 4')}
    buffer.yield %r : {T('4, 4')}
  }}
  %k = buffer.extern ins() -> ({B('2')}) {{
    %c = ptensor.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32> -> {T('2')}
    buffer.yield %c : {T('2')}
  }}
  %t = buffer.extern ins(%p = %x : {B('4, 4')}) -> ({B('4, 4')}) {{
    %r = ptensor.fallback "aten.t.default"(%p) [#ptensor.operand<0>] : ({T('4, 4')}) -> {T('4, 4')}
    buffer.yield %r : {T('4, 4')}
  }}
  func.return
}}"""
    )
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    planner = _Planner(function, {}, reuse=True, in_place=True)
    values = {op.results[0].name_hint: op.results[0] for op in function.body.block.ops if op.results}
    assert planner._writable(values["a"])
    assert planner._writable(values["m"])
    assert not planner._writable(values["k"]), "a constant is kept from call to call"
    assert not planner._writable(values["t"]), "a fallback may return a view of its input"
    assert not planner._writable(function.body.block.args[0])
    assert all(planner._owned(values[n]) for n in "amkt")


# --------------------------------------------------------------------------
# The peak
# --------------------------------------------------------------------------


def _chain(count: int, shape: str = "64") -> str:
    """A host program of `count` negations, each reading the previous result
    reversed (so never in place)."""
    lines = []
    source = "%x"
    for i in range(count):
        lines.append(f"  %b{i} = buffer.alloc : {B(shape)}")
        lines.append(f"  buffer.launch @neg ins({source} : {B(shape)}) outs(%b{i} : {B(shape)})")
        source = f"%b{i}"
    return f"""
buffer.kernel @neg(%a: {T(shape)}) -> ({T(shape)}) {{
  %r = loop.pointwise ins(%x = %a : {T(shape)}) -> {T(shape)} {{
    %v = loop.load %x[63 - d0] : f32
    %n = arith.negf %v : f32
    loop.yield %n : f32
  }}
  buffer.yield %r : {T(shape)}
}}
func.func @f(%x: {B(shape)}) -> {B(shape)} {{
{chr(10).join(lines)}
  func.return {source} : {B(shape)}
}}"""


@pytest.mark.parametrize(
    ("options", "peak"),
    [("", 2 * 256), ("{reuse=false}", 2 * 256), ("{reuse=false in-place=false}", 2 * 256)],
)
def test_a_chain_holds_two_buffers_at_a_time(options, peak):
    # each launch reads its input reversed (no in-place update): with reuse
    # the chain ping-pongs between two buffers, without it frees come early
    module = parse(_chain(6))
    build_pipeline(f"plan-memory{options}").apply(make_context(), module)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    allocs = [op for op in function.body.block.ops if isinstance(op, buf.AllocOp)]
    assert _planned_peak(module) == peak
    assert function.attributes[PEAK_ATTR].value.data == peak  # type: ignore[attr-defined]
    assert len(allocs) == (2 if options == "" else 6)


def test_the_peak_of_symbolic_sizes_is_an_expression():
    module = parse(_chain(3).replace("[64]", "[s0]").replace("63 - d0", "s0 - 1 - d0"))
    build_pipeline("plan-memory").apply(make_context(), module)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    peak = function.attributes[PEAK_ATTR]
    assert isinstance(peak, SymExprAttr)
    assert sympy.expand(peak.expr - 8 * symbol("s0")) == 0
    assert planned_peak_expr(module) == peak.expr
    assert _planned_peak(module) is None, "not a constant"


def test_the_peak_keeps_the_totals_no_other_covers():
    s0, s1 = symbol("s0"), symbol("s1")
    assert peak_of([]) == 0
    assert peak_of([sympy.Integer(8), sympy.Integer(24), sympy.Integer(16)]) == 24
    assert peak_of([4 * s0, 8 * s0, 8 * s0 - 4]) == 8 * s0
    assert peak_of([4 * s0, sympy.Integer(64)]) == sympy.Max(4 * s0, 64), "s0 may be small"
    assert peak_of([4 * s0 + 4 * s1, 8 * s0, 4 * s1]) == sympy.Max(4 * s0 + 4 * s1, 8 * s0)


def test_at_least_sees_floordiv_sizes_as_non_negative():
    s0 = symbol("s0")
    half = FloorDiv(s0, 2)
    assert _at_least(32 * half, 16 * half)
    assert not _at_least(16 * half, 32 * half)
    assert not _at_least(16 * half, 16 * s0)


def test_the_donor_is_one_that_fits_in_every_other():
    planner, v = _planner_over([("wide", B("s0, s1 + 1")), ("exact", B("s0, s1")), ("tall", B("s0 + 2, s1"))])
    planner.free = [v["wide"], v["tall"], v["exact"]]
    assert planner._donor(buffer_type(B("s1, s0"))) is v["exact"]
    assert planner._donor(buffer_type(B("s0, s1 + 1"))) is v["wide"]


def test_layouts_spelled_differently_are_the_same_layout():
    assert same_layout(buffer_type(B("s0 * (s1 + 1)")), buffer_type(B("s0 * s1 + s0")))
    assert not same_layout(buffer_type(B("s0 * s1")), buffer_type(B("s0 * s1 + s0")))
    assert not same_layout(buffer_type(B("s0, 4")), buffer_type(B("s0, 4", "f32", ", strides [1, s0]")))


# --------------------------------------------------------------------------
# The pass preserves results
# --------------------------------------------------------------------------

SIZES = {symbol("s0"): 5, symbol("s1"): 3}


def _lit_module(path: Path = LIT_TEST) -> ModuleOp:
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("//"))
    return parse(text)


def _functions(module: ModuleOp) -> list[str]:
    return [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]


LIT_FUNCTIONS = _functions(_lit_module())
SYMBOLIC_FUNCTIONS = _functions(_lit_module(SYMBOLIC_LIT_TEST))


def _inputs(function: func.FuncOp) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    inputs = []
    for t in function.function_type.inputs.data:
        assert isinstance(t, buf.BufferType)
        shape = [int(sympy.sympify(s).xreplace(SIZES)) for s in t.sizes]
        inputs.append(torch.randn(shape, generator=generator, dtype=torch_dtype(t.element_type)))
    return inputs


def test_the_lit_test_has_the_cases_it_documents():
    assert {"in_place", "viewed_twice", "fallback_result", "reuse", "unused", "symbolic"} <= set(
        LIT_FUNCTIONS
    )


@pytest.mark.parametrize("options", ["", "{in-place=false}", "{reuse=false}"])
@pytest.mark.parametrize(
    "path, name",
    [(LIT_TEST, n) for n in LIT_FUNCTIONS] + [(SYMBOLIC_LIT_TEST, n) for n in SYMBOLIC_FUNCTIONS],
    ids=LIT_FUNCTIONS + SYMBOLIC_FUNCTIONS,
)
def test_plan_memory_preserves_results(path, name, options):
    before = with_only_function(_lit_module(path), name)
    after = before.clone()
    build_pipeline(f"plan-memory{options}").apply(make_context(), after)
    after = parse(str(after))
    function = next(op for op in before.ops if isinstance(op, func.FuncOp))
    inputs = _inputs(function)
    expected = run_module_function(before, [x.clone() for x in inputs])
    runs = {"interpreted": run_module_function(after, [x.clone() for x in inputs])}
    given = [x.clone() for x in inputs]
    if not options:
        # compiled kernels write where the plan says: a buffer written over
        # while still to be read shows here, not in the interpreter
        runs["compiled"] = build_host_program(after, kernel_target("llvm"))(*given)
    for label, results in runs.items():
        assert len(results) == len(expected)
        for i, (a, e) in enumerate(zip(results, expected, strict=True)):
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6, msg=lambda m: f"{label} {i}: {m}")
    for x, y in zip(given, inputs, strict=True):
        assert torch.equal(x, y), "the program wrote over an input"


def test_writing_over_a_transposed_view_of_itself_would_be_wrong():
    """What the `viewed_twice` case guards against, shown: the compiled
    program, forced to update in place, gives another result."""
    module = with_only_function(_lit_module(), "viewed_twice")
    text = str(module)
    forced = re.sub(
        r"%b = buffer.alloc : [^\n]+\n(\s+)buffer.launch @add ins\(%a, %t : ([^)]*)\) outs\(%b : ([^)]*)\)\n(\s+)func.return %b",
        r"buffer.launch @add ins(%a, %t : \2) outs(%a : \3)\n\4func.return %a",
        text,
    )
    assert forced != text
    inputs = _inputs(next(op for op in module.ops if isinstance(op, func.FuncOp)))
    (expected,) = run_module_function(module, [x.clone() for x in inputs])
    (wrong,) = build_host_program(parse(forced), kernel_target("llvm"))(*inputs)
    assert not torch.allclose(wrong, expected)
