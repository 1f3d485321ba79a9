"""
The worklist that drives vertical fusion (`InliningWorklist`): its work grows
linearly with the function, counted in reader visits and candidate checks
rather than timed, on a chain of layers and on a reader of every layer (which
inlines one producer per round, so a driver that rescanned the function each
round would visit every loop op as many times as there are layers); and it
inlines what the rounds it stands for inline.
"""

from __future__ import annotations

import random

import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

from permalloy.dialects import loop, make_context
from permalloy.passes.fusion_inlining import InliningCost, can_inline, inline_producer
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


# -- the same decisions as the rounds -----------------------------------------


def inline_in_rounds(function: func.FuncOp, cost: InliningCost) -> None:
    """The rounds the worklist stands for, written out: each reader in order
    inlines the first input the rules allow; unread producers are erased after
    each round; until a round inlines nothing."""
    changed = True
    while changed:
        changed = False
        for reader in loop_ops(function):
            for position, value in enumerate(reader.inputs):
                producer = value.owner
                if (
                    isinstance(producer, loop.PointwiseOp)
                    and can_inline(reader, producer)
                    and cost.allows(producer, reader)
                ):
                    inline_producer(reader, position)
                    changed = True
                    break
        for producer in [o for o in function.body.block.ops if isinstance(o, loop.PointwiseOp)]:
            if not producer.result.uses:
                producer.detach()
                producer.erase()


def random_graph(seed: int) -> str:
    """Loop ops over `[4, 8]` rows and `[4]` row sums reading earlier ones at
    their own element, at a reversed index, broadcast along rows or gathered
    at a computed column, some through two arguments; bodies cheap, with
    `math` or with `loop.index`; some results returned, some never read."""
    rng = random.Random(seed)
    types = {"x": ROWS}
    body = []
    for k in range(rng.randint(4, 24)):
        rows = [name for name, t in types.items() if t == ROWS]
        sums = [name for name, t in types.items() if t == ROW_SUMS]
        if sums and rng.random() < 0.1:
            # a reduction over the row sums, broadcast along the rows
            reads, result, over = [(rng.choice(sums), "[r0]")], ROWS, 4
        elif rng.random() < 0.2:
            reads, result, over = [(rng.choice(rows), "[d0, r0]")], ROW_SUMS, 8
        else:
            reads, result, over = [], ROWS, 0
            for _ in range(rng.randint(1, 3)):
                if sums and rng.random() < 0.25:
                    reads.append((rng.choice(sums), "[d0]"))
                else:
                    index = rng.choice(["[d0, d1]", "[d0, d1]", "[d0, 7 - d1]", "[3 - d0, d1]", "[d0, v0]"])
                    reads.append((rng.choice(rows[-4:]), index))
        body.append(_loop_op(f"p{k}", reads, types, result, over, rng))
        types[f"p{k}"] = result
    returned = [name for name in list(types)[1:] if rng.random() < 0.25] or [list(types)[-1]]
    names = ", ".join(f"%{name}" for name in returned)
    result_types = ", ".join(types[name] for name in returned)
    return f"""func.func @f(%x: {ROWS}) -> ({result_types}) {{{"".join(body)}
  func.return {names} : {result_types}
}}"""


def _loop_op(
    name: str,
    reads: list[tuple[str, str]],
    types: dict[str, str],
    result: str,
    over: int,
    rng: random.Random,
) -> str:
    """A loop op summing its loads (a value and the index it is read at; `v0`
    a column computed in the body), then a few more scalar ops; a reduction
    `over` that many elements, or pointwise. A value read twice may be read
    through two arguments."""
    arguments: list[str] = []
    lines, last = [], ""
    for j, (value, index) in enumerate(reads):
        if value not in arguments or rng.random() < 0.3:
            arguments.append(value)
        argument = len(arguments) - 1 - arguments[::-1].index(value)
        gather = ""
        if "v0" in index:
            lines.append(f"    %g{j} = loop.index 7 - d1")
            gather = f" (%g{j})"
        lines.append(f"    %l{j} = loop.load %a{argument}{index}{gather} : f32")
        if j:
            lines.append(f"    %s{j} = arith.addf {last}, %l{j} : f32")
        last = f"%s{j}" if j else f"%l{j}"
    for j in range(rng.randint(0, 5)):
        scalar_op = rng.choice(["arith.mulf", "arith.addf", "math.exp", "math.tanh", "loop.index"])
        if scalar_op == "loop.index" and not over:
            lines.append(f"    %k{j} = loop.index d1")
            lines.append(f"    %i{j} = arith.index_cast %k{j} : index to i64")
            lines.append(f"    %f{j} = arith.sitofp %i{j} : i64 to f32")
            lines.append(f"    %e{j} = arith.addf {last}, %f{j} : f32")
        elif scalar_op.startswith("math"):
            lines.append(f"    %e{j} = {scalar_op} {last} : f32")
        else:
            lines.append(f"    %e{j} = {scalar_op.replace('loop.index', 'arith.addf')} {last}, {last} : f32")
        last = f"%e{j}"
    ins = ", ".join(f"%a{i} = %{v} : {types[v]}" for i, v in enumerate(arguments))
    head = (
        f"loop.reduce sum ins({ins}) over [{over}] -> {result}"
        if over
        else f"loop.pointwise ins({ins}) -> {result}"
    )
    text = "\n".join(lines)
    return f"""
  %{name} = {head} {{
{text}
    loop.yield {last} : f32
  }}"""


@pytest.mark.parametrize("seed", range(100))
@pytest.mark.parametrize(
    "cost",
    [
        InliningCost(max_kernel_size=8, max_recompute=1),
        InliningCost(max_kernel_size=16, max_recompute=2),
        InliningCost(max_kernel_size=64, max_recompute=2),
    ],
    ids=["small-kernels", "medium-kernels", "default"],
)
def test_the_worklist_inlines_what_the_rounds_inline(seed, cost):
    text = random_graph(seed)
    expected = Parser(make_context(), text).parse_module()
    inline_in_rounds(next(op for op in expected.walk() if isinstance(op, func.FuncOp)), cost)
    _, function = run_worklist(text, cost)
    assert str(function) == str(next(op for op in expected.walk() if isinstance(op, func.FuncOp)))
