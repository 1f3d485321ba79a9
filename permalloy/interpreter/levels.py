"""
Running a module at any level of the pipeline with one call.

    run_module_function(module, [x, y])

runs the module whether it holds ptensor ops (as imported), loop ops with the
ptensor ops left for the host (after `convert-ptensor-to-loop`), or a host
program over buffers with kernels (after `convert-loop-to-buffer`), so a test
can check that a pass or a conversion preserves results on the same inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter

from permalloy.dialects import buffer, loop
from permalloy.interpreter.bindings import SizeBindings
from permalloy.interpreter.buffer import BufferFuncFunctions, BufferFunctions
from permalloy.interpreter.loop import LoopFunctions
from permalloy.interpreter.ptensor import PTensorFunctions
from permalloy.interpreter.run import find_function


def make_level_interpreter(module: ModuleOp, bindings: SizeBindings) -> Interpreter:
    """An interpreter for `module` that runs func, ptensor, loop (with arith
    and math) and buffer ops, all evaluating sizes with `bindings`."""
    interpreter = Interpreter(module)
    interpreter.register_implementations(BufferFuncFunctions(bindings))
    interpreter.register_implementations(PTensorFunctions(bindings))
    interpreter.register_implementations(LoopFunctions(bindings))
    interpreter.register_implementations(BufferFunctions(bindings))
    return interpreter


def run_module_function(
    module: ModuleOp,
    args: Sequence[torch.Tensor | int],
    name: str | None = None,
) -> tuple[torch.Tensor, ...]:
    """
    Run the function `name` (by default the first public one) of a module at
    any level on arguments in the function's order: tensors for tensor and
    buffer arguments, Python ints for index arguments. A buffer argument whose
    tensor does not have the declared layout is copied into one that does.
    Results are tensors; they may share storage with the arguments.
    """
    function = find_function(module, name)
    interpreter = make_level_interpreter(module, SizeBindings())
    return tuple(interpreter.call_op(function, tuple(args)))


def module_level(module: ModuleOp) -> str:
    """
    The lowest level a module's functions are at: "buffer" when a function
    takes or gives a buffer or the module holds kernels, "loop" when a function
    holds loop ops, "ptensor" otherwise.
    """
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    signatures = [
        t
        for f in functions
        for t in (*f.function_type.inputs.data, *f.function_type.outputs.data)
    ]
    if any(isinstance(op, buffer.KernelOp) for op in module.ops) or any(
        isinstance(t, buffer.BufferType) for t in signatures
    ):
        return "buffer"
    if any(isinstance(op, loop.LoopOp) for f in functions for op in f.walk()):
        return "loop"
    return "ptensor"



def with_only_function(module: ModuleOp, name: str) -> ModuleOp:
    """A copy of `module` keeping its kernels and, of its functions, only
    `name`: one case of a test file holding many, to run or transform alone."""
    clone = module.clone()
    for op in list(clone.ops):
        if isinstance(op, func.FuncOp) and op.sym_name.data != name:
            op.detach()
            op.erase()
    return clone


__all__ = ["make_level_interpreter", "module_level", "run_module_function", "with_only_function"]
