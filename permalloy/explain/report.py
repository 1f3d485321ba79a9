"""
The report `permalloy.explain` returns: what Dynamo made of a function (its
graphs and graph breaks) and what permalloy made of each graph (ATen ops,
fallbacks, kernels, loop ops kept apart and why, planned memory, compile
time), as text (`str(report)`) and as a JSON-able dict (`report.to_dict()`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from permalloy.explain.collect import CollectedGraph, ExplanationCollector
from permalloy.logs import compile_time_summary
from permalloy.stats import GraphStats


@dataclass(frozen=True)
class GraphBreak:
    """Where Dynamo broke the function's graph, and why."""

    reason: str
    location: str

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "location": self.location}


@dataclass
class GraphReport:
    """One graph the backend compiled (an inference or forward graph of a
    Dynamo graph), or ran eagerly."""

    dynamo_graph: int
    stats: GraphStats
    aten_ops: list[str] = field(default_factory=list)
    fallbacks: list[dict[str, str]] = field(default_factory=list)
    kernels: list[dict[str, Any]] = field(default_factory=list)
    unfused: list[dict[str, Any]] = field(default_factory=list)
    """Each producer and consumer loop op left in different kernels, by ATen
    op, with the fusion rule that kept them apart."""

    @classmethod
    def of(cls, collected: CollectedGraph) -> GraphReport:
        stats, details = collected.stats, collected.details
        report = cls(collected.dynamo_graph, stats)
        report.fallbacks = [
            {"op": op, "reason": reason} for op, reason in zip(stats.fallback_ops, stats.fallback_reasons)
        ]
        if details is None:
            return report
        report.aten_ops = list(details.aten_ops)
        report.kernels = [k.to_dict() for k in details.kernels]
        if details.fusion is not None:
            for separation in details.fusion.separations:
                entry = separation.to_dict()
                entry["producer"] = details.describe(separation.producer)
                entry["consumer"] = details.describe(separation.consumer)
                if separation.not_inlined is not None:
                    entry["not_inlined"] = {
                        "rule": separation.not_inlined.rule,
                        "detail": separation.not_inlined.detail,
                    }
                report.unfused.append(entry)
        return report

    def to_dict(self) -> dict[str, Any]:
        stats = self.stats
        return {
            "dynamo_graph": self.dynamo_graph,
            "compiled": stats.compiled,
            "reason": stats.reason,
            "target": stats.target,
            "aten_ops": list(self.aten_ops),
            "fallbacks": [dict(f) for f in self.fallbacks],
            "kernels": [dict(k) for k in self.kernels],
            "extern_calls": stats.extern_calls,
            "unfused": [dict(u) for u in self.unfused],
            "peak_memory_bytes": stats.peak_intermediate_bytes_first_call,
            "peak_memory_expr": stats.peak_intermediate_expr,
            "compile_seconds": stats.compile_seconds,
            "compile_times": stats.as_dict()["compile_times"],
        }

    def lines(self, index: int) -> list[str]:
        stats = self.stats
        if not stats.compiled:
            return [f"  graph {index}: runs eagerly: {stats.reason}"]
        peak = stats.peak_intermediate_bytes_first_call
        lines = [
            f"  graph {index} ({stats.target}): {len(self.aten_ops)} ATen ops -> {stats.kernels} kernels, "
            f"{stats.extern_calls} extern calls; planned peak memory "
            + (f"{peak} bytes" if peak is not None else "unknown")
            + (f" ({stats.peak_intermediate_expr})" if stats.size_symbols else "")
        ]
        if self.aten_ops:
            lines.append("    ATen ops: " + ", ".join(self.aten_ops))
        for fallback in self.fallbacks:
            lines.append(f"    fallback: {fallback['op']}: {fallback['reason']}")
        for kernel in self.kernels:
            lines.append(f"    kernel {kernel['name']}: " + (", ".join(kernel["aten_ops"]) or "-"))
        for pair in self.unfused:
            line = f"    kept apart: {pair['producer']} -> {pair['consumer']}: {pair['rule']} ({pair['detail']})"
            if pair["not_inlined"] is not None:
                line += f"; not inlined: {pair['not_inlined']['rule']} ({pair['not_inlined']['detail']})"
            lines.append(line)
        lines.append("    compile time: " + compile_time_summary(stats))
        return lines


@dataclass
class ExplainReport:
    """What `permalloy.explain` found; `str()` is the text, `to_dict()` the data."""

    graph_count: int
    graph_break_count: int
    graph_breaks: list[GraphBreak]
    dynamo_graphs: list[list[str]]
    """The ops of each Dynamo graph (functions, methods and modules called)."""
    graphs: list[GraphReport]

    @classmethod
    def of(cls, dynamo_output: Any, collector: ExplanationCollector) -> ExplainReport:
        breaks = [
            GraphBreak(str(reason.reason).strip(), _location(reason.user_stack))
            for reason in dynamo_output.break_reasons
        ]
        dynamo_graphs = [
            [_op_name(node) for node in graph.graph.nodes if node.op.startswith("call_")]
            for graph in dynamo_output.graphs
        ]
        return cls(
            dynamo_output.graph_count,
            dynamo_output.graph_break_count,
            breaks,
            dynamo_graphs,
            [GraphReport.of(g) for g in collector.graphs],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph_count": self.graph_count,
            "graph_break_count": self.graph_break_count,
            "graph_breaks": [b.to_dict() for b in self.graph_breaks],
            "dynamo_graphs": [{"ops": list(ops)} for ops in self.dynamo_graphs],
            "graphs": [g.to_dict() for g in self.graphs],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        lines = [f"{self.graph_count} Dynamo graph(s), {self.graph_break_count} graph break(s)"]
        for number, graph_break in enumerate(self.graph_breaks, 1):
            lines.append(f"graph break {number} at {graph_break.location}: {graph_break.reason.splitlines()[0]}")
        count = 0
        for index, ops in enumerate(self.dynamo_graphs):
            lines.append(f"Dynamo graph {index}: {len(ops)} ops: " + ", ".join(ops))
            for graph in self.graphs:
                if graph.dynamo_graph == index:
                    lines += graph.lines(count)
                    count += 1
        return "\n".join(lines)


def _location(stack: Any) -> str:
    """`file:line in function` of the innermost user frame of a graph break."""
    frames = list(stack or [])
    if not frames:
        return "unknown"
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def _op_name(node: Any) -> str:
    target = node.target
    if node.op == "call_function":
        return getattr(target, "__name__", None) or str(target)
    if node.op == "call_method":
        return f".{target}"
    return str(target)
