"""
The host program's direct calls into torch, op by op, against the reference
interpreter's semantics of the same op: every ptensor op that is not a view has
one, and none runs the interpreter.
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

from permalloy.dialects import ptensor as pt
from permalloy.dialects.sym import symbol
from permalloy.interpreter import run_function
from permalloy.targets import externs
from permalloy.targets.externs import DIRECT_CALLS
from test_interpreter_ptensor import T, assert_same, randint, randn, single_op


def test_every_ptensor_op_but_the_views_has_a_direct_call():
    missing = [op.__name__ for op in pt.PTensor.operations if op not in DIRECT_CALLS and op not in pt.VIEW_OPS]
    assert missing == []


def test_no_extern_call_imports_the_interpreters_op_implementations():
    import inspect
    import pkgutil

    for module in pkgutil.iter_modules(externs.__path__):
        source = inspect.getsource(__import__(f"permalloy.targets.externs.{module.name}", fromlist=["_"]))
        assert "PTensorFunctions" not in source and "_impls" not in source, module.name


S0 = symbol("s0")

CASES = {
    "unary_erfinv": (f"ptensor.unary erfinv %a0 : {T('s0, 4')} -> {T('s0, 4')}", [T("s0, 4")], T("s0, 4")),
    "binary_remainder_int": (
        f"ptensor.binary remainder %a0, %a1 : {T('s0', 'i64')}, {T('s0', 'i64')} -> {T('s0', 'i64')}",
        [T("s0", "i64"), T("s0", "i64")],
        T("s0", "i64"),
    ),
    "binary_floordiv": (f"ptensor.binary floordiv %a0, %a1 : {T('s0, 4')}, {T('4')} -> {T('s0, 4')}", [T("s0, 4"), T("4")], T("s0, 4")),
    "compare": (f"ptensor.compare lt %a0, %a1 : {T('s0, 4')}, {T('4')} -> {T('s0, 4', 'i1')}", [T("s0, 4"), T("4")], T("s0, 4", "i1")),
    "where": (
        f"ptensor.where %a0, %a1, %a2 : {T('s0, 4', 'i1')}, {T('s0, 4')}, {T('')} -> {T('s0, 4')}",
        [T("s0, 4", "i1"), T("s0, 4"), T("")],
        T("s0, 4"),
    ),
    "cast": (f"ptensor.cast %a0 : {T('s0, 4')} -> {T('s0, 4', 'bf16')}", [T("s0, 4")], T("s0, 4", "bf16")),
    "full": (f"ptensor.full 1.5 : {T('s0 + 1, 2')}", [T("s0")], T("s0 + 1, 2")),
    "constant": ("ptensor.constant dense<[[1.5, -2.0], [3.0, 4.25]]> : tensor<2x2xf32> -> " + T("2, 2"), [T("s0")], T("2, 2")),
    "iota_float": (f"ptensor.iota start 0.5 step 0.1 : {T('s0')}", [T("s0")], T("s0")),
    "iota_int": (f"ptensor.iota start 3 step -2 : {T('s0 * 2', 'i64')}", [T("s0")], T("s0 * 2", "i64")),
    "reduce_prod": (f"ptensor.reduce prod %a0 dims [0, 2] : {T('s0, 4, 5')} -> {T('4')}", [T("s0, 4, 5")], T("4")),
    "reduce_argmax_keep": (
        f"ptensor.reduce argmax %a0 dims [1] keepdim : {T('s0, 5')} -> {T('s0, 1', 'i64')}",
        [T("s0, 5")],
        T("s0, 1", "i64"),
    ),
    "reduce_any": (f"ptensor.reduce any %a0 dims [1] : {T('s0, 5')} -> {T('s0', 'i1')}", [T("s0, 5")], T("s0", "i1")),
    "scan_argmax": (
        f"ptensor.scan argmax %a0 dim 0 : {T('s0, 5', 'i32')} -> {T('s0, 5', 'i64')}",
        [T("s0, 5", "i32")],
        T("s0, 5", "i64"),
    ),
    "scan_sum": (f"ptensor.scan sum %a0 dim 1 : {T('s0, 5')} -> {T('s0, 5')}", [T("s0, 5")], T("s0, 5")),
    "cat": (f"ptensor.cat %a0, %a1 dim 0 : {T('2, 8')}, {T('s0, 8')} -> {T('s0 + 2, 8')}", [T("2, 8"), T("s0, 8")], T("s0 + 2, 8")),
    "pad_constant": (
        f"ptensor.pad %a0 constant 2.0 low [0, 1] high [1, -1] : {T('s0, 4')} -> {T('s0 + 1, 4')}",
        [T("s0, 4")],
        T("s0 + 1, 4"),
    ),
    "pad_reflect": (f"ptensor.pad %a0 reflect low [1, 2] high [2, -1] : {T('3, 4')} -> {T('6, 5')}", [T("3, 4")], T("6, 5")),
    "gather": (
        f"ptensor.gather %a0, %a1 dim 1 : {T('4, 8')}, {T('4, 3', 'i64')} -> {T('4, 3')}",
        [T("4, 8"), T("4, 3", "i64")],
        T("4, 3"),
    ),
    "index": (
        f"ptensor.index %a0[%a1] dims [1] : {T('3, 6')}, {T('5', 'i64')} -> {T('3, 5')}",
        [T("3, 6"), T("5", "i64")],
        T("3, 5"),
    ),
    "scatter_add": (
        f"ptensor.scatter_add %a0, %a1, %a2 dim 0 : {T('3, 4')}, {T('5, 4', 'i64')}, {T('5, 4')} -> {T('3, 4')}",
        [T("3, 4"), T("5, 4", "i64"), T("5, 4")],
        T("3, 4"),
    ),
    "index_put_accumulate": (
        f"ptensor.index_put %a0[%a1] dims [1], %a2 accumulate : {T('3, 6')}, {T('3, 5')}, [{T('5', 'i64')}] -> {T('3, 6')}",
        [T("3, 6"), T("5", "i64"), T("3, 5")],
        T("3, 6"),
    ),
    "fallback_cumsum": (
        f'ptensor.fallback "aten.cumsum.default"(%a0) [#ptensor.operand<0>, 1] : ({T("s0, 4")}) -> {T("s0, 4")}',
        [T("s0, 4")],
        T("s0, 4"),
    ),
    "mm": (f"ptensor.mm %a0, %a1 : {T('s0, 4')}, {T('4, 3')} -> {T('s0, 3')}", [T("s0, 4"), T("4, 3")], T("s0, 3")),
    "fft_r2c": (
        f"ptensor.fft r2c %a0 dims [0, 1] normalization 1 onesided : {T('s0, 6')} -> {T('s0, 4, 2')}",
        [T("s0, 6")],
        T("s0, 4, 2"),
    ),
    "fft_c2c": (
        f"ptensor.fft c2c %a0 dims [1] normalization 0 forward : {T('s0, 5, 2', 'f64')} -> {T('s0, 5, 2', 'f64')}",
        [T("s0, 5, 2", "f64")],
        T("s0, 5, 2", "f64"),
    ),
    "fft_c2r": (
        f"ptensor.fft c2r %a0 dims [1] normalization 2 : {T('s0, 4, 2')} -> {T('s0, 7')}",
        [T("s0, 4, 2")],
        T("s0, 7"),
    ),
}


def _inputs(module: ModuleOp, s0: int) -> list[torch.Tensor]:
    """Random inputs for the function's argument types with s0 = `s0`: floats
    away from zero, integers (indices) in [0, 3), masks at random."""
    from permalloy.dtypes import torch_dtype

    (function,) = module.ops
    inputs = []
    for arg in function.body.block.args:
        tensor_type = arg.type
        shape = [int(size.xreplace({S0: s0})) if hasattr(size, "xreplace") else int(size) for size in tensor_type.sizes]
        dtype = torch_dtype(tensor_type.element_type)
        if dtype == torch.bool:
            inputs.append(torch.rand(shape) < 0.5)
        elif dtype.is_floating_point:
            inputs.append(randn(*shape, dtype=dtype) * 0.5)
        else:
            inputs.append(randint(*shape, low=0, high=3, dtype=dtype))
    return inputs


@pytest.mark.parametrize("name", sorted(CASES))
def test_direct_call_matches_the_reference_semantics(name):
    text, operand_types, result_type = CASES[name]
    module = single_op(text, operand_types, result_type)
    (function,) = module.ops
    op = next(o for o in function.body.block.ops if isinstance(o, tuple(pt.PTensor.operations)))
    call = DIRECT_CALLS[type(op)](op)
    torch.manual_seed(0)
    args = _inputs(module, 3)
    (expected,) = run_function(module, args)
    parameters = list(function.body.block.args)
    (actual,) = call([args[parameters.index(v)] for v in op.operands], {S0: 3})
    assert_same(actual, expected)


@pytest.mark.parametrize("distribution", ["uniform", "normal"])
def test_random_numbers_have_the_declared_shape_and_type(distribution):
    module = single_op(f"ptensor.rand {distribution} : {T('s0, 8', 'f16')}", [T("s0")], T("s0, 8", "f16"))
    op = next(o for o in module.ops.first.body.block.ops if isinstance(o, pt.RandOp))
    (result,) = DIRECT_CALLS[pt.RandOp](op)([torch.empty(5)], {S0: 5})
    assert result.shape == (5, 8) and result.dtype == torch.float16
    assert bool(result.isfinite().all())


def test_attention_gives_torch_s_fused_kernels_a_mask_of_contiguous_rows():
    """A mask whose keys are strided (a relative position bias gathered with
    its heads innermost) reaches torch's attention with contiguous rows, which
    its fused kernels take (they run the math otherwise); other masks pass as
    they are, broadcasts kept."""
    from permalloy.targets.externs.library import fused_kernel_mask

    bias = torch.randn(49 * 49, 6).view(49, 49, 6).permute(2, 0, 1).unsqueeze(0)
    rows = fused_kernel_mask(bias)
    assert bias.stride(-1) == 6 and rows.stride(-1) == 1 and torch.equal(rows, bias)
    padding = torch.randn(2, 1, 1, 49).expand(2, 6, 49, 49)
    assert fused_kernel_mask(padding) is padding
    keys = torch.randn(2, 1, 1, 1).expand(2, 6, 49, 49)  # the same for every key: copied too
    assert fused_kernel_mask(keys).stride(-1) == 1
