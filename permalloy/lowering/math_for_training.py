"""
Calls of Dynamo's graph rewritten before AOTAutograd traces them.

AOTAutograd differentiates an ATen op through its derivative formula, which
for some ops is a fused backward op with no ptensor form
(`grid_sampler_2d_backward`), run by torch as a fallback. Before AOTAutograd
traces a training graph, `calls_rewritten` points each such call of Dynamo's
graph at a function computing the same with differentiable torch ops
(`MATH_FOR_TRAINING`), so that the backward is made of ops ptensor has;
attention keeps torch's fused kernels, forward and backward, which the
importer calls whole as library ops (`attention_with_fused_mask`). On leaving, the graph calls what it called
before, so that it can still run eagerly as the user wrote it. Inference graphs keep attention one
library op; `calls_rewritten` points their attention calls at
`attention_with_fused_mask`, which gives the call a mask torch's fused kernels
take (AOTAutograd picks the kernel from the traced mask's layout).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch
from torch import fx

from permalloy.lowering.attention_math import (
    ATTENTION_CALLS,
    MULTI_HEAD_ATTENTION_CALLS,
    attention_with_fused_mask,
    multi_head_attention_math,
)
from permalloy.lowering.grid_sampling import GRID_SAMPLE_CALLS, grid_sample_math

MATH_FOR_TRAINING: dict[Callable, Callable] = {
    **dict.fromkeys(ATTENTION_CALLS, attention_with_fused_mask),
    **dict.fromkeys(MULTI_HEAD_ATTENTION_CALLS, multi_head_attention_math),
    **dict.fromkeys(GRID_SAMPLE_CALLS, grid_sample_math),
}
"""Each callable of Dynamo's graphs rewritten in training graphs, and its
rewrite: attention keeps torch's fused kernels, forward and backward, which
the importer calls whole, its mask given in a layout they take
(`attention_with_fused_mask`); `nn.MultiheadAttention`'s function and grid
sampling become math."""

FUSED_FOR_INFERENCE: dict[Callable, Callable] = dict.fromkeys(ATTENTION_CALLS, attention_with_fused_mask)
"""Each callable of Dynamo's graphs rewritten in inference graphs, and its rewrite."""


def rewrite_calls(graph: fx.GraphModule, table: dict[Callable, Callable]) -> dict[fx.Node, object]:
    """Point every call of Dynamo's `graph` that `table` names at its entry
    there; gives the rewritten nodes with their former targets."""
    rewritten = {}
    for node in graph.graph.nodes:
        if node.op == "call_function" and node.target in table:
            rewritten[node] = node.target
            node.target = table[node.target]
    if rewritten:
        graph.recompile()
    return rewritten


def restore_targets(graph: fx.GraphModule, targets: dict[fx.Node, object]) -> None:
    """Undo `rewrite_calls`: `graph` calls what it called before."""
    for node, target in targets.items():
        node.target = target
    if targets:
        graph.recompile()


@contextlib.contextmanager
def calls_rewritten(graph: fx.GraphModule, table: dict[Callable, Callable]) -> Iterator[None]:
    """Within the block, `graph`'s calls named in `table` call its entries
    (`MATH_FOR_TRAINING` for a training graph, `FUSED_FOR_INFERENCE` for an
    inference graph); on leaving, the original calls are back."""
    targets = rewrite_calls(graph, table)
    try:
        yield
    finally:
        restore_targets(graph, targets)


def needs_gradients(example_inputs) -> bool:
    """Whether a graph with these inputs is traced for training: gradients are
    on and some input (parameters included) requires them."""
    return torch.is_grad_enabled() and any(
        isinstance(value, torch.Tensor) and value.requires_grad for value in example_inputs
    )
