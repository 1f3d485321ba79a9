"""Tests of the decomposition table and of graph capture."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from permalloy.lowering.capture import capture_aten_graphs, capture_with_inputs
from permalloy.lowering.decompositions import decomposition_table

aten = torch.ops.aten


def targets(gm: torch.fx.GraphModule) -> set[str]:
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


@pytest.mark.parametrize(
    "op",
    [
        aten.scaled_dot_product_attention.default,
        aten._scaled_dot_product_flash_attention_for_cpu.default,
        aten.mm.default,
        aten.addmm.default,
        aten.index.Tensor,
        aten.gather.default,
        aten.cat.default,
        aten.constant_pad_nd.default,
        aten.reflection_pad2d.default,
    ],
)
def test_library_and_native_ops_are_kept_whole(op) -> None:
    assert op not in decomposition_table()


@pytest.mark.parametrize(
    "op",
    [
        aten.native_layer_norm.default,
        aten._softmax.default,
        aten._log_softmax.default,
        aten.gelu.default,
        aten.silu.default,
        aten.var_mean.correction,
        aten.mean.dim,
        aten.addcmul.default,
        aten._native_batch_norm_legit_no_training.default,
        aten.native_group_norm.default,
        aten.linalg_vector_norm.default,
    ],
)
def test_composites_are_decomposed(op) -> None:
    assert op in decomposition_table()


def test_each_call_gives_a_fresh_table() -> None:
    first = decomposition_table()
    first.clear()
    assert len(decomposition_table()) > 100


COMPOSITES = [
    ("layer_norm", lambda x: F.layer_norm(x, (8,))),
    ("group_norm", lambda x: F.group_norm(x.view(2, 4, 4, 2), 2)),
    ("softmax", lambda x: torch.softmax(x, -1)),
    ("log_softmax", lambda x: torch.log_softmax(x, -1)),
    ("gelu", F.gelu),
    ("var_mean", lambda x: torch.var_mean(x, -1)),
    ("std", lambda x: x.std(0)),
    ("mean", lambda x: x.mean()),
    ("linear", lambda x: F.linear(x, x)),
    ("elu", F.elu),
    ("norm", lambda x: torch.linalg.vector_norm(x, 3.0)),
]


@pytest.mark.parametrize("name, fn", COMPOSITES, ids=[c[0] for c in COMPOSITES])
def test_composites_decompose_into_aten_only(name, fn) -> None:
    (gm,) = capture_aten_graphs(fn, torch.randn(8, 8))
    found = targets(gm)
    assert not any(t.startswith("prims.") for t in found), found
    assert not {f"aten.{name}.default", f"aten.native_{name}.default"} & found


def test_attention_stays_one_op() -> None:
    q = torch.randn(1, 2, 4, 8)
    (gm,) = capture_aten_graphs(lambda q: F.scaled_dot_product_attention(q, q, q), q)
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in targets(gm)
    assert "aten.bmm.default" not in targets(gm)


def test_repeated_captures_each_trace() -> None:
    def fn(x):
        return x * 2

    first = capture_aten_graphs(fn, torch.randn(3))
    second = capture_aten_graphs(fn, torch.randn(3))
    assert len(first) == len(second) == 1
    assert first[0] is not second[0]


def test_graph_breaks_give_several_graphs() -> None:
    def fn(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    graphs = capture_aten_graphs(fn, torch.randn(3))
    assert len(graphs) == 2
    assert "aten.sin.default" in targets(graphs[0])
    assert "aten.cos.default" in targets(graphs[1])


def test_capture_records_the_graph_inputs() -> None:
    model = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    (captured,) = capture_with_inputs(model, x, dynamic=True)
    tensors = [t for t in captured.inputs if isinstance(t, torch.Tensor)]
    assert any(t is x for t in tensors)
    assert any(isinstance(t, int) for t in captured.inputs)
    placeholders = [n for n in captured.graph_module.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == len(captured.inputs)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 5), (2, 4, 3, 3), (2, 4, 2, 3, 3)])
def test_batch_norm_outside_training_gives_torch_s_values_exactly(shape, affine) -> None:
    """permalloy's decomposition of batch norm outside training computes what
    torch's does, operation for operation (less a multiplication by one), so
    the values are the same bits; on the CPU its saved statistics are empty,
    as torch's are."""
    from torch._decomp.decompositions import native_batch_norm_helper

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=generator) * 3 + 5
    mean, weight, bias = (torch.randn(4, generator=generator) for _ in range(3))
    var = torch.rand(4, generator=generator) + 0.1
    weight, bias = (weight, bias) if affine else (None, None)
    op = aten._native_batch_norm_legit_no_training.default
    ours = decomposition_table()[op](x, weight, bias, mean, var, 0.1, 1e-5)
    theirs = native_batch_norm_helper(x, weight, bias, mean, var, False, 0.1, 1e-5, False)[:3]
    assert torch.equal(ours[0], theirs[0])
    assert torch.allclose(ours[0], op(x, weight, bias, mean, var, 0.1, 1e-5)[0], rtol=1e-5, atol=1e-5)
    assert [tuple(t.shape) for t in ours[1:]] == [tuple(t.shape) for t in theirs[1:]] == [(0,), (0,)]


def test_batch_norm_outside_training_normalizes_half_precision_in_float32() -> None:
    x = torch.randn(2, 4, 3, 3).to(torch.bfloat16)
    stats = [torch.randn(4).to(torch.bfloat16), (torch.rand(4) + 0.5).to(torch.bfloat16)]
    op = aten._native_batch_norm_legit_no_training.default
    out = decomposition_table()[op](x, None, None, *stats, 0.1, 1e-5)[0]
    exact = (x.float() - stats[0].float().view(1, 4, 1, 1)) / torch.sqrt(stats[1].float().view(1, 4, 1, 1) + 1e-5)
    assert out.dtype == torch.bfloat16 and torch.equal(out, exact.to(torch.bfloat16))
