"""
permalloy: an MLIR-style compiler for PyTorch programs, written on xDSL.

`torch.compile(model, backend="permalloy")` compiles a model; `permalloy.stats()`
tells what was compiled since `permalloy.reset_stats()`; `permalloy.explain(fn,
*args)` compiles and runs `fn` once and reports what happened, and why.
"""

from permalloy.explain import explain
from permalloy.stats import reset_stats, stats

__all__ = ["explain", "reset_stats", "stats"]
