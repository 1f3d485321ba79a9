"""
The backend on inputs at the edges: failures that fall back, special values,
empty and broadcast tensors, options of the wrong type.

- A graph that cannot compile runs eagerly as the user wrote it (Dynamo's
  graph, before permalloy's decompositions), after one warning, wherever it
  fails: in AOTAutograd, a decomposition, the importer or the lowering.
- `CASES` are small functions whose results must match eager's exactly as
  `backend_check` (conftest.py) compares them: values, NaN and infinity
  positions, dtypes, shapes and strides. Every case runs on the llvm target;
  those marked `triton` also on the Triton target (under Triton's interpreter
  on the CPU).
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from conftest import TEST_DEVICE, assert_outputs_match, to_test_device
from torch._dynamo.exc import BackendCompilerFailed

import permalloy
from permalloy.lowering.capture import capture_aten_graphs

pytestmark = pytest.mark.usefixtures("fresh_backend")

INF, NAN = math.inf, math.nan


@dataclass(frozen=True)
class Case:
    """A function, a maker of its inputs, and where it runs."""

    name: str
    fn: Callable
    make_inputs: Callable[[], Sequence[Any]]
    triton: bool = True
    fallback_ops: tuple[str, ...] = ()
    llvm_bug: str | None = None
    """What goes wrong on the llvm target, where the case is a strict xfail."""
    interpreter_bug: str | None = None
    """What goes wrong on the Triton target under Triton's CPU interpreter."""


def _seeded(*shape: int, seed: int = 0) -> Callable[[], torch.Tensor]:
    """Standard normal floats of `shape`, the same on every call."""

    def make() -> torch.Tensor:
        g = torch.Generator().manual_seed(sum(shape) + seed)
        return torch.randn(shape, generator=g)

    return make


def _inputs(*makers: Callable[[], Any]) -> Callable[[], list[Any]]:
    return lambda: [make() for make in makers]


def _tensor(values: Sequence[float], dtype: torch.dtype = torch.float32) -> Callable[[], torch.Tensor]:
    return lambda: torch.tensor(values, dtype=dtype)


OUT_OF_RANGE = [300.0, -1.0, 1e10, -1e10, NAN, INF, -INF, 70000.0, 3e9, -0.5, 2.9, -2.9, -3e9]
"""Floats to convert to integers: in range, out of each width's range, NaN."""

SPECIAL = [0.0, -0.0, 1.5, -2.5, INF, -INF, NAN, 3.0, -1.0, 0.5, 7.0, -7.0]
"""Floats with both zeros, infinities and NaN."""


def _indices(values: Sequence[int]) -> Callable[[], torch.Tensor]:
    return lambda: torch.tensor(values, dtype=torch.int64)


def _random_indices(high: int, *shape: int) -> Callable[[], torch.Tensor]:
    """Indices in [0, high) of `shape`, the same on every call."""
    return lambda: torch.randint(0, high, shape, generator=torch.Generator().manual_seed(high + sum(shape)))


def _expanded(rows: int, columns: int, *shape: int) -> Callable[[], torch.Tensor]:
    """A seeded tensor of `shape` expanded to (rows, columns): stride 0 where it is broadcast."""
    return lambda: _seeded(*shape)().expand(rows, columns)


BROADCAST_GATHERS: list[Case] = [
    Case("flip_of_expanded_both", lambda x: x.flip(0, 1), _inputs(_expanded(4, 5, 1, 5))),
    Case("flip_of_expanded_rows_large", lambda x: x.flip(0) * 2, _inputs(_expanded(40, 3000, 1, 3000))),
    Case("flip_of_expanded_then_sum", lambda x: (x.flip(0) * 3).sum(), _inputs(_expanded(4, 5, 1, 5))),
    Case("gather_of_expanded_rows", lambda x, i: torch.gather(x, 0, i),
         _inputs(_expanded(4, 5, 1, 5), _random_indices(4, 3, 5))),
    Case("gather_of_expanded_columns", lambda x, i: torch.gather(x, 1, i),
         _inputs(_expanded(4, 5, 4, 1), _random_indices(5, 4, 7))),
    Case("gather_of_expanded_rows_large", lambda x, i: torch.gather(x, 0, i).sum(0),
         _inputs(_expanded(40, 3000, 1, 3000), _random_indices(40, 40, 3000))),
    Case("index_select_of_expanded_rows", lambda x, i: torch.index_select(x, 0, i),
         _inputs(_expanded(4, 5, 1, 5), _indices([3, 0, 2]))),
    Case("index_select_of_expanded_large", lambda x, i: torch.index_select(x, 0, i).sum(1),
         _inputs(_expanded(40, 5000, 1, 5000), _random_indices(40, 60))),
    Case("index_of_expanded_rows", lambda x, i: x[i] + 1, _inputs(_expanded(4, 5, 1, 5), _indices([3, 0, 2, 1, 1]))),
    Case("index_of_expanded_columns", lambda x, i: x[:, i] + 1,
         _inputs(_expanded(4, 5, 4, 1), _indices([3, 0, 2, 1, 1]))),
    Case("index_2d_of_expanded_scalar", lambda x, i, j: x[i, j],
         _inputs(_expanded(4, 5, 1, 1), _indices([3, 0, 2]), _indices([1, 4, 0]))),
    Case("embedding_of_expanded_rows", lambda w, i: F.embedding(i, w),
         _inputs(_expanded(10, 8, 1, 8), _indices([[1, 9], [0, 3]]))),
]
"""Gathers from inputs broadcast (stride 0) in the gathered dimension: the
address loses the index value it is computed from."""

CASES: list[Case] = [
    # reductions over the one dimension of a 0-d tensor
    Case("mean_dim0_of_0d", lambda x: x.mean(dim=0), _inputs(_tensor(3.0))),
    Case("var_dim0_of_0d", lambda x: x.var(dim=0, correction=0), _inputs(_tensor(3.0))),
    # equal elements: a variance of exactly 0 and a normalized value of exactly
    # 0, as eager's (a mean that is an ulp off becomes ulp / sqrt(eps))
    Case("var_std_of_equal_rows", lambda x: (x.var(1), x.std(1, correction=0), *torch.var_mean(x, 1)),
         _inputs(_expanded(3, 10, 3, 1))),
    Case("layer_norm_of_equal_rows", lambda x: F.layer_norm(torch.sigmoid(x), (10,)),
         _inputs(_expanded(3, 10, 3, 1))),
    Case("group_norm_of_equal_groups", lambda x: F.group_norm(x.reshape(2, 4, 1, 3) * 0.3 + 0.1, 2),
         _inputs(_expanded(8, 3, 8, 1))),
    Case("std_var_mean_of_0d", lambda x: (x.std(-1, keepdim=True, correction=0),
                                          *torch.var_mean(x, 0, correction=0)), _inputs(_tensor(-2.0))),
    Case("vector_norm_of_0d", lambda x: torch.linalg.vector_norm(x, dim=0), _inputs(_tensor(-2.0))),
    # reductions over empty dimensions, and variances over fewer elements
    # than their correction: divisions by zero, NaN or infinity as in eager
    Case("var_of_empty", lambda x: torch.var(x, dim=(0,)), _inputs(_seeded(0))),
    Case("mean_var_std_over_empty_dim", lambda x: (x.mean(1), x.std(1), *torch.var_mean(x, 1), x.var()),
         _inputs(_seeded(3, 0))),
    Case("var_with_correction_past_count", lambda x: (x.var(1, correction=3), x.std(0, correction=2)),
         _inputs(_seeded(2, 2))),
    # reshapes of empty tensors read through (a stride of 0 in their layout)
    Case("log_softmax_of_empty_flatten", lambda x: F.log_softmax(x.flatten(0, 2), dim=-2),
         _inputs(_seeded(1, 0, 1, 1))),
    Case("softmax_of_empty_reshape", lambda x: (x.flatten().softmax(0), x.reshape(2, 0, 3).sum(1)),
         _inputs(_seeded(2, 0, 1, 3))),
    # layer norm writes its output contiguous whatever the input's layout
    Case("layer_norm_of_permuted_expand",
         lambda x: F.layer_norm(x.reshape((25, -1, 2, 1)).expand((2, -1, -1, -1, -1)).permute((3, 1, 0, 2, 4)),
                                (3, 1)),
         _inputs(_seeded(6, 5, 5))),
    Case("layer_norm_of_transposed_affine", lambda x, w, b: F.layer_norm(x.transpose(0, 1), (4,), w, b),
         _inputs(_seeded(4, 6), _seeded(4, seed=1), _seeded(4, seed=2))),
    # matrix products of every rank combination with dimensions of size 1
    *[
        Case(f"matmul_{name}", torch.matmul, _inputs(_seeded(*a), _seeded(*b, seed=1)), triton=False)
        for name, a, b in [
            ("1d_1d", (1,), (1,)),
            ("1d_2d", (1,), (1, 3)),
            ("2d_1d", (3, 1), (1,)),
            ("1x1_1x1", (1, 1), (1, 1)),
            ("1d_batched", (1,), (2, 1, 1)),
            ("batched_1d", (2, 1, 1), (1,)),
            ("broadcast_batches", (2, 1, 1, 1), (3, 1, 1)),
            ("broadcast_batches_of_one", (1, 1, 1), (4, 1, 2)),
        ]
    ],
    # a matrix product of a tensor with itself: one extern input for two operands
    *[
        Case(f"matmul_with_itself_{name}", lambda x: torch.matmul(x, x), _inputs(_seeded(*shape)))
        for name, shape in [("1x1", (1, 1)), ("2x2", (2, 2)), ("batched", (3, 1, 1))]
    ],
    # grouped-query attention: fewer key/value heads than query heads
    Case("attention_gqa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         _inputs(_seeded(2, 8, 5, 16), _seeded(2, 2, 7, 16), _seeded(2, 2, 7, 16, seed=1))),
    Case("attention_gqa_causal_scaled",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, enable_gqa=True),
         _inputs(_seeded(1, 6, 4, 8), _seeded(1, 3, 4, 8, seed=1), _seeded(1, 3, 4, 8, seed=2)), triton=False),
    Case("attention_gqa_mask",
         lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
         _inputs(_seeded(4, 3, 8), _seeded(1, 5, 8), _seeded(1, 5, 8, seed=1), _seeded(3, 5)),
         triton=False),
    # outputs that are broadcast views (a stride of 0), inputs that are
    Case("expand_of_ones_output", lambda x: (torch.ones(1).expand(1, 4), x + 1), _inputs(_seeded(3))),
    Case("expand_of_0d_output", lambda x: x.new_zeros(()).expand(3), _inputs(_seeded(3))),
    Case("expand_of_sum_output", lambda x: x.sum(0, keepdim=True).expand(3, 4), _inputs(_seeded(5, 4))),
    Case("expand_of_add_output", lambda x: (x + 1).expand(2, 3, 4), _inputs(_seeded(1, 4))),
    Case("flip_of_expanded_columns", lambda x: x.flip(1) + 1, lambda: [_seeded(4, 1)().expand(4, 3)]),
    Case("flip_of_expanded_rows", lambda x: x.flip(0), lambda: [_seeded(1, 4)().expand(3, 4)]),
    *BROADCAST_GATHERS,
    # cat of inputs some or all of which are empty
    Case("cat_with_empty_rows", lambda a, b: torch.cat([a, b]), _inputs(_seeded(0, 3), _seeded(2, 3))),
    Case("cat_of_empty_only", lambda a, b: torch.cat([a, b]), _inputs(_seeded(0, 3), _seeded(0, 3))),
    Case("cat_with_empty_middle", lambda a, b, c: torch.cat([a, b * 2, c], 1),
         _inputs(_seeded(2, 2), _seeded(2, 0), _seeded(2, 1))),
    # the largest and smallest of a constant scattered: its NaN test is of a scalar, not a block
    *[
        Case(f"scatter_{reduce}_of_a_constant",
             lambda x, i, reduce=reduce: torch.full_like(x, 1.5).scatter_reduce(0, i, torch.full_like(x, 2.0), reduce),
             _inputs(_seeded(3, 4), lambda: torch.tensor([[0, 1, 0, 2], [2, 2, 1, 0], [1, 0, 0, 0]])))
        for reduce in ("amax", "amin")
    ],
    # an empty expanded tensor converted: the result keeps its zero stride and reads no element
    Case("empty_expanded_converted", lambda x: x.to(torch.float32),
         lambda: [torch.arange(8).view(1, 8).expand(0, 8)]),
    # a variance over stacked tensors of one element: a reduction whose rows all have size 1
    Case("var_of_stacked_single_elements", lambda x: torch.var(torch.stack([x, x * 2]), 0), _inputs(_seeded(1))),
    # a half-precision product of no rows, whose unaligned inner size the GPU pipeline would pad
    Case("product_of_no_rows_bfloat16", lambda x: (x @ x.t()).float().sum(1),
         lambda: [torch.zeros(0, 3, dtype=torch.bfloat16)]),
    # an empty slice of pooled windows, computed on: fusion weighs a window's reads per point of no points
    Case("log_of_empty_slice_of_pooled_cat",
         lambda x: torch.log(torch.cat([F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)] * 2, -3)[1:1:2]).neg(),
         _inputs(_seeded(1, 1, 1))),
    # pow with infinite and NaN exponents and bases
    *[
        Case(f"pow_{name}", fn, _inputs(_tensor(SPECIAL)))
        for name, fn in [
            ("inf", lambda x: x ** INF),
            ("minus_inf", lambda x: x ** -INF),
            ("nan", lambda x: x ** NAN),
            ("half", lambda x: x ** 0.5),
            ("minus_half", lambda x: x ** -0.5),
            ("minus_one", lambda x: x ** -1.0),
            ("two_and_a_half", lambda x: x ** 2.5),
            ("inf_base", lambda x: torch.pow(INF, x)),
            ("minus_inf_base", lambda x: torch.pow(-INF, x)),
            ("nan_base", lambda x: torch.pow(NAN, x)),
            ("two_base", lambda x: torch.pow(2.0, x)),
            ("minus_one_base", lambda x: torch.pow(-1.0, x)),
            ("zero_base", lambda x: torch.pow(0.0, x)),
            ("tensors", lambda x: torch.pow(x, x.flip(0))),
        ]
    ],
    Case("pow_special_pairs", torch.pow, lambda: [_tensor(SPECIAL)().repeat_interleave(len(SPECIAL)),
                                                 _tensor(SPECIAL)().repeat(len(SPECIAL))]),
    Case("pow_of_ones_and_minus_ones", lambda x, y: torch.pow(x, y),
         _inputs(_tensor([1.0, 1.0, 1.0, -1.0, -1.0, -1.0, 1.0, -1.0, NAN, INF, -INF, NAN]),
                 _tensor([INF, -INF, NAN, INF, -INF, 0.0, -0.0, -0.0, 0.0, 0.0, -0.0, -0.0]))),
    # float to integer conversions of NaN, infinities and out-of-range values
    *[
        Case(f"float_to_{str(dtype)[6:]}", lambda x, dtype=dtype: (x * 1).to(dtype),
             _inputs(_tensor(OUT_OF_RANGE)), triton=dtype in (torch.int64, torch.int32))
        for dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)
    ],
    Case("double_to_int32", lambda x: (x * 1).to(torch.int32), _inputs(_tensor(OUT_OF_RANGE, torch.float64)),
         triton=False),
    # signs of zero
    Case("sign_of_zeros", lambda x: (torch.sign(x), torch.sgn(x)), _inputs(_tensor(SPECIAL))),
    Case("where_minus_zero", lambda x: torch.where(x > 0, x, -0.0), _inputs(_tensor(SPECIAL))),
    Case("maximum_minus_zero", lambda x: torch.maximum(x, torch.tensor(-0.0)), _inputs(_tensor(SPECIAL)),
         triton=False),
    # fmod, remainder and floor division by infinities
    *[
        Case(f"{name}_by_{label}", lambda x, fn=fn, d=d: fn(x, d), _inputs(_tensor(SPECIAL)))
        for name, fn in (("fmod", torch.fmod), ("remainder", torch.remainder),
                         ("floor_divide", torch.floor_divide))
        for label, d in (("inf", INF), ("minus_inf", -INF), ("two", 2.0), ("minus_two", -2.0))
    ],
    # comparisons of constants (0-d) combined with comparisons of tensors
    Case("and_with_constant_comparison", lambda x: torch.where((x > 0) & (x.new_full((), 2.0) < 3.0), x, -x),
         _inputs(_tensor(SPECIAL))),
    Case("xor_with_constant_nan_comparison",
         lambda x: (x > 0) ^ (x.new_full((), NAN) != x.new_full((), NAN)), _inputs(_tensor(SPECIAL))),
    Case("or_with_constant_comparison", lambda x: (x != x) | (x.new_full((), INF) > x.new_full((), 1.0)),
         _inputs(_tensor(SPECIAL))),
    Case("remainder_of_inf_by_tensor", lambda x: torch.remainder(x.new_full((), INF), x),
         _inputs(_tensor(SPECIAL))),
    Case("fmod_remainder_floor_divide_tensors",
         lambda x: (torch.fmod(x, x.flip(0)), torch.remainder(x, x.flip(0)), torch.floor_divide(x, x.flip(0))),
         _inputs(_tensor(SPECIAL))),
    # softplus in float32 for half precision
    Case("softplus_float16", lambda x: F.softplus(x), lambda: [torch.linspace(-5, 25, 61).half()]),
    Case("softplus_bfloat16_beta", lambda x: F.softplus(x, beta=2, threshold=5),
         lambda: [torch.linspace(-5, 25, 61).bfloat16()], triton=False),
    Case("cat_with_legacy_empty", lambda a, b, c: torch.cat([a, b, c]),
         _inputs(_seeded(0), _seeded(2, 3), _seeded(1, 3))),
    # 0-d float64 tensors and Python floats: Dynamo restarts its analysis to
    # trace the floats as tensors, which the backend lets through
    Case("tanh_of_0d_double", torch.tanh, _inputs(_tensor(0.5, torch.float64))),
    Case("python_float_input", lambda x, s: torch.tanh(x) * s + s,
         lambda: [_tensor(-0.25, torch.float64)(), 2.5]),
    # Python numbers with half-precision tensors: the number is an element of
    # the tensor's dtype (rounded to it) before the float32 computation
    Case("add_scalar_to_0d_float16", lambda x: torch.add(x, -0.86).to(torch.float32),
         _inputs(_tensor(0.3, torch.float16))),
    Case("scalar_ops_float16_to_float32", lambda x: ((x * 0.1).float(), (x - 0.86).float(), (x / 0.7).float()),
         lambda: [torch.linspace(-3, 3, 37).half()]),
    Case("add_scalar_bfloat16_to_float32", lambda x: (x + 0.123).float(),
         lambda: [torch.linspace(-3, 3, 37).bfloat16()]),
    Case("compare_float16_with_scalar", lambda x: (x < 0.3, x == 0.1, x >= -0.7),
         lambda: [torch.tensor([0.3, 0.1, -0.7, 0.2998, 0.0999, -0.6997], dtype=torch.float16)]),
    Case("python_float_input_float32", lambda x, s: (x * s).sum() - s, lambda: [_seeded(3, 4)(), -1.5]),
]


_OUT_OF_RANGE = (
    "a float out of an integer's range converts as on x86 (the lowest integer), as eager's CPU "
    "kernels give it; CUDA's conversion saturates (NaN gives 0 in 32 bits)"
)
_UNROUNDED_NUMBER = (
    "CUDA's kernels add a Python number to a half-precision tensor in float32 with the number "
    "unrounded; the CPU's, and ptensor's `full` of the tensor's dtype, round it first (1 ulp of "
    "float16 apart)"
)
CUDA_DIFFERENCES = {
    "float_to_int64": _OUT_OF_RANGE,
    "float_to_int32": _OUT_OF_RANGE,
    "add_scalar_to_0d_float16": _UNROUNDED_NUMBER,
    "scalar_ops_float16_to_float32": _UNROUNDED_NUMBER,
    "add_scalar_bfloat16_to_float32": _UNROUNDED_NUMBER,
}
"""Where eager's CUDA kernels differ from its CPU ones, which compiled code follows."""


def _case_params(cases: Sequence[Case], triton: bool = False) -> list:
    """The cases as parameters (those for the Triton target when `triton`),
    the llvm target's bugs as strict xfails."""
    params = []
    for c in cases:
        if triton and not c.triton:
            continue
        bug = c.llvm_bug
        if triton:
            bug = c.interpreter_bug if TEST_DEVICE == "cpu" else CUDA_DIFFERENCES.get(c.name)
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        params.append(pytest.param(c, id=c.name, marks=marks))
    return params


def assert_zero_signs(actual: Any, expected: Any) -> None:
    """Zeros carry eager's signs (which value comparisons do not see)."""
    from conftest import flatten_outputs

    for index, (a, e) in enumerate(zip(flatten_outputs(actual), flatten_outputs(expected), strict=True)):
        if isinstance(e, torch.Tensor) and e.is_floating_point():
            zeros = (e == 0).cpu()
            assert torch.equal(
                torch.signbit(a.cpu())[zeros], torch.signbit(e.cpu())[zeros]
            ), f"output {index}: signs of zeros {a} != eager's {e}"


@pytest.mark.parametrize("case", _case_params(CASES))
def test_case_llvm(case: Case, backend_check) -> None:
    actual = backend_check(case.fn, case.make_inputs, "llvm", case.fallback_ops)
    assert_zero_signs(actual, case.fn(*case.make_inputs()))


@pytest.mark.parametrize("case", _case_params(CASES, triton=True))
def test_case_triton(case: Case, backend_check, triton_device) -> None:
    actual = backend_check(
        case.fn,
        lambda: [to_test_device(x) for x in case.make_inputs()],
        "triton",
        case.fallback_ops,
    )
    assert_zero_signs(actual, case.fn(*[to_test_device(x) for x in case.make_inputs()]))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", _case_params(BROADCAST_GATHERS))
def test_broadcast_gathers_llvm_threads(case: Case, threads: int, backend_check) -> None:
    """Gathers from broadcast inputs, large ones shared among threads."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        backend_check(case.fn, case.make_inputs, "llvm", case.fallback_ops)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.div(x, x[:, :, 5::2]),
        lambda x: x[..., 5::2] * x + x[..., 4::3],
    ],
    ids=["div_by_strided_slice", "slices_of_size_one"],
)
def test_dynamic_slices_of_size_one_under_guards_broadcast(fn, backend_check) -> None:
    """Under dynamic shapes, a slice whose size is 1 only under Dynamo's
    guards (`x[:, :, 5::2]` of a dynamic size 6 or 7) broadcasts."""
    permalloy.reset_stats()
    compiled = torch.compile(fn, backend="permalloy", dynamic=True, fullgraph=True,
                             options={"target": "llvm", "fallback": "raise"})
    for size in (6, 7):
        x = _seeded(1, 2, size)()
        assert_outputs_match(compiled(x), fn(x))
    backend_check.assert_stats("llvm")


def test_case_names_are_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


# -- graphs that cannot compile -----------------------------------------------------


def _permalloy_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "permalloy could not compile" in str(w.message)]


def _run_with_fallback(fn: Callable, *inputs: Any, calls: int = 2) -> tuple[Any, list[str]]:
    """`fn` compiled with `fallback="warn"`, run `calls` times; its last result
    and permalloy's warnings."""
    compiled = torch.compile(fn, backend="permalloy", options={"fallback": "warn"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            result = compiled(*inputs)
    return result, _permalloy_warnings(caught)


def _complex_norm(x):
    return torch.linalg.vector_norm(torch.asinh(x))


def test_fallback_runs_the_graph_before_decompositions() -> None:
    """A complex inverse hyperbolic sine has no rule of `complex_as_real`: eager runs what the
    user wrote, a real norm, not a decomposition of it."""
    x = torch.randn(6, dtype=torch.complex64)
    result, messages = _run_with_fallback(_complex_norm, x)
    assert len(messages) == 1 and "aten.asinh.default" in messages[0]
    assert_outputs_match(result, _complex_norm(x))
    (record,) = permalloy.stats()
    assert not record["compiled"] and record["target"] == "llvm"


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.linalg.vector_norm(x),
        lambda x: torch.linalg.vector_norm(x, 0),
        lambda x: torch.linalg.vector_norm(x, 3.0, dim=0),
        lambda x: x.var(0),
        lambda x: x.mean(),
    ],
    ids=["norm2", "norm0", "norm3", "var", "mean"],
)
def test_decompositions_are_right_for_complex_inputs(fn) -> None:
    """permalloy's decompositions leave complex tensors to torch: the ATen
    graph computes what eager does."""
    x = torch.randn(4, 3, dtype=torch.complex64)
    (graph,) = capture_aten_graphs(fn, x)
    assert_outputs_match(graph(x), (fn(x),))


@pytest.mark.parametrize("fallback", ["warn", "raise"])
def test_dynamo_restarts_pass_through_the_backend(fallback) -> None:
    """Dynamo restarts its analysis from inside AOTAutograd's trace when a
    graph takes a 0-d float64 tensor or a Python float; the restart is no
    failure: no warning, no error, one compiled graph."""
    fn = lambda x, s: torch.tanh(x) * s  # noqa: E731
    x = torch.tensor(0.5, dtype=torch.float64)
    compiled = torch.compile(fn, backend="permalloy", options={"fallback": fallback, "target": "llvm"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compiled(x, 2.5)
    assert _permalloy_warnings(caught) == []
    torch.testing.assert_close(result, fn(x, 2.5))
    assert [record["compiled"] for record in permalloy.stats()] == [True]


@pytest.fixture
def exploding_mean(monkeypatch):
    """`aten.mean`'s decomposition raising, in a decomposition table built
    for the test (the table is built once per process): the table is built
    again after it, without the broken entry."""
    from permalloy.lowering import decompositions

    def broken(*args, **kwargs):
        raise IndexError("decomposition exploded")

    monkeypatch.setitem(decompositions.OWN, torch.ops.aten.mean, broken)
    decompositions._built_table.cache_clear()  # noqa: SLF001
    yield
    decompositions._built_table.cache_clear()  # noqa: SLF001


def test_decomposition_failure_warns_once_and_runs_eagerly(exploding_mean) -> None:
    """A failure inside AOTAutograd (here a decomposition) is the backend's to
    handle: one warning, then Dynamo's graph runs eagerly."""
    x = torch.randn(3, 4)
    result, messages = _run_with_fallback(lambda x: x.mean(dim=0) + 1, x, calls=3)
    assert len(messages) == 1 and "IndexError: decomposition exploded" in messages[0]
    torch.testing.assert_close(result, x.mean(dim=0) + 1)
    (record,) = permalloy.stats()
    assert not record["compiled"] and "IndexError" in record["reason"]


def test_decomposition_failure_is_a_clear_error_with_fallback_raise(exploding_mean) -> None:
    from permalloy.tools.backend import PermalloyCompileError

    compiled = torch.compile(lambda x: x.mean(dim=0), backend="permalloy", options={"fallback": "raise"})
    with pytest.raises(BackendCompilerFailed) as caught:
        compiled(torch.randn(3))
    inner = caught.value.inner_exception
    assert isinstance(inner, PermalloyCompileError)
    assert "permalloy could not compile a graph: IndexError: decomposition exploded" in str(inner)


def _attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def test_training_fallback_runs_attention_as_written(monkeypatch) -> None:
    """A training graph whose attention was written as math for AOTAutograd
    falls back to Dynamo's graph calling attention itself."""
    from permalloy.tools import backend

    seen = []

    def failing(graph, options):
        raise RuntimeError("lowering exploded")

    monkeypatch.setattr(backend, "compile_graph", failing)
    original = torch._dynamo.backends.registry.lookup_backend("permalloy")

    def spy(graph, example_inputs, **kwargs):
        result = original(graph, example_inputs, **kwargs)
        seen.append([n.target for n in graph.graph.nodes if n.op == "call_function"])
        return result

    q, k, v = (torch.randn(1, 2, 4, 8, requires_grad=True) for _ in range(3))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        out = torch.compile(_attention, backend=spy)(q, k, v)
    out.sum().backward()
    assert seen and all(F.scaled_dot_product_attention in targets for targets in seen)
    torch.testing.assert_close(out, _attention(q, k, v))


def _gradients(fn: Callable, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The output of `fn` and the gradients of its inputs, for a fixed
    upstream gradient."""
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    output = fn(*leaves)
    weights = torch.randn(output.shape, generator=torch.Generator().manual_seed(3))
    output.backward(weights)
    return [output.detach(), *(x.grad for x in leaves)]


def _gqa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def test_grouped_query_attention_gradients() -> None:
    """Training graphs write attention as math, repeating each key/value head
    for its group of query heads; forward and backward compile."""
    inputs = [_seeded(2, 4, 5, 8)(), _seeded(2, 2, 5, 8, seed=1)(), _seeded(2, 2, 5, 8, seed=2)()]
    compiled = torch.compile(_gqa_causal, backend="permalloy", options={"fallback": "raise"})
    actual, expected = _gradients(compiled, inputs), _gradients(_gqa_causal, inputs)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2 and all(r["compiled"] and not r["fallback_ops"] for r in records)


@pytest.mark.parametrize("need_weights", [False, True])
def test_multihead_attention_gradients_with_a_padding_mask(need_weights) -> None:
    """`nn.MultiheadAttention`'s function, which Dynamo's graphs call whole,
    trains as math (its explicit path of products and softmax): no fused
    attention backward, gradients of eager's, weights returned only when
    asked for."""
    torch.manual_seed(0)
    attention = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[0, 3:] = True

    def fn(x):
        output, weights = attention(x, x, x, key_padding_mask=padding, need_weights=need_weights)
        return output if weights is None else output + weights.sum(-1, keepdim=True)

    def run(function) -> list[torch.Tensor]:
        attention.zero_grad(set_to_none=True)
        results = _gradients(function, [_seeded(2, 5, 16)()])
        return results + [p.grad.clone() for p in attention.parameters()]

    compiled = torch.compile(fn, backend="permalloy", options={"fallback": "raise"})
    actual, expected = run(compiled), run(fn)
    for a, e in zip(actual, expected, strict=True):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
    records = permalloy.stats()
    assert len(records) == 2 and all(r["compiled"] and not r["fallback_ops"] for r in records)


@pytest.mark.parametrize("value", [5, ["dumps"], True])
def test_dump_dir_of_the_wrong_type_is_a_clear_error(value, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    compiled = torch.compile(lambda x: x + 1, backend="permalloy", options={"dump_dir": value})
    with pytest.raises(BackendCompilerFailed, match="option 'dump_dir' takes a folder path"):
        compiled(torch.randn(3))
    assert list(tmp_path.iterdir()) == []


def test_meta_tensors_fall_back_with_a_warning() -> None:
    """Meta tensors have no data for kernels: the graph runs eagerly, giving
    eager's meta result."""
    x = torch.randn(3, 4, device="meta")
    result, messages = _run_with_fallback(lambda x: x.sin() + 1, x)
    assert len(messages) == 1 and "meta" in messages[0]
    assert result.device.type == "meta" and result.shape == (3, 4)


def _constant_table(x):
    table = torch.tensor([[3, 1, 2], [0, 2, 1]])
    return x[:, table] * 2, table + 0, table


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_constants_are_made_once_and_returned_as_copies(target, request, tmp_path):
    """A constant tensor the graph builds is made on the first call and kept
    (on a GPU, not copied from the host on every call); where the graph
    returns it, the caller gets a copy it may write without changing later
    results."""
    if target == "triton":
        request.getfixturevalue("triton_device")
    options = {"fallback": "raise", "target": target, "dump_dir": str(tmp_path)}
    compiled = torch.compile(_constant_table, backend="permalloy", options=options)
    x = to_test_device(torch.randn(4, 5))
    expected = _constant_table(x.cpu())
    for _ in range(3):
        results = compiled(x)
        for result, wanted in zip(results, expected, strict=True):
            torch.testing.assert_close(result.cpu(), wanted, rtol=0, atol=0)
        results[1].add_(100)
        results[2].add_(1000)
    (host,) = tmp_path.glob("graph_000/*host.py")
    source = host.read_text()
    assert source.count("constant_") == 1 and ".clone()" in source, source


def _copies_and_views(x, y):
    return x.clone(), y.contiguous(), x.to(x.dtype, copy=True), x[1:].clone(), y.clone(), x.view(-1), y.t(), x[1:]


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_copies_of_inputs_are_new_memory_and_views_stay_views(target, request):
    """`clone`, `contiguous` of a contiguous input and other copies of an
    input return new memory, which the caller may write without changing
    the input, in eager's strides; the graph's views of an input share its
    memory, as eager's do."""
    if target == "triton":
        request.getfixturevalue("triton_device")
    options = {"fallback": "raise", "target": target}
    compiled = torch.compile(_copies_and_views, backend="permalloy", options=options)
    move = to_test_device if target == "triton" else (lambda t: t)
    x, y = move(torch.randn(3, 4)), move(torch.randn(4, 3).t())
    before = x.clone(), y.clone()
    results = compiled(x, y)
    expected = _copies_and_views(x, y)
    for result, wanted in zip(results[:5], expected, strict=False):
        assert result.untyped_storage().data_ptr() not in (x.untyped_storage().data_ptr(), y.untyped_storage().data_ptr())
        assert result.stride() == wanted.stride()
        torch.testing.assert_close(result, wanted, rtol=0, atol=0)
        result.add_(100)
    torch.testing.assert_close((x, y), before, rtol=0, atol=0)
    for result, base in zip(results[5:], (x, y, x), strict=True):
        assert result.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def _table_lookup(table, rows, scale):
    return (table[rows] * scale).sum()


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_cpu_indices_into_a_table_on_the_test_device(target, request):
    """An index tensor left on the CPU (as models build position indices)
    indexes a table on the test device, forward and backward (whose
    accumulation into the table's gradient reads the CPU index): on a GPU
    the program moves the index for its kernels, as eager's kernels do."""
    if target == "triton":
        request.getfixturevalue("triton_device")
    options = {"fallback": "raise", "target": target}
    compiled = torch.compile(_table_lookup, backend="permalloy", options=options)
    generator = torch.Generator().manual_seed(3)
    move = to_test_device if target == "triton" else (lambda t: t)
    table = move(torch.randn(7, 5, generator=generator)).requires_grad_()
    rows = torch.tensor([[0, 3, 3], [6, 1, 0]])
    scale = move(torch.randn(2, 3, 5, generator=generator))
    compiled(table, rows, scale).backward()
    actual = table.grad.clone()
    table.grad = None
    _table_lookup(table, rows, scale).backward()
    torch.testing.assert_close(actual, table.grad)
    assert all(r["compiled"] and not r["fallback_ops"] for r in permalloy.stats())


def _indexed(x, rows, scattered):
    y = x * 2
    return (
        torch.gather(y, 0, rows), y.scatter_add(0, rows, scattered), y[rows[:, 0]] + 1,
        torch.index_put(y, (rows[:, 0],), scattered[:, 0], accumulate=True),
    )  # fmt: skip


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_out_of_range_indices_stay_inside_the_tensor(target, request):
    """Eager raises for an index out of range; compiled code does not check,
    but clamps each index to its dimension, so a gather reads and a scatter
    writes the nearest end and never memory outside the tensor."""
    if target == "triton":
        request.getfixturevalue("triton_device")
    move = to_test_device if target == "triton" else (lambda t: t)
    x = move(torch.randn(5, 3, generator=torch.Generator().manual_seed(2)))
    rows = move(torch.tensor([[0, 9, 2], [1_000_000, 4, 5], [3, 3, 7]]))
    scattered = move(torch.ones(3, 3))
    with pytest.raises((RuntimeError, IndexError)):  # on the CPU: a GPU's eager kernels assert on the device
        _indexed(x.cpu(), rows.cpu(), scattered.cpu())
    compiled = torch.compile(_indexed, backend="permalloy", options={"fallback": "raise", "target": target})
    results = compiled(x, rows, scattered)
    clamped = rows.clamp(0, 4)
    clamped_first = torch.where(rows[:, 0] < 0, rows[:, 0] + 5, rows[:, 0]).clamp(0, 4)
    expected = _indexed(x, clamped, scattered)[:2] + (
        (x * 2)[clamped_first] + 1,
        torch.index_put(x * 2, (clamped_first,), scattered[:, 0], accumulate=True),
    )
    for result, wanted in zip(results, expected, strict=True):
        torch.testing.assert_close(result, wanted)


INTEGER_DIVISIONS = {
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "trunc_divide": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "fmod": torch.fmod,
}


@pytest.mark.parametrize("size", [3, 37])
@pytest.mark.parametrize("name", sorted(INTEGER_DIVISIONS))
def test_integer_division_by_zero_raises_as_eager_on_the_cpu(name, size) -> None:
    """An integer division that meets a zero divisor raises torch's own
    RuntimeError, wherever the zero lies (a vector chunk or the tail), and a
    division whose divisors are all nonzero does not (the inactive lanes of a
    masked tail load zeros)."""
    division = INTEGER_DIVISIONS[name]

    def fn(a, b):
        return division(a * 3, b) + 1

    compiled = torch.compile(fn, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
    a = torch.arange(-size, size, dtype=torch.int64)
    divisor = torch.where(a % 5 == 0, 7, a)
    torch.testing.assert_close(compiled(a, divisor), fn(a, divisor), rtol=0, atol=0)
    for position in (0, 2 * size - 1):
        zero = divisor.clone()
        zero[position] = 0
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(a, zero)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            compiled(a, zero)


def test_integer_division_by_a_zero_number_raises_as_eager() -> None:
    compiled = torch.compile(lambda a: a // 0, backend="permalloy", options={"fallback": "raise", "target": "llvm"})
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        compiled(torch.arange(5))


def _threaded_graph(x, y):
    return torch.softmax(x * 2 + y, -1).sum(0) + (x @ y.t()).mean()


@pytest.mark.parametrize("target", ["llvm", "triton"])
def test_a_compiled_function_called_from_eight_threads_at_once(target, request) -> None:
    """Eight threads call one compiled graph (kernels, a library call, a
    reduction) at the same time, each with its own inputs; every result is
    right (on the CPU, Triton's interpreter runs one launch at a time)."""
    if target == "triton":
        request.getfixturevalue("triton_device")
    compiled = torch.compile(_threaded_graph, backend="permalloy", options={"fallback": "raise", "target": target})
    inputs = [(to_test_device(torch.randn(64, 33)), to_test_device(torch.randn(64, 33))) for _ in range(8)]
    compiled(*inputs[0])
    start = threading.Barrier(8)
    failures: list[str] = []

    def call(index: int) -> None:
        start.wait()
        for _ in range(10):
            try:
                result = compiled(*inputs[index]).cpu()
                torch.testing.assert_close(result, _threaded_graph(*(t.cpu() for t in inputs[index])), rtol=1e-4, atol=1e-5)
            except Exception as error:  # noqa: BLE001 - collected and reported below
                failures.append(f"thread {index}: {error!r}"[:300])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
