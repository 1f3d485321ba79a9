"""
The Python side of a native host program: one call into the compiled
function per call of the graph, and the ops it runs in Python.

A call packs the arguments into words (each tensor's `_cdata`, each index
value), calls the function with torch's thread count, and turns the owned
handles of the results into Python tensors (torch's
`alloc_tensors_by_stealing_from_void_ptrs`). An op the shim has no
function for calls back: its inputs arrive as owned handles, become Python
tensors, run through the op's extern call (as the Python host program runs
it, with the same layout fixes of its results), and the results go back as
owned handles (`unsafe_alloc_void_ptrs_from_tensors`).
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.targets.externs import extern_call
from permalloy.targets.host import DeviceConstant, python_expr, returned
from permalloy.targets.native.emitter import (
    STATUS_CALLBACK,
    STATUS_SHIM,
    STATUS_ZERO_DIVISOR,
    Callback,
    NativeHostSource,
)
from permalloy.targets.workspace import Workspace

HOST_FUNCTION = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)
CALLBACK_FUNCTION = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64)
)

_capsule = ctypes.pythonapi.PyCapsule_New
_capsule.restype = ctypes.py_object
_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_steal = torch._C._aoti.alloc_tensors_by_stealing_from_void_ptrs  # noqa: SLF001
_handles = torch._C._aoti.unsafe_alloc_void_ptrs_from_tensors  # noqa: SLF001


def tensors_from_handles(handles: Sequence[int]) -> list[torch.Tensor]:
    """Python tensors of owned handles, which they take over."""
    return _steal([_capsule(h, None, None) for h in handles]) if handles else []


def handles_of(tensors: Sequence[torch.Tensor]) -> list[int]:
    """An owned handle of each tensor, which the receiver deletes."""
    return [_capsule_pointer(c, None) for c in _handles(list(tensors))] if tensors else []


def _symbol_function(exprs: Sequence[sympy.Expr], symbols: Sequence[sympy.Symbol]) -> Callable[..., tuple]:
    """The function of the symbols' values computing `exprs` as a tuple of ints."""
    parameters = ", ".join(s.name for s in symbols)
    body = "".join(f"{python_expr(e)}, " for e in exprs)
    namespace: dict[str, Any] = {}
    exec(compile(f"def values({parameters}):\n    return ({body})\n", "<permalloy layout>", "exec"), namespace)
    return namespace["values"]


def _conform(result: buf.BufferType, symbols: Sequence[sympy.Symbol]) -> Callable[[torch.Tensor, tuple], torch.Tensor]:
    """The fix of a library result's layout the Python host makes: dense
    row-major results made contiguous, others copied where their strides
    are not the planned ones."""
    if result.is_contiguous():
        return lambda tensor, values: tensor.contiguous()
    sizes = _symbol_function(result.sizes, symbols)
    strides = _symbol_function(result.strides.data, symbols)

    def conform(tensor: torch.Tensor, values: tuple) -> torch.Tensor:
        planned = strides(*values)
        if tensor.stride() == planned:
            return tensor
        copy = torch.empty_strided(sizes(*values), planned, dtype=tensor.dtype, device=tensor.device)
        return copy.copy_(tensor)

    return conform


def _workspace_words(workspace: Workspace) -> Any:
    """The words a native program reads a workspace's tensors from: each
    tensor's `_cdata`, which the shim reads as the tensor's handle (a
    workspace keeps its tensors, so the words stay valid)."""
    return (ctypes.c_int64 * max(len(workspace.tensors), 1))(*(t._cdata for t in workspace.tensors))  # noqa: SLF001


def callback_run(callback: Callback, device: Any) -> Callable[[list[torch.Tensor], tuple], tuple]:
    """What a callback runs: a launch's kernel, or an extern's call, its
    results on `device` where made from nothing, each in its planned layout."""
    op = callback.op
    symbols = [s for s, _ in callback.symbols]
    if callback.kernel is not None:
        kernel = callback.kernel
        return lambda tensors, values: kernel(tensors, values) or ()
    if isinstance(op.library_op, pt.ConstantOp):
        constant = DeviceConstant(extern_call(op), buf.buffer_type(op.results[0]).is_contiguous())
        copy = returned(op.results[0])
        return lambda tensors, values: (constant(device).clone() if copy else constant(device),)
    call = extern_call(op)
    fixes = [_conform(buf.buffer_type(r), symbols) for r in op.results]
    made_here = not op.inputs

    def run(tensors: list[torch.Tensor], values: tuple) -> tuple:
        results = call(tensors, dict(zip(symbols, values)))
        if made_here:
            results = [r.to(device) for r in results]
        return tuple(fix(r, values) for fix, r in zip(fixes, results))

    return run


class NativeHost:
    """A loaded native host program: `function(*args)` runs one call."""

    def __init__(
        self,
        source: NativeHostSource,
        address: int,
        device: Any,
        owner: Any,
        python: Callable[..., tuple],
        image: Any = None,
    ):
        self.source = source
        self.image = image
        """What the compiled-graph cache keeps of it (`image.NativeHostImage`), where it can."""
        self._python = python
        """The Python host program of the same function."""
        self._owner = owner  # holds the machine code at `address`
        self._function = HOST_FUNCTION(address)
        self._kernels = (ctypes.c_void_p * max(len(source.addresses), 1))(*source.addresses)
        self._runs = [callback_run(c, device) for c in source.callbacks]
        self._callback = CALLBACK_FUNCTION(self._run_callback)
        self._raised = threading.local()
        """The exception a callback of this thread's call raised, if any."""
        self.callback_count = sum(not c.fallback for c in source.callbacks)
        """The ops always run in Python, by calling back."""
        self.function = self._wrapper()

    def _run_callback(self, index: int, inputs: Any, outputs: Any, symbols: Any) -> int:
        try:
            callback = self.source.callbacks[index]
            tensors = tensors_from_handles([inputs[i] for i in range(callback.inputs)])
            values = tuple(symbols[position] for _, position in callback.symbols)
            for i, handle in enumerate(handles_of(self._runs[index](tensors, values))):
                outputs[i] = handle
            return 0
        except BaseException as error:  # noqa: BLE001 - raised again by the call, in Python
            self._raised.error = error
            return STATUS_CALLBACK

    def fail(self, status: int, args: tuple) -> tuple:
        """Raise what a call on `args` that returned `status` met. The shim
        reports a failure by its status alone, so a call failing in it runs
        again on the Python host program, which raises torch's own error (a
        graph's updates of its inputs come after its computations, so the
        first run changed nothing); should that run succeed, its results are
        returned, with a warning."""
        if status == STATUS_ZERO_DIVISOR:
            raise RuntimeError("ZeroDivisionError")
        error = getattr(self._raised, "error", None)
        if status == STATUS_CALLBACK and error is not None:
            self._raised.error = None
            raise error
        position = status - STATUS_SHIM
        results = self._python(*args)
        warnings.warn(
            f"permalloy's native host program failed in torch's C shim at "
            f"{self.source.operations[position]} (position {position}); the Python host program "
            "ran the call instead",
            stacklevel=3,
        )
        return results

    def _wrapper(self) -> Callable[..., tuple]:
        """The Python function a call runs: generated, so that packing the
        arguments and unpacking the results are a few bytecodes."""
        kinds = self.source.arguments
        parameters = [f"a{i}" for i in range(len(kinds))]
        words = ", ".join(f"{p}._cdata" if kind == "tensor" else f"int({p})" for p, kind in zip(parameters, kinds))
        results = ", ".join(f"results[{i}]" for i in range(self.source.results))
        pool = self.source.workspace
        take = (
            [
                "    workspace = take()",
                "    handles = workspace.handles",
                "    if handles is None:",
                "        handles = workspace.handles = handles_of_workspace(workspace)",
            ]
            if pool is not None
            else ["    handles = None"]
        )
        lines = [
            f"def host({', '.join(parameters)}):",
            f"    words = Words({words})",
            "    results = Results()",
            *take,
            "    status = function(words, results, threads(), kernels, callback, handles)",
            *(["    give(workspace)"] if pool is not None else []),
            "    if status:",
            f"        return fail(status, ({''.join(p + ', ' for p in parameters)}))",
            f"    return tuple(steal([{results}]))" if self.source.results else "    return ()",
        ]
        namespace = {
            "Words": ctypes.c_int64 * max(len(kinds), 1),
            "Results": ctypes.c_void_p * max(self.source.results, 1),
            "function": self._function,
            "threads": torch.get_num_threads,
            "kernels": self._kernels,
            "callback": self._callback,
            "fail": self.fail,
            "steal": tensors_from_handles,
            "take": pool.take if pool is not None else None,
            "give": pool.give if pool is not None else None,
            "handles_of_workspace": _workspace_words,
        }
        exec(compile("\n".join(lines) + "\n", "<permalloy native host>", "exec"), namespace)
        return namespace["host"]
