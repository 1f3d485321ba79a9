"""The error the FX importer raises for a graph it cannot represent."""

from __future__ import annotations


class GraphImportError(Exception):
    """
    A graph that ptensor cannot represent: an unsupported dtype (complex, float8),
    a data-dependent size, a non-tensor graph input of an unsupported kind.

    Raised with a message that names the node; a torch.compile backend catches
    it and runs the graph eagerly instead.
    """

    def __init__(self, message: str, node_name: str | None = None):
        self.node_name = node_name
        where = f"node '{node_name}': " if node_name is not None else ""
        super().__init__(f"cannot import the FX graph: {where}{message}")
