"""
`permalloy.explain`: the report of a function with a graph break, a fallback
op and a reduction to one element read by a pointwise op of another shape.

- Dynamo's graphs and the graph break, with its reason and location;
- per graph: its ATen ops, the fallback with its reason, the kernels with the
  ATen ops each computes, the pair fusion kept apart with the rule named,
  the planned peak memory and the compile time by stage;
- the text and the JSON-able dict say the same;
- the fallback reasons of converters that decline (an integer matrix product).
"""

from __future__ import annotations

import json

import pytest
import torch

import permalloy

pytestmark = pytest.mark.usefixtures("fresh_backend")


def scaled_median(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    total = torch.relu(x).sum()  # a reduction to one element
    scaled = torch.sigmoid(y) * total  # read by a pointwise op of another shape
    if scaled.mean().item() > 0.5:  # a graph break
        scaled = scaled + 1
    return torch.median(scaled, dim=-1).values * 2  # median runs with torch


@pytest.fixture(scope="module")
def report():
    torch.manual_seed(0)
    return permalloy.explain(scaled_median, torch.randn(8, 8), torch.randn(4, 4))


def test_the_graph_break_is_reported_with_its_reason_and_place(report):
    assert report.graph_count == 2 and report.graph_break_count == 1
    (graph_break,) = report.graph_breaks
    assert "item()" in graph_break.reason
    assert graph_break.location.endswith("in scaled_median") and "test_explain.py" in graph_break.location
    assert [len(ops) > 0 for ops in report.dynamo_graphs] == [True, True]


def test_each_graph_lists_its_aten_ops_and_kernels(report):
    first, second = report.graphs
    assert (first.dynamo_graph, second.dynamo_graph) == (0, 1)
    assert any(op.startswith("aten.sum") for op in first.aten_ops)
    assert any(op.startswith("aten.sigmoid") for op in first.aten_ops)
    computed = [op for kernel in first.kernels for op in kernel["aten_ops"]]
    # every computing op of the first graph is in exactly one kernel
    for name in ("aten.relu", "aten.sigmoid", "aten.mul"):
        assert sum(op.startswith(name) for op in computed) == 1, (name, first.kernels)
    relu_kernel = next(k for k in first.kernels if any(op.startswith("aten.relu") for op in k["aten_ops"]))
    assert any(op.startswith("aten.sum") for op in relu_kernel["aten_ops"])  # relu inlined into the sum
    assert first.stats.kernels == len(first.kernels)


def test_the_fallback_op_is_reported_with_its_reason(report):
    second = report.graphs[1]
    assert second.fallbacks == [{"op": "aten.median.dim", "reason": "no converter for this op"}]
    assert report.graphs[0].fallbacks == []


def test_the_unfused_pair_names_the_fusion_rule(report):
    pairs = [
        p for p in report.graphs[0].unfused
        if p["producer"].startswith("aten.sum") and p["consumer"].startswith("aten.mul")
    ]
    (pair,) = pairs
    assert pair["rule"] == "reduction-to-one-element"
    assert "rows none and 4" in pair["detail"]


def test_peak_memory_and_compile_times(report):
    for graph in report.graphs:
        data = graph.to_dict()
        assert data["peak_memory_bytes"] is not None and data["peak_memory_bytes"] >= 0
        times = data["compile_times"]
        assert times["import_fx"] > 0 and "fuse-loops" in times["passes"]
        assert data["compile_seconds"] > 0


def test_text_and_dict_say_the_same(report):
    text = str(report)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["graph_count"] == 2 and data["graph_break_count"] == 1
    assert data["graphs"][1]["fallbacks"][0]["op"] == "aten.median.dim"
    assert "graph break 1 at" in text and "item()" in text
    assert "fallback: aten.median.dim: no converter for this op" in text
    assert "kept apart: aten.sum" in text and "reduction-to-one-element" in text
    for kernel in data["graphs"][0]["kernels"]:
        assert f"kernel {kernel['name']}: " in text
    assert "planned peak memory" in text and "compile time: graph compiled in" in text


def test_explain_runs_a_module():
    module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
    report = permalloy.explain(module, torch.randn(2, 4))
    assert report.graph_count == 1 and report.graph_break_count == 0
    (graph,) = report.graphs
    assert graph.stats.compiled and graph.kernels


def test_a_declining_converter_says_why():
    def integer_product(a, b):
        return a @ b

    ints = torch.arange(16).reshape(4, 4)
    report = permalloy.explain(integer_product, ints, ints)
    (graph,) = report.graphs
    (fallback,) = graph.fallbacks
    assert fallback["op"] == "aten.mm.default"
    assert fallback["reason"] == "unsupported dtype i64: library calls take floats"


@pytest.mark.parametrize("name", ["layer_norm_gelu_residual", "gpt2_block", "conv_bn_relu"])
def test_explaining_compiles_the_same_kernels(name, tmp_path):
    """Labelled values and the decisions record change no kernel: the same
    kernels, by name, as a plain compile's, and every ATen op a kernel lists
    is an op of its graph."""
    from permalloy.tools.zoo import make_case

    case = make_case(name)
    with torch.no_grad():
        report = permalloy.explain(case.model, *case.inputs)
        torch._dynamo.reset()  # noqa: SLF001
        torch.compile(case.model, backend="permalloy", options={"dump_dir": str(tmp_path)})(*case.inputs)
    dumped = sorted(
        sorted({p.name.split("_", 2)[2].rsplit(".", 1)[0] for p in folder.glob("*_kernel_*")})
        for folder in sorted(tmp_path.iterdir())
    )
    explained = sorted(sorted({k["name"] for k in graph.kernels}) for graph in report.graphs)
    assert explained == dumped
    for graph in report.graphs:
        for kernel in graph.kernels:
            assert kernel["aten_ops"], kernel
            assert set(kernel["aten_ops"]) <= set(graph.aten_ops)
