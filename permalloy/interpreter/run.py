"""Running a function of a ptensor module on torch tensors."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.utils.exceptions import InterpretationError

from permalloy.interpreter.bindings import SizeBindings
from permalloy.interpreter.func import SymbolicFuncFunctions
from permalloy.interpreter.ptensor import PTensorFunctions


def make_interpreter(module: ModuleOp, bindings: SizeBindings) -> Interpreter:
    """An interpreter for `module` that runs func and ptensor ops."""
    interpreter = Interpreter(module)
    interpreter.register_implementations(SymbolicFuncFunctions(bindings))
    interpreter.register_implementations(PTensorFunctions(bindings))
    return interpreter


def find_function(module: ModuleOp, name: str | None) -> func.FuncOp:
    """The function named `name`, or else the first public function with a body."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if name is not None:
        for function in functions:
            if function.sym_name.data == name:
                return function
        raise InterpretationError(f"the module has no function @{name}")
    for function in functions:
        visibility = function.sym_visibility
        is_public = visibility is None or visibility.data == "public"
        if is_public and function.body.blocks:
            return function
    raise InterpretationError("the module has no public function with a body")


def run_function(
    module: ModuleOp,
    args: Sequence[torch.Tensor | int],
    name: str | None = None,
) -> tuple[torch.Tensor, ...]:
    """
    Run the function `name` (by default the first public one) of a ptensor
    module on arguments in the function's argument order: tensors for tensor
    arguments, Python ints for index arguments. Size symbols are bound from the
    arguments; an argument that contradicts its declared type is an error.
    Results may share storage with the arguments (a returned view).
    """
    function = find_function(module, name)
    interpreter = make_interpreter(module, SizeBindings())
    return tuple(interpreter.call_op(function, tuple(args)))
