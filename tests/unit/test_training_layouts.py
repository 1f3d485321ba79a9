"""
Layouts across a training step's two graphs: the forward graph's saved
tensors are results of free layout (`ptensor.free_layout`), the program
reports the strides it returns them in, and a backward graph whose example
inputs arrive in other strides than it was traced with is imported (or run
eagerly) accordingly.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from xdsl.dialects import func

from permalloy.compiler import CompileOptions, compile_graph
from permalloy.lowering.capture import saved_for_backward
from permalloy.lowering.import_fx import import_graph
from permalloy.lowering.import_fx.graph import FREE_LAYOUT_ATTR
from permalloy.dialects import buffer as buf
from permalloy.passes import convolution_layouts, plan_layouts
from permalloy.passes.convolution_layouts import LayoutTimes, convolution_signature, convolution_times
from permalloy.passes.plan_layouts import CONVOLUTION_CHOICES, plan_function_layouts
from permalloy.cache.modules import parse_module
from permalloy.tools.backend import _in_strides, _take_example_strides

aten = torch.ops.aten


def _conv_relu(x: torch.Tensor, w: torch.Tensor):
    """A forward graph's shape: a result the caller sees, then the
    activations a backward graph would read."""
    y = aten.convolution.default(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    r = aten.relu.default(y)
    return r.sum(), y, r


def _result_attributes(module) -> list[dict]:
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return [dict(entry.data) for entry in function.res_attrs.data] if function.res_attrs else []


def test_saved_outputs_are_results_of_free_layout():
    graph = make_fx(_conv_relu)(torch.randn(2, 3, 6, 5), torch.randn(4, 3, 3, 3))
    imported = import_graph(graph, free_layout_outputs=frozenset({1, 2}))
    assert [FREE_LAYOUT_ATTR in a for a in _result_attributes(imported.module)] == [False, True, True]


def test_symbolic_sizes_keep_eager_layout():
    graph = make_fx(_conv_relu, tracing_mode="symbolic")(torch.randn(2, 3, 6, 5), torch.randn(4, 3, 3, 3))
    imported = import_graph(graph, free_layout_outputs=frozenset({1, 2}))
    assert not any(FREE_LAYOUT_ATTR in a for a in _result_attributes(imported.module))


@pytest.mark.parametrize("channels_last_faster", [True, False])
def test_compiled_graph_reports_the_strides_it_chose(monkeypatch, channels_last_faster):
    times = LayoutTimes(2.0, 1.0) if channels_last_faster else LayoutTimes(1.0, 2.0)
    monkeypatch.setitem(CONVOLUTION_CHOICES, "measured", lambda op, copies_input, device, keeps_nchw=False, trains=False: times)
    monkeypatch.setattr(plan_layouts, "MEASURED_MIN_MULTIPLY_ADDS", 0)
    x, w = torch.randn(2, 3, 6, 5), torch.randn(4, 3, 3, 3)
    graph = make_fx(_conv_relu)(x, w)
    compiled = compile_graph(graph, CompileOptions(target="llvm", cache=False), free_layout_outputs=frozenset({1, 2}))
    planned = (120, 1, 20, 4) if channels_last_faster else (120, 30, 5, 1)
    assert compiled.output_strides == [None, planned, planned]
    results = compiled.program(x, w)
    for result, expected in zip(results, _conv_relu(x, w)):
        torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-5)
    assert [r.stride() for r in results[1:3]] == [planned, planned]


def test_no_saved_outputs_outside_a_forward_compile():
    graph = make_fx(_conv_relu)(torch.randn(2, 3, 6, 5), torch.randn(4, 3, 3, 3))
    assert list(saved_for_backward(graph)) == []


def test_graph_takes_its_example_inputs_strides_and_runs_eagerly_in_traced_ones():
    """A graph traced on NCHW memory whose example input is channels-last
    (a backward graph's saved activation) is imported with the example's
    strides; run eagerly, its input is copied back into the traced strides,
    which its ATen `view` needs."""

    def flatten(y):
        return aten.view.default(y, [2, -1]) * 2

    graph = make_fx(flatten)(torch.randn(2, 4, 3, 3))
    example = torch.randn(2, 4, 3, 3).to(memory_format=torch.channels_last)
    traced = _take_example_strides(graph, [example])
    assert traced == {0: (36, 9, 3, 1)}
    (placeholder,) = [n for n in graph.graph.nodes if n.op == "placeholder"]
    assert placeholder.meta["val"].stride() == example.stride()
    with pytest.raises(RuntimeError, match="view"):
        graph(example)
    torch.testing.assert_close(_in_strides(graph, traced)(example), example.reshape(2, -1) * 2)
    assert _in_strides(graph, {}) is graph


TRAINING_LIT = Path(__file__).parents[1] / "filecheck" / "passes" / "plan_layouts_training.mlir"


def _training_function(name: str) -> func.FuncOp:
    module = parse_module(TRAINING_LIT.read_text())
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name]
    return function


def test_a_training_forward_times_its_convolutions_with_their_gradients():
    """A forward graph that returns saved activations asks the timer for the
    convolutions' times with their gradients; one that returns none (the
    same convolution, its results seen by the caller) does not."""
    asked = []

    def timer(op, copies_input, keeps_nchw=False, trains=False):
        asked.append(trains)
        return LayoutTimes(2.0, 1.0)

    plan_function_layouts(_training_function("saved_activations"), timer, min_multiply_adds=0)
    plan_function_layouts(_training_function("returned_activations"), timer, min_multiply_adds=0)
    assert asked == [True]  # the second's convolution result is returned: not planned, not timed


def test_training_times_add_the_gradients_in_each_layout(monkeypatch):
    """With `trains`, each layout's time adds the library's gradients of the
    convolution, computed on tensors in that layout (run once here, each
    timed call counting one second)."""
    shapes = []

    def one_second(call, synchronize):
        result = call()
        tensors = result if isinstance(result, tuple) else (result,)
        shapes.append([tuple(t.shape) for t in tensors if t is not None])
        return 1.0

    monkeypatch.setattr(convolution_layouts, "_fastest", one_second)
    convolution_layouts._measured_times.cache_clear()
    function = _training_function("saved_activations")
    convolution = next(op for op in function.body.block.ops if isinstance(op, buf.ExternOp))
    assert convolution_times(convolution, True) == LayoutTimes(1.0, 1.0)
    assert convolution_times(convolution, True, trains=True) == LayoutTimes(2.0, 2.0)
    signature = convolution_signature(convolution, True, trains=True)
    assert signature is not None and (False, True, False) in signature  # no input gradient for a copied input
    # each layout's forward, twice, then the weight's gradient in each layout
    assert shapes == [[(2, 4, 5, 5)]] * 4 + [[(4, 3, 3, 3)]] * 2
    convolution_layouts._measured_times.cache_clear()
