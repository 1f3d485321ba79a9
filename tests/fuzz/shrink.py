"""Shrinks a failing graph while its failure class persists.

Candidates, biggest reductions first: drop an output, replace an op by one of
its arguments (identity), make a dynamic graph static, drop an input's dim or
make it 1, shrink a size, lay an input out contiguously, make an input float32.
A candidate is kept if it still runs eagerly and fails with the same class;
shrinking repeats until no candidate is kept (or the check budget is spent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import torch

from .compare import run_case
from .graphs import ONE, Graph, OpRecord, runs_eagerly


def renamed(op: OpRecord, old: str, new: str) -> OpRecord:
    return replace(op, args=tuple(new if arg == old else arg for arg in op.args))


def tidy(graph: Graph) -> Graph:
    """Without dead ops, unused inputs and sizes no input uses."""
    graph = graph.without_dead_ops()
    used = {arg for op in graph.ops for arg in op.args} | set(graph.outputs)
    inputs = tuple(spec for spec in graph.inputs if spec.name in used) or graph.inputs[:1]
    symbols = {ONE} | {d for spec in inputs for d in spec.dims}
    sizes = tuple((s, v) for s, v in graph.sizes if s in symbols)
    alt = None if graph.alt_sizes is None else tuple((s, v) for s, v in graph.alt_sizes if s in symbols)
    return replace(graph, inputs=inputs, sizes=sizes, alt_sizes=alt)


def without_op(graph: Graph, index: int, replacement: str) -> Graph:
    """The graph with op `index` removed and its result replaced by `replacement`."""
    old = graph.ops[index].result
    ops = graph.ops[:index] + tuple(renamed(op, old, replacement) for op in graph.ops[index + 1 :])
    outputs = tuple(dict.fromkeys(replacement if out == old else out for out in graph.outputs))
    return replace(graph, ops=ops, outputs=outputs)


def with_size(graph: Graph, symbol: str, size: int) -> Graph:
    """The graph with `symbol` of size `size`; a dynamic graph's second call keeps its growth."""
    old = dict(graph.sizes)[symbol]
    sizes = tuple((s, size if s == symbol else v) for s, v in graph.sizes)
    alt = graph.alt_sizes
    if alt is not None:
        growth = dict(alt)[symbol] - old
        alt = tuple((s, (size + growth if size > 1 else size) if s == symbol else v) for s, v in alt)
        if not any(v > 1 for _, v in sizes):
            alt = None
    return replace(graph, sizes=sizes, alt_sizes=alt)


def with_input(graph: Graph, index: int, **changes) -> Graph:
    inputs = list(graph.inputs)
    inputs[index] = replace(inputs[index], **changes)
    return replace(graph, inputs=tuple(inputs))


def candidates(graph: Graph) -> Iterator[Graph]:
    """Smaller variants of `graph`, the biggest reductions first."""
    for output in graph.outputs if len(graph.outputs) > 1 else ():
        yield replace(graph, outputs=tuple(o for o in graph.outputs if o != output))
    for index in reversed(range(len(graph.ops))):
        for arg in dict.fromkeys(graph.ops[index].args):
            yield without_op(graph, index, arg)
    if graph.dynamic:
        yield replace(graph, alt_sizes=None)
    for index, spec in enumerate(graph.inputs):
        for position in range(len(spec.dims)):
            yield with_input(graph, index, dims=spec.dims[:position] + spec.dims[position + 1 :])
        for position, dim in enumerate(spec.dims):
            if dim != ONE:
                yield with_input(graph, index, dims=spec.dims[:position] + (ONE,) + spec.dims[position + 1 :])
    for symbol, size in graph.sizes:
        for smaller in dict.fromkeys([1, size // 2, size - 1]):
            if symbol != ONE and 0 < smaller < size:
                yield with_size(graph, symbol, smaller)
    for index, spec in enumerate(graph.inputs):
        if spec.layout != "contiguous":
            yield with_input(graph, index, layout="contiguous")
        if spec.dtype != torch.float32:
            yield with_input(graph, index, dtype=torch.float32)


def shrink(
    graph: Graph,
    failure: str,
    backend: str = "permalloy",
    target: str = "llvm",
    max_checks: int = 400,
    fails: Callable[[Graph], str | None] | None = None,
) -> Graph:
    """The smallest variant of `graph` found that still fails with `failure`.
    `fails` gives a graph's failure class (by default: compile and compare it)."""
    classify = fails or (lambda g: run_case(g, backend, target, timeout=120).failure)
    checks = 0
    current = tidy(graph)
    seen = {current.source() + repr(current.inputs) + repr(current.sizes) + repr(current.alt_sizes)}
    progress = True
    while progress and checks < max_checks:
        progress = False
        for candidate in map(tidy, candidates(current)):
            key = candidate.source() + repr(candidate.inputs) + repr(candidate.sizes) + repr(candidate.alt_sizes)
            if key in seen or not runs_eagerly(candidate):
                continue
            seen.add(key)
            checks += 1
            if classify(candidate) == failure:
                current = candidate
                progress = True
                break
            if checks >= max_checks:
                break
    return current
