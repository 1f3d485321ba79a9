"""
Pooling's decompositions (`lowering/pooling.py`) run eagerly against torch's own
kernels, over a sweep of geometries: windows, strides, padding, dilation,
ceil_mode, count_include_pad, divisor_override, 1 to 3 pooled dimensions, with
NaN, infinities and ties in the input.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from permalloy.lowering.pooling import MAX_UNROLLED_WINDOW, avg_pool, max_pool_with_indices, output_size

aten = torch.ops.aten


def _input(shape, dtype=torch.float32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator)
    # Ties: rounding to quarters makes equal values within windows common.
    return (x * 4).round().div(4).to(dtype)


MAX_GEOMETRIES = [
    # kernel, stride, padding, dilation, ceil_mode
    (2, 2, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),
    (3, 1, 1, 1, False),
    (3, 3, 0, 1, True),
    (2, 1, 1, 2, False),
    (3, 2, 1, 2, True),
    ((2, 3), (1, 2), (1, 0), (1, 1), True),
    (5, 3, 2, 1, True),
]


@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "ceil_mode"), MAX_GEOMETRIES)
@pytest.mark.parametrize("size", [(2, 3, 7, 9), (1, 2, 5, 5)])
def test_max_pool2d_matches_torch(kernel, stride, padding, dilation, ceil_mode, size):
    x = _input(size)
    x[0, 0, 1, 1] = float("nan")
    x[0, 1, :3, :3] = float("-inf")
    x[-1, -1, 2, :] = float("inf")
    args = (x, [kernel] if isinstance(kernel, int) else list(kernel), stride, padding, dilation, ceil_mode)
    values, indices = max_pool_with_indices(*args, n_dim=2)
    expected_values, expected_indices = aten.max_pool2d_with_indices.default(*args)
    torch.testing.assert_close(values, expected_values, equal_nan=True, rtol=0, atol=0)
    assert torch.equal(indices, expected_indices)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int32, torch.int64])
def test_max_pool2d_of_other_types(dtype):
    x = _input((2, 3, 6, 6), torch.float32) * 8
    x = x.to(dtype)
    if not dtype.is_floating_point:
        x[0, 0, :3, :3] = torch.iinfo(dtype).min
    values, indices = max_pool_with_indices(x, [3], [2], [1], [1], True, n_dim=2)
    expected_values, expected_indices = aten.max_pool2d_with_indices.default(x, [3], [2], [1], [1], True)
    assert torch.equal(values, expected_values)
    assert torch.equal(indices, expected_indices)


def test_max_pool3d_matches_torch():
    x = _input((2, 2, 5, 6, 7))
    x[1, 1, 2, 2, 2] = float("nan")
    args = (x, [2, 3, 2], [2, 2, 1], [1, 1, 0], [1, 1, 2], True)
    values, indices = max_pool_with_indices(*args, n_dim=3)
    expected_values, expected_indices = aten.max_pool3d_with_indices.default(*args)
    torch.testing.assert_close(values, expected_values, equal_nan=True, rtol=0, atol=0)
    assert torch.equal(indices, expected_indices)


def test_large_windows_and_bool_inputs_stay_with_torch():
    x = _input((1, 2, 8, 8))
    assert max_pool_with_indices(x, [6], [6], [0], [1], False, n_dim=2) is NotImplemented
    assert max_pool_with_indices(x > 0, [2], [2], [0], [1], False, n_dim=2) is NotImplemented
    assert 6 * 6 > MAX_UNROLLED_WINDOW


AVG_GEOMETRIES = list(
    itertools.product(
        [(2, 2, 0), (3, 2, 1), (3, 1, 1), (3, 3, 1), ((2, 3), (2, 1), (1, 1))],  # kernel, stride, padding
        [False, True],  # ceil_mode
        [False, True],  # count_include_pad
        [None, 5],  # divisor_override
    )
)


@pytest.mark.parametrize(("geometry", "ceil_mode", "count_include_pad", "divisor"), AVG_GEOMETRIES)
def test_avg_pool2d_matches_torch(geometry, ceil_mode, count_include_pad, divisor):
    kernel, stride, padding = geometry
    kernel = [kernel] if isinstance(kernel, int) else list(kernel)
    x = _input((2, 3, 7, 8))
    args = (x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    torch.testing.assert_close(avg_pool(*args, n_dim=2), aten.avg_pool2d.default(*args), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_avg_pool2d_of_half_precision_sums_in_float32(dtype):
    x = _input((2, 3, 9, 9), dtype)
    args = (x, [3], [2], [1], True, False, None)
    torch.testing.assert_close(avg_pool(*args, n_dim=2), aten.avg_pool2d.default(*args))


def test_avg_pool3d_matches_torch():
    x = _input((2, 2, 5, 6, 7))
    args = (x, [2, 3, 2], [1, 2, 2], [1, 1, 0], True, False, None)
    torch.testing.assert_close(avg_pool(*args, n_dim=3), aten.avg_pool3d.default(*args), rtol=1e-6, atol=1e-6)


def test_global_average_pooling_is_a_mean_over_tiles():
    x = _input((2, 3, 14, 14))
    args = (x, [7], [7], [0], False, True, None)
    torch.testing.assert_close(avg_pool(*args, n_dim=2), aten.avg_pool2d.default(*args), rtol=1e-6, atol=1e-6)
    assert avg_pool(x, [6], [4], [0], False, True, None, n_dim=2) is NotImplemented


@pytest.mark.parametrize("size", range(1, 12))
def test_output_size_is_torchs(size):
    for kernel, stride, padding, dilation, ceil_mode in itertools.product([1, 2, 3], [1, 2, 3], [0, 1], [1, 2], [False, True]):
        if padding * 2 > kernel or (kernel - 1) * dilation + 1 > size + 2 * padding:
            continue
        expected = torch._meta_registrations.pooling_output_shape(size, kernel, padding, stride, dilation, ceil_mode)
        assert output_size(size, kernel, stride, padding, dilation, ceil_mode) == expected


@pytest.mark.parametrize(
    "layout",
    ["contiguous", "channels_last", "permuted", "transposed_3d"],
)
def test_outputs_are_laid_out_as_torchs(layout):
    x = _input((2, 8, 9, 10))
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    elif layout == "permuted":
        x = x.permute(0, 3, 2, 1)
    elif layout == "transposed_3d":
        x = x[0].transpose(0, 2)
    values, indices = max_pool_with_indices(x, [3], [2], [1], [1], False, n_dim=2)
    expected_values, expected_indices = aten.max_pool2d_with_indices.default(x, [3], [2], [1], [1], False)
    assert values.stride() == expected_values.stride()
    assert indices.stride() == expected_indices.stride()
    average = avg_pool(x, [3], [2], [1], False, True, None, n_dim=2)
    assert average.stride() == aten.avg_pool2d.default(x, [3], [2], [1], False, True, None).stride()
    tiled = avg_pool(x, [3], [3], [0], False, True, None, n_dim=2)
    assert tiled.stride() == aten.avg_pool2d.default(x, [3], [3], [0], False, True, None).stride()


@pytest.mark.parametrize("kernel", [[7], [9], [1280], [8, 7]])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_a_window_over_the_whole_input_is_a_mean(kernel, ceil_mode):
    """EfficientNet pools with a window larger than its input and ceil_mode."""
    x = _input((2, 3, 7, 7))
    args = (x, kernel, kernel, [0], ceil_mode, True, None)
    try:
        expected = aten.avg_pool2d.default(*args)
    except RuntimeError:
        return  # eager refuses a window larger than the input without ceil_mode
    actual = avg_pool(*args, n_dim=2)
    assert actual is not NotImplemented
    torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6)
