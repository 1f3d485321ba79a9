"""
Kernel targets: the contract between the host program and code generators.

A target translates one `buffer.kernel` for the buffer layouts of one launch
into something callable. The host program calls it with the launch's tensors
(inputs, then outputs, in `buffer.launch` order) and the values of the size
symbols the kernel needs.

Conventions every target follows:
- Each tensor's `data_ptr()` is where element `[0, 0, ...]` lives: views are made
  by the host program (torch.as_strided), so a kernel adds no offset of its own
  and addresses element `i` at `sum(i[k] * strides[k])` with the strides of the
  launch's `BufferType` (integer expressions over size symbols).
- Symbol values are passed in the order of `kernel_symbols(kernel, layouts)`.
- A kernel writes every element of each output and nothing else.
- A target may name a `device` ("cuda"): where a host program whose
  arguments are no tensors allocates. Without one, that is the CPU.
- A compiled kernel may have `precompile(symbol values)`: the host program's
  builder calls it with the sizes of the first call, where they are known, so
  that compiling can start before the first launch (the Triton target's
  compile workers).
- A kernel a target cannot translate raises `UnsupportedKernelError` with the
  reason. Targets plan kernels from the facts of `permalloy.analysis`
  (`analyze_kernel`), which raises it for kernels no target translates.

What a target may add, each optional (read with `getattr`):
- `times`, a `permalloy.stats.CompileTimes` the target adds its kernel stages
  to (emission, compilation, loading, tuning); the compiler hands it the
  graph's record.
- For the compiled-graph cache (`permalloy.cache`): `cache_identity()`, what
  its kernels depend on besides their IR (the host CPU's features), part of
  the key; `kernel_artifact(compiled)`, a dict of strings, integers and bytes
  from which `load_kernel(artifact)` makes the same kernel in a later process
  without compiling (the LLVM target's object code, the Triton target's
  generated module and launch facts). A target without them
  compiles its kernels again from the cached buffer-level module.
- `prepared_launch(name, layouts)`: a launch's compiled kernel and the
  symbols it takes, without the kernel's IR (the cache's `LoadingTarget`),
  or None; the host program asks it first.
- `prepare_to_compile()`: the compiler calls it before it lowers a graph
  (one the compiled-graph cache does not hold, or with the cache off), so
  that the target starts ahead what compiling kernels needs (the Triton
  target's compile workers), and nothing where a graph only loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from permalloy.analysis.kernel import UnsupportedKernelError
from permalloy.dialects.buffer import BufferType, KernelOp
from permalloy.dialects.ptensor import TensorType
from permalloy.dialects.sym import symbol_kind

if TYPE_CHECKING:
    import torch

__all__ = ["CompiledKernel", "KernelTarget", "UnsupportedKernelError", "kernel_symbols"]


class CompiledKernel(Protocol):
    """A kernel ready to run on tensors laid out as its launch says."""

    def __call__(self, tensors: Sequence[torch.Tensor], symbols: Sequence[int]) -> None:  # noqa: F821
        """Run on `tensors` (inputs then outputs) with `symbols` in kernel order."""
        ...


class KernelTarget(Protocol):
    """A code generator for kernels: `llvm` for CPUs, `triton` for GPUs."""

    name: str

    def compile_kernel(
        self, kernel: KernelOp, layouts: Sequence[BufferType]
    ) -> CompiledKernel:
        """Translate and compile `kernel` for the launch `layouts` (ins then outs)."""
        ...

    def emit_source(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> str:
        """The text the target generates for `kernel`: LLVM IR, Triton source."""
        ...


def kernel_symbols(kernel: KernelOp, layouts: Sequence[BufferType]) -> list[str]:
    """
    The size symbols a kernel needs at run time, sorted by name: those in its
    argument and result types, in the layouts of its launch, and in the reduction
    domains and index expressions of its body.
    """
    names: set[str] = set()

    def add(exprs) -> None:
        for expr in exprs:
            for sym in expr.free_symbols:
                if symbol_kind(sym) == "s":
                    names.add(sym.name)

    for t in (*kernel.function_type.inputs.data, *kernel.function_type.outputs.data):
        assert isinstance(t, TensorType)
        add(t.sizes)
    for layout in layouts:
        add((*layout.sizes, *layout.strides.data))
    for op in kernel.walk():
        for prop in op.properties.values():
            data = getattr(prop, "data", None)
            if isinstance(data, tuple):
                add(e for e in data if hasattr(e, "free_symbols"))
            elif hasattr(data, "free_symbols"):
                add([data])
        for result in op.results:
            if isinstance(result.type, TensorType):
                add(result.type.sizes)
    return sorted(names, key=lambda n: int(n[1:]))


def compiled_kernel_key(kernel: KernelOp, layouts: Sequence[BufferType]) -> tuple[str, tuple[str, ...]]:
    """What a kernel's compiled code depends on: its printed body and
    signature, without its name, and its launch's layouts. Kernels that
    differ only in name (a model's repeated blocks: MobileNetV2's training
    step has 314 kernels of 128 bodies) share one compiled kernel."""
    text = str(kernel).replace(f"@{kernel.sym_name.data}(", "@kernel(", 1)
    return text, tuple(str(layout) for layout in layouts)
