"""
The ptensor ops' canonicalization patterns keep results: every function of
the lit test that shows them (`dialects/ptensor_canonicalize.mlir`) gives the
same values, bit for bit, before and after `canonicalize`, run by the ptensor
interpreter on random inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.transforms.canonicalize import CanonicalizePass

from permalloy.dialects import make_context
from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import symbol
from permalloy.interpreter.levels import run_module_function

LIT_TEST = Path(__file__).parents[1] / "filecheck" / "dialects" / "ptensor_canonicalize.mlir"
SYMBOL_VALUES = {symbol("s0"): 3, symbol("s1"): 5}


def parse() -> ModuleOp:
    return Parser(make_context(), LIT_TEST.read_text()).parse_module()


def function_names() -> list[str]:
    return [op.sym_name.data for op in parse().ops if isinstance(op, func.FuncOp)]


def random_arguments(function: func.FuncOp) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    arguments = []
    for argument_type in function.function_type.inputs.data:
        assert isinstance(argument_type, TensorType)
        sizes = [int(size.subs(SYMBOL_VALUES)) for size in argument_type.sizes]
        arguments.append(torch.randn(sizes, generator=generator))
    return arguments


@pytest.mark.parametrize("name", function_names())
def test_canonicalization_keeps_every_result(name):
    module = parse()
    function = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name)
    arguments = random_arguments(function)
    before = run_module_function(module, arguments, name)
    CanonicalizePass().apply(make_context(), module)
    module.verify()
    after = run_module_function(module, arguments, name)
    assert len(before) == len(after)
    for expected, actual in zip(before, after):
        assert expected.dtype == actual.dtype and expected.shape == actual.shape
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def test_the_lit_test_folds_something_in_every_function():
    module = parse()
    before = {op.sym_name.data: len(list(op.walk())) for op in module.ops if isinstance(op, func.FuncOp)}
    CanonicalizePass().apply(make_context(), module)
    after = {op.sym_name.data: len(list(op.walk())) for op in module.ops if isinstance(op, func.FuncOp)}
    folded = {name for name in before if after[name] < before[name]}
    assert folded == set(before) - {"reshape_that_stays", "views_that_stay", "folds_that_stay"}
