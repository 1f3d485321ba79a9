"""
Tests of the FX importer's handling of whole graphs: arguments, outputs,
constants, fallbacks and their encoding, errors, and the printed IR.
"""

from __future__ import annotations

import math

import warnings

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block
from xdsl.parser import Parser

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import PTensor
from permalloy.dialects import sym
from permalloy.dialects.sym import Sym
from permalloy.interpreter import run_function
from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.import_fx import (
    GraphImportError,
    TensorOutput,
    ValueOutput,
    import_graph,
)
from permalloy.lowering.import_fx.context import ImportContext
from permalloy.lowering.import_fx.differential import compare_with_eager
from permalloy.lowering.import_fx.fallback import FallbackOperands, encode, memory_order
from permalloy.lowering.import_fx.graph import LARGE_CONSTANT_ELEMENTS

aten = torch.ops.aten


def ops_named(module: builtin.ModuleOp, op_class: type) -> list:
    return [op for op in module.walk() if isinstance(op, op_class)]


def import_quietly(gm: torch.fx.GraphModule):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_graph(gm)


def test_tensor_placeholders_become_typed_arguments() -> None:
    (gm,) = capture_aten_graphs(lambda x, y: x + y.long(), torch.randn(2, 3), torch.randn(3))
    result = import_graph(gm)
    function = ops_named(result.module, func.FuncOp)[0]
    assert function.sym_name.data == "forward"
    assert sorted(str(t) for t in function.function_type.inputs) == [
        "!ptensor.tensor<[2, 3], f32>",
        "!ptensor.tensor<[3], f32>",
    ]
    assert result.fallback_ops == [] and result.extern_ops == []
    assert result.outputs == [TensorOutput(0)]


def test_function_name_is_chosen_by_the_caller() -> None:
    (gm,) = capture_aten_graphs(torch.neg, torch.randn(2))
    module = import_graph(gm, name="graph_3").module
    assert ops_named(module, func.FuncOp)[0].sym_name.data == "graph_3"


def test_unknown_ops_fall_back_with_one_warning() -> None:
    def fn(x):
        return torch.linalg.cholesky_ex(x, upper=True).L, torch.mode(x, 0).values

    (gm,) = capture_aten_graphs(fn, torch.randn(3, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = import_graph(gm)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1
    assert "aten.linalg_cholesky_ex.default" in messages[0] and "aten.mode.default" in messages[0]
    assert result.fallback_ops == ["aten.linalg_cholesky_ex.default", "aten.mode.default"]
    cholesky, mode = ops_named(result.module, ptensor.FallbackOp)
    assert cholesky.target.data == "aten.linalg_cholesky_ex.default"
    assert str(cholesky.args) == "[#ptensor.operand<0>]"
    assert str(cholesky.kwargs) == "{upper = true}"
    assert len(mode.results) == 2


def test_fallback_results_run_through_the_interpreter() -> None:
    def fn(x):
        return torch.mode(x, 1).values * 2, torch.median(x, 0).indices

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comparison = compare_with_eager(fn, torch.randn(3, 5))
    assert comparison.max_error() < 1e-6


def test_fallback_arguments_are_encoded_as_attributes() -> None:
    ctx = ImportContext(Block())
    ctx.symbols.names["s9"] = sym.symbol("s0")
    encoded = encode(
        ctx,
        [None, True, 3, 1.5, "mean", torch.float16, sym.symbol("s0") * 2, torch.device("cpu")],
        FallbackOperands(),
    )
    assert str(encoded) == (
        '[#ptensor.none, true, 3 : i64, 1.500000e+00 : f64, "mean", f16, '
        '#sym.expr<s0 * 2>, "cpu"]'
    )


def test_unsupported_dtype_raises_a_clear_error() -> None:
    gm = make_fx(lambda x: x * 2, tracing_mode="fake")(torch.randn(3, dtype=torch.complex64))
    with pytest.raises(GraphImportError, match="complex64 is not supported"):
        import_graph(gm)


def test_data_dependent_sizes_raise_a_clear_error() -> None:
    gm = make_fx(lambda x: torch.nonzero(x) + 1, tracing_mode="symbolic")(torch.randn(4))
    with pytest.raises(GraphImportError, match="depends on tensor data"):
        import_quietly(gm)


def test_non_tensor_outputs_are_described_not_returned() -> None:
    (gm,) = capture_aten_graphs(lambda x: (x * 2, x.shape[0] * 3), torch.randn(5, 2), dynamic=True)
    result = import_graph(gm)
    arguments = ops_named(result.module, func.FuncOp)[0].args
    (x,) = [a for a in arguments if isinstance(a.type, ptensor.TensorType)]
    first_size = x.type.sizes[0]
    assert first_size.is_Symbol
    assert result.outputs == [TensorOutput(0), ValueOutput(3 * first_size)]
    function = ops_named(result.module, func.FuncOp)[0]
    assert len(function.function_type.outputs) == 1


def test_none_outputs_are_described() -> None:
    gm = make_fx(lambda x: (x + 1, None), tracing_mode="fake")(torch.randn(2))
    result = import_graph(gm)
    assert result.outputs == [TensorOutput(0), ValueOutput(None)]


def _with_constant(constant: torch.Tensor) -> torch.fx.GraphModule:
    return make_fx(lambda x: x * constant + 1, tracing_mode="fake", _allow_non_fake_inputs=True)(
        torch.randn(constant.shape)
    )


def test_small_constants_are_inlined() -> None:
    constant = torch.tensor([1.5, -2.0, 3.0])
    result = import_graph(_with_constant(constant))
    (op,) = ops_named(result.module, ptensor.ConstantOp)
    assert "dense<[1.500000e+00, -2.000000e+00, 3.000000e+00]>" in str(op)
    assert result.constants == []
    x = torch.randn(3)
    (output,) = run_function(result.module, [x])
    torch.testing.assert_close(output, x * constant + 1)


@pytest.mark.parametrize(
    ("constant", "value"),
    [
        (torch.tensor(2.5), 2.5),
        (torch.full((2, 3), -7.0), -7.0),
        (torch.full((4,), float("nan")), None),  # NaN
        (torch.full((3,), 5, dtype=torch.int32), 5),
        (torch.tensor(-0.0), -0.0),
    ],
    ids=["0-d", "2-d", "nan", "int32", "negative-zero"],
)
def test_constants_of_one_value_are_fulls(constant, value) -> None:
    """Bit for bit equal elements: a `ptensor.full`, which kernels compute."""
    gm = make_fx(lambda x: x * constant, tracing_mode="fake", _allow_non_fake_inputs=True)(torch.randn(constant.shape))
    result = import_graph(gm)
    assert ops_named(result.module, ptensor.ConstantOp) == []
    (full,) = ops_named(result.module, ptensor.FullOp)
    held = full.value.value.data
    assert math.isnan(held) if value is None else (held == value and math.copysign(1, held) == math.copysign(1, value))
    x = torch.randn(constant.shape)
    (output,) = run_function(result.module, [x])
    torch.testing.assert_close(output, x * constant, equal_nan=True)


def test_zeros_of_both_signs_stay_a_constant() -> None:
    result = import_graph(_with_constant(torch.tensor([0.0, -0.0])))
    assert len(ops_named(result.module, ptensor.ConstantOp)) == 1


def test_large_constants_become_trailing_arguments() -> None:
    constant = torch.randn(LARGE_CONSTANT_ELEMENTS + 1)
    result = import_graph(_with_constant(constant))
    assert ops_named(result.module, ptensor.ConstantOp) == []
    assert len(result.constants) == 1 and result.constants[0] is not None
    function = ops_named(result.module, func.FuncOp)[0]
    assert "ptensor.constant" in str(function.arg_attrs.data[-1])
    x = torch.randn(constant.shape)
    (output,) = run_function(result.module, [x, *result.constants])
    torch.testing.assert_close(output, x * constant + 1)


def _on_fake_cuda(fn, device: str = "cuda"):
    """The ATen graph of `fn` on a fake input on `device` (no GPU needed)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return make_fx(fn)(torch.empty(4, device=device))


def test_a_constant_copied_to_the_inputs_device_is_computed_there() -> None:
    def fn(x):
        two = aten.lift_fresh_copy.default(torch.tensor(2.0))
        return x * aten._to_copy.default(two, device=x.device)

    module = import_graph(_on_fake_cuda(fn)).module
    assert ops_named(module, ptensor.FallbackOp) == []
    (two,) = ops_named(module, ptensor.FullOp)  # a number: computed in the kernel
    assert two.value.value.data == 2.0


def test_a_copy_of_an_input_to_another_device_falls_back() -> None:
    def fn(x):
        return aten._to_copy.default(x, device=torch.device("cpu")) + 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = import_graph(_on_fake_cuda(fn)).module
    (fallback,) = ops_named(module, ptensor.FallbackOp)
    assert "_to_copy" in str(fallback)


def test_a_constant_copied_away_from_the_inputs_device_falls_back() -> None:
    def fn(x):
        two = aten.lift_fresh_copy.default(torch.tensor(2.0))
        return x, aten._to_copy.default(two, device=torch.device("cuda"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = import_graph(_on_fake_cuda(fn, device="cpu")).module
    assert len(ops_named(module, ptensor.FallbackOp)) == 1


def test_integer_and_bool_constants() -> None:
    def fn(x):
        return x + torch.tensor([1, 2, 3]), x > torch.tensor([True, False, True])

    gm = make_fx(fn, tracing_mode="fake", _allow_non_fake_inputs=True)(torch.randn(3))
    result = import_graph(gm)
    constants = ops_named(result.module, ptensor.ConstantOp)
    assert [str(op.result.type) for op in constants] == [
        "!ptensor.tensor<[3], i64>",
        "!ptensor.tensor<[3], i1>",
    ]


def _flash_attention(q, keep_logsumexp: bool):
    output, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.0, True)
    return (output, logsumexp) if keep_logsumexp else output


def test_attention_whose_extra_results_are_unused_is_a_library_op() -> None:
    q = torch.randn(1, 2, 4, 8)
    gm = make_fx(lambda q: _flash_attention(q, False), tracing_mode="fake")(q)
    result = import_graph(gm)
    (attention,) = ops_named(result.module, ptensor.AttentionOp)
    assert attention.causal is not None
    assert result.extern_ops == ["aten._scaled_dot_product_flash_attention_for_cpu.default"]
    (output,) = run_function(result.module, [q])
    expected = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    torch.testing.assert_close(output, expected)


def _attention_with_query_mask(q, k, v, lengths):
    """A mask that repeats along keys (stride 0 in its last dimension), as a
    padding mask built by broadcasting a comparison of positions is."""
    rows = q.size(-2)
    keep = torch.arange(rows)[None, None, :, None] >= lengths[:, None, None, None]
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep.expand(-1, 1, rows, rows))


def test_attention_mask_repeating_along_keys_is_made_dense() -> None:
    """An inference graph copies such a mask into dense memory before the
    fused attention, whose kernels need a mask's last dimension contiguous;
    the result is eager's."""
    q, k, v = (torch.randn(2, 4, 16, 8, generator=torch.Generator().manual_seed(i)) for i in range(3))
    lengths = torch.tensor([0, 3])
    (gm,) = capture_aten_graphs(_attention_with_query_mask, q, k, v, lengths)
    order = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    attention = order.index("aten._scaled_dot_product_flash_attention_for_cpu.default")
    assert "aten.clone.default" in order[:attention]
    comparison = compare_with_eager(_attention_with_query_mask, q, k, v, lengths)
    for actual, expected in zip(comparison.outputs, comparison.expected, strict=True):
        torch.testing.assert_close(actual, expected)


def test_attention_whose_logsumexp_is_used_is_called_whole() -> None:
    """A training step's forward attention, whose log-sum-exp its backward
    reads, is the fused ATen op called whole: a library op, not a fallback."""
    q = torch.randn(1, 2, 4, 8)
    gm = make_fx(lambda q: _flash_attention(q, True), tracing_mode="fake")(q)
    result = import_graph(gm)
    assert ops_named(result.module, ptensor.AttentionOp) == []
    assert result.fallback_ops == []
    assert result.extern_ops == ["aten._scaled_dot_product_flash_attention_for_cpu.default"]
    for actual, expected in zip(run_function(result.module, [q]), _flash_attention(q, True), strict=True):
        torch.testing.assert_close(actual, expected)


def test_attention_backward_is_called_whole() -> None:
    q, grad = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)

    def backward(q, grad):
        output, logsumexp = aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.0, True)
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(grad, q, q, q, output, logsumexp, 0.0, True)

    result = import_graph(make_fx(backward, tracing_mode="fake")(q, grad))
    assert result.fallback_ops == []
    assert result.extern_ops == [
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
        "aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
    ]
    for actual, expected in zip(run_function(result.module, [q, grad]), backward(q, grad), strict=True):
        torch.testing.assert_close(actual, expected)


def test_attention_with_dropout_is_called_whole() -> None:
    def fn(q):
        return aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.5)[0]

    gm = make_fx(fn, tracing_mode="fake")(torch.randn(1, 2, 4, 8))
    result = import_graph(gm)
    assert result.fallback_ops == []
    assert result.extern_ops == ["aten._scaled_dot_product_flash_attention_for_cpu.default"]


def test_integer_matrix_products_fall_back() -> None:
    gm = make_fx(torch.mm, tracing_mode="fake")(
        torch.ones(2, 3, dtype=torch.int64), torch.ones(3, 2, dtype=torch.int64)
    )
    assert import_quietly(gm).fallback_ops == ["aten.mm.default"]


def test_random_generators_become_rand_ops() -> None:
    def fn(x):
        return x + torch.rand(3, 4), torch.randn_like(x)

    gm = make_fx(fn, tracing_mode="fake")(torch.randn(3, 4))
    result = import_graph(gm)
    distributions = [op.distribution.data.value for op in ops_named(result.module, ptensor.RandOp)]
    assert distributions == ["uniform", "normal"]
    outputs = run_function(result.module, [torch.randn(3, 4)])
    assert [tuple(o.shape) for o in outputs] == [(3, 4), (3, 4)]


def test_runtime_assertions_are_left_out() -> None:
    (gm,) = capture_aten_graphs(lambda i: torch.nn.functional.one_hot(i, 4), torch.tensor([0, 3]))
    assert any("assert" in str(n.target) for n in gm.graph.nodes)
    result = import_graph(gm)
    assert result.fallback_ops == []


def test_imported_ir_prints_and_parses_back() -> None:
    def fn(x, w):
        return torch.softmax(x @ w, -1)[:, 1:].sum(0), torch.cumsum(x, 0)

    (gm,) = capture_aten_graphs(fn, torch.randn(4, 8), torch.randn(8, 8))
    text = str(import_quietly(gm).module)
    context = Context()
    for dialect in (builtin.Builtin, func.Func, PTensor, Sym):
        context.load_dialect(dialect)
    parsed = Parser(context, text).parse_module()
    parsed.verify()
    assert str(parsed) == text


def test_graphs_without_example_values_are_rejected_clearly() -> None:
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x))
    with pytest.raises(GraphImportError, match=r"node.meta\['val'\]"):
        import_graph(gm)


def test_symbolic_float_scalars_are_computed_from_sizes() -> None:
    gm = make_fx(lambda x: x * (1.0 / x.shape[0]), tracing_mode="symbolic")(torch.randn(3, 4))
    assert any(isinstance(n.meta.get("val"), torch.SymFloat) for n in gm.graph.nodes)
    module = import_graph(gm).module
    assert "ptensor.binary div" in str(module)
    x = torch.randn(5, 4)
    (output,) = run_function(module, [x])
    torch.testing.assert_close(output, x * (1.0 / 5))


def test_symbolic_floats_beyond_arithmetic_are_rejected_clearly() -> None:
    gm = make_fx(lambda x: x * (x.shape[0] ** 0.5), tracing_mode="symbolic")(torch.randn(3, 4))
    with pytest.raises(GraphImportError, match=r"symbolic number .* cannot be computed"):
        import_graph(gm)


def _body(fn, *inputs) -> list:
    (gm,) = capture_aten_graphs(fn, *inputs)
    function = ops_named(import_graph(gm).module, func.FuncOp)[0]
    return list(function.body.block.ops)


def test_python_int_scalars_keep_the_tensor_dtype() -> None:
    full, add, _ = _body(lambda x: x + 2, torch.randn(3))
    assert isinstance(full, ptensor.FullOp)
    assert str(full.result.type) == "!ptensor.tensor<[], f32>"
    assert full.value.value.data == 2.0
    assert isinstance(add, ptensor.BinaryOp) and add.kind.data == ptensor.BinaryKind.ADD


def test_int_tensor_times_float_scalar_is_cast_to_float() -> None:
    cast, full, mul, _ = _body(lambda x: x * 0.5, torch.ones(3, dtype=torch.int64))
    assert isinstance(cast, ptensor.CastOp)
    assert str(cast.input.type) == "!ptensor.tensor<[3], i64>"
    assert str(cast.result.type) == "!ptensor.tensor<[3], f32>"
    assert isinstance(full, ptensor.FullOp) and full.value.value.data == 0.5
    assert tuple(mul.operands) == (cast.result, full.result)


def test_comparisons_promote_both_operands() -> None:
    *_, compare, _ = _body(lambda x, y: x < y, torch.ones(3, dtype=torch.int32), torch.randn(3))
    assert isinstance(compare, ptensor.CompareOp)
    assert [str(o.type) for o in compare.operands] == ["!ptensor.tensor<[3], f32>"] * 2
    assert str(compare.result.type) == "!ptensor.tensor<[3], i1>"


def test_memory_order_of_a_torch_call_result() -> None:
    """The order a library result's strides hold its dimensions in, where it
    is dense but not row-major; a size-1 dimension sharing a stride goes
    inside the dimension it shares it with."""
    assert memory_order(torch.empty(2, 3, 4)) is None
    assert memory_order(torch.empty(3, 2).t()) == (1, 0)
    assert memory_order(torch.empty(2, 16, 4, 8).transpose(1, 2)) == (0, 2, 1, 3)
    one_head = torch.empty(2, 16, 1, 8).transpose(1, 2)
    order = memory_order(one_head)
    assert order is not None
    assert tuple(int(s) for s in buf.dense_strides_in_order(one_head.shape, order)) == one_head.stride()
    assert memory_order(torch.empty(4, 1).expand(4, 3)) is None  # repeats elements
    assert memory_order(torch.empty(4, 6)[:, :3]) is None  # not dense


@pytest.mark.parametrize(
    ("dtype", "library_mask", "reduces"),
    [(torch.float32, [1, 1, 0], 1), (torch.float16, [1, 1, 1], 0), (torch.bfloat16, [1, 1, 1], 0)],
    ids=str,
)
def test_a_convolutions_bias_gradient_is_a_sum_in_float32(dtype, library_mask, reduces) -> None:
    """A float32 bias's gradient is a `ptensor.reduce` sum over the output
    gradient's images and positions, which fusion can join to its producer;
    a half-precision one stays the library's (its sum would not split)."""
    backward = torch.ops.aten.convolution_backward.default

    def gradients(dy, x, w):
        return backward(dy, x, w, [6], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True])

    dy, x, w = torch.randn(2, 6, 5, 5, dtype=dtype), torch.randn(2, 4, 5, 5, dtype=dtype), torch.randn(6, 4, 3, 3, dtype=dtype)
    (gm,) = capture_aten_graphs(gradients, dy, x, w)
    module = import_quietly(gm).module
    (op,) = ops_named(module, ptensor.ConvolutionBackwardOp)
    assert list(op.output_mask.data) == library_mask
    sums = [r for r in ops_named(module, ptensor.ReduceOp) if list(r.dims.data) == [0, 2, 3]]
    assert len(sums) == reduces and all(r.input is op.grad_output for r in sums)
