"""
A torch-based interpreter for ptensor IR: the executable reference semantics
that tests compare every lowering against.
"""

from permalloy.interpreter.bindings import (
    ShapeMismatchError,
    SizeBindings,
    UnboundSymbolError,
)
from permalloy.interpreter.func import SymbolicFuncFunctions
from permalloy.interpreter.ptensor import PTensorFunctions
from permalloy.interpreter.run import find_function, make_interpreter, run_function

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
