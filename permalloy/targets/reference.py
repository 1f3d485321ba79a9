"""
The `reference` kernel target: kernels run by the loop interpreter.

Slow and simple, it runs a kernel's loop IR with the executable reference
semantics (`permalloy.interpreter`), vectorized over torch tensors. It is the
target to compare a code generator against, and to debug a pipeline without
one: `torch.compile(m, backend="permalloy", options={"target": "reference"})`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from permalloy.dialects.buffer import BufferType, KernelOp
from permalloy.dialects.sym import symbol
from permalloy.targets import kernel_symbols
from permalloy.targets.descriptor import TargetDescriptor

if TYPE_CHECKING:
    import torch


class ReferenceKernel:
    """One kernel, run by the interpreter on the tensors of a launch."""

    def __init__(self, kernel: KernelOp, symbols: list[str]):
        from permalloy.interpreter.bindings import SizeBindings
        from permalloy.interpreter.levels import make_level_interpreter

        self.kernel = kernel.clone()
        self.module = ModuleOp([self.kernel])
        self.bindings = SizeBindings()
        self.interpreter = make_level_interpreter(self.module, self.bindings)
        self.symbols = [symbol(name) for name in symbols]
        self.input_count = len(kernel.function_type.inputs.data)

    def __call__(self, tensors: Sequence[torch.Tensor], symbols: Sequence[int]) -> None:
        inputs = tuple(tensors[: self.input_count])
        outputs = tensors[self.input_count :]
        with self.bindings.scope():
            self.bindings.current.update(zip(self.symbols, symbols))
            results = self.interpreter.run_ssacfg_region(
                self.kernel.body, inputs, self.kernel.sym_name.data
            )
        for result, output in zip(results, outputs, strict=True):
            output.copy_(result)


class ReferenceTarget:
    """Kernels run by the loop interpreter: correct by construction, slow."""

    name = "reference"

    def compile_kernel(
        self, kernel: KernelOp, layouts: Sequence[BufferType]
    ) -> ReferenceKernel:
        return ReferenceKernel(kernel, kernel_symbols(kernel, layouts))

    def emit_source(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> str:
        """The kernel's own IR: what the interpreter runs."""
        return str(kernel)


def _make(mode: str = "default") -> ReferenceTarget:
    return ReferenceTarget()


TARGET = TargetDescriptor(
    name="reference",
    summary="kernels run by the loop interpreter, for debugging",
    make=_make,
    devices=("cpu", "cuda"),
    source_extension="mlir",
)
"""The `reference` target, as the registry lists it: it emits each kernel's
own IR, which is what it runs."""
