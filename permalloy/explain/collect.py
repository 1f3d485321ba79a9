"""
What `permalloy.explain` gathers while the backend compiles: for each graph
the backend compiles (or runs eagerly), its stats record and details, with
the Dynamo graph it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from permalloy.explain.details import GraphDetails
from permalloy.stats import GraphStats


@dataclass
class CollectedGraph:
    """One graph the backend compiled, or ran eagerly."""

    dynamo_graph: int
    """The Dynamo graph it is (a part of), counted from 0."""
    stats: GraphStats
    details: GraphDetails | None


@dataclass
class ExplanationCollector:
    """The graphs of one `permalloy.explain` run, in the order the backend saw them."""

    graphs: list[CollectedGraph] = field(default_factory=list)
    dynamo_graphs: int = 0
    """How many Dynamo graphs the backend was called with."""

    def add(self, stats: GraphStats, details: GraphDetails | None) -> None:
        self.graphs.append(CollectedGraph(self.dynamo_graphs - 1, stats, details))

    def backend(self, mode: str | None, options: dict[str, Any] | None) -> Callable:
        """The permalloy backend with `mode` and `options`, collecting into this record."""
        from permalloy.tools.backend import permalloy_backend

        def backend(graph, example_inputs):
            self.dynamo_graphs += 1
            return permalloy_backend(graph, example_inputs, mode, options, explanation=self)

        return backend
