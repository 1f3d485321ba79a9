"""
A library call that a native host program makes itself: the one ATen op
torch's call dispatched on the first call, recorded with where each of its
arguments came from.

torch's `scaled_dot_product_attention` is a composite: on each call it
chooses a fused kernel (flash, memory-efficient or cuDNN on a GPU, flash on
the CPU) for the tensors' sizes, strides, types and device, prepares the
mask for it (a boolean mask made additive, a bias padded or broadcast) and
calls that kernel's ATen op. Where the first call dispatched exactly that
one op, on the call's own tensors, views of them (`VIEW_OPS`) or copies
(`COPY_OPS`), and the op
is one the shim has a function for (`RECORDED_OPS`), a native host
program calls that function with the same arguments: in a graph of constant
sizes every call has the same sizes and strides, so torch would choose the
same, where the device and the inputs' 16-byte alignments are the first
call's (which the program checks before calling). Elsewhere the program
calls the Python call back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from permalloy.targets.externs.calls import ExternCall, Symbols, Tensors

RECORDED_OPS: dict[str, tuple[str, ...]] = {
    "cpu": ("_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward"),
    "cuda": (
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_backward",
        "_scaled_dot_product_efficient_attention_backward",
        "_scaled_dot_product_cudnn_attention_backward",
    ),
}
"""The ATen ops, by device, that a native host program calls through their
shim functions where a library or fallback call dispatched to one of them
(`RecordedCall`): the fused attention kernels torch's
`scaled_dot_product_attention` chooses among, and their backwards (a
training step's forward and backward call them by name)."""


def _default_op_name(overload: Any) -> str | None:
    """The name of the ATen op whose default overload `overload` is
    (`torch.ops.aten.<name>.default`); None for any other overload."""
    schema = getattr(overload, "_schema", None)
    if schema is None or getattr(overload, "_overloadname", None) != "default":
        return None
    return schema.name.removeprefix("aten::")


def recordable(overload: Any) -> bool:
    """Whether the ATen op overload is one of `RECORDED_OPS` (on any device)."""
    name = _default_op_name(overload)
    return any(name in names for names in RECORDED_OPS.values())


VIEW_OPS = frozenset({torch.ops.aten.expand.default})
"""Ops the recorded op's arguments may be made by before it: views of the
call's tensors (torch broadcasts a memory-efficient kernel's bias so)."""
COPY_OPS = frozenset({torch.ops.aten.clone.default})
"""Ops that may make an argument as a copy of one of the call's tensors (a
mask whose keys are strided is given to torch's kernels with contiguous
rows, `library.fused_kernel_mask`)."""


@dataclass(frozen=True)
class InputArgument:
    """A tensor argument that is the call's input at `position`."""

    position: int


@dataclass(frozen=True)
class ViewArgument:
    """A tensor argument that is a view of the call's input at `position`:
    these sizes and strides, `offset` elements past the input's own offset."""

    position: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int


@dataclass(frozen=True)
class CopyArgument:
    """A tensor argument that is a copy of the call's input at `position`
    into a new tensor of these sizes and strides."""

    position: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]


Argument = InputArgument | ViewArgument | CopyArgument | bool | int | float | tuple[bool, ...] | None


@dataclass(frozen=True)
class RecordedOp:
    """The ATen op (`torch.ops.aten.<name>.default`) a library call
    dispatched: each argument of its schema with its type, the types of its
    results and which of them each of the call's results is, and the first
    call's device index (-1 on the CPU) and inputs' 16-byte alignments."""

    name: str
    arguments: tuple[tuple[str, Argument], ...]
    returns: tuple[str, ...]
    results: tuple[int, ...]
    device: int
    aligned: tuple[bool, ...]


class _Dispatched(TorchDispatchMode):
    """Every ATen op run under it, with its arguments and results."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, tuple, dict, Any]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        self.calls.append((func, args, kwargs, out))
        return out


def record_call(call: ExternCall, tensors: Tensors, symbols: Symbols) -> tuple[tuple, RecordedOp | None]:
    """`call`'s results on these tensors, and the op it dispatched where it
    is one a native host program can call (`RecordedOp`), else None."""
    dispatched = _Dispatched()
    with dispatched:
        results = call(tensors, symbols)
    return results, _recorded_op(dispatched.calls, tensors, results)


def _recorded_op(calls: list, tensors: Tensors, results: tuple) -> RecordedOp | None:
    if not calls or not results or not tensors or not all(isinstance(r, torch.Tensor) for r in results):
        return None
    func, args, kwargs, out = calls[-1]
    device = tensors[0].device
    name = _default_op_name(func)
    if name not in RECORDED_OPS.get(device.type, ()):
        return None
    schema = func._schema
    outputs = out if isinstance(out, tuple) else (out,)
    positions = tuple(next((i for i, o in enumerate(outputs) if o is r), None) for r in results)
    if None in positions or len(set(positions)) != len(positions):
        return None  # a result the op did not give, or gave twice
    made: dict[int, ViewArgument | CopyArgument] = {}
    for made_func, made_args, _, tensor in calls[:-1]:
        source = _position(made_args[0] if made_args else None, tensors)
        if source is None or not isinstance(tensor, torch.Tensor):
            return None
        if made_func in VIEW_OPS:
            offset = tensor.storage_offset() - tensors[source].storage_offset()
            made[id(tensor)] = ViewArgument(source, tuple(tensor.shape), tuple(tensor.stride()), offset)
        elif made_func in COPY_OPS:
            made[id(tensor)] = CopyArgument(source, tuple(tensor.shape), tuple(tensor.stride()))
        else:
            return None
    arguments = []
    for index, parameter in enumerate(schema.arguments):
        value = args[index] if index < len(args) else kwargs.get(parameter.name, parameter.default_value)
        if isinstance(value, torch.Tensor):
            position = _position(value, tensors)
            value = InputArgument(position) if position is not None else made.get(id(value))
            if value is None:
                return None
        elif isinstance(value, list | tuple) and all(isinstance(v, bool) for v in value):
            value = tuple(value)
        elif value is not None and not isinstance(value, bool | int | float):
            return None
        arguments.append((str(parameter.type), value))
    return RecordedOp(
        name,  # type: ignore[arg-type]
        tuple(arguments),
        tuple(str(r.type) for r in schema.returns),
        positions,  # type: ignore[arg-type]
        -1 if device.index is None else device.index,
        tuple(t.data_ptr() % 16 == 0 for t in tensors),
    )


def _position(value: Any, tensors: Tensors) -> int | None:
    """The position of `value` among the call's tensors (by identity)."""
    return next((i for i, t in enumerate(tensors) if t is value), None)


class RecordedCall:
    """An extern call whose first call is recorded as the one ATen op it
    dispatched (`record_call`): a native host program, built after that
    call, calls the op's shim function where the recording holds one (on
    the CPU, built before it, after a trial call, `record`)."""

    def __init__(self, call: ExternCall):
        self.call = call
        self.recorded: RecordedOp | None = None
        self.calls = 0

    def __call__(self, tensors: Tensors, symbols: Symbols) -> tuple:
        self.calls += 1
        if self.calls > 1:
            return self.call(tensors, symbols)
        results, self.recorded = record_call(self.call, tensors, symbols)
        return results

    def record(self, tensors: Tensors) -> RecordedOp | None:
        """The op a trial call on `tensors` (of the sizes, strides and types
        the calls will have) dispatches, kept where no call has recorded one:
        a CPU native host program, built before the first call, asks so. A
        trial that raises records nothing (the calls then run in Python,
        where a real call raises its own error)."""
        if self.recorded is None:
            try:
                self.recorded = record_call(self.call, tensors, {})[1]
            except Exception:  # noqa: BLE001 - the op stays a callback
                return None
        return self.recorded
