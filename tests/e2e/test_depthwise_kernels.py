"""
Depthwise convolutions run by permalloy's depthwise Triton kernel
(`choose-depthwise-kernels`, the Triton target's `depthwise_convolutions`
option) on the Triton target (its interpreter on the CPU, or the GPU that
`PERMALLOY_TEST_DEVICE` names): the kernel matches torch's convolution over
windows, strides, dilations, paddings, biases, layouts, types and every
candidate tile, writing torch's result layout; compiled blocks whose
depthwise convolutions it runs match eager, inference and training; the
default keeps the library, and so does the measured choice where the
library is as fast, or with no GPU to time on.
"""

from __future__ import annotations

import glob

import pytest
import torch
import torch.nn.functional as F
from conftest import TEST_DEVICE, assert_training_step_matches

from permalloy.passes import choose_depthwise_kernels, plan_layouts
from permalloy.passes.convolution_layouts import LayoutTimes
from permalloy.passes.plan_layouts import CONVOLUTION_CHOICES
from permalloy.tools.backend import permalloy_backend

def _kernel():
    """The kernel's module, imported once Triton's interpreter is on where
    it runs (`triton_device`): its kernel is made for the mode Triton is in."""
    from permalloy.targets.triton import depthwise_convolution

    return depthwise_convolution


GEOMETRIES = [  # channels, height, width, window, stride, padding, dilation
    (5, 9, 11, 3, 1, 1, 1),
    (12, 10, 7, 7, 1, 3, 1),
    (9, 9, 9, 5, 2, 2, 1),
    (3, 8, 8, 3, 2, 2, 2),
    (130, 6, 5, 3, 1, 0, 1),
]


def _tensors(geometry, channels_last: bool, dtype: torch.dtype, biased: bool, device: str):
    channels, height, width, window = geometry[:4]
    torch.manual_seed(0)
    x = torch.randn(2, channels, height, width, dtype=dtype)
    weight = torch.randn(channels, 1, window, window, dtype=dtype)
    bias = torch.randn(channels, dtype=dtype) if biased else None
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return x.to(device), weight.to(device), None if bias is None else bias.to(device)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("biased", [False, True], ids=["no_bias", "bias"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_kernel_matches_torch(triton_device, backend_check, geometry, biased, channels_last, dtype):
    kernel = _kernel()
    x, weight, bias = _tensors(geometry, channels_last, dtype, biased, triton_device)
    stride, padding, dilation = ([g, g] for g in geometry[4:])
    window = kernel.Geometry(stride, padding, dilation)
    expected = F.conv2d(x.cpu().float(), weight.cpu().float(), None if bias is None else bias.cpu().float(),
                        stride, padding, dilation, x.size(1))  # fmt: skip
    reference = torch.convolution(x, weight, bias, stride, padding, dilation, False, [0, 0], x.size(1))
    for config in kernel.candidate_configs(x):
        out = kernel.depthwise_convolution(x, weight, bias, window, config)
        assert out.stride() == reference.stride(), config
        backend_check.assert_tensor_matches(out.cpu().contiguous(), expected.to(dtype).contiguous(), str(config))


def test_kernel_writes_into_a_given_result(triton_device):
    kernel = _kernel()
    x, weight, bias = _tensors(GEOMETRIES[1], True, torch.float32, True, triton_device)
    out = torch.full((2, 12, 10, 7), float("nan"), device=triton_device)
    kernel.depthwise_convolution(x, weight, bias, kernel.Geometry([1, 1], [3, 3], [1, 1]), out=out)
    expected = F.conv2d(x.cpu(), weight.cpu(), bias.cpu(), 1, 3, 1, 12)
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-5)


def test_kernel_refuses_what_it_does_not_take():
    kernel = _kernel()
    x, same, unpadded = torch.randn(2, 8, 5, 5), kernel.Geometry([1, 1], [1, 1], [1, 1]), kernel.Geometry([1, 1], [0, 0], [1, 1])
    assert not kernel.supported(x, torch.randn(4, 2, 3, 3), None, same)  # two channels a group
    assert not kernel.supported(x, torch.randn(8, 1, 10, 10), None, kernel.Geometry([1, 1], [5, 5], [1, 1]))  # 10x10
    assert not kernel.supported(x, torch.randn(8, 1, 7, 7), None, unpadded)  # an empty result
    assert not kernel.supported(x.double(), torch.randn(8, 1, 3, 3).double(), None, same)
    assert not kernel.supported(x, torch.randn(8, 1, 3, 3), None, kernel.Geometry([0, 1], [1, 1], [1, 1]))  # stride 0
    assert not kernel.supported(x[:, :, :, :, None], torch.randn(8, 1, 3, 3, 1), None, kernel.Geometry([1] * 3, [1] * 3, [1] * 3))
    assert kernel.depthwise_convolution(x, torch.randn(4, 2, 3, 3), None, same) is None


def test_fastest_config_keeps_the_library_unless_a_tile_beats_it(triton_device):
    kernel = _kernel()
    x, weight, bias = _tensors(GEOMETRIES[0], True, torch.float32, True, triton_device)
    arguments = (x, weight, bias, kernel.Geometry([1, 1], [1, 1], [1, 1]))
    timings = iter([1.0, 3.0, 0.5, 2.0, 0.7])  # the library, then the four tiles
    assert kernel.fastest_config(*arguments, lambda call: next(timings)) == kernel.CHANNELS_LAST_CONFIGS[1]
    assert kernel.fastest_config(*arguments, lambda call: 1.0) is None  # as fast: the library stays


class ConvNeXtBlock(torch.nn.Module):
    """A 7x7 depthwise convolution with a bias, a layer norm over channels,
    an inverted bottleneck with GELU, and a residual."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.depthwise = torch.nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = torch.nn.LayerNorm(channels)
        self.up = torch.nn.Linear(channels, 4 * channels)
        self.down = torch.nn.Linear(4 * channels, channels)

    def forward(self, x):
        y = self.depthwise(x).permute(0, 2, 3, 1)
        y = self.down(F.gelu(self.up(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class InvertedResidual(torch.nn.Module):
    """An expansion, a strided 5x5 depthwise convolution with batch norm and
    SiLU, a projection."""

    def __init__(self, channels: int = 6, expanded: int = 12):
        super().__init__()
        self.expand = torch.nn.Conv2d(channels, expanded, 1, bias=False)
        self.depthwise = torch.nn.Conv2d(expanded, expanded, 5, stride=2, padding=2, groups=expanded, bias=False)
        self.bn = torch.nn.BatchNorm2d(expanded)
        self.project = torch.nn.Conv2d(expanded, channels, 1)

    def forward(self, x):
        return self.project(F.silu(self.bn(self.depthwise(F.relu(self.expand(x))))))


def _plan(monkeypatch, channels_last: bool) -> None:
    """Layouts as if measured (channels-last or NCHW), and the kernel's first
    tile measured fastest for every depthwise convolution it takes."""
    times = LayoutTimes(2.0, 1.0) if channels_last else LayoutTimes(1.0, 2.0)
    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", lambda op, copies_input, device, keeps_nchw=False, trains=False: times)
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    monkeypatch.setattr(choose_depthwise_kernels, "measured_tile", lambda op, device: choose_depthwise_kernels.first_tile(op))


def spy(monkeypatch, module=None, name: str = "run_depthwise") -> list[bool]:
    """Whether each call of the kernel function `module.name` (by default
    the depthwise convolution's run by the host program) computed its result, in order."""
    module = module or _kernel()
    ran, original = [], getattr(module, name)

    def spied(*args, **kwargs):
        out = original(*args, **kwargs)
        ran.append(out is not None)
        return out

    monkeypatch.setattr(module, name, spied)
    return ran


def programs(tmp_path) -> str:
    """The programs a compile dumped after memory planning."""
    return "\n".join(open(p).read() for p in glob.glob(str(tmp_path / "*" / "*after_plan-memory.mlir")))


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("block", [ConvNeXtBlock, InvertedResidual], ids=lambda b: b.__name__)
def test_compiled_blocks_run_the_kernel_and_match_eager(fresh_backend, triton_device, monkeypatch, tmp_path, block, channels_last):
    _plan(monkeypatch, channels_last)
    ran = spy(monkeypatch)
    torch.manual_seed(1)
    model = block().eval().to(triton_device)
    x = torch.randn(2, model.depthwise.in_channels // (2 if block is InvertedResidual else 1), 9, 9, device=triton_device)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    options = {"target": "triton", "dump_dir": str(tmp_path), "depthwise_convolutions": "measured"}
    compiled = torch.compile(model, backend=permalloy_backend, options=options)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert ran == [True]
    assert "depthwise_tile" in programs(tmp_path)


def test_training_through_the_kernel_matches_eager(fresh_backend, triton_device, monkeypatch, tmp_path):
    """The forward graph's depthwise convolution is the kernel's; the
    backward graph's gradients stay the library's; gradients and batch-norm
    statistics match eager."""
    _plan(monkeypatch, channels_last=True)
    ran = spy(monkeypatch)
    torch.manual_seed(2)
    x = torch.randn(2, 6, 8, 8, device=triton_device).contiguous(memory_format=torch.channels_last)
    options = {"target": "triton", "dump_dir": str(tmp_path), "depthwise_convolutions": "triton"}
    assert_training_step_matches(lambda: InvertedResidual().to(triton_device), x, options)
    assert ran == [True]


def _compile_block(tmp_path, device: str, **options):
    """A ConvNeXt block compiled for Triton with `options`, checked against eager."""
    model = ConvNeXtBlock().eval().to(device)
    x = torch.randn(2, 8, 9, 9, device=device)
    options = {"target": "triton", "dump_dir": str(tmp_path), **options}
    compiled = torch.compile(model, backend=permalloy_backend, options=options)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("options", [{}, {"depthwise_convolutions": "library"}], ids=["default", "library"])
def test_the_library_runs_them_by_default(fresh_backend, triton_device, monkeypatch, tmp_path, options):
    ran = spy(monkeypatch)
    _compile_block(tmp_path, triton_device, **options)
    assert ran == [] and "depthwise_tile" not in programs(tmp_path)


def test_the_triton_option_runs_every_one_the_kernel_takes(fresh_backend, triton_device, monkeypatch, tmp_path):
    ran = spy(monkeypatch)
    _compile_block(tmp_path, triton_device, depthwise_convolutions="triton")
    assert ran == [True] and "depthwise_tile" in programs(tmp_path)


@pytest.mark.skipif(TEST_DEVICE == "cuda", reason="on a GPU the choice is timed")
def test_measured_choice_keeps_the_library_without_a_gpu(fresh_backend, triton_device, monkeypatch, tmp_path):
    ran = spy(monkeypatch)
    _compile_block(tmp_path, triton_device, depthwise_convolutions="measured")
    assert ran == [] and "depthwise_tile" not in programs(tmp_path)


def test_a_bad_value_lists_the_valid_ones(fresh_backend, triton_device, tmp_path):
    with pytest.raises(Exception, match="library.*measured.*triton"):
        _compile_block(tmp_path, triton_device, depthwise_convolutions="cudnn")
