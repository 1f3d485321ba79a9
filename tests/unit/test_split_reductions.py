"""
`split-reductions`: which reductions it splits and how (`SplitReductionsPass.plan`),
and that it preserves results: each function below runs under the loop
interpreter before and after the pass, on random inputs, with thresholds low
enough for small tensors.
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from permalloy.dialects import loop, make_context
from permalloy.interpreter.levels import run_module_function
from permalloy.passes import build_pipeline
from permalloy.passes.split_reductions import SplitPlan, SplitReductionsPass

SMALL = "split-reductions{max-results=64 min-length=64 min-programs=64 min-chunk=4}"
"""Thresholds that split the small reductions below."""


def _reduce(kind: str, source_shape: str, over: str, result_shape: str, indices: str, dtype: str = "f32", body: str = "") -> str:
    result_dtype = "i1" if kind in ("any", "all") else dtype
    return f"""
func.func @f(%x: !ptensor.tensor<[{source_shape}], {dtype}>) -> !ptensor.tensor<[{result_shape}], {result_dtype}> {{
  %s = loop.reduce {kind} ins(%a = %x : !ptensor.tensor<[{source_shape}], {dtype}>) over [{over}] -> !ptensor.tensor<[{result_shape}], {result_dtype}> {{
    %v = loop.load %a[{indices}] : {dtype}
    {body or f"loop.yield %v : {dtype}"}
  }}
  func.return %s : !ptensor.tensor<[{result_shape}], {result_dtype}>
}}"""


CASES = {
    "column_sums": _reduce("sum", "256, 3", "256", "3", "r0, d0"),
    "whole_max": _reduce("max", "4, 3, 16, 8", "4, 3, 16, 8", "", "r0, r1, r2, r3"),
    "whole_min_of_rows": _reduce("min", "6, 40", "6, 40", "", "r0, r1"),
    "sums_over_two_axes": _reduce("sum", "8, 32, 5", "8, 32", "5", "r0, r1, d0"),
    "transposed_rows": _reduce("sum", "128, 2", "128", "2", "r0, d0"),
    "index_weighted_sum": _reduce(
        "sum", "512", "512", "", "r0",
        body="%i = loop.index r0 * 3 + 1\n    %c = arith.index_cast %i : index to i64\n"
        "    %f = arith.sitofp %c : i64 to f32\n    %w = arith.mulf %v, %f : f32\n    loop.yield %w : f32",
    ),
    "product": _reduce("prod", "256", "256", "", "r0"),
    "integer_sum": _reduce("sum", "300", "300", "", "r0", dtype="i32"),
}


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def _inputs(module: ModuleOp) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    text = str(module)
    shape = [int(s) for s in text.split("tensor<[", 1)[1].split("]", 1)[0].split(", ")]
    if "i32>" in text.split("->", 1)[0]:
        return [torch.randint(-50, 50, shape, generator=generator, dtype=torch.int32)]
    values = torch.rand(shape, generator=generator) + 0.5
    if "prod" in text:
        values = 1 + (values - 1) / 64  # a product of 256 values near 1 stays finite
    return [values]


@pytest.mark.parametrize("name", list(CASES))
def test_split_preserves_results(name: str) -> None:
    before = _parse(CASES[name])
    after = before.clone()
    build_pipeline(SMALL).apply(make_context(), after)
    after.verify()
    reductions = [op for op in after.walk() if isinstance(op, loop.ReduceOp)]
    assert len(reductions) == 2, f"not split:\n{after}"
    inputs = _inputs(before)
    (expected,) = run_module_function(before, inputs)
    (actual,) = run_module_function(after, inputs)
    if expected.dtype.is_floating_point:
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=0)
    else:
        assert torch.equal(actual, expected)


def _plan(text: str, **options) -> SplitPlan | None:
    (reduce,) = [op for op in _parse(text).walk() if isinstance(op, loop.ReduceOp)]
    return SplitReductionsPass(**options).plan(reduce)


def test_leading_dimensions_become_parallel_before_one_is_split() -> None:
    text = _reduce("max", "32, 16, 512, 512", "32, 16, 512, 512", "", "r0, r1, r2, r3")
    assert _plan(text) == SplitPlan(promoted=2, factor=32, chunk=16)


def test_a_single_dimension_splits_into_equal_chunks() -> None:
    text = _reduce("sum", "65536, 8", "65536", "8", "r0, d0")
    # As many chunks as keep min-chunk elements each.
    assert _plan(text) == SplitPlan(promoted=0, factor=256, chunk=256)
    assert _plan(text, min_chunk=16) == SplitPlan(promoted=0, factor=2048, chunk=32)


@pytest.mark.parametrize(
    "text",
    [
        _reduce("sum", "4096, 8", "4096", "8", "r0, d0"),  # too short
        _reduce("sum", "65536, 16384", "65536", "16384", "r0, d0"),  # many results already
        _reduce("argmax", "65536", "65536", "", "r0"),  # positions do not split
        _reduce("sum", "65536", "65536", "", "r0", dtype="bf16"),  # partials would round
        _reduce("sum", "65537", "65537", "", "r0"),  # a prime length: no equal chunks
    ],
    ids=["short", "many_results", "argmax", "bfloat16", "prime_length"],
)
def test_left_whole(text: str) -> None:
    assert _plan(text) is None
