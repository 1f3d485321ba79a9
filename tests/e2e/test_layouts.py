"""
Channels-last planning (`plan-layouts`) on the Triton target, run under
Triton's interpreter on the CPU (or on the GPU that `PERMALLOY_TEST_DEVICE`
names), and on the LLVM target, where convolutions are measured: convolutional
blocks compiled with channels-last intermediates match eager, graph outputs
keep eager's strides, and pointwise kernels over channels-last tensors walk
them along channels.
"""

from __future__ import annotations

import glob
import os
import re

import pytest
import torch
import torch.nn.functional as F

from permalloy.passes.convolution_layouts import LayoutTimes
from permalloy.passes import plan_layouts
from permalloy.passes.plan_layouts import CONVOLUTION_CHOICES, channels_last_strides
from permalloy.tools.backend import permalloy_backend
from conftest import assert_training_step_matches

DEVICE = os.environ.get("PERMALLOY_TEST_DEVICE", "cpu")


@pytest.fixture(autouse=True)
def triton_mode(monkeypatch, tmp_path_factory):
    if DEVICE == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "permalloy-cache"))


class Block(torch.nn.Module):
    """Conv + batch norm + ReLU, a depthwise conv with squeeze-excite, a
    residual add, a 1x1 conv with a bias and a pooled classifier."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(channels)
        self.depthwise = torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.squeeze = torch.nn.Conv2d(channels, 4, 1)
        self.excite = torch.nn.Conv2d(4, channels, 1)
        self.project = torch.nn.Conv2d(channels, 2 * channels, 1)
        self.head = torch.nn.Linear(2 * channels, 5)

    def forward(self, x):
        y = F.relu(self.bn(self.stem(x)))
        z = F.silu(self.depthwise(y))
        scale = torch.sigmoid(self.excite(F.relu(self.squeeze(z.mean((2, 3), keepdim=True)))))
        z = z * scale + y
        w = self.project(z)
        return self.head(F.max_pool2d(w, 2).mean((2, 3)))


def _randomize_statistics(model: torch.nn.Module) -> torch.nn.Module:
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 1.5)
    return model.eval()


def _compiled(model, tmp_path):
    return torch.compile(model, backend=permalloy_backend, options={"target": "triton", "dump_dir": str(tmp_path)})


def _host_source(tmp_path) -> str:
    (path,) = glob.glob(str(tmp_path / "graph_000" / "*host.py"))
    return open(path).read()


def test_channels_last_strides_are_torchs():
    for sizes in [(2, 8, 5, 7), (1, 3, 1, 1), (4, 1, 6, 2)]:
        expected = torch.empty(sizes).to(memory_format=torch.channels_last).stride()
        assert tuple(int(s) for s in channels_last_strides(sizes)) == expected


@pytest.mark.parametrize("channels_last_input", [False, True])
def test_convolutional_block_matches_eager(tmp_path, monkeypatch, channels_last_input):
    # channels-last measures faster here, whatever this GPU's library says
    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", lambda op, copies_input, device: LayoutTimes(2.0, 1.0))
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    torch.manual_seed(0)
    model = _randomize_statistics(Block()).to(DEVICE)
    x = torch.randn(2, 3, 12, 10, device=DEVICE)
    if channels_last_input:
        x = x.to(memory_format=torch.channels_last)
    with torch.no_grad():
        expected = model(x)
        result = _compiled(model, tmp_path)(x)
    torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-5)
    host = _host_source(tmp_path)
    # intermediates around the convolutions are channels-last: [2, 8, 12, 10]
    assert "(960, 1, 80, 8, )" in host, host


class DepthwiseGelu(torch.nn.Module):
    """A 7x7 depthwise convolution and a GELU, ConvNeXt's first two steps."""

    def __init__(self, channels: int = 16):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 7, padding=3, groups=channels)

    def forward(self, x):
        return F.gelu(self.conv(x))


def test_a_small_convolution_follows_a_channels_last_input(tmp_path):
    """A convolution too small to time keeps NCHW memory, except when it is
    given a channels-last input: torch answers that in channels-last, and
    its GELU epilogue then runs in place on the library's result, with no
    conversion between them."""
    model = DepthwiseGelu().to(DEVICE).eval().to(memory_format=torch.channels_last)
    x = torch.randn(2, 16, 14, 14, device=DEVICE).to(memory_format=torch.channels_last)
    with torch.no_grad():
        expected = model(x)
        result = _compiled(model, tmp_path)(x)
    torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-5)
    assert result.stride() == expected.stride()
    host = _host_source(tmp_path)
    assert ".contiguous()" not in host and "(3136, 1, 224, 16, )" in host, host


@pytest.mark.skipif(DEVICE != "cpu", reason="the LLVM target runs on CPU tensors")
@pytest.mark.parametrize("channels_last_faster", [True, False])
def test_llvm_target_plans_by_measured_convolutions(tmp_path, monkeypatch, channels_last_faster):
    """On the CPU, channels-last memory is planned where the convolutions
    measure faster so (here a timer that says so, or the opposite); either
    way the block matches eager."""
    times = LayoutTimes(2.0, 1.0) if channels_last_faster else LayoutTimes(1.0, 2.0)
    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", lambda op, copies_input, device: times)
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    torch.manual_seed(3)
    model = _randomize_statistics(Block())
    x = torch.randn(2, 3, 12, 10)
    compiled = torch.compile(model, backend=permalloy_backend, options={"target": "llvm", "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert ("(960, 1, 80, 8, )" in _host_source(tmp_path)) == channels_last_faster


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_one_image_keeps_its_kernels_results_channels_last(tmp_path, monkeypatch, target):
    """At a batch of one, kernels write their images with the batch
    dimension squeezed out, which convolutions read through unit-batch
    views: planned channels-last, those results are written channels-last
    too, so no image is copied between a kernel and a convolution."""
    times = LayoutTimes(2.0, 1.0)
    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", lambda op, copies_input, device, **_: times)
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    torch.manual_seed(8)
    model = _randomize_statistics(Block()).to(DEVICE)
    x = torch.randn(1, 3, 12, 10, device=DEVICE)
    compiled = torch.compile(model, backend=permalloy_backend, options={"target": target, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    host = _host_source(tmp_path)
    assert "(8, 12, 10, ), (1, 80, 8, )" in host, host  # a squeezed image, channels-last
    copies = re.findall(r"^\s*v\d+\.copy_\((v\d+)\)", host, re.M)
    assert copies == ["v1"], host  # the graph input's, copied to channels-last for the stem


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_a_returned_convolution_reads_an_nchw_copy(tmp_path, monkeypatch, target):
    """A block whose last convolution's result is the graph's output (a
    segmentation or image head) plans channels-last memory for the rest where
    the convolutions measure faster so, counting the copy back to NCHW that
    the last one reads; the output keeps eager's strides."""

    def times(op, copies_input, device, keeps_nchw=False):
        return LayoutTimes(1.0, 1.1) if keeps_nchw else LayoutTimes(2.0, 1.0)

    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", times)
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    if target == "llvm" and DEVICE != "cpu":
        pytest.skip("the LLVM target runs on CPU tensors")
    torch.manual_seed(5)
    stem, up = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ConvTranspose2d(8, 8, 2, stride=2)
    head = torch.nn.Conv2d(8, 2, 1)
    model = torch.nn.Sequential(stem, torch.nn.BatchNorm2d(8), torch.nn.ReLU(), up, torch.nn.ReLU(), head)
    model = _randomize_statistics(model).to(DEVICE)
    x = torch.randn(2, 3, 6, 5, device=DEVICE)
    options = {"target": target, "dump_dir": str(tmp_path), "fallback": "raise"}
    with torch.no_grad():
        expected = model(x)
        result = torch.compile(model, backend=permalloy_backend, options=options)(x)
    torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-5)
    assert result.stride() == expected.stride()
    host = _host_source(tmp_path)
    # the stem's [2, 8, 6, 5] result and the upsampled [2, 8, 12, 10] one are channels-last
    assert "(240, 1, 40, 8, )" in host and "(960, 1, 80, 8, )" in host, host
    # copies: the graph input to channels-last, the head's input back to NCHW
    assert len(re.findall(r"^ +v\d+\.copy_\(v\d+\)$", host, re.MULTILINE)) == 2, host


@pytest.mark.skipif(DEVICE != "cpu", reason="the LLVM target runs on CPU tensors")
def test_llvm_target_measures_transposed_convolutions(monkeypatch):
    """A transposed convolution with a bias (a UNet's upsampling: the bias
    has the result's channels, not the weight's first size) is timed and
    compiled."""
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    torch.manual_seed(4)
    up, conv = torch.nn.ConvTranspose2d(16, 8, 2, stride=2), torch.nn.Conv2d(8, 8, 3, padding=1)

    def f(x):
        return conv(torch.relu(up(x))).relu()

    x = torch.randn(2, 16, 6, 6)
    with torch.no_grad():
        expected = f(x)
        result = torch.compile(f, backend=permalloy_backend, options={"target": "llvm", "fallback": "raise"})(x)
    torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-5)


def test_returned_activation_keeps_eager_strides(tmp_path):
    torch.manual_seed(1)
    conv1, conv2 = torch.nn.Conv2d(3, 8, 3, padding=1).to(DEVICE), torch.nn.Conv2d(8, 8, 1).to(DEVICE)

    def f(x):
        y = torch.relu(conv1(x))
        return conv2(y).mean((2, 3)), y

    x = torch.randn(2, 3, 9, 9, device=DEVICE)
    with torch.no_grad():
        expected = f(x)
        result = _compiled(f, tmp_path)(x)
    for got, want in zip(result, expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        assert got.stride() == want.stride()


def test_channels_last_pointwise_walks_channels(tmp_path):
    """A pointwise kernel over channels-last operands iterates them as one
    flat dimension, contiguous in memory."""

    def f(x, y):
        return torch.relu(x * 2 + y)

    x = torch.randn(2, 8, 5, 7, device=DEVICE).to(memory_format=torch.channels_last)
    y = torch.randn(2, 8, 5, 7, device=DEVICE).to(memory_format=torch.channels_last)
    result = _compiled(f, tmp_path)(x, y)
    torch.testing.assert_close(result, f(x, y))
    assert result.stride() == f(x, y).stride()
    (kernel,) = glob.glob(str(tmp_path / "graph_000" / "*kernel_pointwise*.py"))
    source = open(kernel).read()
    assert "xmask = xindex < 560" in source and "d1 = xindex\n" in source, source


def test_training_through_convolutions_matches_eager():
    torch.manual_seed(2)
    x = torch.randn(2, 3, 8, 8, device=DEVICE)
    assert_training_step_matches(lambda: Block().to(DEVICE), x, {"target": "triton"})


def _channels_last_measured_faster(monkeypatch) -> None:
    """Every convolution measures faster in channels-last memory, whatever
    this machine's library says."""

    def times(op, copies_input, device, keeps_nchw=False, trains=False):
        return LayoutTimes(2.0, 1.0)

    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", times)
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)


def _stage(tmp_path, graph: str, stage: str) -> str:
    (path,) = glob.glob(str(tmp_path / graph / f"*{stage}"))
    return open(path).read()


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_training_saves_channels_last_activations(tmp_path, monkeypatch, target):
    """A training step's forward graph returns the activations its backward
    graph reads in the channels-last memory planned for them, reports their
    strides to AOTAutograd, and the backward graph receives them so: its
    arguments are channels-last, with no copy back to NCHW, and every
    gradient and running statistic matches eager's."""
    if target == "llvm" and DEVICE != "cpu":
        pytest.skip("the LLVM target runs on CPU tensors")
    _channels_last_measured_faster(monkeypatch)
    torch._dynamo.reset()  # a Block compiled before at other sizes would make these symbolic
    torch.manual_seed(6)
    x = torch.randn(2, 3, 12, 10, device=DEVICE)
    options = {"target": target, "dump_dir": str(tmp_path), "fallback": "raise", "cache": False}
    assert_training_step_matches(lambda: Block().to(DEVICE), x, options)
    forward = _stage(tmp_path, "graph_000", "after_plan-memory.mlir")
    assert "strides [960, 1, 80, 8]> {ptensor.free_layout}" in forward, forward
    backward = _stage(tmp_path, "graph_001", "imported.mlir")
    assert "ptensor.strides = #ptensor.exprs[960, 1, 80, 8]" in backward, backward


def test_a_backward_graph_run_eagerly_takes_channels_last_activations(tmp_path, monkeypatch):
    """A backward graph that cannot be compiled runs eagerly on the saved
    activations the compiled forward returned channels-last, and the
    gradients match eager's."""
    import permalloy.tools.backend as backend

    _channels_last_measured_faster(monkeypatch)
    compile_graph = backend.compile_graph

    def forward_only(graph, options, *args, **kwargs):
        if any(n.name.startswith("tangents") for n in graph.graph.nodes if n.op == "placeholder"):
            raise RuntimeError("this backward graph is not compiled")
        return compile_graph(graph, options, *args, **kwargs)

    monkeypatch.setattr(backend, "compile_graph", forward_only)
    torch.manual_seed(7)
    x = torch.randn(2, 3, 12, 10, device=DEVICE)
    with pytest.warns(UserWarning, match="this backward graph is not compiled"):
        assert_training_step_matches(lambda: Block().to(DEVICE), x, {"target": "triton", "cache": False})

