"""
Depthwise convolutions' weight gradients computed by permalloy's Triton
kernel (`choose-depthwise-weight-gradients`, the Triton target's
`depthwise_weight_gradients` option) on the Triton target (its interpreter
on the CPU, or the GPU that `PERMALLOY_TEST_DEVICE` names): the kernel
matches torch's gradient over windows, strides, dilations, paddings,
layouts, types and every candidate channel block, in torch's layout for it;
training steps of compiled blocks whose backward it runs match eager; the
default measured choice keeps the library without a GPU to time on, and
`library` keeps it everywhere.
"""

from __future__ import annotations

import pytest
import torch
from conftest import TEST_DEVICE, assert_training_step_matches
from test_depthwise_kernels import GEOMETRIES, ConvNeXtBlock, InvertedResidual, programs, spy

from permalloy.tools.backend import permalloy_backend


def _kernel():
    """The kernel's module, imported once Triton's interpreter is on where
    it runs (`triton_device`): its kernel is made for the mode Triton is in."""
    from permalloy.targets.triton import depthwise_weight_gradient

    return depthwise_weight_gradient


def _tensors(geometry, channels_last: bool, dtype: torch.dtype, device: str):
    """An input, a weight and an output gradient for `geometry`."""
    kernel = _kernel()
    channels, height, width, window, stride, padding, dilation = geometry
    window_geometry = kernel.Geometry([stride] * 2, [padding] * 2, [dilation] * 2)
    torch.manual_seed(0)
    x = torch.randn(3, channels, height, width, dtype=dtype)
    weight = torch.randn(channels, 1, window, window, dtype=dtype)
    sizes = [window_geometry.output_size(d, x.size(2 + d), window) for d in range(2)]
    grad = torch.randn(3, channels, *sizes, dtype=dtype)
    if channels_last:
        x, grad = (t.contiguous(memory_format=torch.channels_last) for t in (x, grad))
    return grad.to(device), x.to(device), weight.to(device), window_geometry


def _memory(tensor: torch.Tensor) -> tuple:
    """Where a tensor's elements lie: its sizes and strides, without the
    strides of dimensions of one element (torch's gradient in half precision
    on the CPU strides the weight's filter dimension one way, elsewhere the
    other)."""
    return tuple((size, stride) for size, stride in zip(tensor.shape, tensor.stride()) if size != 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_kernel_matches_torch(triton_device, backend_check, geometry, channels_last, dtype):
    kernel = _kernel()
    grad, x, weight, window = _tensors(geometry, channels_last, dtype, triton_device)
    # float64 on the CPU: the exact sum the kernel's float32 accumulation approximates
    expected = kernel.library_weight_gradient(grad.cpu().double(), x.cpu().double(), weight.cpu().double(), window)
    reference = kernel.library_weight_gradient(grad, x, weight, window)
    for config in kernel.candidate_configs(x):
        out = kernel.depthwise_weight_gradient(grad, x, weight, window, config)
        assert out.dtype == dtype and _memory(out) == _memory(reference), config
        backend_check.assert_tensor_matches(out.cpu().flatten(), expected.to(dtype).flatten(), str(config))


def test_64_bit_pixel_indices_give_the_same_gradient(triton_device, backend_check, monkeypatch):
    """Past `WIDE_PIXELS` pixels the kernel indexes them in 64 bits (here
    from the first pixel): the same gradient."""
    kernel = _kernel()
    grad, x, weight, window = _tensors(GEOMETRIES[2], True, torch.float32, triton_device)
    narrow = kernel.depthwise_weight_gradient(grad, x, weight, window)
    monkeypatch.setattr(kernel, "WIDE_PIXELS", 0)
    wide = kernel.depthwise_weight_gradient(grad, x, weight, window)
    backend_check.assert_tensor_matches(wide.cpu().flatten(), narrow.cpu().flatten(), "64-bit pixels")


def test_kernel_refuses_what_it_does_not_take():
    kernel = _kernel()
    same = kernel.Geometry([1, 1], [1, 1], [1, 1])
    x, weight, grad = torch.randn(2, 8, 5, 5), torch.randn(8, 1, 3, 3), torch.randn(2, 8, 5, 5)
    assert kernel.supported(grad, x, weight, same)
    assert not kernel.supported(grad, x, torch.randn(4, 2, 3, 3), same)  # two channels a group
    assert not kernel.supported(grad[:, :, :4], x, weight, same)  # not the result's sizes
    assert not kernel.supported(grad.half(), x, weight, same)  # another type
    assert not kernel.supported(grad, x, weight, kernel.Geometry([0, 1], [1, 1], [1, 1]))  # stride 0
    assert kernel.depthwise_weight_gradient(grad, x, torch.randn(4, 2, 3, 3), same) is None


def test_fastest_config_keeps_the_library_unless_a_block_beats_it(triton_device):
    kernel = _kernel()
    grad, x, weight, window = _tensors(GEOMETRIES[0], True, torch.float32, triton_device)
    timings = iter([1.0, 3.0, 0.5, 2.0, 0.7])  # the library, then the four blocks
    assert kernel.fastest_config(grad, x, weight, window, lambda call: next(timings)) == kernel.CHANNELS_LAST_CONFIGS[1]
    assert kernel.fastest_config(grad, x, weight, window, lambda call: 1.0) is None  # as fast: the library stays


def _spy(monkeypatch) -> list[bool]:
    return spy(monkeypatch, _kernel(), "depthwise_weight_gradient")


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
@pytest.mark.parametrize("block", [ConvNeXtBlock, InvertedResidual], ids=lambda b: b.__name__)
def test_training_through_the_kernel_matches_eager(fresh_backend, triton_device, monkeypatch, tmp_path, block, channels_last):
    """The backward graph's depthwise weight gradient is the kernel's (with
    a bias, and with batch norm after the convolution); every gradient and
    the batch-norm statistics match eager."""
    ran = _spy(monkeypatch)
    torch.manual_seed(3)
    channels = 8 if block is ConvNeXtBlock else 6
    x = torch.randn(2, channels, 9, 9, device=triton_device)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    options = {"target": "triton", "dump_dir": str(tmp_path), "depthwise_weight_gradients": "triton"}
    assert_training_step_matches(lambda: block().to(triton_device), x, options)
    assert ran == [True]
    assert "depthwise_weight_block" in programs(tmp_path)


@pytest.mark.parametrize(
    "options",
    [
        {"depthwise_weight_gradients": "library"},
        pytest.param({}, marks=pytest.mark.skipif(TEST_DEVICE == "cuda", reason="on a GPU the choice is timed")),
    ],
    ids=["library", "measured_without_a_gpu"],
)
def test_the_library_keeps_them(fresh_backend, triton_device, monkeypatch, tmp_path, options):
    ran = _spy(monkeypatch)
    x = torch.randn(2, 8, 9, 9, device=triton_device)
    options = {"target": "triton", "dump_dir": str(tmp_path), **options}
    assert_training_step_matches(lambda: ConvNeXtBlock().to(triton_device), x, options)
    assert ran == [] and "depthwise_weight_block" not in programs(tmp_path)


def test_a_bad_value_lists_the_valid_ones(fresh_backend, triton_device, tmp_path):
    model = ConvNeXtBlock().to(triton_device)
    options = {"target": "triton", "depthwise_weight_gradients": "cudnn"}
    compiled = torch.compile(model, backend=permalloy_backend, options=options)
    with pytest.raises(Exception, match="measured.*library.*triton"):
        compiled(torch.randn(2, 8, 9, 9, device=triton_device))


def test_an_output_gradient_that_is_the_input(fresh_backend, triton_device, monkeypatch):
    """A backward whose output gradient is the input itself (one value the
    library call takes once) is compiled, by the kernel, and matches torch."""
    ran = _spy(monkeypatch)
    backward = torch.ops.aten.convolution_backward.default

    def weight_gradient(x, w):
        return backward(x, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 8, [False, True, False])[1]

    x, w = torch.randn(2, 8, 6, 6, device=triton_device), torch.randn(8, 1, 3, 3, device=triton_device)
    options = {"target": "triton", "fallback": "raise", "depthwise_weight_gradients": "triton"}
    compiled = torch.compile(weight_gradient, backend=permalloy_backend, options=options, fullgraph=True)
    torch.testing.assert_close(compiled(x, w), weight_gradient(x, w), rtol=1e-4, atol=1e-5)
    assert ran == [True]
