"""A graph as a self-contained pytest test that reproduces its failure."""

from __future__ import annotations

import re

from .graphs import Graph
from .inputs import input_seed


def test_name(graph: Graph, failure: str) -> str:
    return f"test_fuzz_seed_{graph.seed}_" + re.sub(r"[^0-9a-zA-Z]+", "_", failure).strip("_").lower()


def input_call(graph: Graph, index: int, sizes: dict[str, int]) -> str:
    """`make_input(...)` for one input at `sizes`, with its strides as a comment."""
    spec = graph.inputs[index]
    shape = spec.shape(sizes)
    value = graph.make_inputs(sizes)[index]
    shape_text = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    return (
        f"make_input({shape_text}, {spec.dtype}, {spec.layout!r}, seed={input_seed(graph.seed, spec)})"
        f",  # strides {tuple(value.stride())}"
    )


def render_test(graph: Graph, failure: str, backend: str = "permalloy", target: str = "llvm") -> str:
    """A pytest test module (for tests/fuzz/) that fails with `failure` while the bug is there."""
    where = "Inductor" if backend == "inductor" else f"permalloy on {target}"
    lines = [
        "import torch",
        "",
        "from .compare import assert_matches_eager",
        "from .inputs import make_input",
        "",
        "",
        f"def {test_name(graph, failure)}():",
        f'    """Fuzzed graph of seed {graph.seed}, {where}: {failure}."""',
        "",
        graph.source(indent="    ").rstrip("\n"),
        "",
        "    calls = [",
    ]
    for sizes in graph.size_sets():
        lines.append("        [")
        lines += [f"            {input_call(graph, index, sizes)}" for index in range(len(graph.inputs))]
        lines.append("        ],")
    lines.append("    ]")
    arguments = f"backend={backend!r}, target={target!r}" + (", dynamic=True" if graph.dynamic else "")
    lines.append(f"    assert_matches_eager(fn, calls, {arguments})")
    return "\n".join(lines) + "\n"


def one_line(graph: Graph) -> str:
    """The graph on one line: its inputs (shape, dtype, layout) and its statements,
    for the table of known failures."""
    sizes = graph.size_sets()[0]
    inputs = ", ".join(
        f"{spec.name}: {str(spec.dtype).removeprefix('torch.')}{list(spec.shape(sizes))}"
        + ("" if spec.layout == "contiguous" else f" {spec.layout}")
        for spec in graph.inputs
    )
    statements = "; ".join(op.statement() for op in graph.ops)
    dynamic = " (dynamic)" if graph.dynamic else ""
    return f"{inputs}{dynamic}; {statements}; return {', '.join(graph.outputs)}"
