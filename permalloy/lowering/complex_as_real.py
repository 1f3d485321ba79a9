"""
`complex_as_real`: an ATen graph with complex tensors rewritten as one with
none, before import.

permalloy's IR has no complex element type: every complex tensor of shape S
becomes a real tensor of shape S + [2] (real, imaginary) of the matching real
dtype (`permalloy.complex_layout`), and every op on complex tensors the real
ops that compute the same on those pairs (the rules of
`complex_pointwise.py`, `complex_structure.py` and `complex_fft.py`). The
graph is traced again with `make_fx` under its own fake mode and permalloy's
decompositions: each node whose arguments or result are complex runs its
rule on `Pair`s (`complex_values.py`), every other node runs as it is, so
the new graph has the old one's inputs (complex ones as their pairs) and
outputs (complex ones as pairs) and only real tensors in between.

The compiled program then runs between two conversions (`ComplexBoundary`):
complex arguments as their pairs (`view_as_real`, a view) and complex results
from theirs (`view_as_complex`, a view where the layout allows, which it
does for every pair permalloy allocates). A graph with an op on complex
tensors that no rule takes (or whose arguments its rule does not take) is
not rewritten: `ComplexGraphError` names the ops and the graph runs as the
backend runs a graph it cannot compile (eagerly, after one warning).

Before (`x`, `w` complex64 [4, 8] and [8])::

    mul = aten.mul.Tensor(x, w)
    abs_1 = aten.abs.default(mul)

After (`x`, `w` float32 [4, 8, 2] and [8, 2]; the magnitude as `hypot`)::

    select = aten.select.int(x, 2, 0) ...
    mul = aten.mul.Tensor(select, select_2) ...   # the parts of the product
    maximum = aten.maximum.default(abs_2, abs_3) ...
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

from permalloy.complex_layout import COMPLEX_DTYPES, as_complex, as_real, is_complex_tensor
from permalloy.lowering.complex_fft import FFT_RULES
from permalloy.lowering.complex_functions import FUNCTION_RULES
from permalloy.lowering.complex_pointwise import POINTWISE_RULES
from permalloy.lowering.complex_structure import STRUCTURE_RULES
from permalloy.lowering.complex_values import Call, ComplexRuleError, Pair
from permalloy.lowering.decompositions import decomposition_table
from permalloy.lowering.import_fx.errors import GraphImportError
from permalloy.targets.host import WrappedProgram

RULES: dict[Any, Callable[[Call], Any]] = {**POINTWISE_RULES, **FUNCTION_RULES, **STRUCTURE_RULES, **FFT_RULES}
"""Every rule, by ATen overload or overload packet (an overload's wins)."""


class ComplexGraphError(GraphImportError):
    """A graph with complex tensors that the rewrite cannot represent: ops no
    rule takes, or a complex dtype without a pair layout (complex32)."""


def rule_for(target: Any) -> Callable[[Call], Any] | None:
    """The rule of an op, by its overload or its packet; None when none."""
    found = RULES.get(target)
    if found is None and isinstance(target, torch._ops.OpOverload):
        found = RULES.get(target.overloadpacket)
    return found


def _complex_values(value: Any) -> list[torch.Tensor]:
    return [v for v in pytree.tree_leaves(value) if is_complex_tensor(v)]


def involves_complex(node: fx.Node) -> bool:
    """Whether a node's arguments or result hold a complex tensor or number."""
    if _complex_values(node.meta.get("val")):
        return True
    for arg in pytree.tree_leaves((node.args, node.kwargs)):
        if isinstance(arg, complex):
            return True
        if isinstance(arg, fx.Node) and _complex_values(arg.meta.get("val")):
            return True
    return False


def has_complex(graph: fx.GraphModule) -> bool:
    """Whether any node of the graph involves a complex tensor or number."""
    return any(
        involves_complex(node) or (node.op == "get_attr" and is_complex_tensor(getattr(graph, node.target)))
        for node in graph.graph.nodes
    )


def _check(graph: fx.GraphModule) -> None:
    """Raise `ComplexGraphError` naming every op on complex tensors that no
    rule takes, and any complex dtype with no pair layout."""
    missing: list[str] = []
    for node in graph.graph.nodes:
        for value in _complex_values(node.meta.get("val")):
            if value.dtype not in COMPLEX_DTYPES:
                raise ComplexGraphError(f"dtype {value.dtype} has no real pair layout", node.name)
        if node.op != "call_function" or node.target is operator.getitem or not involves_complex(node):
            continue
        if rule_for(node.target) is None and str(node.target) not in missing:
            missing.append(str(node.target))
    if missing:
        raise ComplexGraphError(
            "complex tensors: no rule writes these ops on real pairs: " + ", ".join(missing)
        )


class _ComplexAsReal(fx.Interpreter):
    """Runs a graph under `make_fx` with complex tensors as `Pair`s: nodes
    that involve complex values run their rule, the others themselves."""

    def __init__(self, graph: fx.GraphModule, constants: dict[str, torch.Tensor]):
        super().__init__(graph)
        self.constants = constants

    def run_node(self, node: fx.Node) -> Any:
        if node.op == "placeholder":
            value = super().run_node(node)
            return Pair(value) if is_complex_tensor(node.meta.get("val")) else value
        if node.op == "get_attr" and node.target in self.constants:
            # a constant of the new graph, which fake tensors take lifted
            return Pair(torch.ops.aten.lift_fresh_copy.default(self.constants[node.target]))
        if node.op == "output":
            (outputs,) = self.map_nodes_to_values(node.args, node)
            if not isinstance(outputs, list | tuple):
                return _in_eager_layout(outputs, node.args[0])
            return type(outputs)(_in_eager_layout(v, n) for v, n in zip(outputs, node.args[0]))
        if node.op != "call_function" or node.target is operator.getitem or not involves_complex(node):
            return super().run_node(node)
        args, kwargs = self.fetch_args_kwargs_from_env(node)
        try:
            return rule_for(node.target)(Call.bind(node, args, kwargs))
        except ComplexRuleError as error:
            raise ComplexGraphError(f"complex tensors: {node.target} with {error}", node.name) from None


def _in_eager_layout(value: Any, node: Any) -> Any:
    """A graph output (a pair packed) in the layout eager gives it: the
    rewrite computes complex values from their parts, whose pairs need not
    be laid out as torch lays out the complex tensor (a product of
    transposed tensors is transposed). A pair or tensor whose strides
    differ from the example's (all integers) is written into a tensor of
    the example's strides: a copy the importer folds into the output's
    producer."""
    example = node.meta.get("val") if isinstance(node, fx.Node) else None
    if isinstance(value, Pair):
        value = value.packed()
    if not isinstance(value, torch.Tensor) or not isinstance(example, torch.Tensor):
        return value
    strides = list(example.stride())
    if example.is_complex():
        strides = [*(2 * s for s in strides), 1]
    if not all(isinstance(n, int) for n in (*strides, *value.shape)):
        return value
    if all(size == 1 or s == wanted for size, s, wanted in zip(value.shape, value.stride(), strides)):
        return value
    target = torch.empty_strided(value.shape, strides, dtype=value.dtype, device=value.device)
    return torch.ops.aten.copy.default(target, value)


@dataclass(frozen=True)
class ComplexBoundary:
    """Where a rewritten graph's complex values cross into and out of it:
    the positions of its complex inputs and of its complex outputs."""

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    def wrap(self, program: Callable, results: Sequence[int]) -> ComplexProgram:
        """`program` (which takes and gives pairs) taking complex arguments
        and giving its results at positions `results` as complex tensors."""
        return ComplexProgram(program, self.inputs, tuple(sorted(set(results))))


class ComplexProgram(WrappedProgram):
    """A host program between the conversions of its complex arguments to
    pairs and of its complex results back, which are views."""

    def __init__(self, program: Callable, inputs: tuple[int, ...], results: tuple[int, ...]):
        self.program = program
        self.inputs = inputs
        self.results = results

    def __call__(self, *args: Any) -> tuple:
        args = list(args)
        for position in self.inputs:
            args[position] = as_real(args[position])
        results = list(self.program(*args))
        for position in self.results:
            results[position] = as_complex(results[position])
        return tuple(results)


@dataclass
class RealGraph:
    """A graph rewritten by `complex_as_real`, and its boundary."""

    graph: fx.GraphModule
    boundary: ComplexBoundary


def _drop_unused_missing_items(graph: fx.GraphModule) -> None:
    """Remove the unused items the trace took of a tuple's missing entries
    (a `convolution_backward` whose input needs no gradient returns None
    there), which have no example value to import."""
    dropped = False
    for node in reversed(graph.graph.nodes):
        if node.op == "call_function" and node.target is operator.getitem and not node.users and "val" not in node.meta:
            graph.graph.erase_node(node)
            dropped = True
    if dropped:
        graph.recompile()


def complex_as_real(graph: fx.GraphModule) -> RealGraph | None:
    """The graph with every complex tensor as a real pair, or None when it
    has no complex values; raises `ComplexGraphError` for what no rule takes."""
    if not has_complex(graph):
        return None
    _check(graph)
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    examples = [n.meta.get("val") for n in placeholders]
    fake_mode = detect_fake_mode(examples)
    if fake_mode is None:
        raise ComplexGraphError("complex tensors: the graph's inputs have no fake example values")
    with unset_fake_temporarily():
        constants = {
            n.target: as_real(getattr(graph, n.target)).clone()
            for n in graph.graph.nodes
            if n.op == "get_attr" and is_complex_tensor(getattr(graph, n.target))
        }
    with fake_mode:
        inputs = [as_real(v) if is_complex_tensor(v) else v for v in examples]
        rewritten = make_fx(
            _ComplexAsReal(graph, constants).run,
            decomposition_table=decomposition_table(),
        )(*inputs)
    _drop_unused_missing_items(rewritten)
    output = next(n for n in graph.graph.nodes if n.op == "output")
    returned = output.args[0] if isinstance(output.args[0], list | tuple) else [output.args[0]]
    boundary = ComplexBoundary(
        tuple(i for i, v in enumerate(examples) if is_complex_tensor(v)),
        tuple(
            i for i, value in enumerate(returned)
            if isinstance(value, fx.Node) and is_complex_tensor(value.meta.get("val"))
        ),
    )
    return RealGraph(rewritten, boundary)
