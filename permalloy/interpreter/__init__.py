"""
A torch-based interpreter for ptensor IR: the executable reference semantics
that tests compare every lowering against.

The package's names load on first use: the compiler imports its submodules
for the data helpers the extern calls share (`ptensor_common`,
`ptensor_data`), and loading the interpreter itself would load every
interpreter xDSL ships (`xdsl.interpreters`), a fifth to half a second of a
new process's first compile.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from permalloy.interpreter.bindings import ShapeMismatchError, SizeBindings, UnboundSymbolError
    from permalloy.interpreter.func import SymbolicFuncFunctions
    from permalloy.interpreter.ptensor import PTensorFunctions
    from permalloy.interpreter.run import find_function, make_interpreter, run_function

_HOMES = {
    "ShapeMismatchError": "bindings",
    "SizeBindings": "bindings",
    "UnboundSymbolError": "bindings",
    "SymbolicFuncFunctions": "func",
    "PTensorFunctions": "ptensor",
    "find_function": "run",
    "make_interpreter": "run",
    "run_function": "run",
}
"""Each public name and the submodule that defines it."""

__all__ = [
    "PTensorFunctions",
    "ShapeMismatchError",
    "SizeBindings",
    "SymbolicFuncFunctions",
    "UnboundSymbolError",
    "find_function",
    "make_interpreter",
    "run_function",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
