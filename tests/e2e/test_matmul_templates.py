"""
Half-precision matrix products on the Triton target: contractions with their
prologues and epilogues, run by the tiled template or by the library with
flat kernels around it, each path forced in turn, against eager. (Float32
products are library calls; the lit tests cover them as contractions.)

On the CPU the kernels run in Triton's interpreter (the template's first and
only candidate there); with `PERMALLOY_TEST_DEVICE=cuda` on a GPU, where
the template path takes the first template tile of `max-autotune`.
"""

from __future__ import annotations

import pytest
import torch

import permalloy
from permalloy.targets.triton import matmul

from conftest import assert_outputs_match, assert_stats, to_test_device

OPTIONS = {"target": "triton", "fallback": "raise", "matmul_templates": True}
"""Products as contractions (the Triton target's `matmul_templates` option)."""


def check(fn, make) -> dict:
    """Compile `fn` with products as contractions, compare with eager on the
    inputs `make` gives, and return the graph's stats record."""
    permalloy.reset_stats()
    expected = fn(*make())
    assert_outputs_match(torch.compile(fn, backend="permalloy", options=OPTIONS, fullgraph=True)(*make()), expected)
    assert_stats("triton", (), 1)
    (record,) = permalloy.stats()
    return record


@pytest.fixture(params=["template", "library"])
def product_path(request, monkeypatch) -> str:
    """Every matrix product of the test runs on one path: the template's
    first tile, or the library's product."""
    chosen = matmul.matmul_candidates

    def only(space, sizes, mode, interpret):
        if request.param == "library":
            return [matmul.LIBRARY_CONFIG]
        return [c for c in chosen(space, sizes, "max-autotune", interpret) if not c.LIBRARY][:1]

    monkeypatch.setattr(matmul, "matmul_candidates", only)
    return request.param


def _gelu_linear(x, w, b):
    return torch.nn.functional.gelu(x @ w.t() + b)


def _scaled_scores_softmax(q, k):
    return torch.softmax((q * 0.125) @ k.transpose(-1, -2), dim=-1)


def _residual_linear(x, w, r):
    return torch.relu(x @ w) + r


def _two_outputs(x, w):
    p = x @ w
    return p, torch.sigmoid(p) * 2


def _cast_prologue(x, w):
    return (x.float() * 2 + 1) @ w


def _silu_half(x, w):
    return torch.nn.functional.silu(x @ w)


def _bare(x, w):
    return x @ w


def _linear_over_tokens(x, w, b):
    """Tokens' rows multiplied as `[B * T, C]`, the bias added there and the
    rest over `[B, T, N]`: the product is rebuilt over `[B, T, N]`, its
    epilogue (bias inlined) in its kernel."""
    y = x.reshape(-1, x.shape[-1]) @ w.t() + b
    return torch.relu(y.reshape(*x.shape[:-1], -1)) + x[..., :20]


def _heads(q, k):
    batch, heads, length, width = q.shape
    s = torch.bmm(q.reshape(-1, length, width), k.reshape(-1, length, width).transpose(1, 2))
    return s.reshape(batch, heads, length, length) + 1.0


def _gated_mlp(x, gate, up, down):
    """A SiLU-gated MLP: the gate's product, read only rounded by the kernel
    that multiplies it in, is stored in the inputs' type."""
    return (torch.nn.functional.silu(x @ gate) * (x @ up)) @ down


def _half(*tensors):
    return [t.half() for t in tensors]


def _cast_prologue_half(x, w):
    return (x * 2 + 1).half() @ w


CASES = {
    "gelu_linear": (_gelu_linear, lambda: _half(torch.randn(37, 70), torch.randn(45, 70), torch.randn(45)), 1),
    "scaled_scores_softmax": (_scaled_scores_softmax, lambda: _half(torch.randn(2, 3, 17, 24), torch.randn(2, 3, 19, 24)), 2),
    "residual": (_residual_linear, lambda: _half(torch.randn(33, 20), torch.randn(20, 50), torch.randn(33, 50)), 1),
    "two_outputs": (_two_outputs, lambda: _half(torch.randn(16, 40), torch.randn(40, 24)), 1),
    "cast_prologue": (_cast_prologue_half, lambda: [torch.randn(30, 50), torch.randn(50, 20).half()], 1),
    "silu_bf16": (_silu_half, lambda: [torch.randn(40, 64).bfloat16(), torch.randn(64, 48).bfloat16()], 1),
    "bare": (_bare, lambda: _half(torch.randn(24, 40), torch.randn(40, 8)), 1),
    "bare_transposed": (_bare, lambda: [torch.randn(40, 24).half().t(), torch.randn(8, 40).half().t()], 1),
    "empty_inner": (_bare, lambda: _half(torch.randn(5, 0), torch.randn(0, 6)), None),
    "linear_over_tokens": (_linear_over_tokens, lambda: _half(torch.randn(4, 9, 33), torch.randn(20, 33), torch.randn(20)), 1),
    "gated_mlp_bf16": (
        _gated_mlp,
        lambda: [t.bfloat16() for t in (torch.randn(24, 32), torch.randn(32, 40), torch.randn(32, 40), torch.randn(40, 16))],
        3,
    ),
    "heads": (_heads, lambda: _half(torch.randn(2, 3, 9, 16), torch.randn(2, 3, 9, 16)), 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_products_match_eager(fresh_backend, triton_device, product_path, case):
    fn, make, kernels = CASES[case]
    torch.manual_seed(0)
    inputs = [to_test_device(t) for t in make()]
    record = check(fn, lambda: [t.clone() for t in inputs])
    assert record["extern_calls"] == 0, record
    if kernels is not None:
        assert record["kernels"] == kernels, record


def test_products_at_dynamic_sizes(backend_check, triton_device, product_path):
    """One compiled graph for every length: the tiles' bounds come from the size symbols."""
    compiled = torch.compile(_gelu_linear, backend="permalloy", options=OPTIONS, dynamic=True)
    torch.manual_seed(1)
    w, b = to_test_device(torch.randn(40, 24).half()), to_test_device(torch.randn(40).half())
    for length in (5, 9, 33):
        x = to_test_device(torch.randn(length, 24).half())
        backend_check.assert_tensor_matches(compiled(x, w, b), _gelu_linear(x, w, b), f"length {length}")
    assert all(r["kernels"] == 1 and r["extern_calls"] == 0 for r in permalloy.stats())


def test_training_step_gradients_match_eager(triton_device, product_path, fresh_backend):
    """The products of a backward pass (transposed operands, weight gradients) too."""
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(24, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).half()
    model = model.to(triton_device if triton_device == "cuda" else "cpu")
    x = to_test_device(torch.randn(6, 24).half())
    compiled = torch.compile(model, backend="permalloy", options=OPTIONS)
    compiled(x).square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).square().sum().backward()
    for got, want in zip(grads, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)


def test_matrix_vector_products_stay_library_calls(fresh_backend, triton_device):
    """A product with one row or one column is the library's (a
    matrix-vector product), with its epilogue in a kernel of its own."""
    torch.manual_seed(3)
    inputs = [to_test_device(torch.randn(*size).half()) for size in ((1, 70), (70, 3), (3,))]
    record = check(_gelu_linear_of_columns, lambda: [t.clone() for t in inputs])
    assert (record["kernels"], record["extern_calls"]) == (1, 1), record


def test_products_are_library_calls_by_default(backend_check, triton_device):
    """Without the option, a half-precision product stays a library call and
    its epilogue a kernel of its own."""
    torch.manual_seed(4)
    inputs = [to_test_device(t) for t in _half(torch.randn(37, 70), torch.randn(45, 70), torch.randn(45))]
    backend_check(_gelu_linear, lambda: [t.clone() for t in inputs], target="triton")
    (record,) = permalloy.stats()
    assert record["extern_calls"] >= 1, record


def _gelu_linear_of_columns(x, w, b):
    return torch.nn.functional.gelu(x @ w + b)
