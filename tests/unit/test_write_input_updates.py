"""
`write-input-updates` on buffer IR written as text: every function of the
pass's lit test runs before the pass (returning each new value) and after it
(writing it into its argument), with the buffer interpreter and compiled for
the CPU (where a kernel writing over an input it still reads elsewhere
shows), in place and not; and `writes_over_input`, the rule for a kernel
writing a result over an input.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.parser import Parser

from permalloy.analysis.in_place import writes_over_input
from permalloy.dialects import buffer as buf
from permalloy.dialects import make_context
from permalloy.dtypes import torch_dtype
from permalloy.interpreter.levels import run_module_function, with_only_function
from permalloy.lowering.import_fx.graph import UPDATES_ATTR, result_attribute
from permalloy.passes import build_pipeline
from permalloy.targets.host import build_host_program
from permalloy.targets.registry import kernel_target

LIT_TEST = Path(__file__).parents[1] / "filecheck" / "passes" / "write_input_updates.mlir"
LIT_FUNCTIONS = re.findall(r"^  func\.func @(\w+)\(", LIT_TEST.read_text(), re.MULTILINE)


def _module() -> ModuleOp:
    return Parser(make_context(), LIT_TEST.read_text()).parse_module()


def _inputs(function: func.FuncOp) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    tensors = []
    for layout in function.function_type.inputs.data:
        assert isinstance(layout, buf.BufferType)
        sizes, dtype = [int(s) for s in layout.sizes], torch_dtype(layout.element_type)
        if dtype.is_floating_point:
            tensors.append(torch.randn(sizes, generator=generator, dtype=dtype))
        else:  # indices: rows of the lit test's 4-row buffers
            tensors.append(torch.randint(0, 4, sizes, generator=generator, dtype=dtype))
    return tensors


def _updates(function: func.FuncOp) -> dict[int, int]:
    """Result position -> the argument it updates."""
    updates = {}
    for position in range(len(function.function_type.outputs.data)):
        attribute = result_attribute(function, position, UPDATES_ATTR)
        if isinstance(attribute, IntegerAttr):
            updates[position] = attribute.value.data
    return updates


def test_the_lit_test_has_the_cases_it_documents():
    assert {"count", "running_mean", "read_after", "reversed", "copied", "cache_rows", "swapped"} <= set(LIT_FUNCTIONS)


@pytest.mark.parametrize("options", ["", "{in-place=false}"])
@pytest.mark.parametrize("name", LIT_FUNCTIONS)
def test_the_arguments_end_with_the_new_values(name, options):
    before = with_only_function(_module(), name)
    after = before.clone()
    build_pipeline(f"write-input-updates{options}").apply(make_context(), after)
    after = Parser(make_context(), str(after)).parse_module()
    function = next(op for op in before.ops if isinstance(op, func.FuncOp))
    inputs = _inputs(function)
    updates = _updates(function)
    results = run_module_function(before, [x.clone() for x in inputs])
    expected_arguments = [x.clone() for x in inputs]
    for position, index in updates.items():
        expected_arguments[index] = results[position]
    expected_results = [r for p, r in enumerate(results) if p not in updates]
    interpreted = [x.clone() for x in inputs]
    compiled = [x.clone() for x in inputs]
    runs = {
        "interpreted": (run_module_function(after, interpreted), interpreted),
        "compiled": (build_host_program(after, kernel_target("llvm"))(*compiled), compiled),
    }
    for label, (returned, arguments) in runs.items():
        assert len(returned) == len(expected_results), label
        for a, e in zip(returned, expected_results, strict=True):
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6, msg=lambda m: f"{label} result: {m}")
        for i, (a, e) in enumerate(zip(arguments, expected_arguments, strict=True)):
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6, msg=lambda m: f"{label} argument {i}: {m}")


def test_a_strided_argument_copied_by_the_host_gets_its_new_value_back():
    """An argument that arrives in other strides than the program's is
    conformed into a copy; the host copies the copy back at the end."""
    module = with_only_function(_module(), "count")
    build_pipeline("write-input-updates").apply(make_context(), module)
    wide = torch.zeros(4, 2)
    argument = wide[:, 0]
    build_host_program(module, kernel_target("llvm"))(argument)
    assert torch.equal(wide[:, 0], torch.ones(4)) and torch.equal(wide[:, 1], torch.zeros(4))


def _kernel(text: str) -> buf.KernelOp:
    module = _module()
    return next(op for op in module.ops if isinstance(op, buf.KernelOp) and op.sym_name.data == text)


def test_a_kernel_writes_over_an_input_only_its_pointwise_stage_reads_where_it_writes():
    assert writes_over_input(_kernel("add_one"), 0, 0)
    assert writes_over_input(_kernel("mean_and_average"), 1, 1)
    # the reduction's result is not pointwise, and the input it reads is the other one
    assert not writes_over_input(_kernel("mean_and_average"), 0, 0)
    assert not writes_over_input(_kernel("shift"), 0, 0)
