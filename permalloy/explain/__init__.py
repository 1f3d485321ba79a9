"""
`permalloy.explain(fn, *args, **kwargs)`: what the backend did with a
function, and why.

`details.py` is what the compiler records of a graph when asked (kernels and
their ATen ops, fusion decisions, sources), `collect.py` gathers the graphs
of one run, `report.py` is the report, `run.py` runs the function.
"""

from __future__ import annotations

from typing import Any


def explain(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """See `permalloy.explain.run.explain`."""
    from permalloy.explain.run import explain as run

    return run(fn, *args, **kwargs)
