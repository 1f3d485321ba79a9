"""Hand-written Triton kernels follow the mode Triton is in when they launch,
not the one it was in when their module was imported: a module imported
before the interpreter was switched on still launches on CPU tensors."""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from permalloy.targets.triton import depthwise_convolution, depthwise_weight_gradient, flash_attention
from permalloy.targets.triton.modal_kernel import ModalKernel, modal_jit


@modal_jit(do_not_specialize=["count"])
def add_one(X, OUT, count, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(OUT + offsets, tl.load(X + offsets, mask=offsets < count) + 1.0, mask=offsets < count)


def test_the_kernel_is_made_for_each_mode_once(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    compiled = add_one.current()
    assert isinstance(compiled, JITFunction) and add_one.current() is compiled
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    interpreted = add_one.current()
    assert isinstance(interpreted, InterpretedFunction) and add_one.current() is interpreted
    monkeypatch.delenv("TRITON_INTERPRET")
    assert add_one.current() is compiled


def test_the_options_reach_triton(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert add_one.current().do_not_specialize == ["count"]


def test_a_kernel_first_made_for_the_gpu_launches_in_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    add_one.current()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty_like(x)
    add_one[(triton.cdiv(10, 8),)](x, out, 10, BLOCK=8)
    assert torch.equal(out, x + 1)


def test_the_hand_written_kernels_are_modal():
    assert isinstance(depthwise_convolution.triton_depthwise_convolution_forward, ModalKernel)
    assert isinstance(depthwise_weight_gradient.triton_depthwise_convolution_weight_gradient, ModalKernel)
    assert isinstance(flash_attention.triton_flash_attention_forward, ModalKernel)


def test_depthwise_kernels_imported_without_the_interpreter_run_in_it(monkeypatch):
    """These modules were imported above with the interpreter off (as a
    test collected before another switches it on imports them)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    depthwise_convolution.triton_depthwise_convolution_forward.current()
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    torch.manual_seed(0)
    x, weight = torch.randn(2, 8, 7, 7), torch.randn(8, 1, 3, 3)
    geometry = depthwise_convolution.Geometry([1, 1], [1, 1], [1, 1])
    out = depthwise_convolution.depthwise_convolution(x, weight, None, geometry)
    torch.testing.assert_close(out, F.conv2d(x, weight, None, 1, 1, 1, 8), rtol=1e-5, atol=1e-5)
    grad = torch.randn_like(out)
    gradient = depthwise_weight_gradient.depthwise_weight_gradient(grad, x, weight, geometry)
    expected = depthwise_weight_gradient.library_weight_gradient(grad, x, weight, geometry)
    torch.testing.assert_close(gradient, expected, rtol=1e-5, atol=1e-5)
