"""
Windows and strided views compiled natively on both targets, against eager:
`Tensor.unfold` of inputs and intermediates (permuted, sliced, channels-last,
overlapping and gapped windows), `F.unfold`/`F.fold` (im2col and col2im) with
padding, stride and dilation, and `as_strided` of views of intermediates
(after broadcasts, expands, slices and permutes) and `as_strided_scatter`
(a scatter at the view's positions), an assignment into a transposed view
whose base is viewed again (the `slice_scatter` keeps eager's layout, which
the later view needs), a tensor allocated in a permuted memory order
(`empty_permuted`, which mixture-of-experts layers use) and filled, which read the storage of
the nearest dense node up the chain of views; an `as_strided` reading outside
every node of the graph (of an input that is a view into a larger storage)
runs with torch. Training through unfold, fold and as_strided, gradients
against eager's.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from conftest import to_test_device

import permalloy

pytestmark = pytest.mark.usefixtures("fresh_backend")


def _input(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _filled_empty_permuted(x: torch.Tensor) -> torch.Tensor:
    filled = torch.empty_permuted((2, 3, 4), (2, 0, 1), device=x.device)
    filled.copy_(x * 2)
    return filled + 1


def _assign_into_transposed_view(x: torch.Tensor) -> torch.Tensor:
    """Longformer's chunked attention: scores assigned through a transposed
    view, then viewed with a shape that only their own layout admits."""
    scores = x.new_zeros(2, 4, 16, 6)
    scores.transpose(1, 2)[:, :8, :, :3] = x * 2
    return scores.view(8, 2, 8, 6) + 1


CASES: dict[str, tuple[Callable, list[torch.Tensor]]] = {
    "unfold_input": (lambda x: x.unfold(2, 3, 2), [_input(2, 3, 7, 5)]),
    "unfold_last_dim_overlapping": (lambda x: (x * 2).unfold(-1, 3, 1).sum(-1), [_input(2, 3, 7, 5)]),
    "unfold_gapped_windows": (lambda x: (x + 1).unfold(1, 2, 3) * 2, [_input(4, 11)]),
    "unfold_whole_dim": (lambda x: torch.exp(x).unfold(0, 4, 4), [_input(4, 3)]),
    "unfold_of_permute": (lambda x: (x * 2).transpose(2, 3).unfold(2, 3, 2) + 1, [_input(2, 3, 7, 5)]),
    "unfold_of_input_slice": (lambda x: x[:, 1:].unfold(3, 2, 2) * 3, [_input(2, 3, 7, 5)]),
    "unfold_twice": (lambda x: (x - 1).unfold(0, 3, 1).unfold(1, 2, 2), [_input(6, 8)]),
    "unfold_copy": (lambda x: torch.ops.aten.unfold_copy(x * 2, 1, 2, 1), [_input(3, 5)]),
    "im2col": (lambda x: F.unfold(x, 3, padding=1, stride=2), [_input(2, 3, 7, 6)]),
    "im2col_dilated": (lambda x: F.unfold(torch.tanh(x), (2, 3), dilation=(2, 1), padding=(1, 0)), [_input(1, 2, 6, 7)]),
    "col2im": (lambda x: F.fold(x, (5, 7), 3, padding=1), [_input(2, 27, 35)]),
    "col2im_strided": (lambda x: F.fold(x, (7, 6), (2, 3), stride=(2, 1), dilation=(1, 2)), [_input(1, 12, 6)]),
    "fold_of_unfold": (lambda x: F.fold(F.unfold(x, 2, stride=2), (6, 8), 2, stride=2), [_input(2, 3, 6, 8)]),
    "as_strided_of_intermediate": (lambda x: torch.as_strided(x + 1, (2, 3, 3), (1, 1, 2)), [_input(2, 3, 5, 7)]),
    "as_strided_of_expand": (
        lambda x: torch.as_strided(x.expand(4, 3, 5, 7), (4, 2, 2), (0, 7, 1)) + 1,
        [_input(3, 5, 7)],
    ),
    "as_strided_of_broadcast_result": (
        lambda x, y: torch.as_strided(x + y, (3, 4), (5, 1), 2) * 2,
        [_input(3, 1, 5), _input(4, 5)],
    ),
    "as_strided_of_slice": (lambda x: torch.as_strided((x * 2)[1:], (2, 4), (3, 1), 40) + 1, [_input(2, 3, 5, 7)]),
    "as_strided_of_permute": (
        lambda x: torch.as_strided((x * 2).permute(0, 2, 3, 1), (3, 4), (1, 3), 5) + 1,
        [_input(2, 3, 5, 7)],
    ),
    "as_strided_of_input_view": (lambda x: torch.as_strided(x[1:], (3, 4), (1, 3), 120) + 1, [_input(2, 3, 5, 7)]),
    "as_strided_copy": (lambda x: torch.ops.aten.as_strided_copy(x * 3, (4, 2), (1, 4), 2), [_input(4, 5)]),
    "as_strided_scatter": (
        lambda x, s: torch.as_strided_scatter(x * 2, s, (2, 2), (1, 2), 1), [_input(3, 4), _input(2, 2, seed=1)]
    ),
    "as_strided_scatter_of_transposed_source": (
        lambda x, s: torch.as_strided_scatter(x + 1, s.t() * 2, (3, 2), (2, 5), 3), [_input(4, 5), _input(2, 3, seed=1)]
    ),
    "assignment_into_transposed_view_then_view": (_assign_into_transposed_view, [_input(2, 8, 4, 3)]),
    "filled_empty_permuted": (_filled_empty_permuted, [_input(2, 3, 4)]),
    "strided_slice_of_flattened_dims_expanded": (
        # the slice's positions 7 + 2k of the flattened [3, 7] rows: their column is (2k) mod 7
        lambda x: (x.flatten(2, 3) * 2)[:, :, 7::2].expand(2, -1, -1, -1).reshape(-1, 126),
        [_input(7, 9, 3, 7)],
    ),
}
"""Each case: the function and its inputs."""

TRITON_CASES = [
    "unfold_last_dim_overlapping", "unfold_of_permute", "im2col", "col2im", "as_strided_of_expand", "as_strided_scatter",
    "assignment_into_transposed_view_then_view", "filled_empty_permuted", "strided_slice_of_flattened_dims_expanded",
]  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_strided_view_llvm(name, backend_check):
    fn, inputs = CASES[name]
    backend_check(fn, inputs, "llvm")


@pytest.mark.parametrize("name", TRITON_CASES)
def test_strided_view_triton(name, backend_check, triton_device):
    fn, inputs = CASES[name]
    backend_check(fn, lambda: [to_test_device(x.clone()) for x in inputs], "triton")


def test_unfold_of_a_channels_last_intermediate(backend_check):
    """The intermediate's storage is in channels-last order, which unfold's
    strides address: the view reads a permute of it."""
    x = _input(2, 4, 5, 6).to(memory_format=torch.channels_last)
    backend_check(
        lambda x: (x * 2).unfold(1, 2, 1) + 1, lambda: [x.clone(memory_format=torch.channels_last)], "llvm"
    )


def test_as_strided_outside_an_input_view_runs_with_torch(backend_check):
    """An input that views a larger storage, read before its first element:
    no node of the graph holds those elements, and torch runs the view."""
    base = _input(20)
    backend_check(
        lambda x: torch.as_strided(x, (3, 2), (1, 2), 1) * 2,
        lambda: [base.clone()[3:]],
        "llvm",
        fallback_ops=["aten.as_strided.default"],
    )


def test_unfold_with_symbolic_sizes():
    fn = lambda x: ((x * 2).unfold(1, 3, 2).sum(-1), F.unfold(x.unsqueeze(0), (2, 2)))  # noqa: E731
    compiled = torch.compile(fn, backend="permalloy", dynamic=True, options={"target": "llvm", "fallback": "raise"})
    for rows, columns in [(5, 9), (7, 12), (6, 7)]:
        x = _input(2, rows, columns, seed=rows)
        for actual, expected in zip(compiled(x), fn(x), strict=True):
            torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 1 and records[0]["fallback_ops"] == []


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_training_through_unfold_and_fold_matches_eager(target, request):
    if target == "triton":
        request.getfixturevalue("triton_device")

    def loss(x, w):
        patches = F.unfold(torch.tanh(x), 3, padding=1)
        mixed = torch.einsum("bkl,k->bkl", patches, w)
        folded = F.fold(mixed, (6, 5), 3, padding=1)
        windows = folded.unfold(3, 2, 1)
        strided = torch.as_strided(folded * 2, (2, 3, 4), (30, 1, 5), 1)  # its gradient: as_strided_scatter
        return (windows * windows).mean() + strided.sin().sum()

    x, w = _input(2, 3, 6, 5), _input(27, seed=1)
    expected_inputs = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    loss(*expected_inputs).backward()
    actual_inputs = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    if target == "triton":
        actual_inputs = [to_test_device(t) for t in actual_inputs]
    compiled = torch.compile(loss, backend="permalloy", options={"target": target, "fallback": "raise"})
    compiled(*actual_inputs).backward()
    for actual, expected in zip(actual_inputs, expected_inputs, strict=True):
        torch.testing.assert_close(actual.grad.cpu(), expected.grad, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2
    assert [op for record in records for op in record["fallback_ops"]] == []


def test_inputs_with_a_negative_or_conjugate_bit_are_read_with_it(fresh_backend):
    """`z.conj().imag` is a view with a negative bit, `z.conj()` one with a
    conjugate bit: their memory holds the values before the bit applies."""
    z = torch.randn(4, 5, dtype=torch.cfloat, generator=torch.Generator().manual_seed(5))
    y = torch.randn(4, 5, generator=torch.Generator().manual_seed(6))
    negative = z.conj().imag
    assert negative.is_neg()

    def real(x, y):
        return x * 2 + y, x.sum(0)

    compiled = torch.compile(real, backend="permalloy", options={"fallback": "raise"})
    for got, want in zip(compiled(negative, y), real(negative, y)):
        torch.testing.assert_close(got, want)

    def doubled(w):
        return w * 2

    conjugated = torch.compile(doubled, backend="permalloy", options={"fallback": "raise"})
    torch.testing.assert_close(conjugated(z.conj()), doubled(z.conj()))
