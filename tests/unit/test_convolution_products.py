"""The product a pointwise convolution is in each layout
(`analysis.convolution_products`), and the timed call that runs it on torch
tensors (`passes.convolution_layouts`), checked against torch's convolution."""

from __future__ import annotations

import pytest
import sympy
import torch

from permalloy.analysis.convolution_products import Layout, is_pointwise_geometry, product_views
from permalloy.passes.convolution_layouts import _product_call


def _layout(tensor: torch.Tensor) -> Layout:
    return Layout(tuple(tensor.shape), tensor.stride())


def test_channels_last_merges_rows():
    x = torch.empty(2, 8, 5, 5).to(memory_format=torch.channels_last)
    w = torch.empty(16, 8, 1, 1)
    y = torch.empty(2, 16, 5, 5).to(memory_format=torch.channels_last)
    views = product_views(_layout(x), _layout(w), _layout(y))
    assert views is not None and views.kind == "rows"
    assert views.input == Layout((50, 8), (8, 1))
    assert views.weight == Layout((8, 16), (1, 8))
    assert views.result == Layout((50, 16), (16, 1))


def test_nchw_merges_pixels_and_one_pixel_merges_rows():
    x, w, y = torch.empty(2, 8, 5, 5), torch.empty(16, 8, 1, 1), torch.empty(2, 16, 5, 5)
    views = product_views(_layout(x), _layout(w), _layout(y))
    assert views is not None and views.kind == "batched"
    assert views.weight == Layout((2, 16, 8), (0, 8, 1))
    assert views.input == Layout((2, 8, 25), (200, 25, 1))
    # images of one pixel: the batch alone is the rows, in NCHW memory too
    one = product_views(_layout(torch.empty(4, 8, 1, 1)), _layout(w), _layout(torch.empty(4, 16, 1, 1)), biased=True)
    assert one is not None and one.kind == "rows" and one.input == Layout((4, 8), (8, 1))


def test_no_view_where_nothing_merges_or_a_bias_meets_nchw():
    sliced = torch.empty(2, 8, 6, 6).to(memory_format=torch.channels_last)[:, :, :, :5]
    w = torch.empty(8, 8, 1, 1)
    assert product_views(_layout(sliced), _layout(w), _layout(torch.empty(2, 8, 6, 5))) is None
    x, y = torch.empty(2, 8, 5, 5), torch.empty(2, 8, 5, 5)
    assert product_views(_layout(x), _layout(w), _layout(y), biased=True) is None


def test_symbolic_sizes_merge():
    s = sympy.Symbol("s0", positive=True, integer=True)
    x = Layout((2, 8, s, s), (8 * s * s, 1, 8 * s, 8))
    y = Layout((2, 4, s, s), (4 * s * s, 1, 4 * s, 4))
    views = product_views(x, Layout((4, 8, 1, 1), (8, 1, 1, 1)), y)
    assert views is not None and views.kind == "rows"
    assert sympy.simplify(views.input.sizes[0] - 2 * s * s) == 0


def test_pointwise_geometry():
    assert is_pointwise_geometry([[1, 1], [0, 0], [1, 1], False, [0, 0], 1], (16, 8, 1, 1))
    assert not is_pointwise_geometry([[2, 2], [0, 0], [1, 1], False, [0, 0], 1], (16, 8, 1, 1))
    assert not is_pointwise_geometry([[1, 1], [0, 0], [1, 1], False, [0, 0], 2], (16, 4, 1, 1))
    assert not is_pointwise_geometry([[1, 1], [1, 1], [1, 1], False, [0, 0], 1], (16, 8, 3, 3))
    assert not is_pointwise_geometry([[1, 1], [0, 0], [1, 1], True, [0, 0], 1], (8, 16, 1, 1))


@pytest.mark.parametrize("source_last", [False, True])
@pytest.mark.parametrize("result_last", [False, True])
@pytest.mark.parametrize("biased", [False, True])
def test_product_call_computes_the_convolution(source_last, result_last, biased):
    torch.manual_seed(0)
    x = torch.randn(3, 8, 5, 4)
    if source_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.randn(6, 8, 1, 1)
    bias = torch.randn(6) if biased else None
    out = torch.empty(3, 6, 5, 4)
    if result_last:
        out = out.contiguous(memory_format=torch.channels_last)
    call = _product_call(x, w, bias, out)
    if biased and not (source_last and result_last):
        assert call is None
        return
    assert call is not None
    call()
    torch.testing.assert_close(out, torch.conv2d(x, w, bias), rtol=1e-5, atol=1e-5)


def _random_layout(generator: torch.Generator, sizes: tuple[int, ...]) -> torch.Tensor:
    """A tensor of `sizes` in a random dimension order of its memory, perhaps
    a slice of a larger one along its last dimension."""
    order = torch.randperm(len(sizes), generator=generator).tolist()
    widened = list(sizes)
    sliced = bool(torch.randint(0, 2, (1,), generator=generator))
    if sliced:
        widened[-1] += 2
    base = torch.randn([widened[i] for i in order], generator=generator).permute(*[order.index(i) for i in range(len(sizes))])
    return base[..., : sizes[-1]] if sliced else base


@pytest.mark.parametrize("seed", range(40))
def test_product_call_matches_the_convolution_in_random_layouts(seed):
    """Random sizes (size-1 dimensions included), memory orders and slices,
    1-d to 3-d: wherever the layouts give a product, it computes the
    convolution; where they give none, it says so (None)."""
    generator = torch.Generator().manual_seed(seed)

    def size() -> int:
        return int(torch.randint(1, 5, (1,), generator=generator))

    spatial = tuple(size() for _ in range(int(torch.randint(1, 4, (1,), generator=generator))))
    batch, channels, outputs = size(), size() + 1, size() + 1
    x = _random_layout(generator, (batch, channels, *spatial))
    weight = _random_layout(generator, (outputs, channels, *([1] * len(spatial))))
    out = _random_layout(generator, (batch, outputs, *spatial))
    biased = bool(torch.randint(0, 2, (1,), generator=generator))
    bias = torch.randn(outputs, generator=generator) if biased else None
    call = _product_call(x, weight, bias, out)
    views = product_views(_layout(x), _layout(weight), _layout(out), biased=biased)
    assert (call is None) == (views is None)
    if call is None:
        return
    call()
    convolve = {1: torch.conv1d, 2: torch.conv2d, 3: torch.conv3d}[len(spatial)]
    torch.testing.assert_close(out, convolve(x, weight, bias), rtol=1e-5, atol=1e-5)
