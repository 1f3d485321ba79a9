"""
Calls of library and fallback ops from the host program.

A `buffer.extern` holds one ptensor op run by torch. Its call is built once, at
compile time: the torch function and every argument that does not change
between calls (convolution geometry, attention flags, a fallback's constant
arguments, a reduction's dimensions) are bound then, so that a call costs one
Python call into torch. Every ptensor op that is not a view has a direct call
(`DIRECT_CALLS`): the library ops (`library.py`), `ptensor.fallback`
(`fallback.py`), and the elementwise, generator, reduction and data-movement
ops a host program may run with torch (`elementwise.py`, `data.py`). None
runs through the reference interpreter, and results are not checked against
their declared types per call (the interpreter does that for tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.ir import Operation

from permalloy.analysis.out_forms import writes_into
from permalloy.dialects import ptensor as pt
from permalloy.dialects.buffer import ExternOp
from permalloy.targets.externs.calls import ExternCall, ExternIntoCall, Symbols, Tensors
from permalloy.targets.externs.data import DATA_CALLS, IN_PLACE_CALLS
from permalloy.targets.externs.elementwise import ELEMENTWISE_CALLS
from permalloy.targets.externs.fallback import fallback_call
from permalloy.targets.externs.library import LIBRARY_CALLS, LIBRARY_INTO_CALLS

DIRECT_CALLS: dict[type[Operation], Callable[[Any], ExternCall]] = {
    **LIBRARY_CALLS,
    **ELEMENTWISE_CALLS,
    **DATA_CALLS,
    pt.FallbackOp: fallback_call,
}
"""The call of each ptensor op class a host program can run with torch."""


class NoDirectCallError(ValueError):
    """An extern holding an op that has no call into torch (a view)."""


def extern_call(extern: ExternOp) -> ExternCall:
    """The callable that runs an extern's op on the tensors of its inputs (in
    its in-place form where the extern says it writes its first input)."""
    op = extern.library_op
    in_place = ExternOp.WRITES_FIRST_INPUT in extern.attributes
    make = (IN_PLACE_CALLS if in_place else DIRECT_CALLS).get(type(op))
    if make is None:
        form = "in place " if in_place else ""
        raise NoDirectCallError(f"the host program cannot call {op.name} {form}into torch")
    call = make(op)
    positions = _operand_positions(extern)
    return call if positions is None else _on_operands(call, positions)


def extern_into_call(extern: ExternOp) -> ExternIntoCall | None:
    """The form of an extern's op that writes its one result into a given
    tensor of the result's layout, taking the extern's inputs; None where the
    op has none, or where it would not write that layout as it is
    (`writes_into_layout`)."""
    op = extern.library_op
    make = LIBRARY_INTO_CALLS.get(type(op))
    if make is None or not writes_into(extern):
        return None
    call = make(op)
    positions = _operand_positions(extern)
    if positions is None:
        return call
    return lambda tensors, out: call([tensors[p] for p in positions], out)


def _operand_positions(extern: ExternOp) -> tuple[int, ...] | None:
    """The position among the extern's inputs of each operand of its op, or
    None where they are the inputs in order."""
    positions = extern.library_input_positions()
    return None if positions == tuple(range(len(extern.inputs))) else positions


def _on_operands(call: ExternCall, positions: tuple[int, ...]) -> ExternCall:
    """`call`, which takes the op's operands, given the extern's inputs instead:
    an input the op reads twice (`mm(x, x)`) is passed to the extern once."""

    def reordered(tensors: Tensors, symbols: Symbols) -> tuple:
        return call([tensors[p] for p in positions], symbols)

    return reordered


__all__ = ["DIRECT_CALLS", "ExternCall", "ExternIntoCall", "NoDirectCallError", "extern_call", "extern_into_call"]
