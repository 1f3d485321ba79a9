"""
Attention written as its math (two products around a softmax) becomes one
fused attention call (`fuse-attention`), with its scale, biases and -inf
masking as the call's mask, where the Triton target's `fused_attention`
option asks for it; by default both targets keep the math. Results match
eager's either way, and where something else reads the probabilities the
math stays.
"""

from __future__ import annotations

import math

import pytest
import torch

import permalloy
from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import import_graph
from permalloy.passes import build_pipeline
from xdsl.context import Context

BATCH, HEADS, QUERIES, KEYS, DEPTH = 2, 3, 10, 12, 8


def _qkv(queries: int = QUERIES, keys: int = KEYS, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    torch.manual_seed(0)
    return [
        torch.randn(BATCH, HEADS, queries, DEPTH, dtype=dtype),
        torch.randn(BATCH, HEADS, keys, DEPTH, dtype=dtype),
        torch.randn(BATCH, HEADS, keys, DEPTH, dtype=dtype),
    ]


def causal_masked_fill(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def relative_position_bias(q, k, v, bias):
    scores = (q @ k.transpose(-2, -1)) * 0.25 + bias
    return scores.softmax(-1) @ v


def padding_mask_as_bias(q, k, v, keep):
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    extended = (1.0 - keep[:, None, None, :].to(q.dtype)) * torch.finfo(q.dtype).min
    return torch.matmul(torch.softmax(scores + extended, dim=-1), v)


def scaled_query(q, k, v):
    return torch.softmax((q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1), dim=-1) @ v


def bias_and_boolean_mask(q, k, v, bias, keep):
    scores = q @ k.transpose(-2, -1) + bias
    scores = scores.masked_fill(~keep, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def batch_products(q, k, v):
    q, k, v = (t.flatten(0, 1) for t in (q, k, v))
    weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.3, dim=-1)
    return torch.bmm(weights, v)


def probabilities_returned(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    return weights @ v, weights


def _inputs(name: str, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    q, k, v = _qkv(dtype=dtype)
    if name == "relative_position_bias":
        return [q, k, v, torch.randn(HEADS, QUERIES, KEYS, dtype=dtype)]
    if name == "padding_mask_as_bias":
        keep = torch.ones(BATCH, KEYS, dtype=torch.bool)
        keep[0, -3:] = False
        return [q, k, v, keep]
    if name == "bias_and_boolean_mask":
        keep = torch.rand(QUERIES, KEYS) > 0.3
        keep[:, 0] = True
        return [q, k, v, torch.randn(BATCH, 1, QUERIES, KEYS, dtype=dtype), keep]
    return [q, k, v]


FUSED = [causal_masked_fill, relative_position_bias, padding_mask_as_bias, scaled_query, bias_and_boolean_mask, batch_products]


def _fused_calls(fn, inputs) -> int:
    """How many `ptensor.attention` ops `fuse-attention` leaves in `fn`'s graph."""
    (graph,) = capture_aten_graphs(fn, *inputs)
    module = import_graph(graph).module
    build_pipeline("canonicalize,cse,fuse-attention,dce").apply(Context(allow_unregistered=True), module)
    return str(module).count("ptensor.attention") - str(module).count("ptensor.attention_")


@pytest.mark.parametrize("fn", FUSED, ids=lambda f: f.__name__)
def test_attention_math_becomes_one_call(fn):
    assert _fused_calls(fn, _inputs(fn.__name__)) == 1


def test_probabilities_read_elsewhere_keep_the_math():
    assert _fused_calls(probabilities_returned, _inputs("")) == 0


def _extern_calls() -> int:
    return sum(record["extern_calls"] for record in permalloy.stats())


@pytest.mark.parametrize("fn", [*FUSED, probabilities_returned], ids=lambda f: f.__name__)
def test_llvm_keeps_the_math_and_matches_eager(backend_check, fn):
    backend_check(fn, _inputs(fn.__name__), target="llvm")
    assert _extern_calls() == 2  # the two products


def _check_triton(backend_check, device: str, fn, inputs: list[torch.Tensor], **options) -> None:
    permalloy.reset_stats()
    compiled = backend_check.compile(fn, "triton", **options)
    inputs = [x.to(device) for x in inputs]
    backend_check.assert_outputs_match(compiled(*inputs), fn(*inputs))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("fn", FUSED, ids=lambda f: f.__name__)
def test_triton_option_fuses_attention(backend_check, triton_device, fn, dtype):
    _check_triton(backend_check, triton_device, fn, _inputs(fn.__name__, dtype), fused_attention=True)
    assert _extern_calls() == 1  # the attention


def test_triton_keeps_the_math_by_default(backend_check, triton_device):
    fn = relative_position_bias
    _check_triton(backend_check, triton_device, fn, _inputs(fn.__name__, torch.float16))
    assert _extern_calls() == 2


def test_cross_attention_lengths(backend_check, triton_device):
    q, _, _ = _qkv(queries=5, dtype=torch.float16)
    _, k, v = _qkv(keys=17, dtype=torch.float16)
    assert _fused_calls(scaled_query, [q, k, v]) == 1
    _check_triton(backend_check, triton_device, scaled_query, [q, k, v], fused_attention=True)
    assert _extern_calls() == 1
