"""
Normalizations and reductions over tensors with dimensions of size 1.

A single row (a batch of one: every decoding step of a language model), a row
of one element, a reduction over a dimension of size 1 and a size-1 dimension
between others are where loop dimensions collapse away: the stages of a fused
kernel then share a row loop that names no row variable. Each function is
checked against eager on the LLVM target with one and two threads, with static
and dynamic shapes (shapes large enough to be shared among threads too), and a
subset on the Triton target (under Triton's interpreter on the CPU). A GPT-2
block at batch 1 and sequence 1 covers the same on a whole model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
import torch.nn.functional as F

from permalloy.tools.zoo import ZooSize, make_case
from conftest import to_test_device

pytestmark = pytest.mark.usefixtures("fresh_backend")


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def rsqrt_of_sum(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.sum(-1, keepdim=True))


def layer_norm(x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:])


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def sum_then_scale(x: torch.Tensor) -> torch.Tensor:
    return x / x.sum(-1, keepdim=True)


def mean_var(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Centred values and the variance over dimension 1 (of size 1 in some shapes)."""
    return x - x.mean(1, keepdim=True), x.var(1, keepdim=True, unbiased=False)


FUNCTIONS: list[Callable] = [rms_norm, rsqrt_of_sum, layer_norm, softmax, sum_then_scale, mean_var]

SHAPES = [(1, 64), (1, 1000), (1, 17), (64, 1), (1, 1), (2, 1), (2, 1, 64), (1, 3, 1), (1, 1, 17), (3, 1, 5), (5, 17)]
"""Single rows, rows of one element, size-1 dimensions in the middle, row
lengths that are not a multiple of the vector width, and a plain shape."""

LARGE_SHAPES = [(1, 40000), (3, 20000), (40000, 1), (1, 2, 20000)]
"""Enough work to be shared among threads: a single row, fewer rows than
threads would take, and many rows of one element."""

TRITON_FUNCTIONS: list[Callable] = [rms_norm, layer_norm, softmax, mean_var]
TRITON_SHAPES = [(1, 64), (64, 1), (1, 1), (2, 1, 64), (1, 3, 1)]


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request) -> Iterator[int]:
    """Torch's thread count for the test, which the LLVM kernels use; restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def _input(shape: tuple[int, ...]) -> torch.Tensor:
    """Positive values, so that sums and their square roots are well away from 0."""
    torch.manual_seed(0)
    return torch.rand(shape) + 0.5


@pytest.mark.parametrize("shape", SHAPES + LARGE_SHAPES, ids=str)
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_llvm_matches_eager(fn: Callable, shape: tuple[int, ...], threads: int, backend_check) -> None:
    backend_check(fn, [_input(shape)], "llvm")


@pytest.mark.parametrize(
    "shapes",
    [[(1, 64), (1, 1000)], [(1, 3, 17), (1, 5, 40000)], [(64, 1), (40000, 1)], [(2, 1, 64), (3, 1, 20000)]],
    ids=str,
)
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_llvm_dynamic_matches_eager(fn: Callable, shapes, threads: int, backend_check) -> None:
    """One graph over dynamic sizes (size-1 dimensions stay static), called at each shape."""
    options = {"target": "llvm", "fallback": "raise"}
    compiled = torch.compile(fn, backend="permalloy", options=options, dynamic=True, fullgraph=True)
    for shape in shapes:
        x = _input(shape)
        backend_check.assert_outputs_match(compiled(x), fn(x))
    backend_check.assert_stats("llvm", graphs=1)


@pytest.mark.parametrize("shape", TRITON_SHAPES, ids=str)
@pytest.mark.parametrize("fn", TRITON_FUNCTIONS, ids=lambda f: f.__name__)
def test_triton_matches_eager(fn: Callable, shape: tuple[int, ...], backend_check, triton_device) -> None:
    backend_check(fn, [to_test_device(_input(shape))], "triton")


@pytest.mark.parametrize("batch,seq", [(1, 1), (2, 1), (1, 5)])
def test_gpt2_block_single_token(batch: int, seq: int, threads: int, backend_check) -> None:
    """A GPT-2 block over one sequence of one token: a decoding step."""
    case = make_case("gpt2_block", ZooSize(batch=batch, seq=seq))

    def run(*inputs):
        with torch.no_grad():
            return case.model(*inputs)

    backend_check(run, case.inputs, "llvm")
