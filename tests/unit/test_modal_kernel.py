"""Hand-written Triton kernels follow the mode Triton is in when they launch,
not the one it was in when their module was imported: a module imported
before the interpreter was switched on still launches on CPU tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction
from triton.runtime.jit import JITFunction

from permalloy.targets.triton import depthwise_convolution, depthwise_weight_gradient, flash_attention
from permalloy.targets.triton.configs import pow2_ceil
from permalloy.targets.triton.modal_kernel import ModalKernel, _specialization, cdiv, modal_jit


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


def test_launch_runs_in_the_interpreter_and_keeps_no_launcher(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    kernel = ModalKernel(add_one.function)
    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty_like(x)
    kernel.launch((2,), x, out, 10, BLOCK=8, num_warps=4, num_stages=1)
    assert torch.equal(out, x + 1) and not kernel._direct


def test_a_specialization_tells_apart_what_triton_compiles_apart():
    x = torch.arange(10, dtype=torch.float32)
    assert _specialization(x) == _specialization(torch.zeros(3))
    assert _specialization(x[1:]) != _specialization(x)  # 16-byte alignment
    assert _specialization(x.double()) != _specialization(x)
    assert _specialization(16) != _specialization(17) and _specialization(0.5) == _specialization(2.0)
    assert _specialization(True) != _specialization(1)


def test_launch_arithmetic_is_tritons():
    for numerator in range(0, 70):
        for denominator in (1, 3, 16, 64):
            assert cdiv(numerator, denominator) == triton.cdiv(numerator, denominator)
    sizes = (1, 2, 3, 9, 16, 17)
    assert [pow2_ceil(n) for n in sizes] == [triton.next_power_of_2(n) for n in sizes]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="direct launches are for GPUs")
def test_a_later_launch_of_the_same_specialization_skips_the_jit(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    kernel = ModalKernel(add_one.function)
    x = torch.arange(100, dtype=torch.float32, device="cuda")
    first = torch.zeros_like(x)
    kernel.launch((4,), x, first, 100, BLOCK=32, num_warps=4, num_stages=1)
    assert len(kernel._direct) == 1
    made = kernel.current
    monkeypatch.setattr(kernel, "current", lambda: pytest.fail("the JIT ran again"))
    again = torch.zeros_like(x)
    kernel.launch((4,), x, again, 100, BLOCK=32, num_warps=4, num_stages=1)
    assert torch.equal(first, x + 1) and torch.equal(again, x + 1)
    monkeypatch.setattr(kernel, "current", made)
    shorter = torch.zeros_like(x)
    kernel.launch((2,), x, shorter, 37, BLOCK=32, num_warps=4, num_stages=1)  # a new specialization
    assert torch.equal(shorter[:37], x[:37] + 1) and not shorter[37:].any() and len(kernel._direct) == 2


def test_the_hand_written_kernels_are_modal():
    assert isinstance(depthwise_convolution.triton_depthwise_convolution_forward, ModalKernel)
    assert isinstance(depthwise_weight_gradient.triton_depthwise_convolution_weight_gradient, ModalKernel)
    assert isinstance(flash_attention.triton_flash_attention_forward, ModalKernel)
    assert isinstance(flash_attention.triton_attention_key_ranges, ModalKernel)


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
