"""
Pooling compiled natively on both targets: max and average pooling in 1 to 3
dimensions, with indices, padding, dilation, ceil_mode, count_include_pad and
divisor_override, adaptive and global pooling, against eager with no fallback
op; max pooling without indices is one kernel; training through pooling,
whose backward compiles natively too, at static and dynamic sizes.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import permalloy
from conftest import to_test_device

CASES = {
    "max2d": (lambda x: F.max_pool2d(x, 3, 2, 1), (2, 4, 15, 16)),
    "max2d_indices_ceil": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True), (2, 3, 9, 10)),
    "max2d_dilated": (lambda x: F.max_pool2d(x, 2, 1, 1, dilation=2, return_indices=True), (1, 3, 8, 8)),
    "max1d": (lambda x: F.max_pool1d(x, 4, 3, 2, return_indices=True), (2, 3, 17)),
    "max3d": (lambda x: F.max_pool3d(x, 2, 2, return_indices=True), (1, 2, 4, 6, 6)),
    "avg2d": (lambda x: F.avg_pool2d(x, 3, 2, 1), (2, 4, 15, 16)),
    "avg2d_exclude_pad_ceil": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (2, 3, 9, 10)),
    "avg2d_divisor": (lambda x: F.avg_pool2d(x, 2, divisor_override=3), (2, 3, 8, 8)),
    "avg1d": (lambda x: F.avg_pool1d(x, 5, 3, 2, ceil_mode=True), (2, 3, 17)),
    "avg3d": (lambda x: F.avg_pool3d(x, (2, 3, 3), (1, 2, 2), (1, 1, 1)), (1, 2, 4, 7, 7)),
    "global_avg": (lambda x: F.avg_pool2d(x, 7), (2, 8, 7, 7)),
    "tiled_avg": (lambda x: F.avg_pool2d(x, 6), (2, 3, 12, 18)),
    "adaptive_max": (lambda x: F.adaptive_max_pool2d(x, (4, 4), return_indices=True), (2, 3, 8, 8)),
    "adaptive_avg": (lambda x: F.adaptive_avg_pool2d(x, 1), (2, 3, 8, 8)),
    "adaptive_avg3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)), (1, 2, 5, 7, 6)),
}


def _input(shape, seed: int = 0):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    x = (x * 4).round() / 4  # ties within windows
    x.view(-1)[3] = float("nan")
    x.view(-1)[-5:] = float("-inf")
    return x


@pytest.mark.parametrize("name", sorted(CASES))
def test_pooling_compiles_natively_on_llvm(name, backend_check):
    fn, shape = CASES[name]
    backend_check(fn, [_input(shape)], "llvm")


@pytest.mark.parametrize("name", ["max2d_indices_ceil", "avg2d_exclude_pad_ceil", "max3d", "global_avg"])
def test_pooling_compiles_natively_on_triton(name, backend_check, triton_device):
    fn, shape = CASES[name]
    backend_check(fn, [_input(shape).to(triton_device)], "triton")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_pooling_in_half_precision(dtype, backend_check):
    x = _input((2, 3, 9, 10)).to(dtype)
    backend_check(lambda x: (F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1)), [x], "llvm")


@pytest.mark.parametrize(
    "pool", [lambda x: F.avg_pool2d(x, 2, 2, 1, ceil_mode=True), lambda x: F.max_pool2d(x, 2, 1, 1)], ids=["avg", "max"]
)
def test_an_input_of_ambiguous_layout_is_pooled_into_torch_s_layout(pool, backend_check):
    """A width of one makes a permuted input both contiguous and channels-last
    by `is_contiguous`; torch's kernels choose the layout by the order of the
    strides (`suggest_memory_format`), here contiguous, and so does the
    compiled pooling."""
    x = _input((2, 6, 7, 1)).transpose(1, 2) * 2  # strides (42, 1, 7, 1)
    backend_check(pool, [x], "llvm")


def test_max_pooling_without_indices_is_one_kernel(backend_check):
    backend_check(lambda x: F.max_pool2d(x, 3, 2, 1), [_input((2, 4, 16, 16))], "llvm")
    assert permalloy.stats()[0]["kernels"] == 1


def test_large_windows_run_with_torch(backend_check):
    backend_check(
        lambda x: F.max_pool2d(x, 6, 6), [_input((1, 2, 12, 12))], "llvm",
        fallback_ops=["aten.max_pool2d_with_indices.default"],
    )


class _ConvPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.conv(x)), 3, 2, 1)
        return F.avg_pool2d(y, 2).sum()


def test_training_through_pooling_matches_eager():
    torch.manual_seed(0)
    model = _ConvPool()
    x = torch.randn(2, 3, 12, 12)
    expected = model(x)
    expected.backward()
    expected_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise"})
    actual = compiled(x)
    actual.backward()
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    for got, want in zip([p.grad for p in model.parameters()], expected_grads):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    forward = permalloy.stats()[0]
    assert not any("pool2d_with_indices.default" in op or "avg_pool2d.default" in op for op in forward["fallback_ops"])
    backward = permalloy.stats()[1]
    assert backward["fallback_ops"] == [], backward["fallback_ops"]


GRADIENT_CASES = [
    pytest.param(name, layout, id=f"{name}-{layout}")
    for name in sorted(CASES)
    if not name.startswith("adaptive")
    for layout in (["contiguous", "channels_last"] if len(CASES[name][1]) == 4 else ["contiguous"])
]


@pytest.mark.usefixtures("fresh_backend")
@pytest.mark.parametrize(("name", "layout"), GRADIENT_CASES)
@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_pooling_gradients_compile_natively(target, name, layout, request):
    """The backward of average pooling (the gradient over each divisor added
    back over its window) compiles with no fallback op, against eager, in
    eager's strides, and so does max pooling's (a scatter-add at its
    indices). The expected gradient is eager's on the CPU: CUDA's channels-last average-pooling
    backward ignores the padding in torch releases before its fix
    (pytorch/pytorch#188344)."""
    if target == "triton":
        request.getfixturevalue("triton_device")
    fn, shape = CASES[name]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    if target == "triton":
        x = to_test_device(x)

    def loss(x):
        pooled = fn(x)
        pooled = pooled[0] if isinstance(pooled, tuple) else pooled
        weights = torch.linspace(-1, 1, pooled.numel(), device=x.device).view(pooled.shape)
        return (pooled * weights).sum()

    compiled = torch.compile(loss, backend="permalloy", options={"fallback": "raise", "target": target})
    actual_input, expected_input = x.clone().requires_grad_(), x.cpu().requires_grad_()
    (actual,) = torch.autograd.grad(compiled(actual_input), actual_input)
    (expected,) = torch.autograd.grad(loss(expected_input), expected_input)
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
    assert actual.stride() == expected.stride()
    records = permalloy.stats()
    assert len(records) == 2, records
    fallbacks = [op for record in records for op in record["fallback_ops"]]
    assert fallbacks == [], fallbacks


@pytest.mark.usefixtures("fresh_backend")
@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_pooling_gradients_at_dynamic_sizes(target, request):
    """Pooling's gradients compiled once for symbolic sizes match eager at two
    sizes: the scatter of max pooling's backward runs over
    `(s0 // 2) * (s1 // 2)` positions per plane, a size whose kernel
    indices must divide by the whole product."""
    device = request.getfixturevalue("triton_device") if target == "triton" else "cpu"

    def loss(x):
        pooled = F.max_pool2d(x, 2)
        return (pooled * pooled.flip(-1)).sum() + F.avg_pool2d(x, 3, 2, 1).square().sum()

    compiled = torch.compile(loss, backend="permalloy", dynamic=True, options={"fallback": "raise", "target": target})
    for shape in [(2, 3, 8, 10), (3, 4, 12, 14)]:
        x = torch.randn(shape, generator=torch.Generator().manual_seed(sum(shape)))
        actual_input = to_test_device(x).requires_grad_() if target == "triton" else x.clone().requires_grad_()
        expected_input = x.clone().requires_grad_()
        (actual,) = torch.autograd.grad(compiled(actual_input), actual_input)
        (expected,) = torch.autograd.grad(loss(expected_input), expected_input)
        torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2, [record.get("symbols") for record in records]
    assert [op for record in records for op in record["fallback_ops"]] == []

