"""
The worklist that drives vertical fusion (`InliningWorklist`): its work grows
linearly with the function, counted in reader visits and candidate checks
rather than timed, on a chain of layers and on a reader of every layer (which
inlines one producer per round, so a driver that rescanned the function each
round would visit every loop op as many times as there are layers); and it
inlines what the rounds it stands for inline.
"""

from __future__ import annotations

import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

from permalloy.dialects import loop, make_context
from permalloy.passes.fusion_inlining import InliningCost
from permalloy.passes.fusion_worklist import InliningWorklist

ROWS = "!ptensor.tensor<[4, 8], f32>"
ROW_SUMS = "!ptensor.tensor<[4], f32>"


def _layer(i: int, h: str) -> str:
    """A normalization-like layer: a row sum, the input minus it, a tanh of
    that, and the residual sum; its result is `%h{i + 1}`."""
    return f"""
  %m{i} = loop.reduce sum ins(%0 = %{h} : {ROWS}) over [8] -> {ROW_SUMS} {{
    %1 = loop.load %0[d0, r0] : f32
    loop.yield %1 : f32
  }}
  %c{i} = loop.pointwise ins(%0 = %{h} : {ROWS}, %1 = %m{i} : {ROW_SUMS}) -> {ROWS} {{
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0] : f32
    %4 = arith.subf %2, %3 : f32
    loop.yield %4 : f32
  }}
  %g{i} = loop.pointwise ins(%0 = %c{i} : {ROWS}) -> {ROWS} {{
    %1 = loop.load %0[d0, d1] : f32
    %2 = math.tanh %1 : f32
    loop.yield %2 : f32
  }}
  %h{i + 1} = loop.pointwise ins(%0 = %{h} : {ROWS}, %1 = %g{i} : {ROWS}) -> {ROWS} {{
    %2 = loop.load %0[d0, d1] : f32
    %3 = loop.load %1[d0, d1] : f32
    %4 = arith.addf %2, %3 : f32
    loop.yield %4 : f32
  }}"""


def chain(layers: int) -> str:
    """`layers` layers, each reading the one before."""
    body = "".join(_layer(i, "h0" if i == 0 else f"h{i}") for i in range(layers))
    return f"""func.func @f(%h0: {ROWS}) -> {ROWS} {{{body}
  func.return %h{layers} : {ROWS}
}}"""


def reader_of_every_layer(layers: int) -> str:
    """`layers` cheap layers `x * i`, all read by one sum."""
    body = "".join(
        f"""
  %p{i} = loop.pointwise ins(%0 = %x : {ROWS}) -> {ROWS} {{
    %1 = loop.load %0[d0, d1] : f32
    %2 = arith.constant {i}.0 : f32
    %3 = arith.mulf %1, %2 : f32
    loop.yield %3 : f32
  }}"""
        for i in range(layers)
    )
    ins = ", ".join(f"%a{i} = %p{i} : {ROWS}" for i in range(layers))
    loads = "\n".join(f"    %l{i} = loop.load %a{i}[d0, d1] : f32" for i in range(layers))
    sums = "\n".join(f"    %s{i} = arith.addf %{'l0' if i == 1 else f's{i - 1}'}, %l{i} : f32" for i in range(1, layers))
    return f"""func.func @f(%x: {ROWS}) -> {ROWS} {{{body}
  %sum = loop.pointwise ins({ins}) -> {ROWS} {{
{loads}
{sums}
    loop.yield %s{layers - 1} : f32
  }}
  func.return %sum : {ROWS}
}}"""


def run_worklist(text: str, cost: InliningCost) -> tuple[InliningWorklist, func.FuncOp]:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    worklist = InliningWorklist(function, cost)
    worklist.run()
    module.verify()
    return worklist, function


def loop_ops(function: func.FuncOp) -> list[loop.LoopOp]:
    return [op for op in function.body.block.ops if isinstance(op, loop.LoopOp)]


@pytest.mark.parametrize(
    ("graph", "cost"),
    [
        (chain, InliningCost(max_kernel_size=96, max_recompute=2)),
        (reader_of_every_layer, InliningCost(max_kernel_size=10**6, max_recompute=2)),
    ],
    ids=["chain", "reader_of_every_layer"],
)
def test_the_work_of_inlining_grows_linearly_with_the_layers(graph, cost):
    small, _ = run_worklist(graph(16), cost)
    large, _ = run_worklist(graph(32), cost)
    assert small.candidate_checks > 0 and small.reader_visits > 0
    assert large.candidate_checks <= 2.2 * small.candidate_checks
    assert large.reader_visits <= 2.2 * small.reader_visits


def test_a_reader_of_every_layer_takes_one_producer_per_visit():
    layers = 24
    worklist, function = run_worklist(
        reader_of_every_layer(layers), InliningCost(max_kernel_size=10**6, max_recompute=2)
    )
    (only,) = loop_ops(function)
    assert list(only.inputs) == list(function.body.block.args)
    assert worklist.reader_visits == layers
    assert worklist.candidate_checks == layers


def test_a_chain_of_layers_fuses_each_layer_into_its_reduction_and_residual():
    _, function = run_worklist(chain(3), InliningCost(max_kernel_size=96, max_recompute=2))
    kinds = [op.name for op in loop_ops(function)]
    # the tanh and the subtraction are inlined into the residual sum, which the
    # next layer's row sum and residual read
    assert kinds.count("loop.reduce") == 3
    assert "math.tanh" in {op.name for op in loop_ops(function)[-1].walk()}
