"""
The executable reference semantics of the buffer dialect, on torch tensors.

A buffer is a torch tensor with the sizes and strides of its type, over the
memory of an allocation (`Allocation`). Positions in a layout count from the
start of the allocation: a `buffer.alloc` starts a new one (with
`torch.empty_strided`, filled with a poison value so that reading memory no
kernel wrote shows up), a function argument is the allocation of its own, and
`buffer.view` is `torch.as_strided` of the allocation holding its source.
Launches run a kernel's loop ops on the contents of the input buffers and copy
the results into the output buffers; extern calls run their ptensor op with
the ptensor interpreter and copy its results into new buffers.

Using a buffer after its allocation was freed by `buffer.dealloc` is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_callable,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import InterpretationError

from permalloy.dialects import buffer as buf
from permalloy.dtypes import torch_dtype
from permalloy.interpreter.bindings import (
    ShapeMismatchError,
    SizeBindings,
    check_values,
    tensor_constraints,
)
from permalloy.interpreter.func import SymbolicFuncFunctions, bind_arguments

Tensor = torch.Tensor


class UseAfterFreeError(InterpretationError):
    """A buffer used after `buffer.dealloc` freed its allocation."""


@dataclass(eq=False)
class Allocation:
    """
    Memory holding buffers: `base` is the storage offset of its position 0 in
    `memory`'s storage, and `size` the number of elements it holds from there.
    """

    memory: Tensor
    base: int
    size: int
    freed: bool = False

    @staticmethod
    def of_tensor(tensor: Tensor) -> Allocation:
        """The memory a tensor reaches, as an allocation of its own."""
        extent = 1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()))
        return Allocation(tensor, tensor.storage_offset(), extent if tensor.numel() else 0)


@dataclass(frozen=True, eq=False)
class BufferValue:
    """A buffer at run time: its elements, and the allocation they live in."""

    tensor: Tensor
    allocation: Allocation


@dataclass(frozen=True)
class Layout:
    """A buffer type's sizes, strides and offset under the current bindings."""

    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: torch.dtype

    @staticmethod
    def of(buffer_type: buf.BufferType, bindings: SizeBindings) -> Layout:
        return Layout(
            tuple(bindings.values(buffer_type.sizes)),
            tuple(bindings.values(buffer_type.strides.data)),
            bindings.value(buffer_type.offset.expr),
            torch_dtype(buffer_type.element_type),
        )

    def fits(self, tensor: Tensor) -> bool:
        """Whether `tensor` already has this layout (strides of size-1
        dimensions do not matter)."""
        return tensor.dtype == self.dtype and all(
            size == 1 or stride == actual
            for size, stride, actual in zip(self.sizes, self.strides, tensor.stride())
        )

    def extent(self) -> int:
        """The number of elements of memory the layout reaches, from position 0."""
        if any(s == 0 for s in self.sizes):
            return self.offset
        return self.offset + 1 + sum((n - 1) * s for n, s in zip(self.sizes, self.strides))


def poison(dtype: torch.dtype) -> float | int | bool:
    """The value new memory is filled with: NaN, or an unlikely integer."""
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).min


def allocate(layout: Layout) -> BufferValue:
    """A new allocation holding a buffer of `layout`, filled with poison."""
    size = layout.extent()
    memory = torch.full((max(size, 1),), poison(layout.dtype), dtype=layout.dtype)
    allocation = Allocation(memory, 0, size)
    return BufferValue(view_of(allocation, layout), allocation)


def view_of(allocation: Allocation, layout: Layout) -> Tensor:
    """The buffer of `layout` in an allocation's memory."""
    return torch.as_strided(
        allocation.memory, layout.sizes, layout.strides, allocation.base + layout.offset
    )


def argument_buffer(value: Tensor, layout: Layout) -> BufferValue:
    """
    A function argument as a buffer of its declared layout: the tensor itself
    when it has that layout, or else a copy laid out as declared.
    """
    if layout.offset == 0 and layout.fits(value):
        return BufferValue(value, Allocation.of_tensor(value))
    copy = allocate(layout)
    copy.tensor.copy_(value)
    return copy


class BufferFunctionsBase(InterpreterFunctions):
    """The size bindings, and reading buffer operands."""

    def __init__(self, bindings: SizeBindings):
        self.bindings = bindings

    def layout(self, value: SSAValue) -> Layout:
        """The concrete layout of a buffer-typed SSA value."""
        assert isinstance(value.type, buf.BufferType)
        return Layout.of(value.type, self.bindings)

    def live(self, op_name: str, value: Any) -> BufferValue:
        """A buffer operand, checked not to be freed (a tensor is its own buffer)."""
        if isinstance(value, Tensor):
            return BufferValue(value, Allocation.of_tensor(value))
        assert isinstance(value, BufferValue)
        if value.allocation.freed:
            raise UseAfterFreeError(f"{op_name} uses a buffer after buffer.dealloc")
        return value

    def contents(self, op_name: str, values: Sequence[Any]) -> list[Tensor]:
        """The tensors of live buffer operands."""
        return [self.live(op_name, v).tensor for v in values]


@register_impls
class BufferFunctions(BufferFunctionsBase):
    """Interpreter functions for every op of the buffer dialect."""

    @impl(buf.AllocOp)
    def run_alloc(
        self, interpreter: Interpreter, op: buf.AllocOp, args: PythonValues
    ) -> PythonValues:
        return (allocate(self.layout(op.result)),)

    @impl(buf.DeallocOp)
    def run_dealloc(
        self, interpreter: Interpreter, op: buf.DeallocOp, args: PythonValues
    ) -> PythonValues:
        self.live(op.name, args[0]).allocation.freed = True
        return ()

    @impl(buf.ViewOp)
    def run_view(
        self, interpreter: Interpreter, op: buf.ViewOp, args: PythonValues
    ) -> PythonValues:
        source = self.live(op.name, args[0])
        layout = self.layout(op.result)
        allocation = source.allocation
        if layout.offset < 0 or layout.extent() > allocation.size:
            raise InterpretationError(
                f"buffer.view reaches elements {layout.offset} to "
                f"{layout.extent() - 1} of an allocation of {allocation.size}"
            )
        return (BufferValue(view_of(allocation, layout), allocation),)

    @impl(buf.CopyOp)
    def run_copy(
        self, interpreter: Interpreter, op: buf.CopyOp, args: PythonValues
    ) -> PythonValues:
        source, target = self.contents(op.name, args)
        target.copy_(source.clone())
        return ()

    @impl(buf.LaunchOp)
    def run_launch(
        self, interpreter: Interpreter, op: buf.LaunchOp, args: PythonValues
    ) -> PythonValues:
        kernel = interpreter.get_op_for_symbol(op.kernel)
        if not isinstance(kernel, buf.KernelOp):
            raise InterpretationError(f"{op.kernel} is not a buffer.kernel")
        inputs = self.contents(op.name, args[: len(op.inputs)])
        outputs = self.contents(op.name, args[len(op.inputs) :])
        signature = kernel.function_type
        name = kernel.sym_name.data
        with self.bindings.scope():
            check_values(self.bindings, signature.inputs.data, inputs, f"input {{}} of @{name}")
            check_values(self.bindings, signature.outputs.data, outputs, f"output {{}} of @{name}")
            results = interpreter.run_ssacfg_region(kernel.body, tuple(inputs), name)
        store_results(op.name, results, outputs)
        return ()

    @impl(buf.ExternOp)
    def run_extern(
        self, interpreter: Interpreter, op: buf.ExternOp, args: PythonValues
    ) -> PythonValues:
        inputs = self.contents(op.name, args)
        results = interpreter.run_ssacfg_region(op.body, tuple(inputs), op.name)
        if buf.ExternOp.WRITES_FIRST_INPUT in op.attributes:
            store_results(op.name, results, [inputs[0]])
            return (args[0],)
        if op.writes_last_input:
            store_results(op.name, results, [inputs[-1]])
            return (args[-1],)
        buffers = [allocate(self.layout(r)) for r in op.results]
        store_results(op.name, results, [b.tensor for b in buffers])
        return tuple(buffers)

    @impl_terminator(buf.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: buf.YieldOp, args: PythonValues
    ) -> tuple[ReturnedValues, PythonValues]:
        return ReturnedValues(args), ()


def store_results(op_name: str, results: Sequence[Tensor], outputs: Sequence[Tensor]):
    """Copy computed tensors into output buffers of exactly their shape."""
    for i, (result, output) in enumerate(zip(results, outputs, strict=True)):
        if result.shape != output.shape or result.dtype != output.dtype:
            raise ShapeMismatchError(
                f"{op_name} result {i}: a {result.dtype} tensor of shape "
                f"{list(result.shape)} cannot be stored in a {output.dtype} buffer "
                f"of shape {list(output.shape)}"
            )
        output.copy_(result)


@register_impls
class BufferFuncFunctions(SymbolicFuncFunctions):
    """
    `func` for functions at any level: tensor and index arguments as in
    `SymbolicFuncFunctions`, buffer arguments bound from the sizes of their
    tensors and laid out as their types say; buffer results are given back
    as their tensors.
    """

    @impl_callable(func.FuncOp)
    def call_func(
        self, interpreter: Interpreter, op: func.FuncOp, args: tuple[Any, ...]
    ) -> PythonValues:
        name = op.sym_name.data
        declared = op.function_type.inputs.data
        with self.bindings.scope():
            self._bind_buffers(declared, args, name)
            bind_arguments(self.bindings, op, args)
            wrapped = tuple(self._argument(t, a) for t, a in zip(declared, args))
            results = FuncFunctions.call_func(self, interpreter, op, wrapped)
            outputs = op.function_type.outputs.data
            tensors = tuple(_unwrap(name, r) for r in results)
            check_values(
                self.bindings,
                [_as_tensor_type(t) for t in outputs],
                tensors,
                f"result {{}} of @{name}",
            )
        return tensors

    def _bind_buffers(
        self, declared: Sequence[Attribute], args: Sequence[Any], name: str
    ) -> None:
        constraints = []
        for i, (declared_type, value) in enumerate(zip(declared, args)):
            if isinstance(declared_type, buf.BufferType):
                where = f"argument {i} of @{name}"
                tensor = value.tensor if isinstance(value, BufferValue) else value
                constraints += tensor_constraints(declared_type.tensor_type(), tensor, where)
        self.bindings.match(constraints)

    def _argument(self, declared: Attribute, value: Any) -> Any:
        if not isinstance(declared, buf.BufferType) or isinstance(value, BufferValue):
            return value
        return argument_buffer(value, Layout.of(declared, self.bindings))


def _as_tensor_type(value_type: Attribute) -> Attribute:
    if isinstance(value_type, buf.BufferType):
        return value_type.tensor_type()
    return value_type


def _unwrap(function_name: str, value: Any) -> Any:
    if not isinstance(value, BufferValue):
        return value
    if value.allocation.freed:
        raise UseAfterFreeError(
            f"@{function_name} returns a buffer after buffer.dealloc freed it"
        )
    return value.tensor


__all__ = [
    "Allocation",
    "BufferFuncFunctions",
    "BufferFunctions",
    "BufferValue",
    "Layout",
    "UseAfterFreeError",
]
