"""
`mode="reduce-overhead"`: a compiled graph replayed as a CUDA graph.

`CudaGraphRunner` wraps the callable of a compiled graph. For each signature
of its arguments (tensor shapes, strides, dtypes and devices, and the values
of non-tensor arguments) the first `warmup` calls run normally, which
compiles and autotunes every kernel; the next call captures one run into a
`torch.cuda.CUDAGraph` and later calls replay it. Arguments whose address
stayed the same through the warm-up (parameters, buffers) are read in place;
the others are copied into static buffers before each replay. Results are
cloned out of the graph's memory, so a later replay never changes what an
earlier call returned. Calls with CPU tensors, and signatures whose capture
fails (an op that synchronizes with the host), run normally.
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


class CudaGraphRunner:
    """Runs `run(*args)` through CUDA graphs after `warmup` plain calls per signature."""

    def __init__(self, run: Callable[..., Any], warmup: int = 2):
        self.run = run
        self.warmup = warmup
        self.captures: dict[tuple, _Capture] = {}
        self.replays = 0

    def __call__(self, *args: Any) -> Any:
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
            return self.run(*args)
        for arg, static, fixed in zip(args, state.inputs, state.fixed):
            if isinstance(arg, torch.Tensor) and not fixed:
                static.copy_(arg)
        state.graph.replay()
        self.replays += 1
        return _clone(state.outputs)

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
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.run(*state.inputs)
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(graph):
                state.outputs = self.run(*state.inputs)
        except Exception:  # noqa: BLE001 - a graph that cannot be captured runs normally
            state.failed = True
            return False
        state.graph = graph
        return True


def _like(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` with the same sizes and strides."""
    copy = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
    copy.copy_(t)
    return copy


def _clone(outputs: Any) -> Any:
    if isinstance(outputs, torch.Tensor):
        return _like(outputs)
    if isinstance(outputs, tuple | list):
        return type(outputs)(_clone(o) for o in outputs)
    return outputs
