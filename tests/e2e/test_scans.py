"""
Scans (cumsum, cumprod, logcumsumexp, cummax and cummin) through
`torch.compile(fn, backend="permalloy")` on both targets, against eager:
every op and dtype, along every dimension of 2-D and 3-D inputs, contiguous
and permuted (a transposed argument, a permute inside the graph), with ties,
NaN and infinities where the dtype has them; the `dtype` argument, 0-d and
empty tensors, symbolic sizes, rows longer than one block, scans fused with
their producers and consumers, and a decoder's position ids. Each function
compiles into one graph with no fallback op (`backend_check`, conftest.py).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

import pytest
import torch
from conftest import to_test_device, xfail_on_gpu

import permalloy

pytestmark = pytest.mark.usefixtures("fresh_backend")

f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
i32, i64, u8, b8 = torch.int32, torch.int64, torch.uint8, torch.bool
FLOATS = (f32, f64, f16, bf16)
ALL = (*FLOATS, i32, i64, b8, u8)

OPS: dict[str, tuple[Callable, tuple[torch.dtype, ...]]] = {
    "cumsum": (torch.cumsum, ALL),
    "cumprod": (torch.cumprod, ALL),
    "logcumsumexp": (torch.logcumsumexp, FLOATS),
    "cummax": (torch.cummax, ALL),
    "cummin": (torch.cummin, ALL),
}
"""Each op and the input dtypes torch takes for it."""


def random_values(op: str, dtype: torch.dtype, shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """Inputs for `op`: products near 1 (no overflow over a row), small whole
    numbers with ties for the extremes, NaN and infinities among floats."""
    if dtype == b8:
        return torch.rand(shape, generator=g) < 0.5
    if not dtype.is_floating_point:
        low, high = (0, 4) if dtype == u8 or op == "cumprod" else (-3, 4)
        values = torch.randint(low, high, shape, generator=g)
        if op == "cumprod":
            values = torch.where(values == 0, 1, values) * torch.where(torch.rand(shape, generator=g) < 0.3, -1, 1)
            values = values.abs() if dtype == u8 else values
            values = torch.where(torch.rand(shape, generator=g) < 0.8, values.sign(), values)
        return values.to(dtype)
    if op == "cumprod":
        values = 0.9 + 0.2 * torch.rand(shape, generator=g, dtype=f64)
        values = values * torch.where(torch.rand(shape, generator=g) < 0.2, -1.0, 1.0).double()
    elif op in ("cummax", "cummin"):
        values = torch.randint(-3, 4, shape, generator=g).double()
    else:
        values = torch.randn(shape, generator=g, dtype=f64)
    flat = values.view(-1)
    flat[5] = math.nan
    flat[flat.numel() // 2] = -math.inf if op != "cumprod" else math.inf
    if op in ("cummax", "cummin", "logcumsumexp"):
        flat[-3] = math.inf
    return values.to(dtype)


def every_dim(scan: Callable) -> Callable:
    """A function of a 2-D, a transposed 2-D and a 3-D input scanning each
    along every dimension, and along a permute of the 3-D one."""

    def fn(x, xt, y):
        return (
            scan(x, 0), scan(x, 1), scan(x, -1),
            scan(xt, 0), scan(xt, 1),
            scan(y, 0), scan(y, 1), scan(y, 2),
            scan(y.permute(2, 0, 1), 1),
        )  # fmt: skip

    return fn


def op_cases() -> list:
    return [pytest.param(op, dtype, id=f"{op}-{str(dtype).removeprefix('torch.')}") for op, (_, dtypes) in OPS.items() for dtype in dtypes]


def op_inputs(op: str, dtype: torch.dtype) -> Callable[[], list[torch.Tensor]]:
    def make() -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(zlib.crc32(f"{op}-{dtype}".encode()))
        x = random_values(op, dtype, (4, 37), g)
        xt = random_values(op, dtype, (37, 5), g).t()
        y = random_values(op, dtype, (3, 4, 9), g)
        return [to_test_device(t) for t in (x, xt, y)]

    return make


@pytest.mark.parametrize(("op", "dtype"), op_cases())
def test_scan_llvm(op, dtype, backend_check):
    backend_check(every_dim(OPS[op][0]), op_inputs(op, dtype), "llvm")


_HALF_CUMSUM = (
    "torch's CUDA cumsum of float16 differs from its CPU one (which compiled code's float32 "
    "accumulation matches) by more than float16's tolerance in a few elements"
)


@pytest.mark.parametrize(
    ("op", "dtype"),
    xfail_on_gpu(op_cases(), lambda op, dtype: _HALF_CUMSUM if (op, dtype) == ("cumsum", torch.float16) else None),
)
def test_scan_triton(op, dtype, backend_check, triton_device):
    backend_check(every_dim(OPS[op][0]), op_inputs(op, dtype), "triton")


TARGETS = ["llvm", "triton"]


@pytest.fixture
def target_device(request, monkeypatch, tmp_path_factory) -> str:
    """The target of a test parametrized over both, with Triton's interpreter for `triton`."""
    if request.param == "triton":
        request.getfixturevalue("triton_device")
    return request.param


both_targets = pytest.mark.parametrize("target_device", TARGETS, indirect=True)


def _inputs(*tensors: torch.Tensor) -> Callable[[], list]:
    return lambda: [to_test_device(t.clone()) for t in tensors]


@both_targets
def test_dtype_argument_zero_dim_and_empty_tensors(target_device, backend_check):
    def fn(x, i, s, empty_rows, empty_columns):
        return (
            torch.cumsum(x, 1, dtype=torch.float64),
            torch.cumprod(x, 0, dtype=torch.float64),
            torch.cumsum(i, 0, dtype=torch.int32),
            torch.cumsum(x, -1, dtype=torch.int64),
            torch.cumsum(s, 0), torch.cumprod(s, -1), torch.logcumsumexp(s, 0),
            torch.cummax(s, 0), torch.cummin(s, -1),
            torch.cumsum(empty_rows, 0), torch.cummax(empty_rows, 1),
            torch.cumsum(empty_columns, 1), torch.logcumsumexp(empty_columns, 0),
        )  # fmt: skip

    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 6, generator=g) * 4
    inputs = (x, torch.randint(-5, 5, (5, 2), generator=g), torch.tensor(1.5), torch.empty(0, 4), torch.empty(3, 0))
    backend_check(fn, _inputs(*inputs), target_device)


@both_targets
def test_symbolic_sizes_serve_every_size(target_device):
    """One compiled graph for every size, rows longer than one block of the
    Triton target included."""
    fn = lambda x: (torch.cumsum(x, 1), torch.cummax(x, 0), torch.logcumsumexp(x * 0.5, 1))  # noqa: E731
    permalloy.reset_stats()
    compiled = torch.compile(fn, backend="permalloy", dynamic=True, options={"target": target_device, "fallback": "raise"})
    g = torch.Generator().manual_seed(7)
    for rows, columns in [(3, 17), (2, 300), (5, 2)]:
        x = torch.randint(-3, 4, (rows, columns), generator=g).float()
        x.view(-1)[columns // 2] = math.nan
        for actual, expected in zip(_leaves(compiled(to_test_device(x))), _leaves(fn(x)), strict=True):
            torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5, equal_nan=True)
    records = permalloy.stats()
    assert len(records) == 1 and records[0]["fallback_ops"] == []


def _leaves(value) -> list[torch.Tensor]:
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


@both_targets
def test_scans_fuse_with_producers_and_consumers(target_device, backend_check):
    """A softmax, a scan of it and the scan's epilogue, and the running max and
    its positions of the softmax's input: one kernel, as reductions with
    their prologues and epilogues over the same rows are."""

    def fn(x):
        probabilities = torch.softmax(x * 2, -1)
        return (probabilities.cumsum(-1) - 0.5).abs(), torch.cummax(x.exp(), 1)

    x = torch.randn(6, 50, generator=torch.Generator().manual_seed(1))
    backend_check(fn, _inputs(x), target_device)
    assert permalloy.stats()[0]["kernels"] == 1


@both_targets
def test_position_ids_of_a_padded_batch(target_device, backend_check):
    """HF's position ids: `mask.long().cumsum(-1) - 1`, 1 where the mask is 0."""

    def fn(mask):
        position_ids = mask.long().cumsum(-1) - 1
        return position_ids.masked_fill(mask == 0, 1)

    mask = torch.ones(3, 11, dtype=torch.int64)
    mask[1, :4] = 0
    mask[2, :9] = 0
    backend_check(fn, _inputs(mask), target_device)
    assert permalloy.stats()[0]["kernels"] == 1


@both_targets
def test_a_decoder_computes_its_positions_from_the_mask_with_no_fallback(target_device, backend_check):
    """OPT from the model suite: HF's code takes its learned positions from a
    cumulative sum of the attention mask (the mask pads the last row). The
    model compiles with no fallback op."""
    from permalloy.tools.models import make_model

    case = make_model("opt", "quick")
    model = case.model.to("cpu" if target_device == "llvm" else _device())

    def logits(ids, mask):
        with torch.no_grad():
            return model(ids, mask)

    backend_check(logits, _inputs(*case.inputs), target_device, graphs=None)


def _device() -> str:
    from conftest import TEST_DEVICE

    return TEST_DEVICE
