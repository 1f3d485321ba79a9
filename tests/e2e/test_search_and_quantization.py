"""
Sorted search, triangle indices, quantization and rrelu outside training,
compiled natively on both targets, against eager with no fallback op:
`bucketize` and `searchsorted` (left and right, int32 results, 1-d and
batched sequences, a sorter, numbers, empty and one-element sequences, NaN,
mixed dtypes), `tril_indices` and `triu_indices`, fake quantization per
tensor and per channel (training through it, with its straight-through
gradient), PT2E's `quantized_decomposed` quantize and dequantize, and rrelu
in evaluation mode.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed)
import torch.nn.functional as F
from conftest import to_test_device
from torch import nn

import permalloy

pytestmark = pytest.mark.usefixtures("fresh_backend")

quantized = torch.ops.quantized_decomposed


def _generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _sorted(*shape: int, seed: int = 0, ties: bool = True) -> torch.Tensor:
    """Sorted rows, with repeated values (whole quarters) where `ties`."""
    values = torch.randn(shape, generator=_generator(seed)) * 2
    if ties:
        values = (values * 4).round() / 4
    return torch.sort(values, -1).values


def _values(*shape: int, seed: int = 1) -> torch.Tensor:
    """Values to search for: on and between the boundaries, beyond both
    ends, and a NaN."""
    values = (torch.randn(shape, generator=_generator(seed)) * 8).round() / 4
    values.view(-1)[0] = float("nan")
    values.view(-1)[-1] = 100.0
    return values


sequence_with_nan = _sorted(3, 10)
sequence_with_nan[1, -1] = float("nan")
unsorted = torch.randn(3, 9, generator=_generator(5))

def _activations(*shape: int, seed: int = 4) -> torch.Tensor:
    """Values around and beyond a quantized range, with NaN and infinities
    (which the kernels' int64 conversion sends to the range's low end)."""
    values = torch.randn(shape, generator=_generator(seed)) * 8
    values.view(-1)[:3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    return values


CASES: dict[str, tuple[Callable, list]] = {
    "bucketize": (lambda x, b: torch.bucketize(x, b), [_values(4, 5), _sorted(9)]),
    "bucketize_right_int32": (lambda x, b: torch.bucketize(x, b, right=True, out_int32=True), [_values(4, 5), _sorted(9)]),
    "bucketize_integers": (
        lambda x, b: torch.bucketize(x, b, right=True),
        [torch.randint(-3, 12, (5, 4), generator=_generator(2)), torch.arange(0, 10, 2)],
    ),
    "bucketize_of_an_intermediate": (lambda x, b: torch.bucketize(torch.tanh(x) * 2, b), [_values(4, 5), _sorted(7)]),
    "bucketize_number": (lambda b: (torch.bucketize(0.25, b), torch.bucketize(3, b, right=True)), [_sorted(9)]),
    "searchsorted_batched": (lambda s, x: torch.searchsorted(s, x), [sequence_with_nan, _values(3, 6)]),
    "searchsorted_batched_right_int32": (
        lambda s, x: torch.searchsorted(s, x, right=True, out_int32=True),
        [sequence_with_nan, _values(3, 6)],
    ),
    "searchsorted_side": (lambda s, x: torch.searchsorted(s, x, side="right"), [_sorted(2, 3, 8), _values(2, 3, 4)]),
    "searchsorted_1d_sequence": (lambda s, x: torch.searchsorted(s, x), [_sorted(11), _values(2, 3, 4)]),
    "searchsorted_sorter": (
        lambda s, x, o: torch.searchsorted(s, x, sorter=o),
        [unsorted, _values(3, 5), torch.argsort(unsorted)],
    ),
    "searchsorted_sorter_1d": (
        lambda s, x, o: torch.searchsorted(s, x, right=True, sorter=o),
        [unsorted[0], _values(7), torch.argsort(unsorted[0])],
    ),
    "searchsorted_number": (lambda s: (torch.searchsorted(s, 0.5), torch.searchsorted(s, 2, right=True)), [_sorted(9)]),
    "searchsorted_mixed_dtypes": (lambda s, x: torch.searchsorted(s, x), [torch.arange(0, 20, 3), _values(7) * 4]),
    "searchsorted_empty_and_single": (
        lambda e, one, x: (torch.searchsorted(e, x), torch.searchsorted(one, x, right=True)),
        [torch.empty(0), torch.tensor([0.25]), _values(6)],
    ),
    "searchsorted_long_rows": (lambda s, x: torch.searchsorted(s, x), [_sorted(2, 300, ties=False), _values(2, 50) * 3]),
    "triangle_indices": (
        lambda x: (
            x[tuple(torch.tril_indices(5, 7))], x[tuple(torch.triu_indices(5, 7, 1))],
            torch.tril_indices(4, 3, -1), torch.triu_indices(3, 6, -2), torch.tril_indices(6, 4, 2),
            torch.triu_indices(0, 3), torch.tril_indices(3, 3, dtype=torch.int32),
        ),
        [torch.randn(5, 7, generator=_generator(3))],
    ),  # fmt: skip
    "fake_quantize_per_tensor": (
        lambda x: (
            torch.fake_quantize_per_tensor_affine(x, 0.1, 3, 0, 255),
            torch.fake_quantize_per_tensor_affine(x, 0.05, -4, -128, 127),
        ),
        [_activations(3, 4, 5)],
    ),
    "fake_quantize_tensor_qparams": (
        lambda x, scale, zero: torch.fake_quantize_per_tensor_affine(x, scale, zero, 0, 255),
        [_activations(3, 4, 5), torch.tensor(0.07), torch.tensor(5, dtype=torch.int32)],
    ),
    "fake_quantize_per_channel": (
        lambda x, scale, zero: (
            torch.fake_quantize_per_channel_affine(x, scale, zero, 1, -128, 127),
            torch.fake_quantize_per_channel_affine(x.transpose(0, 1), scale, zero, 0, -8, 7),
        ),
        [_activations(2, 3, 5) / 2, torch.tensor([0.05, 0.1, 0.02]), torch.tensor([0, 3, -2], dtype=torch.int32)],
    ),  # fmt: skip
    "quantize_dequantize_per_tensor": (
        lambda x: (
            quantized.quantize_per_tensor(x, 0.05, 3, 0, 255, torch.uint8),
            quantized.dequantize_per_tensor(quantized.quantize_per_tensor(x, 0.05, -3, -128, 127, torch.int8), 0.05, -3, -128, 127, torch.int8),
        ),
        [torch.randn(3, 4, 5, generator=_generator(6)) * 4],
    ),  # fmt: skip
    "quantize_dequantize_tensor_parameters": (
        lambda x, scale, zero: quantized.dequantize_per_tensor.tensor(
            quantized.quantize_per_tensor.tensor(x, scale, zero, 0, 255, torch.uint8), scale, zero, 0, 255, torch.uint8
        ),
        [torch.randn(3, 4, 5, generator=_generator(6)) * 4, torch.tensor(0.03), torch.tensor(7)],
    ),
    "quantize_dequantize_per_channel": (
        lambda x, scale, zero: (
            quantized.quantize_per_channel(x, scale, zero, 1, -128, 127, torch.int8),
            quantized.dequantize_per_channel(quantized.quantize_per_channel(x, scale, zero, 1, -128, 127, torch.int8), scale, zero, 1, -128, 127, torch.int8),
        ),
        [torch.randn(2, 3, 5, generator=_generator(7)) * 4, torch.tensor([0.05, 0.1, 0.02]), torch.tensor([0, 3, -2])],
    ),  # fmt: skip
    "rrelu_evaluation": (
        lambda x: (F.rrelu(x, training=False), F.rrelu(x, 0.1, 0.3, training=False) * 2),
        [torch.randn(4, 6, generator=_generator(8))],
    ),
}
"""Each case: the function and its inputs."""

TRITON_CASES = [
    "bucketize", "searchsorted_batched_right_int32", "searchsorted_sorter", "searchsorted_long_rows",
    "triangle_indices", "fake_quantize_per_channel", "quantize_dequantize_per_tensor", "rrelu_evaluation",
]  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_search_and_quantization_llvm(name, backend_check):
    fn, inputs = CASES[name]
    backend_check(fn, inputs, "llvm")


@pytest.mark.parametrize("name", TRITON_CASES)
def test_search_and_quantization_triton(name, backend_check, triton_device):
    fn, inputs = CASES[name]
    backend_check(fn, lambda: [to_test_device(x.clone()) for x in inputs], "triton")


def test_half_precision_inputs(backend_check):
    x = _values(4, 5).half()
    boundaries = _sorted(9).half()
    backend_check(
        lambda x, b: (torch.bucketize(x, b), torch.searchsorted(b, x.view(-1), right=True)),
        [x, boundaries],
        "llvm",
    )
    backend_check(lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 3, 0, 255), [x * 4], "llvm")


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_symbolic_sizes(target, request):
    """One graph serves values and inputs of several sizes."""
    if target == "triton":
        request.getfixturevalue("triton_device")

    def fn(x, boundaries):
        # (fake quantization has no meta kernel for symbolic sizes: Dynamo
        # breaks the graph there)
        return (
            torch.searchsorted(boundaries, x),
            torch.bucketize(x, boundaries, right=True),
            quantized.dequantize_per_tensor(
                quantized.quantize_per_tensor(x, 0.05, 3, 0, 255, torch.uint8), 0.05, 3, 0, 255, torch.uint8
            ),
        )

    compiled = torch.compile(fn, backend="permalloy", dynamic=True, options={"target": target, "fallback": "raise"})
    boundaries = _sorted(9)
    for rows, columns in [(3, 5), (6, 2), (4, 9)]:
        x = _values(rows, columns, seed=rows)
        for actual, expected in zip(compiled(to_test_device(x), to_test_device(boundaries)), fn(x, boundaries), strict=True):
            torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5, equal_nan=True)
    records = permalloy.stats()
    assert len(records) == 1 and records[0]["fallback_ops"] == []


class _FakeQuantized(nn.Module):
    """A linear layer over fake-quantized activations and weights."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 4)

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.05, 0, -128, 127)
        weight = torch.fake_quantize_per_channel_affine(
            self.linear.weight, torch.full((4,), 0.02), torch.zeros(4, dtype=torch.int32), 0, -128, 127
        )
        return F.linear(x, weight, self.linear.bias).relu().sum()


def test_training_through_fake_quantization_matches_eager():
    """The straight-through gradient (the mask of values inside the range)."""
    torch.manual_seed(0)
    model = _FakeQuantized()
    x = (torch.randn(5, 6, generator=_generator(9)) * 4).requires_grad_()
    expected = model(x)
    expected.backward()
    expected_grads = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    compiled = torch.compile(model, backend="permalloy", options={"target": "llvm", "fallback": "raise"})
    actual = compiled(x)
    actual.backward()
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    for got, want in zip([p.grad for p in model.parameters()] + [x.grad], expected_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2
    assert [op for record in records for op in record["fallback_ops"]] == []


def test_rrelu_module_in_evaluation_mode(backend_check):
    model = nn.Sequential(nn.Linear(5, 5), nn.RReLU(0.1, 0.4)).eval()
    with torch.no_grad():
        backend_check(model, [torch.randn(3, 5, generator=_generator(10))], "llvm")
