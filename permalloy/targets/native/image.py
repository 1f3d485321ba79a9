"""
A native host program as the compiled-graph cache keeps it.

Emitting a native host program (LLVM IR through llvmlite's builder, one op
after another) and compiling it took the largest part of a warm compile's
own time on the CPU: 0.65 of MobileNetV2's 1.36 s (README); on a GPU, 0.54 s
of a BERT training step's warm 2.45 s. The emitted module holds no
address of its process (`emitter`): kernels come in a table, Python ops
through a callback. So its object code can be kept, with what calling it
needs written by position in the host function instead of as this process's
objects: which launch's kernel entry or CUDA function each table entry is,
and each callback's op, symbols and kind. Loading it (`native_host_source`)
rebuilds the table and the callbacks from the module and the loaded kernels
and checks each position against the op found there; anything that does not
match is an error, and the program is emitted again.

A GPU program is emitted after the first call, from the launches that call
chose (grids, parameter values, the binaries' launch settings and the
pointers' alignments are constants in its code). Its image is kept beside
the graph's entry under those facts' digest (`launch_facts`): a later
process whose first call chose the same launches loads it.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy
from xdsl.dialects import func
from xdsl.ir import Operation

from permalloy.dialects import buffer as buf
from permalloy.targets.externs.recorded import RecordedCall
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
    table: tuple[tuple[int, int], ...]
    """For each entry of the kernels table, the position of a launch whose
    kernel it is, and which of the kernel's CUDA functions (0 for a CPU
    kernel's entry)."""
    callbacks: tuple[tuple[int, int, tuple[tuple[str, int], ...], bool, bool], ...]
    """For each callback: its op's position, its inputs, its symbols (name
    and position in the symbol array), whether it runs a launch's kernel,
    whether it runs only where the native path does not apply."""
    facts: str = ""
    """For a GPU program, the digest of the launches it was emitted for (`launch_facts`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": base64.b64encode(self.code).decode(),
            "entry": self.entry,
            "source": self.source,
            "arguments": list(self.arguments),
            "results": self.results,
            "operations": list(self.operations),
            "table": [list(t) for t in self.table],
            "callbacks": [[op, inputs, [list(s) for s in symbols], kernel, fallback]
                          for op, inputs, symbols, kernel, fallback in self.callbacks],
            "facts": self.facts,
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
            tuple((int(position), int(function)) for position, function in data["table"]),
            callbacks,
            str(data["facts"]),
        )


def _body(function: func.FuncOp) -> list[Operation]:
    return list(function.body.block.ops)


def _kernel_functions(compiled: Any) -> list[int]:
    """What a kernels-table entry can point at in `compiled`: a CPU kernel's
    entry address, or the CUDA functions a Triton kernel's native launches
    run, in order (none where it has no native launches)."""
    address = getattr(compiled, "address", None)
    if address is not None:
        return [address]
    make = getattr(compiled, "native_launches", None)
    found = None if make is None else make()
    if found is None:
        return []
    if not isinstance(found, tuple):  # a planned extern's `RecordedLaunches`
        return [step[1][1] for step in found.steps]
    return [step[1][1] for step in found[2] if step[0] != "product"]


def _launched_ops(function: func.FuncOp, launches: dict[Operation, tuple[Any, list[str]]]) -> list[tuple[int, Any]]:
    """Each launch of the function's body with a compiled kernel, and each
    extern whose call runs permalloy's kernels by a plan: its position and
    kernel or call."""
    return [(p, launches[op][0]) for p, op in enumerate(_body(function)) if op in launches]


def launch_facts(function: func.FuncOp, launches: dict[Operation, tuple[Any, list[str]]]) -> str:
    """The digest of what a GPU native host program emitted now for
    `function` takes from its kernels' launches besides the function: each
    launch's native launches (the first call's device and alignments, the
    temporaries, each step's grid, launch settings and parameter values, the
    library products' views), each planned extern's recorded plan
    (`RecordedLaunches`) and each recorded library call's op (`RecordedOp`),
    the CUDA functions' addresses left out."""
    facts = []
    for position, compiled in _launched_ops(function, launches):
        if isinstance(compiled, RecordedCall):  # the op its first call dispatched, which the program calls
            facts.append((position, compiled.recorded))
            continue
        make = getattr(compiled, "native_launches", None)
        found = None if make is None else make()
        if found is None:
            facts.append((position, None))
            continue
        if not isinstance(found, tuple):  # a planned extern's `RecordedLaunches`
            described = [(grid, _launch_settings(binary[2]), values) for grid, binary, values in found.steps]
            facts.append((position, found.device, found.aligned, found.results, found.temporaries, described))
            continue
        key, temporaries, steps = found
        described = [
            step if step[0] == "product" else (step[0], _launch_settings(step[1][2]), step[2]) for step in steps
        ]
        facts.append((position, key, temporaries, described))
    return hashlib.sha256(repr(facts).encode()).hexdigest()[:32]


def _launch_settings(launch: Any) -> tuple:
    """What a native program launches a static launch (`StaticLaunch`) with, but its function."""
    return (launch.name, launch.warps, launch.shared, launch.types, tuple(launch.positions), launch.scratch)


def native_host_image(
    source: NativeHostSource,
    function: func.FuncOp,
    launches: dict[Operation, tuple[Any, list[str]]],
    code: bytes,
    entry: str,
    facts: str = "",
) -> NativeHostImage | None:
    """The image of a native host program emitted as `source` for
    `function` and compiled to `code` (on a GPU, for the launches of digest
    `facts`); None where a table entry is not a launch's kernel entry or
    CUDA function (a program this module cannot describe)."""
    ops = _body(function)
    positions = {op: position for position, op in enumerate(ops)}
    found: dict[int, tuple[int, int]] = {}
    for position, compiled in _launched_ops(function, launches):
        for index, value in enumerate(_kernel_functions(compiled)):
            found.setdefault(value, (position, index))
    if any(address not in found for address in source.addresses):
        return None
    table = tuple(found[address] for address in source.addresses)
    callbacks = tuple(
        (positions[c.op], c.inputs, tuple((s.name, p) for s, p in c.symbols), c.kernel is not None, c.fallback)
        for c in source.callbacks
    )
    return NativeHostImage(
        code, entry, source.source, tuple(source.arguments), source.results, tuple(source.operations), table, callbacks, facts
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
        if op not in launches:
            raise NativeImageMismatch(f"the op at position {position} is no launch")
        return launches[op][0]

    functions_at: dict[int, list[int]] = {}

    def address(position: int, index: int) -> int:
        if position not in functions_at:
            functions_at[position] = _kernel_functions(launched(position))
        functions = functions_at[position]
        if not 0 <= index < len(functions) or functions[index] is None:
            raise NativeImageMismatch(f"the kernel at position {position} has no function {index}")
        return functions[index]

    kept = [launched(position) for position, _ in image.table]
    addresses = [address(position, index) for position, index in image.table]
    callbacks = [
        Callback(op_at(position), inputs, _symbols(op_at(position), symbols), launched(position) if kernel else None, fallback)
        for position, inputs, symbols, kernel, fallback in image.callbacks
    ]
    pool = workspace.pool if workspace is not None else None
    return NativeHostSource(
        image.source, list(image.arguments), image.results, addresses, kept, callbacks, list(image.operations), pool
    )
