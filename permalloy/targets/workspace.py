"""
The workspace of a CPU host program: its intermediate buffers, kept between calls.

A host program allocates the buffers `plan-memory` left (a few large ones,
each holding many intermediates in turn) on every call and frees them at its
end. On the CPU those allocations go to the C library's allocator, which maps
large blocks afresh or gives the top of its heap back to the system when they
are freed: the next call then touches new pages, and every page costs a
fault. EfficientNet-B2 at a batch of one took 4,000-7,000 faults a call
(31.7 against 38-43 ms a call with its buffers kept), depending on what the
process had allocated before. The GPU's caching allocator keeps its memory
already, so only CPU programs keep a workspace.

The allocations kept are those of constant sizes whose memory never leaves
the call (`kept_allocations`), up to `WORKSPACE_LIMIT_BYTES` a program. Each
call takes a workspace from its program's `WorkspacePool` (a new one when
another call holds every workspace made so far, as a call from a second
thread does) and gives it back when it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.ir import SSAValue

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.dtypes import torch_dtype
from permalloy.passes.plan_memory import buffer_bytes

WORKSPACE_LIMIT_BYTES = 256 << 20
"""At most this many bytes of a program's allocations are kept between
calls; allocations past it are made on each call, as before."""


def _stays_in_call(alloc: buf.AllocOp) -> bool:
    """Whether no memory of `alloc` leaves the call: the function returns
    no view of it, and no call that may give back its input's memory (a
    fallback to torch, an in-place update's result) reads it, followed
    through views and the library calls writing into it."""
    pending: list[SSAValue] = [alloc.result]
    seen: set[SSAValue] = set()
    while pending:
        value = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        for use in value.uses:
            user = use.operation
            if isinstance(user, func.ReturnOp):
                return False
            if isinstance(user, buf.ViewOp):
                pending.append(user.result)
            elif isinstance(user, buf.ExternOp):
                if user.writes_last_input and use.index == len(user.operands) - 1:
                    pending.extend(user.results)
                elif isinstance(user.library_op, pt.FallbackOp) or buf.ExternOp.WRITES_FIRST_INPUT in user.attributes:
                    return False
    return True


def _constant_layout(layout: buf.BufferType) -> bool:
    return all(e.is_Integer for e in (*layout.sizes, *layout.strides.data, layout.offset.expr))


def kept_allocations(function: func.FuncOp) -> list[buf.AllocOp]:
    """The allocations of `function` its workspace holds: of constant sizes,
    staying in the call, in order until `WORKSPACE_LIMIT_BYTES`."""
    kept: list[buf.AllocOp] = []
    total = 0
    for op in function.body.block.ops:
        if not isinstance(op, buf.AllocOp):
            continue
        layout = buf.buffer_type(op.result)
        if not _constant_layout(layout) or not _stays_in_call(op):
            continue
        size = int(buffer_bytes(layout))
        if total + size > WORKSPACE_LIMIT_BYTES:
            continue
        total += size
        kept.append(op)
    return kept


@dataclass
class Workspace:
    """One call's kept allocations: a tensor per kept allocation, in its
    planned layout."""

    tensors: list[torch.Tensor]
    handles: Any = None
    """The tensors' handles as a native host program reads them, made by
    its first call that takes this workspace."""


@dataclass
class WorkspacePool:
    """The workspaces of one host program. `take` and `give` are single
    list operations, which the interpreter's lock makes atomic."""

    layouts: list[tuple[tuple[int, ...], tuple[int, ...], torch.dtype]]
    free: list[Workspace] = field(default_factory=list)

    @classmethod
    def of(cls, allocations: list[buf.AllocOp]) -> WorkspacePool:
        layouts = []
        for op in allocations:
            layout = buf.buffer_type(op.result)
            sizes = tuple(int(n) for n in layout.sizes)
            strides = tuple(int(s) for s in layout.strides.data)
            layouts.append((sizes, strides, torch_dtype(layout.element_type)))
        return cls(layouts)

    def take(self) -> Workspace:
        """A workspace no other call holds."""
        try:
            return self.free.pop()
        except IndexError:
            return Workspace([torch.empty_strided(s, strides, dtype=dtype) for s, strides, dtype in self.layouts])

    def give(self, workspace: Workspace) -> None:
        """Keep `workspace` for a later call."""
        self.free.append(workspace)


@dataclass
class KeptWorkspace:
    """What a CPU host program keeps between calls, shared by its Python and
    native forms: each kept allocation's position in a workspace, and the
    pool of workspaces."""

    positions: dict[SSAValue, int]
    pool: WorkspacePool


def kept_workspace(function: func.FuncOp) -> KeptWorkspace | None:
    """The kept workspace of `function`'s CPU host program, or None where it
    keeps no allocation."""
    kept = kept_allocations(function)
    if not kept:
        return None
    return KeptWorkspace({op.result: position for position, op in enumerate(kept)}, WorkspacePool.of(kept))
