"""
Sorts (sort, argsort, msort, topk, kthvalue) through
`torch.compile(fn, backend="permalloy")` on both targets, against eager:
every op and dtype torch takes (f32, f64, f16, bf16, i32, i64, u8, bool),
ascending and descending, along every dimension of 2-D and 3-D inputs
(negative dimensions, a transposed argument, a permute inside the graph),
with ties (compared exactly: the sorts are stable, descending too), NaN,
infinities and both zeros among floats; topk with k = 0, 1 and the row's
length, largest and smallest, unsorted; kthvalue at both ends, keepdim;
empty tensors, rows of one element, 0-d tensors; rows sorted by insertion
and by the radix sort, a topk selecting few positions of long rows, rows
too long for the kernels and symbolic lengths (extern calls into torch,
never fallbacks); a sort's producer fused into its kernel; the gradients of
a training step through topk, sort, kthvalue and msort, whose backward
scatters are kernels too. Each function compiles into one graph with no
fallback op (`backend_check`, conftest.py).

topk and kthvalue leave the positions of equal elements to the
implementation: where ties are possible, a case compares the values and the
input's elements at the positions (which must be the values) rather than the
positions themselves.
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
NUMBERS = (*FLOATS, i32, i64, u8)
ALL = (*NUMBERS, b8)
TARGETS = ["llvm", "triton"]


@pytest.fixture
def target_device(request) -> str:
    """The target of a test parametrized over both, with Triton's interpreter for `triton`."""
    if request.param == "triton":
        request.getfixturevalue("triton_device")
    return request.param


both_targets = pytest.mark.parametrize("target_device", TARGETS, indirect=True)


def values_with_ties(dtype: torch.dtype, shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """Few distinct values (many ties); among floats quarters, NaN, both
    infinities and both zeros."""
    if dtype == b8:
        return torch.rand(shape, generator=g) < 0.5
    if not dtype.is_floating_point:
        low, high = (0, 6) if dtype == u8 else (-4, 5)
        return torch.randint(low, high, shape, generator=g).to(dtype)
    values = torch.randint(-8, 9, shape, generator=g).double() / 4
    flat = values.view(-1)
    n = flat.numel()
    flat[[5 % n, n // 2, n - 3, n // 3, 2 * n // 3, n - 1]] = torch.tensor(
        [math.nan, -math.inf, math.inf, -0.0, 0.0, math.nan], dtype=torch.float64
    )
    return values.to(dtype)


def at_positions(x: torch.Tensor, positions: torch.Tensor, dim: int) -> torch.Tensor:
    """The elements of `x` at `positions` along `dim` (positions of the shape
    of a topk's result, or of a kthvalue's without keepdim)."""
    if positions.dim() < x.dim():
        positions = positions.unsqueeze(dim)
    return torch.take_along_dim(x, positions, dim)


def topk_largest(x, dim):
    values, positions = torch.topk(x, 3, dim)
    return values, at_positions(x, positions, dim)


def topk_smallest(x, dim):
    values, positions = torch.topk(x, 2, dim, largest=False)
    return values, at_positions(x, positions, dim)


def kthvalue(x, dim):
    lowest, at_lowest = torch.kthvalue(x, 1, dim)
    middle, at_middle = torch.kthvalue(x, 2, dim, keepdim=True)
    return lowest, at_positions(x, at_lowest, dim), middle, at_positions(x, at_middle, dim)


OPS: dict[str, tuple[Callable, tuple[torch.dtype, ...]]] = {
    "sort": (lambda x, dim: torch.sort(x, dim=dim, stable=True), ALL),
    "sort_descending": (lambda x, dim: torch.sort(x, dim=dim, descending=True, stable=True), ALL),
    "argsort": (lambda x, dim: torch.argsort(x, dim=dim, stable=True), ALL),
    "argsort_descending": (lambda x, dim: torch.argsort(x, dim=dim, descending=True, stable=True), ALL),
    "topk_largest": (topk_largest, NUMBERS),
    "topk_smallest": (topk_smallest, NUMBERS),
    "kthvalue": (kthvalue, NUMBERS),
}
"""Each op (of an input and a dimension) and the dtypes torch takes for it."""


def every_dim(op: Callable) -> Callable:
    """A function of a 2-D, a transposed 2-D and a 3-D input applying `op`
    along every dimension (negative ones too), and along a permute of the 3-D one."""

    def fn(x, xt, y):
        return (
            op(x, 0), op(x, -1),
            op(xt, 0), op(xt, 1),
            op(y, 0), op(y, -2), op(y, 2),
            op(y.permute(2, 0, 1), 1),
        )  # fmt: skip

    return fn


def op_cases() -> list:
    return [
        pytest.param(op, dtype, id=f"{op}-{str(dtype).removeprefix('torch.')}")
        for op, (_, dtypes) in OPS.items()
        for dtype in dtypes
    ]


def op_inputs(op: str, dtype: torch.dtype) -> Callable[[], list[torch.Tensor]]:
    def make() -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(zlib.crc32(f"{op}-{dtype}".encode()))
        x = values_with_ties(dtype, (4, 37), g)
        xt = values_with_ties(dtype, (37, 5), g).t()
        y = values_with_ties(dtype, (3, 4, 9), g)
        return [to_test_device(t) for t in (x, xt, y)]

    return make


@pytest.mark.parametrize(("op", "dtype"), op_cases())
def test_sort_llvm(op, dtype, backend_check):
    backend_check(every_dim(OPS[op][0]), op_inputs(op, dtype), "llvm")


_BFLOAT16_NAN_FIRST = (
    "torch's CUDA sort of bfloat16 rows orders NaN before every number (its float32 and float16 "
    "sorts and every CPU sort order it after, as torch documents and compiled code does)"
)


def _cuda_difference(op: str, dtype: torch.dtype) -> str | None:
    sorts = ("sort", "argsort", "sort_descending", "argsort_descending")
    return _BFLOAT16_NAN_FIRST if dtype == torch.bfloat16 and op in sorts else None


@pytest.mark.parametrize(("op", "dtype"), xfail_on_gpu(op_cases(), _cuda_difference))
def test_sort_triton(op, dtype, backend_check, triton_device):
    backend_check(every_dim(OPS[op][0]), op_inputs(op, dtype), "triton")


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _random(*shape: int, seed: int = 0, dtype: torch.dtype = f32) -> torch.Tensor:
    return torch.randn(shape, generator=_seeded(seed)).to(dtype)


EDGE_CASES: dict[str, tuple[Callable, Callable[[], list]]] = {
    "msort": (torch.msort, lambda: [values_with_ties(f32, (9, 4), _seeded(1))]),
    "sort_default_order": (lambda x: torch.sort(x, 1), lambda: [_random(3, 20)]),
    "topk_no_ties": (lambda x: (torch.topk(x, 4), torch.topk(x, 2, 0, largest=False)), lambda: [_random(5, 20)]),
    "topk_k_zero_one_and_all": (
        lambda x: (torch.topk(x, 0), torch.topk(x, 1), torch.topk(x, 20), torch.topk(x, 5, 0, largest=False)),
        lambda: [_random(5, 20)],
    ),
    "topk_unsorted": (
        lambda x: torch.sort(torch.topk(x, 6, sorted=False).values, stable=True).values,
        lambda: [values_with_ties(f32, (4, 30), _seeded(2))],
    ),
    "kthvalue_both_ends": (
        lambda x: (torch.kthvalue(x, 1), torch.kthvalue(x, 20), torch.kthvalue(x, 5, 0, keepdim=True)),
        lambda: [_random(5, 20)],
    ),
    "empty": (
        lambda x, e: (torch.sort(x, dim=0, stable=True), torch.sort(e, dim=1, stable=True), torch.topk(e, 0), torch.argsort(x, 1)),
        lambda: [_random(0, 5), _random(5, 0)],
    ),
    "rows_of_one": (
        lambda x: (torch.sort(x, dim=1, descending=True), torch.topk(x, 1), torch.kthvalue(x, 1, keepdim=True)),
        lambda: [_random(6, 1)],
    ),
    "zero_dimensional": (lambda x: (torch.sort(x), torch.topk(x, 1), torch.kthvalue(x, 1)), lambda: [torch.tensor(2.5)]),
    "long_rows_radix": (
        lambda x, i: (torch.sort(x, dim=1, stable=True), torch.sort(i, dim=1, descending=True, stable=True)),
        lambda: [values_with_ties(f16, (3, 700), _seeded(3)), torch.randint(-(2**40), 2**40, (2, 500), generator=_seeded(4))],
    ),
    "long_rows_topk": (lambda x: torch.topk(x, 5), lambda: [_random(3, 2000)]),
    "rows_of_the_largest_block": (lambda x: torch.sort(x, dim=-1, stable=True), lambda: [_random(2, 4096)]),
    "int8_and_int16": (
        lambda a, b: (torch.sort(a, stable=True), torch.sort(b, descending=True, stable=True)),
        lambda: [
            torch.randint(-100, 100, (3, 50), dtype=torch.int8, generator=_seeded(5)),
            torch.randint(-300, 300, (3, 50), dtype=torch.int16, generator=_seeded(6)),
        ],
    ),
    "fused_producer_and_reader": (
        lambda x: torch.sort(torch.tanh(x) * 2 + x, dim=1, descending=True, stable=True).values.exp(),
        lambda: [_random(6, 40)],
    ),
}
"""Edge cases of shapes, counts and paths, on both targets."""


@both_targets
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_sort_edges(case, target_device, backend_check):
    fn, make = EDGE_CASES[case]
    backend_check(fn, lambda: [to_test_device(t) for t in make()], target_device)


@both_targets
def test_a_sort_fuses_its_producer_and_its_values_are_one_gather(target_device, backend_check):
    """A pointwise producer is computed in the sort's kernel; the values are
    a gather of the input at the sorted positions, one more kernel with the
    reader of the values."""
    backend_check(
        lambda x: torch.sort(torch.tanh(x) * 2, dim=1, stable=True).values + 1,
        lambda: [to_test_device(_random(6, 40))],
        target_device,
    )
    (record,) = permalloy.stats()
    assert record["kernels"] == 2 and record["extern_calls"] == 0


@both_targets
def test_rows_beyond_the_kernels_and_symbolic_lengths_call_torch(target_device, backend_check):
    """Rows longer than 4096 elements, and (on the GPU) 64-bit values, are
    sorted by torch through an extern call, not a fallback; so are rows of
    a symbolic length."""
    backend_check(lambda x: torch.sort(x, dim=1, stable=True), lambda: [to_test_device(_random(2, 5000))], target_device)
    assert permalloy.stats()[0]["extern_calls"] == 1
    backend_check(lambda x: torch.sort(x.double(), dim=1, stable=True), lambda: [to_test_device(_random(3, 50))], target_device)
    assert permalloy.stats()[0]["extern_calls"] == (1 if target_device == "triton" else 0)
    torch._dynamo.reset()
    permalloy.reset_stats()
    compiled = torch.compile(
        lambda x: torch.topk(x, 3), backend="permalloy", dynamic=True, options={"target": target_device, "fallback": "raise"}
    )
    for rows, length in ((3, 40), (5, 17)):
        x = to_test_device(_random(rows, length))
        for actual, expected in zip(compiled(x), torch.topk(x, 3), strict=True):
            torch.testing.assert_close(actual, expected, rtol=0, atol=0)
    assert all(r["fallback_ops"] == [] and r["extern_calls"] == 1 for r in permalloy.stats())


@both_targets
def test_gradients_through_sorts_are_kernels(target_device):
    """A training step through topk, sort, kthvalue and msort: the backward
    graph scatters the gradients back at the positions with kernels."""

    def loss(x):
        top = torch.topk(x, 3).values * torch.arange(1, 4, device=x.device)
        second = torch.sort(x, dim=0, descending=True, stable=True).values[1]
        return top.sum() + second.sum() + torch.kthvalue(x, 2).values.sum() + torch.msort(x * x)[0].sum()

    x = to_test_device(_random(4, 9))
    compiled_x, eager_x = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    compiled = torch.compile(loss, backend="permalloy", options={"target": target_device, "fallback": "raise"})
    compiled(compiled_x).backward()
    loss(eager_x).backward()
    torch.testing.assert_close(compiled_x.grad, eager_x.grad)
    records = permalloy.stats()
    assert len(records) == 2
    assert all(r["fallback_ops"] == [] and r["extern_calls"] == 0 for r in records)
