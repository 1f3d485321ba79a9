"""
What every extern call shares: its signature and the evaluation of size
expressions under one call's symbol values.

An extern call is `call(tensors, symbols) -> results`: the op's operands, and
the values of the size symbols the host program has read off its arguments,
by symbol. A library op of one result may also have a form that writes
into a tensor the host program allocated (`ExternIntoCall`). An op that
permalloy computes with its own Triton kernels is a `PlannedCall`, whose
planned launches a native host program can make itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sympy
import torch

Tensors = Sequence[torch.Tensor]
Symbols = Mapping[sympy.Symbol, int]
ExternCall = Callable[[Tensors, Symbols], tuple]
ExternIntoCall = Callable[[Tensors, torch.Tensor], object]
"""`call(tensors, out)`: a library op of one result writing it into `out`."""


def size_function(expr: sympy.Expr) -> Callable[[Symbols], int]:
    """A size expression's value under each call's symbol values; a constant
    size is computed once."""
    if not expr.free_symbols:
        value = int(expr)
        return lambda symbols: value
    return lambda symbols: int(expr.xreplace({s: sympy.Integer(v) for s, v in symbols.items()}))


def shape_function(sizes: Sequence[sympy.Expr]) -> Callable[[Symbols], list[int]]:
    """A result shape under each call's symbol values."""
    functions = [size_function(size) for size in sizes]
    if all(not size.free_symbols for size in sizes):
        shape = [int(size) for size in sizes]
        return lambda symbols: shape
    return lambda symbols: [f(symbols) for f in functions]


PlanRun = Callable[[Tensors], "tuple[Sequence[torch.Tensor], Any, Sequence[Any]] | None"]
"""Runs an op's own kernels on its operands, where they apply: the results,
the `LaunchPlan` that ran and what each launch ran (`run_plan`); None where
they do not apply (the op's library call then runs)."""


class PlannedCall:
    """An extern call running permalloy's kernels by a plan where `run`
    applies, else `otherwise` (torch's call). The first call's plan, where it
    ran on a GPU through direct launches, is kept (`native_launches`): a
    native host program, built after the first call of a graph of constant
    sizes, makes the same launches without calling back into Python."""

    def __init__(self, run: PlanRun, otherwise: ExternCall):
        self.run = run
        self.otherwise = otherwise
        self.calls = 0
        self.planned = 0
        self.recording: Any = None

    def __call__(self, tensors: Tensors, symbols: Symbols) -> tuple:
        self.calls += 1
        ran = self.run(tensors)
        if ran is None:
            return self.otherwise(tensors, symbols)
        results, plan, launched = ran
        self.planned += 1
        if self.calls == 1:
            from permalloy.targets.triton.launch_plan import recorded_launches

            self.recording = recorded_launches(plan, tensors, launched)
        return tuple(results)

    def native_launches(self) -> Any:
        """The first call's launches (`launch_plan.RecordedLaunches`) where
        every call so far ran them; None where a call ran torch's instead,
        or the first did not run on a GPU through torch's static launcher."""
        return self.recording if self.planned == self.calls else None
