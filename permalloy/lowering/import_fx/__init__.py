"""
The FX importer: ATen graphs from AOTAutograd as ptensor IR.

    result = import_graph(graph_module)
    print(result.module)
"""

from permalloy.lowering.import_fx.errors import GraphImportError
from permalloy.lowering.import_fx.graph import (
    ImportResult,
    TensorOutput,
    ValueOutput,
    import_graph,
    verify_imported,
)

__all__ = [
    "GraphImportError",
    "ImportResult",
    "TensorOutput",
    "ValueOutput",
    "import_graph",
    "verify_imported",
]
