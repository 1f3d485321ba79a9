"""Small helpers that converters share: arguments, dimensions, dtypes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import fx

from permalloy.lowering.import_fx.context import ImportContext

Converter = Callable[[ImportContext, fx.Node], Any]
"""Imports one FX node: gives its value (an SSA value, or a tuple of them for
several results), or None to have the node imported as `ptensor.fallback`."""


def argument(node: fx.Node, index: int, name: str, default: Any = None) -> Any:
    """A node's argument, given by position or by keyword."""
    if index < len(node.args):
        return node.args[index]
    return node.kwargs.get(name, default)


def normalize_dim(dim: int, rank: int) -> int:
    """A dimension in `[0, rank)`, counting negative ones from the end."""
    return dim % rank if rank > 0 else 0


def normalize_dims(dims: Sequence[int] | int | None, rank: int) -> list[int]:
    """Reduction dimensions; None or [] mean all of them."""
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return list(range(rank))
    return sorted({normalize_dim(d, rank) for d in dims})


def example(ctx: ImportContext, arg: Any) -> Any:
    """A value with the dtype of an argument, for torch's type promotion."""
    value = ctx.meta(arg)
    if isinstance(value, torch.SymInt):
        return 1
    if isinstance(value, torch.SymFloat):
        return 1.0
    if isinstance(value, torch.SymBool):
        return True
    return value


def promoted_dtype(ctx: ImportContext, lhs: Any, rhs: Any) -> torch.dtype:
    """torch's promoted dtype of two operands (tensors or Python numbers)."""
    return torch.result_type(example(ctx, lhs), example(ctx, rhs))
