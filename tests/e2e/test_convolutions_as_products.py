"""
Pointwise convolutions run as matrix products (`convolutions-as-products`)
on both targets (Triton under its interpreter on the CPU, or on the GPU that
`PERMALLOY_TEST_DEVICE` names): blocks of 1x1 convolutions with and without
biases, over NCHW and channels-last memory, 1-d ones and squeeze-excite ones
on one pixel match eager, inference and training, and the compiled program
holds products where the layouts allow them and convolutions where they do
not or the library measures faster.
"""

from __future__ import annotations

import glob
import os
import re

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_training_step_matches

from permalloy.passes import convolutions_as_products, plan_layouts
from permalloy.passes.convolution_layouts import LayoutTimes
from permalloy.passes.plan_layouts import CONVOLUTION_CHOICES
from permalloy.tools.backend import permalloy_backend

DEVICE = os.environ.get("PERMALLOY_TEST_DEVICE", "cpu")
POINTWISE = re.compile(r"ptensor\.convolution .*tensor<\[\d+, \d+, 1(, 1)*\], f32>(, !ptensor\.tensor<\[\d+\], f32>)? ->")


pytestmark = pytest.mark.usefixtures("triton_on_test_device")


class Bottleneck(torch.nn.Module):
    """An inverted residual: 1x1 expansion, depthwise 3x3, squeeze-excite
    (1x1 convolutions on one pixel, with biases), a 1x1 projection with a
    bias and a residual add; then a 1-d pointwise convolution over the
    flattened pixels."""

    def __init__(self, channels: int = 8, expanded: int = 24):
        super().__init__()
        self.expand = torch.nn.Conv2d(channels, expanded, 1, bias=False)
        self.bn = torch.nn.BatchNorm2d(expanded)
        self.depthwise = torch.nn.Conv2d(expanded, expanded, 3, padding=1, groups=expanded, bias=False)
        self.squeeze = torch.nn.Conv2d(expanded, 4, 1)
        self.excite = torch.nn.Conv2d(4, expanded, 1)
        self.project = torch.nn.Conv2d(expanded, channels, 1)
        self.mix = torch.nn.Conv1d(channels, 6, 1, bias=False)

    def forward(self, x):
        y = F.relu6(self.bn(self.expand(x)))
        y = F.silu(self.depthwise(y))
        y = y * torch.sigmoid(self.excite(F.relu(self.squeeze(y.mean((2, 3), keepdim=True)))))
        z = self.project(y) + x
        return self.mix(z.flatten(2)).relu()


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    model = Bottleneck()
    model.bn.running_mean.uniform_(-0.5, 0.5)
    model.bn.running_var.uniform_(0.5, 1.5)
    return model.eval().to(DEVICE)


def _plan(monkeypatch, channels_last: bool, product_faster: bool = True) -> None:
    times = LayoutTimes(2.0, 1.0) if channels_last else LayoutTimes(1.0, 2.0)
    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", lambda op, copies_input, device, keeps_nchw=False, trains=False: times)
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    monkeypatch.setattr(convolutions_as_products, "product_is_faster", lambda op, device: product_faster)


def _final_program(tmp_path, graph: str = "graph_000") -> str:
    (path,) = glob.glob(str(tmp_path / graph / "*after_plan-memory.mlir"))
    return open(path).read()


def _compiled_program(model: torch.nn.Module, x: torch.Tensor, target: str, tmp_path) -> str:
    """Compile `model` for `target`, check its result on `x` against eager,
    and give the host program it compiled to."""
    compiled = torch.compile(model, backend=permalloy_backend, options={"target": target, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    return _final_program(tmp_path)


def _targets() -> list[str]:
    return ["triton"] if DEVICE != "cpu" else ["llvm", "triton"]


@pytest.mark.parametrize("target", _targets())
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_pointwise_convolutions_become_products(tmp_path, monkeypatch, target, channels_last):
    _plan(monkeypatch, channels_last)
    program = _compiled_program(_model(0), torch.randn(2, 8, 7, 6, device=DEVICE), target, tmp_path)
    pointwise = [line for line in program.splitlines() if POINTWISE.search(line)]
    products = len(re.findall(r"ptensor\.(mm|bmm|addmm) ", program))
    # Triton unfuses every bias into its readers' kernels; the LLVM target
    # keeps them, and a biased convolution over NCHW images of many pixels
    # (the projection) stays a convolution
    kept = 1 if target == "llvm" and not channels_last else 0
    assert len(pointwise) == kept, pointwise
    assert products == 5 - kept, program
    if channels_last:
        assert "ptensor.mm " in program  # rows merged: [N * H * W, C] products
    assert "ptensor.bmm " in program  # the 1-d convolution: [N, C, L] images


def _host_program(tmp_path) -> str:
    (path,) = glob.glob(str(tmp_path / "graph_000" / "*_host.py"))
    return open(path).read()


@pytest.mark.parametrize("target", _targets())
def test_products_over_one_nchw_image_write_its_memory(tmp_path, monkeypatch, target):
    """Over one NCHW image the pixels of a pointwise convolution merge into
    rows, so it is one `[S, C] @ [C, O]` product whose result, NCHW memory,
    is column-major: the library writes it there (`out=`), with and without
    a bias, and no result is copied into its planned layout after a call."""
    _plan(monkeypatch, channels_last=False)
    program = _compiled_program(_model(2), torch.randn(1, 8, 7, 6, device=DEVICE), target, tmp_path)
    assert len(re.findall(r"ptensor\.(mm|addmm) ", program)) >= 4, program
    host = _host_program(tmp_path)
    arguments = set(re.search(r"def host\(([^)]*)\)", host).group(1).split(", "))
    copied = [line for line in host.splitlines() if re.match(r"\s*if (v\d+)\.stride\(\)", line)]
    assert all(re.match(r"\s*if (v\d+)", line).group(1) in arguments for line in copied), host
    assert re.search(r"alloc\(\(42, 24, \), \(1, 42, \)", host), host  # the expansion, column-major


@pytest.mark.parametrize("target", _targets())
def test_measured_slower_products_stay_convolutions(tmp_path, monkeypatch, target):
    _plan(monkeypatch, channels_last=True, product_faster=False)
    program = _compiled_program(_model(1), torch.randn(2, 8, 5, 5, device=DEVICE), target, tmp_path)
    assert not re.search(r"ptensor\.(mm|bmm|addmm) ", program), program
    assert len([line for line in program.splitlines() if POINTWISE.search(line)]) == 5


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_training_through_pointwise_products_matches_eager(tmp_path, monkeypatch, channels_last):
    """The forward graph's pointwise convolutions are products, and so are
    the input gradients of the backward graph (the weights' gradients stay
    the library's, asked for alone); gradients and batch-norm statistics
    match eager."""
    _plan(monkeypatch, channels_last)
    monkeypatch.setattr(convolutions_as_products, "backward_product_is_faster", lambda op, device: True)
    torch.manual_seed(4)
    x = torch.randn(2, 8, 6, 6, device=DEVICE)
    assert_training_step_matches(lambda: Bottleneck().to(DEVICE), x, {"target": "triton", "dump_dir": str(tmp_path)})
    program = _final_program(tmp_path, "graph_001")
    # the projection's, the squeeze-excite's two and the 1-d convolution's input gradients
    assert len(re.findall(r"ptensor\.(mm|bmm) ", program)) == 4, program
    masks = re.findall(r"groups 1 output_mask \[(\d), \d, \d\]", program)
    assert masks and set(masks) == {"0"}, masks


@pytest.mark.parametrize("target", _targets())
def test_volumes_and_sliced_images(tmp_path, monkeypatch, target):
    """A 3-d pointwise convolution over NCDHW volumes is one batched
    product; one over a sliced image, whose pixels do not merge, stays a
    convolution; both match eager."""
    _plan(monkeypatch, channels_last=False)

    def volumes_and_slices(volume, image, weight3d, weight2d):
        a = F.conv3d(volume, weight3d).relu()
        b = F.conv2d(image[:, :, :, 1:], weight2d).relu()
        return a, b

    torch.manual_seed(5)
    inputs = [
        torch.randn(2, 4, 3, 5, 6, device=DEVICE),
        torch.randn(2, 4, 5, 7, device=DEVICE),
        torch.randn(6, 4, 1, 1, 1, device=DEVICE),
        torch.randn(6, 4, 1, 1, device=DEVICE),
    ]
    options = {"target": target, "dump_dir": str(tmp_path)}
    compiled = torch.compile(volumes_and_slices, backend=permalloy_backend, options=options)
    for actual, expected in zip(compiled(*inputs), volumes_and_slices(*inputs)):
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    program = _final_program(tmp_path)
    assert len(re.findall(r"ptensor\.bmm ", program)) == 1, program
    assert len(re.findall(r"ptensor\.convolution ", program)) == 1, program
