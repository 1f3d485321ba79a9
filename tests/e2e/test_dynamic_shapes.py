"""
Dynamic shapes end to end: one compiled graph serves every size.

Each function or zoo model is compiled once with `torch.compile(...,
dynamic=True)` and called at three input sizes. Every call must agree with
eager (the shared checks of `conftest.py`: float32 relative error below 1e-4,
elementwise tolerances, shapes, dtypes and strides) and `permalloy.stats()`
must hold exactly one record per compiled graph after the three calls: sizes
reach the kernels as run-time arguments, nothing is recompiled. The same holds
for `torch._dynamo.mark_dynamic` and for Dynamo's automatic dynamic shapes
(where the second size recompiles once into a dynamic graph and the third
reuses it), for training (forward and backward graphs), on the llvm target
and on the triton target: under Triton's interpreter (small cases only), or on a
GPU with `PERMALLOY_TEST_DEVICE=cuda`.

Sizes avoid 0 and 1 (Dynamo specializes them) and keep distinct dimensions
distinct at the first call (Dynamo gives equal sizes one symbol).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import permalloy
from permalloy.tools.zoo import CASES, ZooSize, make_case
from conftest import TEST_DEVICE, to_test_device

pytestmark = pytest.mark.usefixtures("fresh_backend")

Inputs = Callable[[int, int], Sequence[Any]]
"""Inputs of a case at a size: (n, m) -> arguments."""

SIZES = [(6, 10), (9, 4), (14, 7)]
"""(n, m) of the first, second and third call."""


def _compile(fn: Callable, target: str, dynamic: bool | None = True) -> Callable:
    options = {"target": target, "fallback": "raise"}
    return torch.compile(fn, backend="permalloy", dynamic=dynamic, options=options)


def _clone(inputs: Sequence[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _check_call(
    check, compiled: Callable, fn: Callable, inputs: Sequence[Any], dynamic_dims: int | None = None
) -> None:
    """One call of the compiled function against eager on copies of `inputs`
    (`check`: the shared `backend_check`); the inputs are left as eager
    leaves them. `dynamic_dims`: a dimension of every tensor given to the
    compiled function to mark dynamic (a mark stays with its tensor, not with
    copies)."""
    eager_inputs = _clone(inputs)
    expected = fn(*eager_inputs)
    given = _clone(inputs)
    if dynamic_dims is not None:
        for x in given:
            torch._dynamo.mark_dynamic(x, dynamic_dims)
    actual = compiled(*given)
    check.assert_outputs_match(actual, expected)
    for index, (after, eager_after) in enumerate(zip(given, eager_inputs, strict=True)):
        if isinstance(eager_after, torch.Tensor):
            check.assert_tensor_matches(after, eager_after, f"input {index} after the call")


def _graphs(target: str) -> int:
    """The number of compiled graphs so far, all compiled for `target`."""
    records = permalloy.stats()
    for record in records:
        assert record["compiled"], record["reason"]
        assert record["target"] == target
        assert record["fallback_ops"] == []
    return len(records)


def run_sizes(
    check, fn: Callable, inputs: Inputs, target: str, sizes=SIZES, graphs: int = 1
) -> None:
    """Compile `fn` once with dynamic shapes and check it at every size; the
    stats log ends with `graphs` records."""
    compiled = _compile(fn, target)
    for n, m in sizes:
        torch.manual_seed(n * 100 + m)
        _check_call(check, compiled, fn, inputs(n, m))
    assert _graphs(target) == graphs, permalloy.stats()


def _randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


# --------------------------------------------------------------------------
# Functions over dynamic sizes
# --------------------------------------------------------------------------

W_LINEAR = torch.randn(12, 5, generator=torch.Generator().manual_seed(3))
B_LINEAR = torch.randn(12, generator=torch.Generator().manual_seed(4))

FUNCTIONS: dict[str, tuple[Callable, Inputs]] = {
    # reductions over dynamic axes
    "sum_both_axes": (lambda x: (x.sum(-1), x.sum(0)), lambda n, m: [_randn(n, m)]),
    "mean_var": (lambda x: x.mean(0) + x.var(1).sum(), lambda n, m: [_randn(n, m)]),
    "amax_argmax": (lambda x: (x.amax(1), x.argmax(0)), lambda n, m: [_randn(n, m)]),
    "sum_all_3d": (lambda x: x.sum() + x.sum((0, 2)).mean(), lambda n, m: [_randn(n, 3, m)]),
    # normalizations
    "softmax_rows": (lambda x: torch.softmax(x, -1), lambda n, m: [_randn(n, m)]),
    "log_softmax_columns": (lambda x: torch.log_softmax(x, 0), lambda n, m: [_randn(n, m)]),
    "layer_norm_symbolic_width": (
        lambda x: F.layer_norm(x, (x.shape[-1],)),
        lambda n, m: [_randn(n, m)],
    ),
    "layer_norm_affine": (
        lambda x, w, b: F.layer_norm(x, (8,), w, b),
        lambda n, m: [_randn(n, m, 8), _randn(8), _randn(8)],
    ),
    # views and reshapes with symbolic sizes
    "view_flat": (lambda x: x.view(-1) * 2, lambda n, m: [_randn(n, m)]),
    "flatten_3d": (lambda x: torch.tanh(x.reshape(-1, x.shape[-1])), lambda n, m: [_randn(n, m, 3)]),
    "reshape_of_transpose": (lambda x: x.t().reshape(-1) + 1, lambda n, m: [_randn(n, m)]),
    "unsqueeze_expand": (
        lambda x: x.unsqueeze(1).expand(-1, 3, -1).reshape(-1, x.shape[1]) * 2,
        lambda n, m: [_randn(n, m)],
    ),
    "permute_contiguous": (
        lambda x: x.permute(2, 0, 1).contiguous() + 1,
        lambda n, m: [_randn(n, m, 3)],
    ),
    "split_heads": (
        lambda x: x.view(x.shape[0], x.shape[1], 2, 4).transpose(1, 2).exp(),
        lambda n, m: [_randn(n, m, 8)],
    ),
    # slicing with symbolic bounds
    "slice_inner": (lambda x: x[1:-1] * 2, lambda n, m: [_randn(n, m)]),
    "slice_half": (lambda x: x[:, : x.shape[1] // 2] + 1, lambda n, m: [_randn(n, m)]),
    "slice_step": (lambda x: (x[::2] * 2, x[1::3].sum(0)), lambda n, m: [_randn(n, m)]),
    "even_odd_rows": (lambda x: x[::2] + x[1::2], lambda n, m: [_randn(2 * n, m)]),
    "narrow": (lambda x: x.narrow(0, 1, x.shape[0] - 2).sum(0), lambda n, m: [_randn(n, m)]),
    # broadcasting
    "outer_add": (lambda x, y: x[:, None] + y[None, :], lambda n, m: [_randn(n), _randn(m)]),
    "row_bias": (lambda x, b: torch.relu(x + b), lambda n, m: [_randn(n, m), _randn(m)]),
    "column_scale": (lambda x, c: x * c, lambda n, m: [_randn(n, m), _randn(n, 1)]),
    "where_masked_fill": (
        lambda x, y: torch.where(x > y, x, y).masked_fill(x < -1, 0.0),
        lambda n, m: [_randn(n, m), _randn(m)],
    ),
    # data movement
    "cat_rows": (lambda x, y: torch.cat([x, y * 2], 0), lambda n, m: [_randn(n, m), _randn(n + 3, m)]),
    "cat_columns": (lambda x: torch.cat([x, x.exp()], 1), lambda n, m: [_randn(n, m)]),
    "pad": (lambda x: F.pad(x, (1, 2)) * 3, lambda n, m: [_randn(n, m)]),
    # padded to a multiple of 16 columns, as torch's fused attention pads a mask
    "pad_to_multiple": (
        lambda x: F.pad(x, (0, 16 - x.shape[1] % 16), value=-1.0)[:, : x.shape[1] + 2] + 1,
        lambda n, m: [_randn(n, m)],
    ),
    "index_select": (
        lambda x, i: x[i] * 2,
        lambda n, m: [_randn(n, m), torch.randint(0, n, (m + 2,))],
    ),
    "embedding": (
        lambda table, ids: F.embedding(ids, table).sum(-1),
        lambda n, m: [_randn(20, 5), torch.randint(0, 20, (n, m))],
    ),
    # generators sized by symbols
    "arange_of_size": (
        lambda x: x + torch.arange(x.shape[0]).unsqueeze(1),
        lambda n, m: [_randn(n, m)],
    ),
    "causal_mask": (
        lambda x: x.masked_fill(torch.ones(x.shape[0], x.shape[0], dtype=torch.bool).triu(1), 0.0),
        lambda n, m: [_randn(n, n)],
    ),
    # library calls
    "matmul": (lambda x, y: torch.relu(x @ y), lambda n, m: [_randn(n, 5), _randn(5, m)]),
    "linear_addmm": (
        lambda x: F.linear(x, W_LINEAR, B_LINEAR).tanh(),
        lambda n, m: [_randn(n, 5)],
    ),
    "bmm": (lambda x, y: torch.bmm(x, y).sum(-1), lambda n, m: [_randn(3, n, 4), _randn(3, 4, m)]),
    # integer arithmetic on sizes
    "size_floordiv": (
        lambda x: x[: x.shape[0] // 2] * (x.shape[1] // 3),
        lambda n, m: [_randn(n, m)],
    ),
    "size_scalar": (lambda x: x * x.shape[0] + x.shape[1], lambda n, m: [_randn(n, m)]),
    # a slice of a slice with steps: Dynamo's size (s0 ceildiv 2 + 1) floordiv 2
    # is permalloy's s0 ceildiv 2 ceildiv 2
    "strided_slice_of_slice": (lambda x: torch.tanh(x)[::2][::2], lambda n, m: [_randn(2 * n)[::2]]),
    # a strided slice's length, permalloy's (s0 - 3) ceildiv 2, stacked: Dynamo's
    # size of the stack is 2 * (s0 floordiv 2) - 2
    "stacked_strided_slice": (
        lambda x: torch.stack([x[3::2], x[3::2].exp()]).cumsum(-1),
        lambda n, m: [_randn(n + m + 4)],
    ),
    "size_true_division": (
        lambda x: x * (x.shape[0] / (x.shape[1] - 1)) + x.shape[1] ** 2 / 4,
        lambda n, m: [_randn(n, m)],
    ),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_function_serves_every_size_llvm(name: str, backend_check) -> None:
    fn, inputs = FUNCTIONS[name]
    run_sizes(backend_check, fn, inputs, "llvm")


WIDE_SIZES = [(5, 7), (3, 200), (70, 1030)]
"""Sizes below and across the llvm target's vector width and thread split."""

WIDE_FUNCTIONS: dict[str, Callable] = {
    "softmax_columns": lambda x: torch.softmax(x, 0),
    "transpose": lambda x: x.t().contiguous() * 2,
    "roll_flip": lambda x: x.roll(3, 1).flip(0),
    "argmax_mean": lambda x: (x.argmax(0), x.argmax(1), x.mean()),
}


@pytest.mark.parametrize("name", list(WIDE_FUNCTIONS))
def test_function_serves_wide_and_narrow_sizes_llvm(name: str, backend_check) -> None:
    run_sizes(backend_check, WIDE_FUNCTIONS[name], lambda n, m: [_randn(n, m)], "llvm", WIDE_SIZES)


XFAIL_FUNCTIONS: dict[str, tuple[Callable, Inputs, str]] = {
    "view_by_floordiv": (
        lambda x: x.view(x.shape[0] // 2, -1).sum(-1),
        lambda n, m: [_randn(2 * n, m)],
        "torch infers the -1 as (s0 floordiv (s0 floordiv 2)) * s1, which is "
        "2 * s1 only for even s0: the element counts are equal under Dynamo's "
        "guards, but its static evaluator, which the importer asks, does not "
        "derive s0 * s1 == (s0 floordiv 2) * (s0 floordiv (s0 floordiv 2)) * s1 "
        "from them",
    ),
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))
        for name, (_, _, reason) in XFAIL_FUNCTIONS.items()
    ],
)
def test_sizes_equal_only_under_guards(name: str, backend_check) -> None:
    fn, inputs, _ = XFAIL_FUNCTIONS[name]
    run_sizes(backend_check, fn, inputs, "llvm")


# --------------------------------------------------------------------------
# The zoo
# --------------------------------------------------------------------------

ZOO_SIZES = [(2, 8, 8), (3, 5, 12), (5, 11, 16)]
"""(batch, sequence, image side) of the three calls of a zoo model."""


def _inference(model: nn.Module) -> Callable:
    def run(*inputs):
        with torch.no_grad():
            return model(*inputs)

    return run


def _zoo_inputs(name: str, base: ZooSize) -> Inputs:
    """The inputs of a zoo case at (batch, sequence, image) index `k`."""

    def inputs(batch: int, k: int) -> list[torch.Tensor]:
        _, seq, image = ZOO_SIZES[k]
        return list(make_case(name, replace(base, batch=batch, seq=seq, image=image)).inputs)

    return inputs


@pytest.mark.parametrize("name", list(CASES))
def test_zoo_model_serves_every_size_llvm(name: str, backend_check) -> None:
    base = ZooSize(seq=ZOO_SIZES[0][1], image=ZOO_SIZES[0][2])
    model = make_case(name, base).model
    sizes = [(batch, k) for k, (batch, _, _) in enumerate(ZOO_SIZES)]
    run_sizes(backend_check, _inference(model), _zoo_inputs(name, base), "llvm", sizes)


# --------------------------------------------------------------------------
# How Dynamo comes to dynamic sizes
# --------------------------------------------------------------------------


def _softmax_residual(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * 2, -1) + y.sum(0)


def test_mark_dynamic_compiles_once(backend_check) -> None:
    """Without `dynamic=True`, a dimension marked dynamic before the first
    call makes the first graph serve later sizes of it."""
    compiled = _compile(_softmax_residual, "llvm", dynamic=None)
    for index, rows in enumerate([6, 9, 14]):
        mark = 0 if index == 0 else None
        inputs = [_randn(rows, 10), _randn(rows, 10)]
        _check_call(backend_check, compiled, _softmax_residual, inputs, dynamic_dims=mark)
    assert _graphs("llvm") == 1, permalloy.stats()


def test_automatic_dynamic_recompiles_once(backend_check) -> None:
    """By default the first call compiles for its sizes; a second size
    recompiles once into a graph over size symbols, which a third reuses."""
    compiled = _compile(_softmax_residual, "llvm", dynamic=None)
    counts = []
    for rows, cols in SIZES:
        _check_call(backend_check, compiled, _softmax_residual, [_randn(rows, cols), _randn(rows, cols)])
        counts.append(_graphs("llvm"))
    assert counts == [1, 2, 2], permalloy.stats()
    static, dynamic = permalloy.stats()
    assert static["peak_intermediate_expr"] == str(static["peak_intermediate_bytes"])
    assert static["size_symbols"] == {}
    assert dynamic["peak_intermediate_bytes"] is None
    assert dynamic["size_symbols"] and set(dynamic["size_symbols"].values()) == set(SIZES[1])


def _peak(record: dict[str, Any], sizes: dict[str, int]) -> int:
    """A record's planned peak evaluated at the given symbol values."""
    from xdsl.parser import Parser

    from permalloy.dialects import make_context
    from permalloy.dialects.sym import symbol

    text = f"#sym.expr<{record['peak_intermediate_expr']}>"
    expr = Parser(make_context(), text).parse_attribute().expr  # type: ignore[attr-defined]
    return int(expr.subs({symbol(name): value for name, value in sizes.items()}))


def test_planned_peak_is_an_expression_of_the_sizes(backend_check) -> None:
    """The stats of a graph over size symbols: the planned peak as an
    expression, and its value at the first call's sizes."""
    fn = lambda x: torch.softmax(x.t() * 2, -1).exp() + 1  # noqa: E731
    run_sizes(backend_check, fn, lambda n, m: [_randn(n, m)], "llvm")
    (record,) = permalloy.stats()
    n, m = SIZES[0]
    assert record["size_symbols"] == {"s0": n, "s1": m}
    assert record["peak_intermediate_bytes"] is None
    assert record["peak_intermediate_bytes_first_call"] == _peak(record, record["size_symbols"])
    # at least the result ([m, n] f32), at most every buffer at once
    for n, m in SIZES:
        assert 4 * n * m <= _peak(record, {"s0": n, "s1": m}) <= 3 * 4 * n * m


# --------------------------------------------------------------------------
# Training: forward and backward graphs over size symbols
# --------------------------------------------------------------------------


class _Block(nn.Module):
    """Layer norm, a linear layer, GELU and a residual: a small training case."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(12)
        self.linear = nn.Linear(12, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.gelu(self.linear(self.norm(x))).softmax(-1)


def _gradients(model: nn.Module, run: Callable, x: torch.Tensor) -> list[torch.Tensor]:
    """The output, and the gradients of the input and parameters of a weighted
    sum of it."""
    model.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_(True)
    output = run(x)
    weights = torch.linspace(-1.0, 1.0, output.numel(), device=output.device).reshape(output.shape)
    (output * weights).sum().backward()
    return [output.detach(), x.grad, *(p.grad for p in model.parameters())]


@pytest.mark.parametrize("name", ["module", "mlp"])
def test_backward_serves_every_size(name: str, backend_check) -> None:
    torch.manual_seed(0)
    model = (_Block() if name == "module" else make_case("mlp", ZooSize(hidden=12)).model).train()
    compiled = _compile(model, "llvm")
    for batch, seq in [(2, 5), (3, 7), (5, 4)]:
        x = _randn(batch, seq, 12)
        expected = _gradients(model, model, x)
        actual = _gradients(model, compiled, x)
        backend_check.assert_outputs_match(actual, expected)
    assert _graphs("llvm") == 2, "one forward and one backward graph"


def test_batch_norm_statistics_over_symbolic_batches(backend_check) -> None:
    """Batch norm in training mode: the running variance is updated with the
    unbiased estimate, a float of sizes (`n / (n - 1)`), at every size."""
    torch.manual_seed(0)
    model, reference = nn.BatchNorm1d(5).train(), nn.BatchNorm1d(5).train()
    compiled = _compile(model, "llvm")
    for n, m in SIZES:
        x = _randn(n, 5, m)
        with torch.no_grad():
            backend_check.assert_outputs_match(compiled(x), reference(x))
        for name in ("running_mean", "running_var"):
            backend_check.assert_tensor_matches(getattr(model, name), getattr(reference, name), name)
    assert _graphs("llvm") == 1, permalloy.stats()


def test_conv_batch_norm_backward_serves_every_size(backend_check) -> None:
    """Training through a convolution and batch norm over a symbolic batch
    and length (the variance's `n / (n - 1)` is a float of sizes)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(3, 4, 3, bias=False), nn.BatchNorm1d(4), nn.ReLU()).train()
    compiled = _compile(model, "llvm")
    for batch, length in [(2, 9), (5, 6), (7, 13)]:
        x = _randn(batch, 3, length)
        backend_check.assert_outputs_match(
            _gradients(model, compiled, x), _gradients(model, model, x)
        )
    assert _graphs("llvm") == 2, "one forward and one backward graph"


# --------------------------------------------------------------------------
# The triton target, under Triton's interpreter or on a GPU
# --------------------------------------------------------------------------

TRITON_FUNCTIONS = [
    "sum_both_axes",
    "softmax_rows",
    "layer_norm_affine",
    "slice_step",
    "even_odd_rows",
    "cat_rows",
    "pad_to_multiple",
    "size_floordiv",
    "outer_add",
] + (["linear_addmm"] if TEST_DEVICE == "cpu" else [])
"""Functions also run on the triton target (the interpreter is slow: small ones;
on a GPU, not those that hold CPU constants)."""


def _on_test_device(inputs: Inputs) -> Inputs:
    return lambda n, m: [to_test_device(x) for x in inputs(n, m)]

TRITON_ZOO = ["layer_norm", "masked_softmax", "causal_attention_explicit"]
"""Zoo models also run on the triton target."""


@pytest.mark.usefixtures("triton_device")
@pytest.mark.parametrize("name", TRITON_FUNCTIONS)
def test_function_serves_every_size_triton(name: str, backend_check) -> None:
    fn, inputs = FUNCTIONS[name]
    run_sizes(backend_check, fn, _on_test_device(inputs), "triton")


@pytest.mark.usefixtures("triton_device")
@pytest.mark.parametrize("name", TRITON_ZOO)
def test_zoo_model_serves_every_size_triton(name: str, backend_check) -> None:
    base = ZooSize(seq=ZOO_SIZES[0][1], hidden=16)
    model = make_case(name, base).model.to(TEST_DEVICE)
    sizes = [(batch, k) for k, (batch, _, _) in enumerate(ZOO_SIZES)]
    inputs = _on_test_device(_zoo_inputs(name, base))
    run_sizes(backend_check, _inference(model), inputs, "triton", sizes)


@pytest.mark.usefixtures("triton_device")
def test_backward_serves_every_size_triton(backend_check) -> None:
    torch.manual_seed(0)
    model = _Block().train().to(TEST_DEVICE)
    compiled = _compile(model, "triton")
    for batch, seq in [(2, 5), (3, 7), (5, 4)]:
        x = to_test_device(_randn(batch, seq, 12))
        backend_check.assert_outputs_match(
            _gradients(model, compiled, x), _gradients(model, model, x)
        )
    assert _graphs("triton") == 2, "one forward and one backward graph"
