"""
What one graph's compilation shows beyond its stats record, for
`permalloy.explain` and the log channels: the caller says what it wants to
see (`GraphDetails`), `compiler.compile_graph` fills it in.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from permalloy.dialects import loop
from permalloy.dialects.buffer import KernelOp, LaunchOp, buffer_type
from permalloy.passes.fusion_decisions import FusionDecisions


@dataclass
class KernelDetails:
    """One kernel of a compiled graph and what it computes."""

    name: str
    loop_ops: list[str]
    """The labels of the loop ops the kernel holds (after inlining)."""
    aten_ops: list[str]
    """The ATen ops computed in it, as `op (node)`, in graph order."""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "loop_ops": list(self.loop_ops), "aten_ops": list(self.aten_ops)}


@dataclass
class GraphDetails:
    """
    What a caller asks to see of one graph's compilation, and what it saw.

    A graph compiled with details that need the pipeline (fusion decisions,
    kernel sources, labelled values) is compiled rather than loaded from the
    compiled-graph cache, as a graph whose stages are dumped is; with
    labelled values it does not use the cache at all, since the names are
    part of its IR's text.
    """

    label_values: bool = False
    """Name the imported values after their graph nodes, so that each kernel
    says which ATen ops it computes (`kernels`)."""
    fusion: FusionDecisions | None = None
    """Where `fuse-loops` records its decisions, when given."""
    sources: bool = False
    """Keep the kernels' generated source and the host program's."""

    aten_ops: list[str] = field(default_factory=list)
    """The ATen ops of the graph, in order, as `op (node)`."""
    value_labels: dict[str, str] = field(default_factory=dict)
    """Each label of imported values (`n<position>`) -> its ATen op, as `op (node)`."""
    kernels: list[KernelDetails] = field(default_factory=list)
    kernel_sources: dict[str, str] = field(default_factory=dict)
    host_source: str = ""

    @property
    def needs_pipeline(self) -> bool:
        return self.label_values or self.fusion is not None or self.sources

    def describe(self, label: str) -> str:
        """The ATen op of a loop op's label, or the label itself."""
        return self.value_labels.get(label, label)

    def record(
        self,
        graph: torch.fx.GraphModule,
        value_labels: dict[str, tuple[str, str]],
        module: ModuleOp,
        target: Any,
        host_source: str,
    ) -> None:
        """Fill in what compiling `graph` into `module` showed."""
        self.aten_ops = [
            f"{node.target} ({node.name})"
            for node in graph.graph.nodes
            if node.op == "call_function" and node.target is not operator.getitem
        ]
        self.value_labels = {label: f"{op} ({node})" for label, (node, op) in value_labels.items()}
        origins = self.fusion.origins if self.fusion is not None else {}
        for kernel in (op for op in module.ops if isinstance(op, KernelOp)):
            labels = [
                op.results[0].name_hint or "?"
                for op in kernel.body.block.ops
                if isinstance(op, loop.LoopOp)
            ]
            computed: list[str] = []
            for label in labels:
                for origin in origins.get(label, [label]):
                    if origin in value_labels and origin not in computed:
                        computed.append(origin)
            computed.sort(key=lambda label: int(label[1:]))
            aten = [self.value_labels[label] for label in computed]
            self.kernels.append(KernelDetails(kernel.sym_name.data, labels, aten))
        if self.sources:
            self.host_source = host_source
            self.kernel_sources = kernel_sources(module, target)


def kernel_sources(module: ModuleOp, target: Any) -> dict[str, str]:
    """The source the target generates for each launched kernel, by name."""
    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, KernelOp)}
    sources: dict[str, str] = {}
    for launch in module.walk():
        if isinstance(launch, LaunchOp):
            name = launch.kernel.root_reference.data
            if name not in sources:
                layouts = [buffer_type(v) for v in (*launch.inputs, *launch.outputs)]
                sources[name] = target.emit_source(kernels[name], layouts)
    return sources
