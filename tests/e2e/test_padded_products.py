"""
Half-precision products of unaligned sizes on the Triton target: the
`pad-products` pass multiplies operands padded with zeros to multiples of 8
and views the result's leading columns. Each case compares with eager (values,
and strides: a returned product is dense, as eager's) and reads the dumped IR
to see that the padded product was made, or, for a product bound by memory,
that it was not. On the CPU the pads and their readers run in Triton's
interpreter; with `PERMALLOY_TEST_DEVICE=cuda`, on the GPU.
"""

from __future__ import annotations

import pathlib

import pytest
import torch
import torch.nn.functional as F

import permalloy

from conftest import TOLERANCES, assert_outputs_match, relative_error, to_test_device


def _randn(*shape: int, dtype: torch.dtype = torch.bfloat16, seed: int = 0, fan_in: int = 1) -> torch.Tensor:
    """Normal values scaled by `1 / sqrt(fan_in)`, as a layer's weights are
    initialized, so that products have magnitudes near 1."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=generator) / fan_in**0.5).to(dtype)


def _compiled_ir(fn, inputs, dump: pathlib.Path) -> str:
    """Compile `fn` for the Triton target, check its outputs against eager's,
    and against float32's no further than eager's own; return the IR after
    `pad-products` of every compiled graph."""
    permalloy.reset_stats()
    inputs = [to_test_device(x) for x in inputs]
    expected = fn(*inputs)
    options = {"target": "triton", "fallback": "raise", "dump_dir": str(dump)}
    actual = torch.compile(fn, backend="permalloy", options=options, fullgraph=True)(*inputs)
    assert_outputs_match(actual, expected)
    exact = fn(*(x.float() for x in inputs))
    assert relative_error(actual.float(), exact) <= 2 * relative_error(expected.float(), exact) + 1e-3
    return "\n".join(p.read_text() for p in sorted(dump.glob("graph_*/*_after_pad-products.mlir")))


def _head(x, w):
    return x @ w.t()


def _head_softmax(x, w):
    return torch.softmax(x @ w.t(), dim=-1)


def _linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


def _batched(a, b):
    return torch.bmm(a, b)


def test_vocabulary_head_pads_its_columns(triton_device, fresh_backend, tmp_path):
    """A linear layer onto 1,001 classes multiplies a weight of 1,008 rows;
    the returned result is eager's dense tensor."""
    ir = _compiled_ir(_head, [_randn(2, 256, 384), _randn(1001, 384, seed=1, fan_in=384)], tmp_path)
    assert "ptensor.pad" in ir and "[1008, 384]" in ir and "end 1001" in ir


def test_softmax_reads_the_padded_product(triton_device, fresh_backend, tmp_path):
    ir = _compiled_ir(_head_softmax, [_randn(512, 384), _randn(1001, 384, seed=1, fan_in=384)], tmp_path)
    assert "[512, 1008]" in ir


def test_unaligned_contraction_with_bias(triton_device, fresh_backend, tmp_path):
    """A contracted size of 1,001 pads both operands (and a bias is left as it
    is, the columns being aligned)."""
    inputs = [_randn(512, 1001), _randn(1024, 1001, seed=1, fan_in=1001), _randn(1024, seed=2)]
    ir = _compiled_ir(_linear_gelu, inputs, tmp_path)
    assert "[512, 1008]" in ir and "[1024, 1008]" in ir


def test_bias_of_padded_columns_is_padded(triton_device, fresh_backend, tmp_path):
    inputs = [_randn(512, 384), _randn(1001, 384, seed=1, fan_in=384), _randn(1001, seed=2)]
    ir = _compiled_ir(_linear_gelu, inputs, tmp_path)
    assert "[1008]" in ir


def test_batched_product_in_float16(triton_device, fresh_backend, tmp_path):
    inputs = [_randn(4, 512, 256, dtype=torch.float16), _randn(4, 256, 601, dtype=torch.float16, seed=1, fan_in=256)]
    ir = _compiled_ir(_batched, inputs, tmp_path)
    assert "[4, 512, 608]" in ir


@pytest.mark.parametrize(
    "inputs",
    [
        pytest.param([_randn(2, 197, 64), _randn(2, 64, 197, seed=1)], id="bound-by-memory"),
        pytest.param([_randn(512, 384, dtype=torch.float32), _randn(1001, 384, dtype=torch.float32)], id="float32"),
    ],
)
def test_products_left_alone(inputs, triton_device, fresh_backend, tmp_path):
    """Attention-sized products (few multiply-adds per element moved) and
    float32 ones keep their sizes."""
    fn = _batched if inputs[0].dim() == 3 else _head
    ir = _compiled_ir(fn, inputs, tmp_path)
    assert ir and "ptensor.pad" not in ir


def test_gradients_through_a_padded_head(triton_device, fresh_backend):
    """Training a head onto 1,001 classes: the backward products pad their
    contracted size of 1,001 too; gradients match eager's at bfloat16's
    tolerance."""

    def loss(x, w, target):
        return F.cross_entropy((x @ w.t()).float(), target)

    target = to_test_device(torch.randint(0, 1001, (512,), generator=torch.Generator().manual_seed(3)))
    compiled = torch.compile(loss, backend="permalloy", options={"target": "triton", "fallback": "raise"})
    gradients = []
    for run in (loss, compiled):
        leaves = [to_test_device(_randn(512, 384)).requires_grad_(), to_test_device(_randn(1001, 384, seed=1, fan_in=384)).requires_grad_()]
        value = run(*leaves, target)
        value.backward()
        gradients.append([value.detach(), *(leaf.grad for leaf in leaves)])
    rtol, _ = TOLERANCES[torch.bfloat16]
    for actual, expected in zip(gradients[1], gradients[0], strict=True):
        assert actual.stride() == expected.stride()
        assert relative_error(actual.float(), expected.float()) < rtol
