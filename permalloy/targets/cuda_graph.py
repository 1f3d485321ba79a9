"""
`mode="reduce-overhead"`: a compiled graph replayed as a CUDA graph.

`CudaGraphRunner` wraps the callable of a compiled graph. For each signature
of its arguments (tensor shapes, strides, dtypes and devices, and the values
of non-tensor arguments) the first `warmup` calls run normally, which
compiles and autotunes every kernel; the next call captures one run into a
`torch.cuda.CUDAGraph` and later calls replay it. Arguments whose address
stayed the same through the warm-up (parameters, buffers) are read in place;
the others are copied into static buffers before each replay, all in one
launch. Results are cloned out of the graph's memory (again one launch), so
a later replay never changes what an earlier call returned. Arguments the
graph writes (`updated`, batch norm's running statistics) are written where
they are read in place; a copied one is copied back after each replay, and
the warm-up run that precedes a capture leaves them as they were, so that
the capturing call writes them once. Calls with CPU
tensors, and signatures whose capture fails (an op that synchronizes with
the host), run normally.

A call that the last replayed graph admits (its parameters at their
addresses, its copied inputs of the same sizes, strides, dtype and device,
its other arguments equal) replays it without computing the signature: the
check reads the parameters' addresses in one call into torch and looks only
at the copied inputs, so its cost does not grow with the parameter count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


def _signature(args: Sequence[Any]) -> tuple:
    parts: list[Any] = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            parts.append((tuple(arg.shape), arg.stride(), arg.dtype, arg.device))
        else:
            parts.append(("value", arg))
    return tuple(parts)


@dataclass
class _Capture:
    """The state of one argument signature: warm-up addresses, then the graph."""

    calls: int = 0
    addresses: list[int | None] = field(default_factory=list)
    graph: Any = None
    failed: bool = False
    inputs: list[Any] = field(default_factory=list)
    fixed: list[bool] = field(default_factory=list)
    outputs: Any = None
    fixed_positions: list[int] = field(default_factory=list)
    copied_positions: list[int] = field(default_factory=list)
    value_positions: list[int] = field(default_factory=list)
    copied_back: list[int] = field(default_factory=list)
    """The copied arguments the graph writes, copied back after a replay."""

    def captured(self, graph: Any, args: Sequence[Any], updated: tuple[int, ...] = ()) -> None:
        """Keep `graph`, and which arguments it reads in place, copies or takes
        as values, for `admits`."""
        self.graph = graph
        self.fixed_positions = [i for i, fixed in enumerate(self.fixed) if fixed]
        self.copied_positions = [
            i for i, (a, fixed) in enumerate(zip(args, self.fixed)) if isinstance(a, torch.Tensor) and not fixed
        ]
        self.value_positions = [i for i, a in enumerate(args) if not isinstance(a, torch.Tensor)]
        self.copied_back = [i for i in self.copied_positions if i in updated]

    def admits(self, args: Sequence[Any]) -> bool:
        """Whether `args` can replay this graph: the parameters where they were,
        each copied input as its static buffer, the other values equal."""
        if self.graph is None or len(args) != len(self.inputs):
            return False
        for i in self.copied_positions:
            arg, static = args[i], self.inputs[i]
            if not (
                isinstance(arg, torch.Tensor)
                and arg.shape == static.shape
                and arg.stride() == static.stride()
                and arg.dtype == static.dtype
                and arg.device == static.device
            ):
                return False
        if any(args[i] != self.inputs[i] for i in self.value_positions):
            return False
        return _addresses_equal(args, self.addresses, self.fixed_positions)

    def replay(self, args: Sequence[Any]) -> Any:
        """Copy the inputs in, replay, and clone the results out."""
        if self.copied_positions:
            torch._foreach_copy_(  # noqa: SLF001
                [self.inputs[i] for i in self.copied_positions], [args[i] for i in self.copied_positions]
            )
        self.graph.replay()
        if self.copied_back:
            torch._foreach_copy_(  # noqa: SLF001
                [args[i] for i in self.copied_back], [self.inputs[i] for i in self.copied_back]
            )
        return _clone(self.outputs)


def _addresses_equal(args: Sequence[Any], addresses: list[int | None], positions: list[int]) -> bool:
    """Whether the tensors of `args` at `positions` start at `addresses`: one
    call into torch where the build has it."""
    if not positions:
        return True
    if _DATA_POINTERS_EQUAL is not None:
        return _DATA_POINTERS_EQUAL(list(args), addresses, positions)
    return all(args[i].data_ptr() == addresses[i] for i in positions)


_DATA_POINTERS_EQUAL = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)  # noqa: SLF001
"""torch's check of many tensors' addresses in one call (CUDA builds)."""


class CudaGraphRunner:
    """Runs `run(*args)` through CUDA graphs after `warmup` plain calls per signature."""

    def __init__(self, run: Callable[..., Any], warmup: int = 2, updated: tuple[int, ...] = ()):
        self.run = run
        self.warmup = warmup
        self.updated = updated
        """The positions of the arguments the graph writes."""
        self.captures: dict[tuple, _Capture] = {}
        self.replays = 0
        self.last: _Capture | None = None
        """The capture replayed last, tried first."""

    def __call__(self, *args: Any) -> Any:
        last = self.last
        if last is not None and last.admits(args):
            self.replays += 1
            return last.replay(args)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if not tensors or not all(t.is_cuda for t in tensors):
            return self.run(*args)
        state = self.captures.setdefault(_signature(args), _Capture())
        if state.failed:
            return self.run(*args)
        addresses = [a.data_ptr() if isinstance(a, torch.Tensor) else None for a in args]
        if state.graph is None:
            if state.calls < self.warmup:
                state.calls += 1
                state.addresses = addresses if state.calls == 1 else [
                    a if a == b else None for a, b in zip(state.addresses, addresses)
                ]
                return self.run(*args)
            if not self._capture(state, args):
                return self.run(*args)
        elif any(fixed and a != b for fixed, a, b in zip(state.fixed, addresses, state.addresses)):
            state.graph = None  # a parameter moved: capture again on the next call
            state.calls = self.warmup
            state.addresses = addresses
            if self.last is state:
                self.last = None
            return self.run(*args)
        self.last = state
        self.replays += 1
        return state.replay(args)

    def _capture(self, state: _Capture, args: Sequence[Any]) -> bool:
        state.fixed = [
            isinstance(a, torch.Tensor) and a.data_ptr() == address
            for a, address in zip(args, state.addresses)
        ]
        state.inputs = [
            _like(a) if isinstance(a, torch.Tensor) and not fixed else a for a, fixed in zip(args, state.fixed)
        ]
        graph = torch.cuda.CUDAGraph()
        try:
            kept = [(state.inputs[i], _like(state.inputs[i])) for i in self.updated]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.run(*state.inputs)
            torch.cuda.current_stream().wait_stream(side)
            for written, before in kept:
                written.copy_(before)
            with torch.cuda.graph(graph):
                state.outputs = self.run(*state.inputs)
        except Exception:  # noqa: BLE001 - a graph that cannot be captured runs normally
            state.failed = True
            return False
        state.captured(graph, args, self.updated)
        return True


def _empty_like(t: torch.Tensor) -> torch.Tensor:
    """An uninitialized tensor with `t`'s sizes, strides, dtype and device."""
    return torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)


def _like(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` with the same sizes and strides."""
    copy = _empty_like(t)
    copy.copy_(t)
    return copy


def _clone(outputs: Any) -> Any:
    """`outputs` with each tensor copied out of the graph's memory, the copies
    in one launch."""
    if isinstance(outputs, torch.Tensor):
        return _like(outputs)
    if not isinstance(outputs, tuple | list):
        return outputs
    if not all(isinstance(o, torch.Tensor) for o in outputs):
        return type(outputs)(_clone(o) for o in outputs)
    copies = [_empty_like(o) for o in outputs]
    if copies:
        torch._foreach_copy_(copies, list(outputs))  # noqa: SLF001
    return type(outputs)(copies)
