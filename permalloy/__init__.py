"""
permalloy: an MLIR-style compiler for PyTorch programs, written on xDSL.

`torch.compile(model, backend="permalloy")` compiles a model; `permalloy.stats()`
tells what was compiled since `permalloy.reset_stats()`.
"""

from permalloy.stats import reset_stats, stats

__all__ = ["reset_stats", "stats"]
