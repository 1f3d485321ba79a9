"""
Convolutions over non-overlapping patches (stride equal to the window, no
padding, dilation or groups), and transposed ones writing such patches, run
as matrix products (`patch_convolutions`)
on both targets (Triton under its interpreter on the CPU, or on the GPU that
`PERMALLOY_TEST_DEVICE` names): patch embeddings with and without biases,
over NCHW and channels-last images, images whose sizes are not whole
multiples of the patch, volumes and sequences match eager, inference and
training (the input's gradient too); the compiled programs hold products
and no convolution, while every other convolution stays one.
"""

from __future__ import annotations

import glob
import os
import re

import pytest
import torch
import torch.nn.functional as F

from permalloy.lowering.patch_convolutions import patch_convolution, patch_convolution_backward
from permalloy.tools.backend import permalloy_backend

DEVICE = os.environ.get("PERMALLOY_TEST_DEVICE", "cpu")
aten = torch.ops.aten


pytestmark = pytest.mark.usefixtures("triton_on_test_device")


class PatchEmbedding(torch.nn.Module):
    """A vision transformer's stem: patches embedded by a convolution whose
    stride is its window, flattened into tokens, normalized."""

    def __init__(self, channels: int = 3, width: int = 16, patch: int = 4, bias: bool = True):
        super().__init__()
        self.project = torch.nn.Conv2d(channels, width, patch, stride=patch, bias=bias)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(self.project(x * 2 - 1).flatten(2).transpose(1, 2))


def _programs(tmp_path) -> str:
    return "\n".join(open(p).read() for p in glob.glob(str(tmp_path / "graph_*" / "*after_plan-memory.mlir")))


def _targets() -> list[str]:
    return ["triton"] if DEVICE != "cpu" else ["llvm", "triton"]


IMAGES = {
    "nchw": lambda: torch.randn(2, 3, 16, 20),
    "channels_last": lambda: torch.randn(2, 3, 16, 20).to(memory_format=torch.channels_last),
    "partial_patches": lambda: torch.randn(2, 3, 18, 23),
}


@pytest.mark.parametrize("target", _targets())
@pytest.mark.parametrize("image", list(IMAGES))
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_patch_embeddings_are_products(tmp_path, target, image, bias):
    torch.manual_seed(0)
    model = PatchEmbedding(bias=bias).to(DEVICE).eval()
    x = IMAGES[image]().to(DEVICE)
    compiled = torch.compile(model, backend=permalloy_backend, options={"target": target, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    program = _programs(tmp_path)
    assert "ptensor.convolution" not in program, program
    assert re.search(r"ptensor\.(addmm|mm) ", program), program


def _trained_program(make, x: torch.Tensor, input_gradient: bool, tmp_path) -> str:
    """One training step of a model `make` builds, eager and compiled for
    the Triton target on a twin: every gradient (and, with
    `input_gradient`, the input's and its strides) matches eager's; the
    compiled programs. The loss is a sum of sines: a sum of squares of
    normalized tokens would not depend on what comes before the norm."""
    model, twin = make().to(DEVICE), make().to(DEVICE)
    twin.load_state_dict(model.state_dict())
    compiled = torch.compile(twin, backend=permalloy_backend, options={"target": "triton", "dump_dir": str(tmp_path)})
    eager_x, compiled_x = x.clone().requires_grad_(input_gradient), x.clone().requires_grad_(input_gradient)
    model(eager_x).sin().sum().backward()
    compiled(compiled_x).sin().sum().backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)
    if input_gradient:
        torch.testing.assert_close(compiled_x.grad, eager_x.grad, rtol=1e-4, atol=1e-5)
        assert compiled_x.grad.stride() == eager_x.grad.stride()
    return _programs(tmp_path)


@pytest.mark.parametrize("image", list(IMAGES))
@pytest.mark.parametrize("input_gradient", [True, False], ids=["input_gradient", "weights_only"])
def test_training_through_patch_embeddings_matches_eager(tmp_path, image, input_gradient):
    """Gradients of the weight, the bias and (where asked) the image, the
    last zero past the last whole patch, match eager's; the backward graph
    has no convolution either."""
    torch.manual_seed(1)
    program = _trained_program(PatchEmbedding, IMAGES[image]().to(DEVICE), input_gradient, tmp_path)
    assert "ptensor.convolution" not in program, program


def test_volumes_and_sequences_of_patches(tmp_path):
    """3-d and 1-d patch convolutions (a video's tubelets, an audio frame's
    patches) are products too and match eager."""

    def tubelets_and_frames(volume, w3, signal, w1, b1):
        return F.conv3d(volume, w3, stride=2).relu(), F.conv1d(signal, w1, b1, stride=5).tanh()

    torch.manual_seed(2)
    inputs = [torch.randn(2, 3, 4, 6, 7), torch.randn(5, 3, 2, 2, 2), torch.randn(2, 4, 23), torch.randn(6, 4, 5), torch.randn(6)]
    inputs = [t.to(DEVICE) for t in inputs]
    compiled = torch.compile(tubelets_and_frames, backend=permalloy_backend, options={"target": "triton", "dump_dir": str(tmp_path)})
    for got, expected in zip(compiled(*inputs), tubelets_and_frames(*inputs)):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert "ptensor.convolution" not in _programs(tmp_path)


OTHER_GEOMETRIES = {
    "overlapping": dict(stride=2),
    "padded": dict(stride=3, padding=1),
    "dilated": dict(stride=3, dilation=2),
    "grouped": dict(stride=3, groups=2),
}


@pytest.mark.parametrize("geometry", list(OTHER_GEOMETRIES))
def test_other_convolutions_are_kept_whole(geometry):
    """A convolution whose patches overlap, or that pads, dilates or groups,
    is left to the library (the decompositions decline it), forward and
    backward; a 1x1 one is the layout passes' to turn into a product."""
    settings = {"stride": 1, "padding": 0, "dilation": 1, "groups": 1, **OTHER_GEOMETRIES[geometry]}
    x, w = torch.randn(2, 4, 12, 12), torch.randn(6, 4 // settings["groups"], 3, 3)
    arguments = ([settings["stride"]] * 2, [settings["padding"]] * 2, [settings["dilation"]] * 2, False, [0, 0], settings["groups"])
    assert patch_convolution(x, w, None, *arguments) is NotImplemented
    y = aten.convolution(x, w, None, *arguments)
    assert patch_convolution_backward(y, x, w, None, *arguments, [True, True, False]) is NotImplemented
    assert patch_convolution(x, torch.randn(6, 4, 1, 1), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1) is NotImplemented


def _assert_gradients_equal_the_librarys(grad, x, w, arguments, mask) -> None:
    """The decomposed backward gives the gradients `mask` asks for, each
    equal to the library's, and None for the others."""
    got = patch_convolution_backward(grad, x, w, [w.shape[1] if arguments[3] else w.shape[0]], *arguments, list(mask))
    expected = aten.convolution_backward(grad, x, w, [w.shape[1] if arguments[3] else w.shape[0]], *arguments, list(mask))
    for asked, g, e in zip(mask, got, expected):
        if asked:
            torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)
        else:
            assert g is None


@pytest.mark.parametrize("mask", [(True, True, True), (False, True, True), (True, False, False)])
def test_the_gradients_asked_for_are_given(mask):
    """The backward decomposition gives the gradients `output_mask` asks
    for, None for the others, each equal to the library's in float64."""
    torch.manual_seed(3)
    x, w = torch.randn(2, 3, 10, 9, dtype=torch.float64), torch.randn(5, 3, 3, 3, dtype=torch.float64)
    arguments = ([3, 3], [0, 0], [1, 1], False, [0, 0], 1)
    grad = torch.randn(2, 5, 3, 3, dtype=torch.float64)
    _assert_gradients_equal_the_librarys(grad, x, w, arguments, mask)


# -- transposed convolutions writing non-overlapping patches -----------------------------


class UpBlock(torch.nn.Module):
    """A U-Net's upsampling: a transposed convolution of window 2 and stride
    2, then a 3x3 convolution (which stays one) and a ReLU."""

    def __init__(self, bias: bool = True):
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(6, 4, 2, stride=2, bias=bias)
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(self.up(x * 0.5)))


UP_IMAGES = {
    "nchw": lambda: torch.randn(2, 6, 5, 7),
    "channels_last": lambda: torch.randn(2, 6, 5, 7).to(memory_format=torch.channels_last),
}


@pytest.mark.parametrize("target", _targets())
@pytest.mark.parametrize("image", list(UP_IMAGES))
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_transposed_patch_convolutions_are_products(tmp_path, target, image, bias):
    torch.manual_seed(4)
    model = UpBlock(bias).to(DEVICE).eval()
    x = UP_IMAGES[image]().to(DEVICE)
    compiled = torch.compile(model, backend=permalloy_backend, options={"target": target, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    program = _programs(tmp_path)
    assert program.count("ptensor.convolution ") == 1, program  # the 3x3 one
    assert not [line for line in program.splitlines() if "ptensor.convolution" in line and "transposed" in line]
    assert re.search(r"ptensor\.(addmm|mm) ", program), program


@pytest.mark.parametrize("image", list(UP_IMAGES))
def test_training_through_transposed_patch_convolutions_matches_eager(tmp_path, image):
    torch.manual_seed(5)
    program = _trained_program(UpBlock, UP_IMAGES[image]().to(DEVICE), True, tmp_path)
    assert not [line for line in program.splitlines() if "ptensor.convolution" in line and "transposed" in line], program


@pytest.mark.parametrize("mask", [(True, True, True), (False, True, False), (True, False, True)])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_transposed_gradients_equal_the_librarys(mask, rank):
    torch.manual_seed(6)
    window = [2, 3, 2][:rank]
    x = torch.randn(2, 3, *[4, 3, 2][:rank], dtype=torch.float64)
    w = torch.randn(3, 5, *window, dtype=torch.float64)
    arguments = (window, [0] * rank, [1] * rank, True, [0] * rank, 1)
    y = patch_convolution(x, w, None, *arguments)
    torch.testing.assert_close(y, aten.convolution(x, w, None, *arguments), rtol=1e-12, atol=1e-12)
    grad = torch.randn_like(y)
    _assert_gradients_equal_the_librarys(grad, x, w, arguments, mask)


def test_transposed_convolutions_with_output_padding_are_kept_whole():
    x, w = torch.randn(2, 4, 5, 5), torch.randn(4, 3, 2, 2)
    assert patch_convolution(x, w, None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1) is NotImplemented
    assert patch_convolution(x, w, None, [2, 2], [1, 1], [1, 1], True, [0, 0], 1) is NotImplemented
    assert patch_convolution(x, w, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1) is NotImplemented
