"""The table of converters, by ATen overload or overload packet."""

from __future__ import annotations

from torch import fx
from torch._ops import OpOverload

from permalloy.lowering.import_fx import (
    data_movement,
    elementwise,
    generators,
    library,
    reductions,
    scans,
    scatters,
    sorting,
    views,
)
from permalloy.lowering.import_fx.common import Converter

CONVERTERS: dict = {
    **elementwise.CONVERTERS,
    **reductions.CONVERTERS,
    **scans.CONVERTERS,
    **views.CONVERTERS,
    **data_movement.CONVERTERS,
    **scatters.CONVERTERS,
    **sorting.CONVERTERS,
    **generators.CONVERTERS,
    **library.CONVERTERS,
}
"""Every converter; an overload's entry wins over its packet's."""


def converter_for(node: fx.Node) -> Converter | None:
    """The converter of a call_function node, or None when there is none."""
    target = node.target
    found = CONVERTERS.get(target)
    if found is None and isinstance(target, OpOverload):
        found = CONVERTERS.get(target.overloadpacket)
    return found


def is_library_op(node: fx.Node) -> bool:
    """Whether a node imports as a library op (an extern call)."""
    return node.target in library.LIBRARY_TARGETS
