"""
The algorithms behind `fuse-loops`, on loop IR written as text: how often a
producer's elements are read (`reads_per_element`), when inlining pays
(`InliningCost`, `is_cheap`), what blocks inlining (`can_inline`), which loop
ops may share a kernel (`joins`, row locality, `find_groups`, `sink_views`),
and that the pass preserves results: every function of the pass's lit test
runs before and after it, under each option, on random inputs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sympy
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser

from permalloy.dialects import loop, make_context
from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import symbol
from permalloy.dtypes import torch_dtype
from permalloy.interpreter.levels import run_module_function
from permalloy.passes import build_pipeline
from permalloy.passes.fusion_grouping import (
    _reads_row_locally,
    find_groups,
    joins,
    sink_views,
)
from permalloy.passes.fusion_inlining import (
    InliningCost,
    body_size,
    can_inline,
    is_cheap,
    reads_per_element,
)

LIT_TEST = Path(__file__).parents[1] / "filecheck" / "passes" / "fuse_loops.mlir"

# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def T(shape: str, dtype: str = "f32") -> str:
    return f"!ptensor.tensor<[{shape}], {dtype}>"


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def named_ops(module: ModuleOp) -> dict[str, Operation]:
    """The top-level ops of the module's first function, by result name."""
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return {
        op.results[0].name_hint: op
        for op in function.body.block.ops
        if op.results and op.results[0].name_hint
    }


def function_of(body: str, params: str, results: str) -> ModuleOp:
    """`func.func @f(<params>) -> (<results>)` with `body` (which returns)."""
    return parse(f"func.func @f({params}) -> ({results}) {{\n{body}\n}}")


def exp_of(name: str, source: str, shape: str, index: str = "d0, d1") -> str:
    """`%name = exp(source)` over `shape`, reading `source` at `index`."""
    return (
        f"  %{name} = loop.pointwise ins(%0 = %{source} : {T(shape)}) -> {T(shape)} {{\n"
        f"    %1 = loop.load %0[{index}] : f32\n"
        "    %2 = math.exp %1 : f32\n"
        "    loop.yield %2 : f32\n"
        "  }"
    )


def add_one(name: str, source: str, shape: str, index: str = "d0") -> str:
    return (
        f"  %{name} = loop.pointwise ins(%0 = %{source} : {T(shape)}) -> {T(shape)} {{\n"
        f"    %1 = loop.load %0[{index}] : f32\n"
        "    %2 = arith.constant 1.000000e+00 : f32\n"
        "    %3 = arith.addf %1, %2 : f32\n"
        "    loop.yield %3 : f32\n"
        "  }"
    )


def reader(name: str, source: str, source_shape: str, shape: str, indices: list[str]) -> str:
    """`%name` over `shape`: the sum of `source` read at each of `indices`."""
    loads = "\n".join(
        f"    %v{i} = loop.load %0[{index}] : f32" for i, index in enumerate(indices)
    )
    total = "%v0"
    adds = []
    for i in range(1, len(indices)):
        adds.append(f"    %s{i} = arith.addf {total}, %v{i} : f32")
        total = f"%s{i}"
    body = "\n".join([loads, *adds])
    return (
        f"  %{name} = loop.pointwise ins(%0 = %{source} : {T(source_shape)}) -> {T(shape)} {{\n"
        f"{body}\n    loop.yield {total} : f32\n  }}"
    )


def row_sum(name: str, source: str, shape: str = "4, 8", rows: str = "4") -> str:
    """`%name` over `rows`: the sums of the rows of `source`."""
    return (
        f"  %{name} = loop.reduce sum ins(%0 = %{source} : {T(shape)}) over [8] -> {T(rows)} {{\n"
        "    %1 = loop.load %0[d0, r0] : f32\n"
        "    loop.yield %1 : f32\n"
        "  }"
    )


# --------------------------------------------------------------------------
# reads_per_element, is_cheap, body_size
# --------------------------------------------------------------------------


def test_reads_per_element_counts_loads_over_the_readers_domains():
    module = function_of(
        "\n".join(
            [
                exp_of("p", "x", "8", "d0"),
                # a broadcast: 4 reads of each element
                reader("b", "p", "8", "4, 8", ["d1"]),
                # two loads over the same domain: 2 more
                reader("t", "p", "8", "8", ["d0", "7 - d0"]),
                # a slice of 2 of the 8 elements: 1/4 more
                reader("s", "p", "8", "2", ["d0 + 3"]),
                "  func.return %b, %t, %s : "
                f"{T('4, 8')}, {T('8')}, {T('2')}",
            ]
        ),
        f"%x: {T('8')}",
        f"{T('4, 8')}, {T('8')}, {T('2')}",
    )
    assert reads_per_element(named_ops(module)["p"]) == sympy.Rational(25, 4)


def test_reads_per_element_in_a_reduction_counts_every_reduction_step():
    # the row value m[d0] is loaded at each of the 8 steps of its row
    module = function_of(
        "\n".join(
            [
                exp_of("m", "x", "4", "d0"),
                f"  %s = loop.reduce sum ins(%0 = %m : {T('4')}, %1 = %y : {T('4, 8')}) over [8] -> {T('4')} {{",
                "    %2 = loop.load %0[d0] : f32",
                "    %3 = loop.load %1[d0, r0] : f32",
                "    %4 = arith.mulf %2, %3 : f32",
                "    loop.yield %4 : f32",
                "  }",
                f"  func.return %s : {T('4')}",
            ]
        ),
        f"%x: {T('4')}, %y: {T('4, 8')}",
        T("4"),
    )
    assert reads_per_element(named_ops(module)["m"]) == 8


def test_reads_per_element_is_unknown_when_the_host_reads_the_producer():
    module = function_of(
        "\n".join([exp_of("p", "x", "8", "d0"), reader("r", "p", "8", "8", ["d0"]),
                   f"  func.return %p, %r : {T('8')}, {T('8')}"]),
        f"%x: {T('8')}",
        f"{T('8')}, {T('8')}",
    )
    assert reads_per_element(named_ops(module)["p"]) is None


def test_reads_per_element_over_size_symbols():
    module = function_of(
        "\n".join([exp_of("p", "x", "8", "d0"), reader("b", "p", "8", "s0, 8", ["d1"]),
                   f"  func.return %b : {T('s0, 8')}"]),
        f"%x: {T('8')}",
        T("s0, 8"),
    )
    assert reads_per_element(named_ops(module)["p"]) == symbol("s0")


def test_cheap_means_few_scalar_ops_and_no_math():
    module = function_of(
        "\n".join(
            [
                add_one("a", "x", "8"),
                exp_of("e", "x", "8", "d0"),
                f"  %c = loop.pointwise ins(%0 = %x : {T('8')}) -> {T('8')} {{",
                "    %1 = loop.load %0[d0] : f32",
                *[f"    %{i + 2} = arith.addf %{i + 1}, %1 : f32" for i in range(7)],
                "    loop.yield %8 : f32",
                "  }",
                f"  func.return %a, %e, %c : {T('8')}, {T('8')}, {T('8')}",
            ]
        ),
        f"%x: {T('8')}",
        f"{T('8')}, {T('8')}, {T('8')}",
    )
    ops = named_ops(module)
    assert [body_size(ops[n]) for n in "aec"] == [2, 1, 7]
    assert is_cheap(ops["a"])
    assert not is_cheap(ops["e"]), "one math op is not cheap"
    assert not is_cheap(ops["c"]), "seven adds are more than a few"


# --------------------------------------------------------------------------
# InliningCost
# --------------------------------------------------------------------------


def _broadcast_module(rows: str, producer: str) -> dict[str, Operation]:
    """`%p` (an exp or an add over 8 elements) read by `%b` over `rows` rows."""
    make = exp_of("p", "x", "8", "d0") if producer == "exp" else add_one("p", "x", "8")
    module = function_of(
        "\n".join(
            [make, reader("b", "p", "8", f"{rows}, 8", ["d1"]), f"  func.return %b : {T(f'{rows}, 8')}"]
        ),
        f"%x: {T('8')}",
        T(f"{rows}, 8"),
    )
    return named_ops(module)


@pytest.mark.parametrize(
    ("rows", "max_recompute", "allowed"),
    [("1", 1, True), ("2", 2, True), ("2", 1, False), ("3", 2, False), ("s0", 2, False), ("s0", 100, False)],
)
def test_a_transcendental_is_recomputed_up_to_max_recompute_times(rows, max_recompute, allowed):
    ops = _broadcast_module(rows, "exp")
    cost = InliningCost(max_kernel_size=96, max_recompute=max_recompute)
    assert cost.allows(ops["p"], ops["b"]) is allowed


@pytest.mark.parametrize("rows", ["64", "s0"])
def test_a_cheap_producer_is_recomputed_at_any_count(rows):
    ops = _broadcast_module(rows, "add")
    assert InliningCost(max_kernel_size=96, max_recompute=1).allows(ops["p"], ops["b"])


def test_max_kernel_size_bounds_the_two_bodies_together():
    ops = _broadcast_module("2", "add")  # 2 ops in the producer, 0 in the reader
    assert InliningCost(max_kernel_size=2, max_recompute=2).allows(ops["p"], ops["b"])
    assert not InliningCost(max_kernel_size=1, max_recompute=2).allows(ops["p"], ops["b"])


# --------------------------------------------------------------------------
# can_inline
# --------------------------------------------------------------------------


def _positions_then(load: str) -> dict[str, Operation]:
    module = parse(
        f"""
func.func @f(%i: {T('3', 'i64')}) -> {T('3', 'i64')} {{
  %r = loop.pointwise ins() -> {T('16', 'i64')} {{
    %0 = loop.index d0
    %1 = arith.index_cast %0 : index to i64
    loop.yield %1 : i64
  }}
  %g = loop.pointwise ins(%0 = %r : {T('16', 'i64')}, %1 = %i : {T('3', 'i64')}) -> {T('3', 'i64')} {{
    %2 = loop.load %1[d0] : i64
    %3 = arith.index_cast %2 : i64 to index
    {load}
    loop.yield %4 : i64
  }}
  func.return %g : {T('3', 'i64')}
}}"""
    )
    return named_ops(module)


def test_a_producer_using_its_position_cannot_be_inlined_at_a_gathered_position():
    ops = _positions_then("%4 = loop.load %0[v0] (%3) : i64")
    assert not can_inline(ops["g"], ops["r"])


def test_a_producer_using_its_position_is_inlined_at_an_index_expression():
    ops = _positions_then("%4 = loop.load %0[d0 * 5] : i64")
    assert can_inline(ops["g"], ops["r"])


def test_a_producer_without_positions_is_inlined_at_a_gathered_position():
    module = function_of(
        "\n".join(
            [
                exp_of("e", "w", "16", "d0"),
                f"  %g = loop.pointwise ins(%0 = %e : {T('16')}, %1 = %i : {T('3', 'i64')}) -> {T('3')} {{",
                "    %2 = loop.load %1[d0] : i64",
                "    %3 = arith.index_cast %2 : i64 to index",
                "    %4 = loop.load %0[v0] (%3) : f32",
                "    loop.yield %4 : f32",
                "  }",
                f"  func.return %g : {T('3')}",
            ]
        ),
        f"%w: {T('16')}, %i: {T('3', 'i64')}",
        T("3"),
    )
    ops = named_ops(module)
    assert can_inline(ops["g"], ops["e"])


# --------------------------------------------------------------------------
# Grouping: joins, row locality, find_groups, sink_views
# --------------------------------------------------------------------------


def _sum_then_reader(index: str, reader_shape: str = "4, 8", sum_rows: str = "4") -> dict[str, Operation]:
    """The row sums of x [sum_rows, 8] read by a pointwise over `reader_shape` at `index`."""
    source = f"{sum_rows}, 8"
    own = ", ".join(f"d{i}" for i in range(reader_shape.count(",") + 1))
    module = function_of(
        "\n".join(
            [
                row_sum("s", "x", shape=source, rows=sum_rows),
                f"  %y = loop.pointwise ins(%0 = %s : {T(sum_rows)}, %1 = %z : {T(reader_shape)}) -> {T(reader_shape)} {{",
                f"    %2 = loop.load %0[{index}] : f32",
                f"    %3 = loop.load %1[{own}] : f32",
                "    %4 = arith.divf %3, %2 : f32",
                "    loop.yield %4 : f32",
                "  }",
                f"  func.return %y : {T(reader_shape)}",
            ]
        ),
        f"%x: {T(source)}, %z: {T(reader_shape)}",
        T(reader_shape),
    )
    return named_ops(module)


def test_a_reader_at_its_own_row_joins_the_reduction():
    ops = _sum_then_reader("d0")
    assert _reads_row_locally(ops["y"], ops["s"])
    assert joins([ops["s"]], ops["y"])


@pytest.mark.parametrize(
    ("index", "reader_shape"),
    [("d1", "4, 4"), ("3 - d0", "4, 8"), ("0", "4, 8"), ("d0 floordiv 2", "4, 8")],
)
def test_a_reader_at_another_row_does_not_join(index, reader_shape):
    ops = _sum_then_reader(index, reader_shape)
    assert not _reads_row_locally(ops["y"], ops["s"])
    assert not joins([ops["s"]], ops["y"])


def test_a_reader_over_other_rows_does_not_join():
    # 8 sums read by a pointwise over 4 rows at its own d0: the rows differ
    ops = _sum_then_reader("d0", "4, 8", sum_rows="8")
    assert _reads_row_locally(ops["y"], ops["s"])
    assert not joins([ops["s"]], ops["y"])


def test_a_transposed_read_of_a_two_dimensional_reduction_does_not_join():
    module = function_of(
        "\n".join(
            [
                f"  %s = loop.reduce sum ins(%0 = %x : {T('4, 4, 8')}) over [8] -> {T('4, 4')} {{",
                "    %1 = loop.load %0[d0, d1, r0] : f32",
                "    loop.yield %1 : f32",
                "  }",
                reader("y", "s", "4, 4", "4, 4", ["d1, d0"]),
                reader("z", "s", "4, 4", "4, 4", ["d0, 3 - d1"]),
                f"  func.return %y, %z : {T('4, 4')}, {T('4, 4')}",
            ]
        ),
        f"%x: {T('4, 4, 8')}",
        f"{T('4, 4')}, {T('4, 4')}",
    )
    ops = named_ops(module)
    assert not joins([ops["s"]], ops["y"])
    assert joins([ops["s"]], ops["z"]), "any column of its own row is fine"


def test_over_a_single_row_every_read_is_at_that_row():
    module = function_of(
        "\n".join(
            [
                f"  %m = loop.reduce max ins(%0 = %x : {T('8, 16')}) over [8] -> {T('1, 16')} {{",
                "    %1 = loop.load %0[r0, d1] : f32",
                "    loop.yield %1 : f32",
                "  }",
                reader("c", "m", "1, 16", "1, 16", ["0, 15 - d1"]),
                reader("b", "m", "1, 16", "8, 16", ["0, d1"]),
                f"  func.return %c, %b : {T('1, 16')}, {T('8, 16')}",
            ]
        ),
        f"%x: {T('8, 16')}",
        f"{T('1, 16')}, {T('8, 16')}",
    )
    ops = named_ops(module)
    assert not _reads_row_locally(ops["c"], ops["m"]), "index 0 is not d0 as written"
    assert joins([ops["m"]], ops["c"])
    assert not joins([ops["m"]], ops["b"]), "8 rows need the whole column first"


def test_independent_ops_join_only_when_they_share_an_input():
    module = function_of(
        "\n".join(
            [
                row_sum("s", "x"),
                exp_of("e", "x", "4, 8"),
                exp_of("f", "y", "4, 8"),
                exp_of("g", "w", "8, 8"),
                f"  func.return %s, %e, %f, %g : {T('4')}, {T('4, 8')}, {T('4, 8')}, {T('8, 8')}",
            ]
        ),
        f"%x: {T('4, 8')}, %y: {T('4, 8')}, %w: {T('8, 8')}",
        f"{T('4')}, {T('4, 8')}, {T('4, 8')}, {T('8, 8')}",
    )
    ops = named_ops(module)
    assert joins([ops["s"]], ops["e"])
    assert not joins([ops["s"], ops["e"]], ops["f"]), "nothing in common"
    assert not joins([ops["e"]], ops["g"]), "other rows"


def test_zero_dimensional_ops_never_join():
    module = function_of(
        "\n".join(
            [
                f"  %s = loop.reduce sum ins(%0 = %x : {T('8')}) over [8] -> {T('')} {{",
                "    %1 = loop.load %0[r0] : f32",
                "    loop.yield %1 : f32",
                "  }",
                f"  %m = loop.reduce max ins(%0 = %x : {T('8')}) over [8] -> {T('')} {{",
                "    %1 = loop.load %0[r0] : f32",
                "    loop.yield %1 : f32",
                "  }",
                f"  func.return %s, %m : {T('')}, {T('')}",
            ]
        ),
        f"%x: {T('8')}",
        f"{T('')}, {T('')}",
    )
    ops = named_ops(module)
    assert not joins([ops["s"]], ops["m"])


def _chain_of_exps(count: int) -> ModuleOp:
    lines = [exp_of("e0", "x", "4, 8")]
    lines += [exp_of(f"e{i}", f"e{i - 1}", "4, 8") for i in range(1, count)]
    lines.append(f"  func.return %e{count - 1} : {T('4, 8')}")
    return function_of("\n".join(lines), f"%x: {T('4, 8')}", T("4, 8"))


def test_find_groups_cuts_runs_at_max_members():
    module = _chain_of_exps(5)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    groups = find_groups(function, max_members=2)
    assert [[m.result.name_hint for m in g] for g in groups] == [["e0", "e1"], ["e2", "e3"]]
    assert [len(g) for g in find_groups(function, max_members=8)] == [5]


@pytest.mark.parametrize("source", ["x", "e0"])
def test_sink_views_keeps_a_view_from_splitting_a_group(source):
    # a view of the input, or of the first member's result, between two loop
    # ops moves to just before its first user, the return
    module = parse(
        f"""
func.func @f(%x: {T('4, 8')}) -> ({T('4, 8')}, {T('8, 4')}) {{
{exp_of("e0", "x", "4, 8")}
  %v = ptensor.permute %{source} [1, 0] : {T('4, 8')} -> {T('8, 4')}
{exp_of("e1", "e0", "4, 8")}
  %w = ptensor.reshape %v : {T('8, 4')} -> {T('32')}
  func.return %e1, %w : {T('4, 8')}, {T('32')}
}}""".replace(f"-> ({T('4, 8')}, {T('8, 4')})", f"-> ({T('4, 8')}, {T('32')})")
    )
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert find_groups(function, 8) == []
    sink_views(function)
    module.verify()
    names = [op.name for op in function.body.block.ops]
    assert names == ["loop.pointwise", "loop.pointwise", "ptensor.permute", "ptensor.reshape", "func.return"]
    assert [len(g) for g in find_groups(function, 8)] == [2]


# --------------------------------------------------------------------------
# The pass preserves results
# --------------------------------------------------------------------------

OPTIONS = [
    "",
    "{max-recompute=1}",
    "{max-kernel-size=2}",
    "{inline=false}",
    "{group=false}",
    "{max-group-size=2}",
]
SIZES = {symbol("s0"): 3}


def _lit_functions() -> list[tuple[str, str]]:
    text = LIT_TEST.read_text()
    chunks = text.split("// -----")
    named = []
    for chunk in chunks:
        code = "\n".join(line for line in chunk.splitlines() if not line.startswith("//"))
        match = re.search(r"func\.func @(\w+)", code)
        assert match, chunk
        named.append((match.group(1), code))
    return named


LIT_FUNCTIONS = _lit_functions()


def _random_input(tensor_type: TensorType, generator: torch.Generator) -> torch.Tensor:
    shape = [int(sympy.sympify(s).xreplace(SIZES)) for s in tensor_type.sizes]
    dtype = torch_dtype(tensor_type.element_type)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator, dtype=dtype)
    # index tensors: small positions, valid for every gather in the file
    return torch.randint(0, 3, shape, generator=generator, dtype=dtype)


def test_the_lit_test_has_the_cases_it_documents():
    names = [name for name, _ in LIT_FUNCTIONS]
    assert len(names) == len(set(names)) >= 20
    assert {"softmax", "layer_norm", "cat", "horizontal", "gather"} <= set(names)


@pytest.mark.parametrize(("name", "code"), LIT_FUNCTIONS, ids=[n for n, _ in LIT_FUNCTIONS])
def test_fuse_loops_preserves_results(name, code):
    generator = torch.Generator().manual_seed(0)
    module = parse(code)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    inputs = [_random_input(t, generator) for t in function.function_type.inputs.data]
    expected = run_module_function(module, [x.clone() for x in inputs])
    for options in OPTIONS:
        fused = module.clone()
        build_pipeline(f"fuse-loops{options},cse,dce").apply(make_context(), fused)
        reparsed = parse(str(fused))
        fused_function = next(op for op in reparsed.walk() if isinstance(op, func.FuncOp))
        loop_ops = [op for op in fused_function.body.block.ops if isinstance(op, loop.LoopOp | loop.FusedOp)]
        assert loop_ops, f"{name}{options}: no loop op left"
        actual = run_module_function(reparsed, [x.clone() for x in inputs])
        for a, e in zip(actual, expected, strict=True):
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6, msg=lambda m: f"{name}{options}: {m}")
