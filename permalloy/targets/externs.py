"""
Calls of library and fallback ops from the host program.

A `buffer.extern` holds one ptensor op run by torch. Common library ops get a
direct torch call; every other op runs through its reference implementation
(the ptensor interpreter's), bound once at compile time, so a call costs one
Python function call and no walk over IR.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import sympy
import torch
from xdsl.ir import Operation

from permalloy.dialects import ptensor as pt
from permalloy.dialects.buffer import ExternOp
from permalloy.interpreter.bindings import SizeBindings
from permalloy.interpreter.ptensor import PTensorFunctions

ExternCall = Callable[[Sequence[torch.Tensor], Mapping[sympy.Symbol, int]], tuple]


def _direct_call(op: Operation) -> ExternCall | None:
    """A plain torch call for the commonest library ops."""
    if isinstance(op, pt.MatmulOp):
        return lambda tensors, symbols: (torch.mm(*tensors),)
    if isinstance(op, pt.BatchMatmulOp):
        return lambda tensors, symbols: (torch.bmm(*tensors),)
    if isinstance(op, pt.AddmmOp):
        beta = 1.0 if op.beta is None else op.beta.value.data
        alpha = 1.0 if op.alpha is None else op.alpha.value.data
        if beta == 1.0 and alpha == 1.0:
            return lambda tensors, symbols: (torch.addmm(*tensors),)
        return lambda tensors, symbols: (torch.addmm(*tensors, beta=beta, alpha=alpha),)
    return None


class _ReferenceCall:
    """Runs one op with its reference implementation."""

    def __init__(self, op: Operation):
        implementations = dict(PTensorFunctions._impls())  # noqa: SLF001
        self.op = op
        self.functions = PTensorFunctions(SizeBindings())
        self.implementation = implementations[type(op)]

    def __call__(
        self, tensors: Sequence[torch.Tensor], symbols: Mapping[sympy.Symbol, int]
    ) -> tuple:
        bindings = self.functions.bindings
        with bindings.scope():
            bindings.current.update(symbols)
            result = self.implementation(self.functions, None, self.op, tuple(tensors))  # type: ignore[arg-type]
            return tuple(result.values)


def extern_call(extern: ExternOp) -> ExternCall:
    """The callable that runs an extern's op on the tensors of its inputs."""
    op = extern.library_op
    return _direct_call(op) or _ReferenceCall(op)
