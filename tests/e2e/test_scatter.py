"""
Scatters (scatter_reduce with every reduction, scatter_add, scatter with a
`reduce` argument, index_reduce, index_add, index_put with accumulation, and
a bincount written as a scatter_add of ones, embedding_bag, index_put with
a boolean mask) through
`torch.compile(fn, backend="permalloy")` on both targets, against eager:
include_self both ways, float32, float16, bfloat16, int64 and uint8
(whose 8- and 16-bit elements the Triton target combines within their
32-bit words), duplicate indices (many
values landing on one element), NaN among the values of amax and amin,
1-d to 3-d inputs along each dimension, transposed inputs, empty and size-1
indices, 0-d tensors, negative index_put positions, symbolic sizes; that producers of the
values fuse into the scatter's kernel while readers of its result wait for
it; that torch's deterministic algorithms keep float sums for torch on the
Triton target; and gradients through scatter_add and index_add. Each
function compiles with no fallback op and no extern call.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

import pytest
import torch
from conftest import to_test_device

import permalloy

pytestmark = pytest.mark.usefixtures("fresh_backend")

f16, bf16, f32, i64, u8 = torch.float16, torch.bfloat16, torch.float32, torch.int64, torch.uint8
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
TARGETS = ["llvm", "triton"]


@pytest.fixture
def target_device(request) -> str:
    """The target of a test parametrized over both, with Triton's interpreter for `triton`."""
    if request.param == "triton":
        request.getfixturevalue("triton_device")
    return request.param


both_targets = pytest.mark.parametrize("target_device", TARGETS, indirect=True)


def values(reduce: str, dtype: torch.dtype, shape: tuple[int, ...], g: torch.Generator) -> torch.Tensor:
    """Values for `reduce`: products near 1 (no overflow), small whole numbers
    with ties for the extremes, a NaN among floats for amax and amin."""
    if not dtype.is_floating_point:
        if reduce == "prod":
            return torch.randint(1, 3, shape, generator=g) * torch.where(torch.rand(shape, generator=g) < 0.3, -1, 1)
        return torch.randint(-20, 20, shape, generator=g)
    if reduce == "prod":
        result = 0.8 + 0.4 * torch.rand(shape, generator=g)
    elif reduce in ("amax", "amin"):
        result = torch.randint(-4, 5, shape, generator=g).float()
        result.view(-1)[result.numel() // 2] = math.nan
    elif dtype in (f16, bf16):
        # positive: sums of 16-bit floats that cancel round differently in
        # another order by more than their tolerance, and the Triton
        # target's atomics add in any order
        result = 0.5 + torch.rand(shape, generator=g)
    else:
        result = torch.randn(shape, generator=g)
    return result.to(dtype)


def no_externs() -> None:
    for record in permalloy.stats():
        assert record["extern_calls"] == 0, record


def _inputs(*tensors: torch.Tensor) -> Callable[[], list]:
    return lambda: [to_test_device(t.clone()) for t in tensors]


def reduction_cases() -> list:
    cases = []
    for target in TARGETS:
        for reduce in REDUCTIONS:
            for dtype in (f32, i64, f16, bf16, u8):
                cases.append(pytest.param(target, reduce, dtype, id=f"{target}-{reduce}-{str(dtype)[6:]}"))
    return cases


@pytest.mark.parametrize(("target_device", "reduce", "dtype"), reduction_cases(), indirect=["target_device"])
def test_scatter_reduce(target_device, reduce, dtype, backend_check):
    """Every reduction with and without the input's elements, along each
    dimension of 1-d, 2-d and 3-d inputs, with many indices landing on one
    element (seven rows of indices into five), a transposed input."""

    def fn(x1, i1, s1, x, i, s, xt, i1d, y, iy, sy):
        return tuple(
            t.scatter_reduce(d, idx, src, reduce, include_self=include)
            for include in (True, False)
            for t, d, idx, src in ((x1, 0, i1, s1), (x, 0, i, s), (x, 1, i1d, s), (xt, 0, i, s), (y, 1, iy, sy), (y, 2, iy[:, :3], sy))
        )  # fmt: skip

    g = torch.Generator().manual_seed(zlib.crc32(f"{reduce}-{dtype}".encode()))
    x1, i1, s1 = values(reduce, dtype, (6,), g), torch.randint(0, 6, (9,), generator=g), values(reduce, dtype, (9,), g)
    x, i, s = values(reduce, dtype, (5, 4), g), torch.randint(0, 5, (7, 4), generator=g), values(reduce, dtype, (7, 4), g)
    xt = values(reduce, dtype, (4, 5), g).t()
    i1d = torch.randint(0, 2, (5, 4), generator=g)
    y, iy, sy = values(reduce, dtype, (2, 3, 4), g), torch.randint(0, 3, (2, 5, 2), generator=g), values(reduce, dtype, (2, 5, 3), g)
    backend_check(fn, _inputs(x1, i1, s1, x, i, s, xt, i1d, y, iy, sy), target_device)
    no_externs()


@both_targets
def test_scatter_add_scatter_with_reduce_and_bincount(target_device, backend_check):
    """scatter_add, scatter with reduce="add" and "multiply" (a tensor and a
    value), a count of each index (a scatter_add of ones, as a bincount),
    integers exactly."""

    def fn(x, i, s, n, labels):
        counts = torch.zeros(6, dtype=torch.int64, device=labels.device).scatter_add(0, labels, torch.ones_like(labels))
        return (
            torch.scatter_add(x, 0, i, s), torch.scatter_add(x, 1, i[:5] % 4, s),
            x.scatter(0, i, s, reduce="add"), x.scatter(0, i, s, reduce="multiply"),
            x.scatter(1, i[:5] % 4, 1.5, reduce="multiply"), n.scatter_add(0, i, n[:7] * 3), counts,
        )  # fmt: skip

    g = torch.Generator().manual_seed(5)
    x, i, s = torch.randn(5, 4, generator=g), torch.randint(0, 5, (7, 4), generator=g), torch.randn(7, 4, generator=g)
    n, labels = torch.randint(-9, 9, (8, 4), generator=g), torch.randint(0, 6, (50,), generator=g)
    backend_check(fn, _inputs(x, i, s, n, labels), target_device)
    no_externs()


@both_targets
def test_index_put_index_add_and_index_reduce(target_device, backend_check):
    """Accumulating index_put with negative and repeated positions (one index
    tensor, two broadcast ones), index_add with alpha, index_reduce."""

    def fn(x, rows, cols, v, n):
        return (
            x.index_put((rows,), v, accumulate=True),
            x.index_put((rows[:, None], cols), torch.ones(()), accumulate=True),
            n.index_put((rows,), n[:6] * 2, accumulate=True),
            x.index_add(0, rows.abs() % 5, v, alpha=0.5), x.index_add(1, cols.abs() % 4, x[:, :3]),
            x.index_reduce(0, rows.abs() % 5, v, "amax"), x.index_reduce(0, rows.abs() % 5, v, "mean", include_self=False),
        )  # fmt: skip

    g = torch.Generator().manual_seed(9)
    x, v, n = torch.randn(5, 4, generator=g), torch.randn(6, 4, generator=g), torch.randint(-9, 9, (6, 4), generator=g)
    rows = torch.tensor([-1, 0, 4, -1, 2, 0])
    cols = torch.tensor([3, -4, 1])
    backend_check(fn, _inputs(x, rows, cols, v, n), target_device)
    no_externs()


def masked_assignments(x, rows, cols, grid, per_row, per_column, per_cell, nowhere, one_row):
    """x [5, 6]; rows [5], cols [6], grid [5, 6] and nowhere [5] masks."""
    a = x.clone()
    a[rows] = one_row  # one value per selected row, broadcast
    b = x * 2
    b[:, cols] = per_column  # a value per selected column, in order
    c = x + 1
    c[grid] = per_cell  # a 2-d mask, one value per selected element
    d = x.clone()
    d[nowhere] = one_row[None, :][:0]  # no selected position, no values
    return (
        a, b, c, d, torch.index_put(x, (rows,), per_row, accumulate=True),
        torch.ops.aten.index_put(x, [None, cols], per_column, True), x.masked_fill(grid, 1.0),
        torch.index_put(x, (rows,), one_row[2]),
    )  # fmt: skip


@both_targets
def test_index_put_with_a_boolean_mask(target_device, backend_check):
    """`x[mask] = v` and its accumulating form: broadcast values, a value per
    selected position in the mask's row-major order, 1-d and 2-d masks, a
    mask that selects nothing; a select, with no fallback op."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(5, 6, generator=g)
    rows = torch.tensor([True, False, True, True, False])
    cols = torch.tensor([False, True, True, False, False, True])
    grid = torch.rand(5, 6, generator=g) > 0.5
    inputs = _inputs(
        x, rows, cols, grid, torch.randn(3, 6, generator=g), torch.randn(5, 3, generator=g),
        torch.randn(int(grid.sum()), generator=g), torch.zeros(5, dtype=torch.bool), torch.randn(6, generator=g),
    )  # fmt: skip
    backend_check(masked_assignments, inputs, target_device)
    no_externs()


@both_targets
def test_index_put_of_a_number_with_a_boolean_mask(target_device, backend_check):
    """`x[mask] = number` (Longformer's global-attention mask): the number is
    a 0-d CPU tensor beside the device's tensors."""

    def fn(x, mask):
        y = x * 2
        y[mask == 2] = torch.finfo(x.dtype).max
        return y

    g = torch.Generator().manual_seed(5)
    inputs = _inputs(torch.randn(4, 7, generator=g), torch.randint(0, 3, (4, 7), generator=g))
    backend_check(fn, inputs, target_device)
    no_externs()


def test_mask_assignment_of_a_cpu_number_into_a_gpu_tensor():
    """The decomposition moves a 0-d CPU value to the tensor's device before
    giving it dimensions (traced with fake GPU tensors: no GPU needed)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from permalloy.lowering.masked_assignment import index_put_with_mask

    with FakeTensorMode():
        x = torch.empty(2, 3, device="cuda")
        mask = torch.empty(2, 3, dtype=torch.bool, device="cuda")
        out = index_put_with_mask(x, [mask], torch.tensor(5.0))
    assert out.device == x.device and out.shape == x.shape


@both_targets
def test_empty_and_size_one(target_device, backend_check):
    """An index with no elements leaves the input as it is; size-1 tensors."""

    def fn(x, empty, s, one, i1, s1):
        return (
            x.scatter_reduce(0, empty, s, "amax", include_self=False), torch.scatter_add(x, 1, empty, s),
            x.index_put((empty[:, 0],), s[:, 0][:, None], accumulate=True),
            one.scatter_reduce(0, i1, s1, "sum"), one.scatter_reduce(1, i1, s1, "mean", include_self=False),
        )  # fmt: skip

    g = torch.Generator().manual_seed(2)
    x, s = torch.randn(5, 4, generator=g), torch.randn(0, 4, generator=g)
    empty = torch.zeros(0, 4, dtype=torch.int64)
    one, i1, s1 = torch.randn(1, 1, generator=g), torch.zeros(1, 1, dtype=torch.int64), torch.randn(1, 1, generator=g)
    backend_check(fn, _inputs(x, empty, s, one, i1, s1), target_device)


@both_targets
def test_zero_dimensional(target_device, backend_check):
    """0-d tensors: the one value lands on the one element."""

    def fn(x, i, s, one):
        return (
            x.scatter_reduce(0, i, s, "prod"), x.scatter_reduce(0, i, s, "mean", include_self=False),
            torch.scatter_add(x, 0, i, s), x.index_reduce(0, one, s, "amax"),
        )  # fmt: skip

    inputs = (torch.tensor(2.5), torch.tensor(0), torch.tensor(-1.5), torch.tensor([0]))
    backend_check(fn, _inputs(*inputs), target_device)
    no_externs()


@both_targets
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(target_device, mode, backend_check):
    """embedding_bag over 1-d indices with offsets (an empty bag among them),
    2-d indices, a padding index, the last offset included, weights per
    sample for sums."""

    def fn(weight, indices, offsets, rows, scale):
        bags = torch.nn.functional.embedding_bag
        return (
            bags(indices, weight, offsets, mode=mode),
            bags(rows, weight, mode=mode, padding_idx=3),
            bags(indices, weight, torch.cat([offsets, offsets.new_full((1,), indices.shape[0])]), mode=mode, include_last_offset=True),
            *((bags(indices, weight, offsets, mode="sum", per_sample_weights=scale),) if mode == "sum" else ()),
        )  # fmt: skip

    g = torch.Generator().manual_seed(11)
    weight = torch.randn(12, 5, generator=g)
    indices, offsets = torch.randint(0, 12, (10,), generator=g), torch.tensor([0, 4, 4, 7])
    rows, scale = torch.randint(0, 12, (3, 4), generator=g), torch.rand(10, generator=g)
    backend_check(fn, _inputs(weight, indices, offsets, rows, scale), target_device)
    no_externs()


@both_targets
def test_symbolic_sizes(target_device):
    """One compiled graph for every size of the input and of the index."""
    fn = lambda x, i, s: (x.scatter_reduce(0, i, s * 2, "sum", include_self=False), x.index_add(0, i[:, 0], s))  # noqa: E731
    compiled = torch.compile(fn, backend="permalloy", dynamic=True, options={"target": target_device, "fallback": "raise"})
    g = torch.Generator().manual_seed(4)
    for rows, indices in [(5, 7), (9, 3), (2, 11)]:
        x, i, s = torch.randn(rows, 3, generator=g), torch.randint(0, rows, (indices, 3), generator=g), torch.randn(indices, 3, generator=g)
        for actual, expected in zip(compiled(*map(to_test_device, (x, i, s))), fn(x, i, s), strict=True):
            torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 1 and records[0]["fallback_ops"] == [] and records[0]["extern_calls"] == 0


@both_targets
def test_producers_fuse_and_readers_wait(target_device, backend_check):
    """The values' pointwise producer runs inside the scatter's kernel; the
    reader of the scattered result is a kernel of its own, after it."""

    def fn(x, i, s):
        return torch.scatter_add(x, 0, i, (s * 2).exp()).relu() + 1

    g = torch.Generator().manual_seed(6)
    x, i, s = torch.randn(5, 4, generator=g), torch.randint(0, 5, (40, 4), generator=g), torch.randn(40, 4, generator=g)
    backend_check(fn, _inputs(x, i, s), target_device)
    assert permalloy.stats()[0]["kernels"] == 2


@both_targets
def test_scatter_of_its_own_input(target_device, backend_check):
    """A scatter whose source is its init, a value of the graph: its output
    is a copy, never the init's buffer, which its points read; a chain of
    scatters, each the only reader of the one before, updates one buffer."""

    def fn(x, i):
        y = x.softmax(1)  # a reduction's epilogue: the scatter reads it from memory
        swapped = y.scatter_reduce(0, i, y, "mean", include_self=True)
        return swapped + 1, torch.scatter_add(torch.scatter_add(x + 1, 0, i, x), 0, i, x * 3)

    g = torch.Generator().manual_seed(13)
    x, i = torch.randn(4, 5, generator=g), torch.tensor([[1] * 5, [0] * 5, [3] * 5, [2] * 5])
    backend_check(fn, _inputs(x, i), target_device)


@pytest.mark.parametrize("deterministic", [False, True])
def test_deterministic_algorithms_keep_float_sums_for_torch(deterministic, backend_check, triton_device):
    """With torch's deterministic algorithms on, the Triton target's float sum
    scatters are torch's calls (whose kernels then are deterministic); an
    integer sum and a float max, whose results do not depend on the order,
    stay kernels. The LLVM target walks a scatter in order anyway."""

    def fn(x, i, s, n):
        return torch.scatter_add(x, 0, i, s), x.scatter_reduce(0, i, s, "amax"), n.scatter_add(0, i, n[:7])

    g = torch.Generator().manual_seed(8)
    inputs = (torch.randn(5, 4, generator=g), torch.randint(0, 5, (7, 4), generator=g), torch.randn(7, 4, generator=g))
    inputs += (torch.randint(-5, 5, (8, 4), generator=g),)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        backend_check(fn, _inputs(*inputs), "triton")
        record = permalloy.stats()[0]
        assert record["extern_calls"] == (1 if deterministic else 0)
        assert record["kernels"] == (2 if deterministic else 3)
        permalloy.reset_stats()
        torch._dynamo.reset()  # noqa: SLF001
        backend_check(fn, _inputs(*inputs), "llvm")
        assert permalloy.stats()[0]["extern_calls"] == 0
    finally:
        torch.use_deterministic_algorithms(previous)


@both_targets
def test_gradients_through_scatter_add_and_index_add(target_device):
    """A training step through scatter_add, index_add and scatter_reduce sum:
    the backward graph gathers the gradient (gather, index_select) and
    compiles natively too; gradients match eager's."""

    def fn(x, w, i, rows):
        h = (x @ w).tanh()
        pooled = torch.zeros(4, 6, device=x.device).scatter_add(0, i, h)
        summed = torch.zeros(4, 6, device=x.device).index_add(0, rows, h * 2)
        reduced = x[:4, :6].scatter_reduce(0, i, h, "sum")
        return (pooled * summed).sum() + reduced.pow(2).sum()

    g = torch.Generator().manual_seed(10)
    x, w = torch.randn(9, 6, generator=g), torch.randn(6, 6, generator=g)
    i, rows = torch.randint(0, 4, (9, 6), generator=g), torch.randint(0, 4, (9,), generator=g)
    permalloy.reset_stats()
    compiled = torch.compile(fn, backend="permalloy", options={"target": target_device, "fallback": "raise"})
    leaves = [to_test_device(t.clone().requires_grad_()) for t in (x, w)]
    eager = [t.clone().requires_grad_() for t in (x, w)]
    compiled(*leaves, to_test_device(i), to_test_device(rows)).backward()
    fn(*eager, i, rows).backward()
    for actual, expected in zip(leaves, eager, strict=True):
        torch.testing.assert_close(actual.grad.cpu(), expected.grad, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2 and all(r["fallback_ops"] == [] for r in records), records


@both_targets
def test_gradients_through_every_reduction_and_embedding_bag(target_device):
    """The backward graphs of scatter_reduce's products, means and extremes
    (with and without the input's elements) and of embedding_bag's three
    modes compile with no fallback op; gradients match eager's."""
    g = torch.Generator().manual_seed(12)
    x, s = torch.randn(5, 4, generator=g), torch.randn(7, 4, generator=g)
    i = torch.randint(0, 5, (7, 4), generator=g)
    weight, indices, offsets = torch.randn(10, 3, generator=g), torch.randint(0, 10, (9,), generator=g), torch.tensor([0, 2, 2, 6])
    if target_device == "triton":  # the graph's own tensors where it runs (a copy from the CPU is a fallback)
        i, indices, offsets = (to_test_device(t) for t in (i, indices, offsets))

    def fn(x, s, weight):
        loss = sum(
            x.scatter_reduce(0, i.to(x.device), s, reduce, include_self=include).pow(2).sum()
            for reduce in ("prod", "mean", "amax") for include in (True, False)
        )  # fmt: skip
        for mode in ("sum", "mean", "max"):
            bags = torch.nn.functional.embedding_bag(indices.to(x.device), weight, offsets.to(x.device), mode=mode, padding_idx=4)
            loss = loss + bags.pow(2).sum()
        return loss

    permalloy.reset_stats()
    compiled = torch.compile(fn, backend="permalloy", options={"target": target_device, "fallback": "raise"})
    leaves = [to_test_device(t.clone().requires_grad_()) for t in (x, s, weight)]
    eager = [t.clone().requires_grad_() for t in (x, s, weight)]
    compiled(*leaves).backward()
    fn(*eager).backward()
    for actual, expected in zip(leaves, eager, strict=True):
        torch.testing.assert_close(actual.grad.cpu(), expected.grad, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2 and all(r["fallback_ops"] == [] for r in records), records
