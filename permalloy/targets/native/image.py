"""
A CPU native host program as the compiled-graph cache keeps it.

Emitting a native host program (LLVM IR through llvmlite's builder, one op
after another) and compiling it took the largest part of a warm compile's
own time on the CPU: 0.65 of MobileNetV2's 1.36 s (README). The emitted module holds no
address of its process (`emitter`): kernels come in a table, Python ops
through a callback. So its object code can be kept, with what calling it
needs written by position in the host function instead of as this process's
objects: which launch's kernel each table entry is, and each callback's op,
symbols and kind. Loading it (`native_host_source`) rebuilds the table and
the callbacks from the module and the loaded kernels and checks each
position against the op found there; anything that does not match is an
error, and the entry compiles again.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy
from xdsl.dialects import func
from xdsl.ir import Operation

from permalloy.dialects import buffer as buf
from permalloy.targets.host import extern_symbols
from permalloy.targets.native.emitter import Callback, NativeHostSource, result_stride_symbols
from permalloy.targets.workspace import KeptWorkspace


class NativeImageMismatch(ValueError):
    """A stored native host program that does not fit the function it is loaded for."""


@dataclass(frozen=True)
class NativeHostImage:
    """A CPU native host program's object code and what calling it needs, by
    positions in its function's body."""

    code: bytes
    entry: str
    """The name of the compiled function."""
    source: str
    """Its LLVM IR, the program's readable native form."""
    arguments: tuple[str, ...]
    results: int
    operations: tuple[str, ...]
    """As `NativeHostSource.operations`: the arguments' layouts, then each op's name."""
    table: tuple[int, ...]
    """For each entry of the kernels table, the position of a launch whose kernel it is."""
    callbacks: tuple[tuple[int, int, tuple[tuple[str, int], ...], bool, bool], ...]
    """For each callback: its op's position, its inputs, its symbols (name
    and position in the symbol array), whether it runs a launch's kernel,
    whether it runs only where the native path does not apply."""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": base64.b64encode(self.code).decode(),
            "entry": self.entry,
            "source": self.source,
            "arguments": list(self.arguments),
            "results": self.results,
            "operations": list(self.operations),
            "table": list(self.table),
            "callbacks": [[op, inputs, [list(s) for s in symbols], kernel, fallback]
                          for op, inputs, symbols, kernel, fallback in self.callbacks],
        }  # fmt: skip

    @staticmethod
    def from_json(data: dict[str, Any]) -> NativeHostImage:
        """The image of `to_json`'s dict; KeyError, TypeError or ValueError where it is not one."""
        callbacks = tuple(
            (int(op), int(inputs), tuple((str(name), int(position)) for name, position in symbols), bool(kernel), bool(fallback))
            for op, inputs, symbols, kernel, fallback in data["callbacks"]
        )
        return NativeHostImage(
            base64.b64decode(data["code"]),
            str(data["entry"]),
            str(data["source"]),
            tuple(str(a) for a in data["arguments"]),
            int(data["results"]),
            tuple(str(o) for o in data["operations"]),
            tuple(int(p) for p in data["table"]),
            callbacks,
        )


def _body(function: func.FuncOp) -> list[Operation]:
    return list(function.body.block.ops)


def native_host_image(
    source: NativeHostSource,
    function: func.FuncOp,
    launches: dict[Operation, tuple[Any, list[str]]],
    code: bytes,
    entry: str,
) -> NativeHostImage | None:
    """The image of a CPU native host program emitted as `source` for
    `function` and compiled to `code`; None where a table entry is not a
    launch's kernel (a program this module cannot describe)."""
    ops = _body(function)
    positions = {op: position for position, op in enumerate(ops)}
    first_launch: dict[int, int] = {}
    for op in ops:
        if isinstance(op, buf.LaunchOp) and op in launches:
            first_launch.setdefault(id(launches[op][0]), positions[op])
    table = []
    for kept in source.kept:
        if id(kept) not in first_launch:
            return None
        table.append(first_launch[id(kept)])
    callbacks = tuple(
        (positions[c.op], c.inputs, tuple((s.name, p) for s, p in c.symbols), c.kernel is not None, c.fallback)
        for c in source.callbacks
    )
    return NativeHostImage(
        code, entry, source.source, tuple(source.arguments), source.results, tuple(source.operations), tuple(table), callbacks
    )


def _symbols(op: Operation, named: Sequence[tuple[str, int]]) -> list[tuple[sympy.Symbol, int]]:
    """The callback symbols `named`, as the symbols of `op`'s sizes and
    strides where it has them by those names (the objects its call looks
    up), else plain symbols of the names."""
    found: dict[str, sympy.Symbol] = {}
    if isinstance(op, buf.ExternOp):
        found.update((s.name, s) for s in (*extern_symbols(op), *result_stride_symbols(op)))
    return [(found.get(name, sympy.Symbol(name)), position) for name, position in named]


def native_host_source(
    image: NativeHostImage,
    function: func.FuncOp,
    launches: dict[Operation, tuple[Any, list[str]]],
    workspace: KeptWorkspace | None,
) -> NativeHostSource:
    """What calling the stored program needs, rebuilt for `function` and
    the kernels this process loaded for its launches (`launches`); a
    `NativeImageMismatch` where the image does not fit them."""
    ops = _body(function)
    if image.operations != ("the arguments' layouts", *(op.name for op in ops)):
        raise NativeImageMismatch("the stored native host program was made for other ops")

    def op_at(position: int) -> Operation:
        if not 0 <= position < len(ops):
            raise NativeImageMismatch(f"no op at position {position}")
        return ops[position]

    def launched(position: int) -> Any:
        op = op_at(position)
        if not isinstance(op, buf.LaunchOp) or op not in launches:
            raise NativeImageMismatch(f"the op at position {position} is no launch")
        return launches[op][0]

    kept = [launched(position) for position in image.table]
    addresses = [getattr(kernel, "address", None) for kernel in kept]
    if any(address is None for address in addresses):
        raise NativeImageMismatch("a kernel of the table has no entry address")
    callbacks = [
        Callback(op_at(position), inputs, _symbols(op_at(position), symbols), launched(position) if kernel else None, fallback)
        for position, inputs, symbols, kernel, fallback in image.callbacks
    ]
    pool = workspace.pool if workspace is not None else None
    return NativeHostSource(
        image.source, list(image.arguments), image.results, addresses, kept, callbacks, list(image.operations), pool
    )
