"""
Fusion and memory planning through `torch.compile(backend="permalloy")`: how
many kernels common blocks compile to (`permalloy.stats()`), how many buffers
an unfused chain allocates (the dumped final IR), and that results match eager
PyTorch with fusion on and off, for these blocks and for the model zoo.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import to_test_device
from torch import nn

import permalloy
from permalloy.tools.zoo import CASES, make_case

REL_TOL = 1e-4


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    yield
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    difference = (actual.double() - expected.double()).norm().item()
    return difference / max(expected.double().norm().item(), 1e-30)


def compile_and_compare(
    fn: Callable,
    inputs: Sequence[torch.Tensor],
    fusion: bool,
    dump_dir: Path | None = None,
    target: str | None = None,
    **compile_kwargs: Any,
) -> dict[str, Any]:
    """Compile `fn` (for `target`, else the default one), check its result
    against eager's, give the one graph's stats."""
    options: dict[str, Any] = {"fallback": "raise", "fusion": fusion}
    if target is not None:
        options["target"] = target
    if dump_dir is not None:
        options["dump_dir"] = str(dump_dir)
    compiled = torch.compile(fn, backend="permalloy", options=options, fullgraph=True, **compile_kwargs)
    with torch.no_grad():
        expected = fn(*[x.clone() for x in inputs])
        given = [x.clone() for x in inputs]
        actual = compiled(*given)
    pairs = zip(actual, expected, strict=True) if isinstance(expected, tuple) else [(actual, expected)]
    for a, e in pairs:
        assert a.shape == e.shape and a.dtype == e.dtype and a.stride() == e.stride()
        error = relative_error(a, e)
        assert error < REL_TOL, f"relative error {error:.3g} (fusion={fusion})"
    for after, before in zip(given, inputs, strict=True):
        assert torch.equal(after, before), "the compiled program changed an input"
    records = permalloy.stats()
    assert len(records) == 1, records
    (record,) = records
    assert record["compiled"], record["reason"]
    return record


def final_ir(dump_dir: Path) -> str:
    """The host program after plan-memory, as dumped for the one graph."""
    (path,) = sorted(dump_dir.glob("graph_000/*_after_plan-memory.mlir"))
    return path.read_text()


def forward_function(ir: str) -> str:
    return ir[ir.index("func.func @") :]


# --------------------------------------------------------------------------
# Kernel counts
# --------------------------------------------------------------------------


def softmax(x):
    return torch.softmax(x, dim=-1)


@pytest.mark.parametrize("fusion", [True, False])
def test_softmax_is_one_kernel(fusion):
    record = compile_and_compare(softmax, [torch.randn(8, 32)], fusion)
    # max, subtract, exp, sum, divide: five loop ops unfused
    assert record["kernels"] == (1 if fusion else 5)
    assert record["extern_calls"] == 0


def softmax_and_transposed_exp(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True), e.t()


def test_a_returned_view_of_an_intermediate_does_not_split_a_kernel():
    record = compile_and_compare(softmax_and_transposed_exp, [torch.randn(8, 16)], fusion=True)
    assert record["kernels"] == 1


def test_an_mlp_has_kernels_only_for_its_activation(tmp_path):
    # Linear, GELU, Linear: the linears are addmm library calls (with their
    # bias); GELU is five pointwise ops (x * 0.5, x * 0.7071..., erf, + 1,
    # the product), one kernel fused
    zoo = make_case("mlp")
    fused = compile_and_compare(zoo.model, zoo.inputs, fusion=True, dump_dir=tmp_path / "fused")
    assert (fused["kernels"], fused["extern_calls"]) == (1, 2)
    ir = forward_function(final_ir(tmp_path / "fused"))
    assert len(re.findall(r"buffer\.launch @pointwise_erf_\d+ ", ir)) == 1
    assert ir.count("ptensor.addmm") == 2
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    unfused = compile_and_compare(zoo.model, zoo.inputs, fusion=False)
    assert (unfused["kernels"], unfused["extern_calls"]) == (5, 2)
    # fused: the first linear's result and the activation's; unfused, one more
    hidden_bytes = 2 * 8 * 128 * 4
    assert fused["peak_intermediate_bytes"] == 2 * hidden_bytes
    assert unfused["peak_intermediate_bytes"] == 3 * hidden_bytes


def stride_one_max_pool(x):
    return torch.nn.functional.max_pool2d(x, 3, stride=1, padding=1)


def padded_stencil(x):
    p = torch.nn.functional.pad(x, (1, 1, 1, 1))
    return p[:, :, :-2, 1:-1] + p[:, :, 2:, 1:-1] + p[:, :, 1:-1, :-2] + p[:, :, 1:-1, 2:] - 4 * x


@pytest.mark.parametrize("fn", [stride_one_max_pool, padded_stencil], ids=lambda f: f.__name__)
def test_a_padding_read_many_times_is_recomputed_not_stored(fn):
    # The padding is a masked load: each reader reads through it, however
    # many times it reads each element (9 for the pool, 5 for the stencil),
    # rather than the padded tensor being written and read back.
    record = compile_and_compare(fn, [torch.randn(2, 4, 10, 10)], fusion=True)
    assert record["kernels"] == 1


# --------------------------------------------------------------------------
# Memory of unfused chains
# --------------------------------------------------------------------------


def ten_pointwise_ops(x):
    y = torch.exp(x)
    y = y * 2.0
    y = torch.tanh(y)
    y = y + 1.0
    y = torch.sigmoid(y)
    y = y - 0.5
    y = torch.sin(y)
    y = y.abs()
    y = torch.sqrt(y)
    return -y


def ten_transposing_ops(x):
    y = x
    for i in range(10):
        y = torch.exp(y.t()) if i % 2 else torch.sin(y.t())
    return y


def test_an_unfused_chain_of_ten_pointwise_ops_runs_in_one_buffer(tmp_path):
    x = torch.randn(64, 32)
    record = compile_and_compare(ten_pointwise_ops, [x], fusion=False, dump_dir=tmp_path)
    assert record["kernels"] == 10
    ir = forward_function(final_ir(tmp_path))
    # every kernel writes over its dying input: one allocation, the result
    assert ir.count("buffer.alloc") == 1
    assert ir.count("buffer.view") == 0
    assert len(re.findall(r"buffer\.launch @\w+ ins\(%(\d+) .*outs\(%\1 ", ir)) == 9
    assert record["peak_intermediate_bytes"] == x.numel() * 4


def test_an_unfused_chain_reading_transposed_uses_two_buffers(tmp_path):
    # a transposing kernel cannot write over its input: the chain alternates
    # between two allocations, later launches writing into views of them
    x = torch.randn(32, 32)
    record = compile_and_compare(ten_transposing_ops, [x], fusion=False, dump_dir=tmp_path)
    assert record["kernels"] == 10
    ir = forward_function(final_ir(tmp_path))
    assert ir.count("buffer.alloc") == 2
    assert ir.count("buffer.view") == 8
    assert record["peak_intermediate_bytes"] == 2 * x.numel() * 4


@pytest.mark.parametrize("fn", [ten_pointwise_ops, ten_transposing_ops])
def test_fused_chains_are_one_kernel_and_one_buffer(fn):
    x = torch.randn(32, 32)
    record = compile_and_compare(fn, [x], fusion=True)
    assert record["kernels"] == 1
    assert record["peak_intermediate_bytes"] == x.numel() * 4


# --------------------------------------------------------------------------
# Cases where planning or fusion must hold back
# --------------------------------------------------------------------------


def neg_of_bitcast(x):
    # aten.view.dtype runs as a fallback, whose result is a view of x
    return torch.neg(x.view(torch.int32))


@pytest.mark.filterwarnings("ignore:permalloy runs these ATen ops with torch")
@pytest.mark.parametrize("fusion", [True, False])
def test_a_fallback_view_of_an_input_is_never_written_over(fusion):
    record = compile_and_compare(neg_of_bitcast, [torch.randn(16)], fusion)
    assert record["fallback_ops"] == ["aten.view.dtype"]


def bias_exp(x, b):
    return x * torch.exp(b)


@pytest.mark.parametrize("fusion", [True, False])
def test_a_broadcast_transcendental_over_dynamic_rows(fusion):
    # the exp of b is read s0 times per element: with s0 unknown it is not
    # recomputed in the kernel over x's rows
    compiled = torch.compile(
        bias_exp, backend="permalloy", options={"fallback": "raise", "fusion": fusion}, dynamic=True
    )
    b = torch.randn(8)
    for rows in (3, 5):
        x = torch.randn(rows, 8)
        error = relative_error(compiled(x, b), bias_exp(x, b))
        assert error < REL_TOL
    records = permalloy.stats()
    assert len(records) == 1 and records[0]["compiled"], records
    assert records[0]["kernels"] == 2
    assert records[0]["peak_intermediate_bytes"] is None


class TwoSoftmaxes(nn.Module):
    """A softmax along rows, then one along columns."""

    def forward(self, x):
        return torch.softmax(torch.softmax(x, dim=-1), dim=0)


@pytest.mark.parametrize("fusion", [True, False])
def test_softmaxes_over_rows_and_columns(fusion):
    # fused: the row max and sum; the column max and sum (one row of 16:
    # keepdim reductions of the leading dimension); the final division, which
    # needs whole columns first. Unfused: five loop ops per softmax.
    record = compile_and_compare(TwoSoftmaxes(), [torch.randn(8, 16)], fusion)
    assert record["kernels"] == (3 if fusion else 10)


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def layer_norm(x, w):
    return nn.functional.layer_norm(x, x.shape[-1:], w)


def weighted_softmax(x, w):
    return torch.softmax(x, -1) * w


SINGLE_ROW_KERNELS = {
    # (llvm, triton) at (1, 4096), then at (1, 1048576): one kernel over a
    # short row; over a long one, each reduction to one element in a kernel of
    # its own (on the LLVM target split across threads, on the Triton target
    # split by split-reductions into partial sums and their sum), then the
    # scaling, which recomputes the statistic's one-instruction rsqrt (on the
    # LLVM target a [1, 1] reduction is not fused with the [1, 1048576]
    # scaling: in one kernel the scaling would run as one row on one thread)
    rms_norm: ((1, 1), (2, 3)),
    weighted_softmax: ((1, 1), (3, 5)),
    layer_norm: ((1, 1), (3, 5)),
}


@pytest.mark.parametrize("target", ["llvm", "triton"])
@pytest.mark.parametrize("length", [4096, 1 << 20])
@pytest.mark.parametrize("fn", list(SINGLE_ROW_KERNELS), ids=lambda f: f.__name__)
def test_normalizations_over_one_row(fn, length, target, request):
    """A batch of one (a decoding step): a norm or a softmax over a row of a
    few thousand is one kernel on both targets; over a million elements its
    reductions are split."""
    torch.manual_seed(0)
    inputs = [torch.randn(1, length), torch.randn(length)]
    if target == "triton":
        request.getfixturevalue("triton_device")
        inputs = [to_test_device(x) for x in inputs]
    record = compile_and_compare(fn, inputs, fusion=True, target=target)
    short, long = SINGLE_ROW_KERNELS[fn]
    expected = (short if length == 4096 else long)[["llvm", "triton"].index(target)]
    assert record["kernels"] == expected


def linear_gelu_residual(x, w1, b1, w2, b2):
    """Two linear layers: the first read by GELU, the second returned."""
    h = torch.nn.functional.gelu(torch.nn.functional.linear(x, w1, b1)) + x
    return torch.nn.functional.linear(h, w2, b2)


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_bias_of_a_product_read_by_elementwise_ops_moves_into_their_kernel(target, request, tmp_path):
    """On the GPU target the first layer's product loses its bias to the GELU
    kernel (`mm`); the second is returned, and keeps its bias (`addmm`). The
    CPU target keeps both."""
    torch.manual_seed(0)
    inputs = [torch.randn(16, 32), torch.randn(32, 32), torch.randn(32), torch.randn(8, 32), torch.randn(8)]
    if target == "triton":
        request.getfixturevalue("triton_device")
        inputs = [to_test_device(x) for x in inputs]
    record = compile_and_compare(linear_gelu_residual, inputs, fusion=True, target=target, dump_dir=tmp_path)
    assert (record["kernels"], record["extern_calls"]) == (1, 2)
    ir = forward_function(final_ir(tmp_path))
    products = re.findall(r"ptensor\.(mm|addmm) ", ir)
    assert products == (["mm", "addmm"] if target == "triton" else ["addmm", "addmm"]), ir


# --------------------------------------------------------------------------
# The zoo, fused and not
# --------------------------------------------------------------------------


KERNELS = {
    # the differences from the first element, their mean, the mean, centre,
    # square, mean, add eps, rsqrt, scale, weight, bias, then GELU's
    # 0.5 * x * (1 + erf(x / sqrt 2)) and the residual add
    "layer_norm_gelu_residual": (1, 19),
    # square, mean, add eps, rsqrt, two multiplies, weight, SiLU's sigmoid
    # and multiply, the product
    "rms_norm_silu": (1, 10),
    "layer_norm": (1, 13),
    "masked_softmax": (1, 7),
    "pointwise_chain": (1, 9),
    # the mlp's activation (see above)
    "mlp": (1, 5),
}
"""(fused, unfused) kernel counts of the zoo's normalizations and activations."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo_matches_eager_fused_and_unfused(name):
    zoo = make_case(name)
    fused = compile_and_compare(zoo.model, zoo.inputs, fusion=True)
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    unfused = compile_and_compare(zoo.model, zoo.inputs, fusion=False)
    if name in KERNELS:
        assert (fused["kernels"], unfused["kernels"]) == KERNELS[name]
    assert fused["extern_calls"] == unfused["extern_calls"]
    assert fused["kernels"] <= unfused["kernels"]
    assert fused["peak_intermediate_bytes"] <= unfused["peak_intermediate_bytes"]
