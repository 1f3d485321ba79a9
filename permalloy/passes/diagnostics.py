"""
Errors a pass raises for input it cannot handle, located at the offending op.

A pass runs on IR a user may have written or edited, so it checks that its input
is at the level it expects (`func.func` bodies of ptensor ops for
`convert-ptensor-to-loop`, of loop ops for `fuse-loops`, host programs over
buffers for `plan-memory`) and reports what it found instead of failing inside
its own code:

    model.mlir:4:8: error: fuse-loops expects loop-level IR; found buffer.alloc, ...
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NoReturn

from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


class OpDiagnostic(DiagnosticException):
    """
    An error about one op of the input: printed as `file:line:col: error: message`
    when the op carries the location it was parsed at, or with the op's name
    otherwise.
    """

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message

    @property
    def location(self) -> str | None:
        """`file:line:col` of the op in its source, when known."""
        loc = self.op.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        return None

    def __str__(self) -> str:
        if self.location is not None:
            return f"{self.location}: error: {self.message}"
        return f"{self.message} (at '{self.op.name}')"


def fail_at(op: Operation, message: str) -> NoReturn:
    """Raise an `OpDiagnostic` about `op`."""
    raise OpDiagnostic(op, message)


def defined_functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    """The `func.func` ops of a module that have a body (not declarations)."""
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.body.blocks:
            yield op


def check_single_block(function: func.FuncOp, pass_name: str) -> None:
    """A function body of one block, as every level's functions have."""
    if len(function.body.blocks) != 1:
        fail_at(
            function,
            f"{pass_name} expects functions of one block; "
            f"'{function.sym_name.data}' has {len(function.body.blocks)}",
        )


def expect_ops(
    ops: Iterable[Operation],
    allowed: tuple[type[Operation], ...],
    pass_name: str,
    level: str,
) -> None:
    """Fail at the first op of `ops` that is not one of `allowed`, saying the
    level of IR the pass expects."""
    for op in ops:
        if not isinstance(op, allowed):
            fail_at(op, f"{pass_name} expects {level}; found '{op.name}'")


def _is_tensor_level(op: Operation) -> bool:
    """A ptensor or loop op whose operands and results are all tensors."""
    from permalloy.dialects.ptensor import TensorType

    values = (*op.operands, *op.results)
    return op.dialect_name() in ("ptensor", "loop") and all(
        isinstance(v.type, TensorType) for v in values
    )


def check_loop_level(function: func.FuncOp, pass_name: str) -> None:
    """
    Fail unless `function` is loop-level IR, the output of
    `convert-ptensor-to-loop`: one block of ptensor and loop ops over tensors,
    ended by `func.return`, in a function over tensors.
    """
    from permalloy.dialects.ptensor import TensorType

    check_single_block(function, pass_name)
    level = "loop-level IR (ptensor and loop ops over tensors)"
    ops = list(function.body.block.ops)
    if not ops:
        fail_at(function, f"{pass_name} expects functions ended by 'func.return'")
    *body, last = ops
    for op in body:
        if not _is_tensor_level(op):
            fail_at(op, f"{pass_name} expects {level}; found '{op.name}'")
    if not isinstance(last, func.ReturnOp):
        fail_at(last, f"{pass_name} expects functions ended by 'func.return'")
    for value in last.operands:
        if not isinstance(value.type, TensorType):
            fail_at(last, f"{pass_name} expects {level}; '{function.sym_name.data}' returns {value.type}")
