"""
Interpolation and grid sampling compiled natively on both targets, against
eager with no fallback op: `F.interpolate` in every mode (nearest and
nearest-exact in 1 to 3 dimensions, linear, bilinear, bicubic, trilinear,
area),
`align_corners` both ways, sizes and scale factors, upscaling and
downscaling, non-square sizes, sizes of 1, channels-last inputs, float16,
symbolic sizes; `F.grid_sample` (4-d and 5-d) in every interpolation and
padding mode with both `align_corners`; training through interpolation, gradients
against eager's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from conftest import to_test_device
from torch import nn

import permalloy

pytestmark = [
    pytest.mark.usefixtures("fresh_backend"),
    pytest.mark.filterwarnings("ignore:`nn.functional.upsample_bilinear` is deprecated"),
]


def _interpolate(**kwargs) -> Callable:
    return lambda x: F.interpolate(x, **kwargs)


CASES: dict[str, tuple[Callable, tuple[int, ...]]] = {
    "nearest1d_scale": (_interpolate(scale_factor=2, mode="nearest"), (2, 3, 9)),
    "nearest1d_down": (_interpolate(size=4, mode="nearest"), (2, 3, 9)),
    "nearest2d_size": (_interpolate(size=(8, 11), mode="nearest"), (2, 3, 5, 7)),
    "nearest2d_fractional_scale": (_interpolate(scale_factor=(1.5, 0.7), mode="nearest"), (2, 3, 6, 10)),
    "nearest3d_scale": (_interpolate(scale_factor=2, mode="nearest"), (1, 2, 3, 4, 5)),
    "nearest3d_down": (_interpolate(size=(2, 3, 2), mode="nearest"), (1, 2, 3, 5, 5)),
    "nearest_exact1d": (_interpolate(size=13, mode="nearest-exact"), (2, 3, 9)),
    "nearest_exact2d_down": (_interpolate(size=(3, 4), mode="nearest-exact"), (2, 3, 5, 7)),
    "nearest_exact3d": (_interpolate(scale_factor=1.5, mode="nearest-exact"), (1, 2, 3, 4, 5)),
    "linear1d": (_interpolate(size=13, mode="linear"), (2, 3, 9)),
    "linear1d_corners_down": (_interpolate(size=4, mode="linear", align_corners=True), (2, 3, 9)),
    "bilinear_up": (_interpolate(size=(8, 11), mode="bilinear"), (2, 3, 5, 7)),
    "bilinear_corners_up": (_interpolate(size=(8, 11), mode="bilinear", align_corners=True), (2, 3, 5, 7)),
    "bilinear_down": (_interpolate(size=(3, 2), mode="bilinear"), (2, 3, 5, 7)),
    "bilinear_corners_down": (_interpolate(size=(3, 2), mode="bilinear", align_corners=True), (2, 3, 5, 7)),
    "bilinear_scale": (_interpolate(scale_factor=(1.7, 0.6), mode="bilinear"), (2, 3, 5, 7)),
    "bilinear_recomputed_scale": (
        _interpolate(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True),
        (2, 3, 5, 7),
    ),
    "bicubic_up": (_interpolate(size=(9, 10), mode="bicubic"), (2, 3, 5, 7)),
    "bicubic_corners_down": (_interpolate(size=(3, 4), mode="bicubic", align_corners=True), (2, 3, 5, 7)),
    "trilinear_up": (_interpolate(scale_factor=1.5, mode="trilinear"), (1, 2, 3, 4, 5)),
    "trilinear_corners_down": (
        _interpolate(size=(2, 3, 2), mode="trilinear", align_corners=True),
        (1, 2, 3, 4, 5),
    ),
    "bilinear_from_size_one": (_interpolate(size=(4, 5), mode="bilinear"), (2, 3, 1, 1)),
    "bilinear_corners_to_size_one": (_interpolate(size=(1, 1), mode="bilinear", align_corners=True), (2, 3, 5, 7)),
    "bicubic_to_size_one": (_interpolate(size=(1, 3), mode="bicubic"), (2, 3, 5, 7)),
    "nearest_to_size_one": (_interpolate(size=(1, 1), mode="nearest"), (2, 3, 5, 7)),
    "area2d": (_interpolate(size=(3, 5), mode="area"), (2, 3, 7, 11)),
    "area3d": (_interpolate(size=(2, 3, 2), mode="area"), (1, 2, 5, 7, 6)),
    "upsample_bilinear": (lambda x: nn.functional.upsample_bilinear(x, scale_factor=2), (1, 2, 3, 4)),
}
"""Each case: the function and the shape of its input."""

TRITON_CASES = [
    "nearest1d_scale", "nearest3d_scale", "nearest_exact2d_down", "linear1d",
    "bilinear_up", "bilinear_corners_down", "bicubic_up", "trilinear_up",
]  # fmt: skip


def _input(shape: tuple[int, ...], dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _inputs(*tensors: torch.Tensor) -> Callable[[], list]:
    return lambda: [to_test_device(t.clone()) for t in tensors]


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpolation_llvm(name, backend_check):
    fn, shape = CASES[name]
    backend_check(fn, [_input(shape)], "llvm")


@pytest.mark.parametrize("name", TRITON_CASES)
def test_interpolation_triton(name, backend_check, triton_device):
    fn, shape = CASES[name]
    backend_check(fn, _inputs(_input(shape)), "triton")


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolation_of_channels_last_inputs(mode, backend_check):
    """The output keeps the input's channels-last layout, as eager's does."""
    x = _input((2, 4, 5, 7)).to(memory_format=torch.channels_last)
    backend_check(lambda x: F.interpolate(x, size=(8, 6), mode=mode), lambda: [x.clone(memory_format=torch.channels_last)], "llvm")


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_interpolation_in_float16(mode, backend_check):
    backend_check(_interpolate(size=(7, 9), mode=mode), [_input((2, 3, 5, 6), torch.float16)], "llvm")


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_interpolation_with_symbolic_sizes(target, request):
    """One graph over symbolic input sizes serves several sizes (a fixed
    output size and a scale factor)."""
    if target == "triton":
        request.getfixturevalue("triton_device")

    def fn(x):
        return F.interpolate(x, size=(6, 5), mode="bilinear"), F.interpolate(x, scale_factor=2, mode="nearest")

    compiled = torch.compile(fn, backend="permalloy", dynamic=True, options={"target": target, "fallback": "raise"})
    for height, width in [(5, 7), (9, 4), (3, 3)]:
        x = _input((2, 3, height, width), seed=height)
        for actual, expected in zip(compiled(to_test_device(x)), fn(x), strict=True):
            torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 1 and records[0]["fallback_ops"] == []


GRID_MODES = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]))


def _grid(shape: tuple[int, ...], seed: int = 1) -> torch.Tensor:
    """Sampling positions around and beyond [-1, 1], where the padding modes differ."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) * 2.6 - 1.3


def _grid_sample(mode: str, padding: str, corners: bool) -> Callable:
    return lambda x, grid: F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=corners)


@pytest.mark.parametrize(("mode", "padding", "corners"), GRID_MODES)
def test_grid_sample_llvm(mode, padding, corners, backend_check):
    backend_check(_grid_sample(mode, padding, corners), [_input((2, 3, 5, 7)), _grid((2, 4, 6, 2))], "llvm")


@pytest.mark.parametrize(
    ("mode", "padding", "corners"),
    [("bilinear", "zeros", False), ("nearest", "reflection", True), ("bicubic", "border", False)],
)
def test_grid_sample_triton(mode, padding, corners, backend_check, triton_device):
    fn = _grid_sample(mode, padding, corners)
    backend_check(fn, _inputs(_input((2, 3, 5, 7)), _grid((2, 4, 6, 2))), "triton")


GRID_MODES_3D = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [False, True]))


@pytest.mark.parametrize(("mode", "padding", "corners"), GRID_MODES_3D)
def test_grid_sample_3d_llvm(mode, padding, corners, backend_check):
    backend_check(_grid_sample(mode, padding, corners), [_input((2, 3, 4, 5, 6)), _grid((2, 3, 4, 5, 3))], "llvm")


def test_grid_sample_3d_triton(backend_check, triton_device):
    fn = _grid_sample("bilinear", "reflection", False)
    backend_check(fn, _inputs(_input((2, 3, 4, 5, 6)), _grid((2, 3, 4, 5, 3))), "triton")


def test_grid_sample_of_channels_last_and_float16_inputs(backend_check):
    x = _input((2, 4, 5, 6)).to(memory_format=torch.channels_last)
    grid = _grid((2, 3, 4, 2))
    backend_check(
        _grid_sample("bilinear", "border", False),
        lambda: [x.clone(memory_format=torch.channels_last), grid.clone()],
        "llvm",
    )
    backend_check(_grid_sample("bilinear", "zeros", True), [x.half().contiguous(), grid.half()], "llvm")


def test_grid_sample_with_symbolic_sizes():
    fn = _grid_sample("bilinear", "reflection", False)
    compiled = torch.compile(fn, backend="permalloy", dynamic=True, options={"target": "llvm", "fallback": "raise"})
    for height, width in [(5, 7), (8, 3), (4, 4)]:
        x, grid = _input((2, 3, height, width)), _grid((2, width, height, 2), seed=height)
        torch.testing.assert_close(compiled(x, grid), fn(x, grid), rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 1 and records[0]["fallback_ops"] == []


def test_grid_sample_of_an_affine_grid(backend_check):
    """A spatial transformer's sampling: the grid made by affine_grid in the graph."""

    def fn(x, theta):
        grid = F.affine_grid(theta, [2, 3, 6, 5], align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    theta = torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]], [[1.2, 0.1, 0.0], [0.0, 0.8, 0.3]]])
    backend_check(fn, [_input((2, 3, 5, 7)), theta], "llvm")


class _Decoder(nn.Module):
    """A convolution, then each interpolation mode's upsampling, summed."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.mix = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        y = torch.tanh(self.conv(x))
        up = (
            F.interpolate(y, size=(9, 11), mode="bilinear")
            + F.interpolate(y, size=(9, 11), mode="bilinear", align_corners=True)
            + F.interpolate(y, size=(9, 11), mode="nearest")
            + F.interpolate(y, size=(9, 11), mode="bicubic")
        )
        down = F.interpolate(self.mix(up), scale_factor=0.5, mode="bilinear")
        return (down * down).mean()


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_training_through_interpolation_matches_eager(target, request):
    """The forward and backward graphs compile with no fallback op, and the
    loss and every gradient (the input's included) match eager's."""
    device = request.getfixturevalue("triton_device") if target == "triton" else "cpu"
    torch.manual_seed(0)
    model = _Decoder()
    x = _input((2, 3, 6, 7)).requires_grad_()
    expected = model(x)
    expected.backward()
    expected_grads = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    model.to(device)
    x = to_test_device(x.detach().requires_grad_()) if target == "triton" else x.detach().requires_grad_()
    compiled = torch.compile(model, backend="permalloy", options={"target": target, "fallback": "raise"})
    actual = compiled(x)
    actual.backward()
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
    for got, want in zip([p.grad for p in model.parameters()] + [x.grad], expected_grads, strict=True):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2
    assert [op for record in records for op in record["fallback_ops"]] == []


@pytest.mark.parametrize(
    ("mode", "input_shape", "grid_shape"),
    [
        ("bilinear", (2, 3, 5, 7), (2, 4, 6, 2)),
        ("nearest", (2, 3, 5, 7), (2, 4, 6, 2)),
        ("bicubic", (2, 3, 5, 7), (2, 4, 6, 2)),
        ("bilinear", (1, 2, 3, 4, 5), (1, 2, 3, 4, 3)),
    ],
)
def test_training_through_grid_sample_matches_eager(mode, input_shape, grid_shape):
    """Grid sampling in a graph that needs gradients is written as its math
    before AOTAutograd traces it (`math_for_training.py`): the gradients of
    the input and of the grid (zeros for nearest) match eager's, with no
    fallback op in either graph."""
    x, grid = _input(input_shape), _grid(grid_shape)

    def loss(x, grid):
        y = F.grid_sample(torch.sin(x), grid, mode=mode, padding_mode="reflection", align_corners=False)
        return (y * y).sum()

    expected_inputs = [x.clone().requires_grad_(), grid.clone().requires_grad_()]
    loss(*expected_inputs).backward()
    actual_inputs = [x.clone().requires_grad_(), grid.clone().requires_grad_()]
    compiled = torch.compile(loss, backend="permalloy", options={"target": "llvm", "fallback": "raise"})
    compiled(*actual_inputs).backward()
    for actual, expected in zip(actual_inputs, expected_inputs, strict=True):
        torch.testing.assert_close(actual.grad, expected.grad, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2
    assert [op for record in records for op in record["fallback_ops"]] == []
