"""
Dynamic shapes: graphs captured with symbolic sizes import with size symbols
(`!ptensor.tensor<[s0, 8], f32>`) and `index` arguments naming them, and the
interpreter runs them at sizes other than the traced one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType

from permalloy.dialects import ptensor
from permalloy.interpreter import run_function
from permalloy.lowering.capture import capture_with_inputs
from permalloy.lowering.import_fx import import_graph
from permalloy.lowering.import_fx.differential import relative_error
from permalloy.tools.zoo import CausalAttention


def pointwise_and_reduction(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(x * 2).sum(-1) + x.mean(-1)


def import_dim0_dynamic(fn: Callable, *inputs: torch.Tensor):
    """Capture with dimension 0 of every input symbolic; the imported result."""
    for x in inputs:
        torch._dynamo.mark_dynamic(x, 0)
    (captured,) = capture_with_inputs(fn, *inputs, dynamic=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_graph(captured.graph_module)


def run_at(result, function: func.FuncOp, inputs: list[torch.Tensor], sizes: dict):
    """Run the IR on `inputs`, passing each index argument its symbol's value."""
    tensors = iter(inputs)
    args = []
    for argument, attributes in zip(function.args, function.arg_attrs.data):
        if isinstance(argument.type, IndexType):
            args.append(sizes[str(attributes.data["ptensor.symbol"])])
        else:
            args.append(next(tensors))
    return run_function(result.module, args)


def test_symbolic_sizes_and_index_arguments() -> None:
    result = import_dim0_dynamic(pointwise_and_reduction, torch.randn(6, 8))
    function = result.module.ops.first
    assert isinstance(function, func.FuncOp)
    text = str(result.module)
    assert "!ptensor.tensor<[s0, 8], f32>" in text
    assert "index {ptensor.symbol = #sym.expr<s0>}" in text
    assert "-> !ptensor.tensor<[s0], f32>" in text
    assert list(result.symbols.values()) == ["s0"]


@pytest.mark.parametrize("size", [6, 3, 11])
def test_interpreter_runs_at_other_sizes(size: int) -> None:
    result = import_dim0_dynamic(pointwise_and_reduction, torch.randn(6, 8))
    x = torch.randn(size, 8)
    (output,) = run_at(result, result.module.ops.first, [x], {"#sym.expr<s0>": size})
    assert relative_error(output, pointwise_and_reduction(x)) < 1e-5


DYNAMIC_CASES = [
    ("mean_divides_by_a_symbol", lambda x: x.mean(0), (7, 4)),
    ("var_divides_by_symbol_minus_one", lambda x: x.var(0), (7, 4)),
    ("slice_to_symbolic_end", lambda x: x[1:-1] * 2, (7, 4)),
    ("view_with_symbolic_size", lambda x: x.view(-1) + 1, (7, 4)),
    ("arange_of_symbol", lambda x: x + torch.arange(x.shape[0]).unsqueeze(1), (7, 4)),
    ("full_of_symbolic_shape", lambda x: x * torch.full((x.shape[0], 1), 3.0), (7, 4)),
    ("multiply_by_size", lambda x: x * x.shape[0], (7, 4)),
    ("cat_symbolic", lambda x: torch.cat([x, x * 2], 0), (7, 4)),
    ("softmax", lambda x: torch.softmax(x, 0), (7, 4)),
    ("causal_mask", lambda x: x.masked_fill(torch.ones(x.shape[0], x.shape[0], dtype=torch.bool).triu(1), 0.0), (7, 7)),
    ("strided_slices", lambda x: x[::2].sum(0) + x[1::3].sum(0) + x[2::3].sum(0), (7, 4)),
    ("floordiv_of_size_as_a_number", lambda x: x * (x.shape[0] // 3), (7, 4)),
    ("float_of_sizes", lambda x: x * (x.shape[0] / (x.shape[1] - 1)), (7, 4)),
    ("size_minus_constant_as_a_number", lambda x: x[:, 2:] * (x.shape[1] - 2), (7, 4)),
]


@pytest.mark.parametrize("name, fn, shape", DYNAMIC_CASES, ids=[c[0] for c in DYNAMIC_CASES])
def test_dynamic_ops_match_eager(name: str, fn: Callable, shape: tuple) -> None:
    torch.manual_seed(0)
    x = torch.randn(shape)
    (captured,) = capture_with_inputs(fn, x, dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = import_graph(captured.graph_module)
    assert result.fallback_ops == []
    assert "s0" in str(result.module)
    outputs = run_function(result.module, captured.inputs)
    assert relative_error(outputs[0], fn(x)) < 1e-5


def test_attention_block_with_symbolic_sequence_length() -> None:
    torch.manual_seed(0)
    model = CausalAttention(16, 2).eval()
    x = torch.randn(1, 5, 16)
    torch._dynamo.mark_dynamic(x, 1)
    (captured,) = capture_with_inputs(model, x, dynamic=None)
    result = import_graph(captured.graph_module)
    assert result.fallback_ops == []
    (attention,) = [op for op in result.module.walk() if isinstance(op, ptensor.AttentionOp)]
    assert "s0" in str(attention.result.type)
    longer = torch.randn(1, 9, 16)
    tensors = [
        longer if t.dim() == 3 else t
        for t in captured.inputs
        if isinstance(t, torch.Tensor)
    ]
    (output,) = run_at(result, result.module.ops.first, tensors, {"#sym.expr<s0>": 9})
    with torch.no_grad():
        assert relative_error(output, model(longer)) < 1e-5
