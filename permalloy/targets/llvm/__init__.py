"""
The `llvm` target: kernels as vectorized, multithreaded code for the host CPU.

A `buffer.kernel`, for the buffer layouts of one launch, becomes one LLVM
module (built with llvmlite.ir), optimized at O3 with LLVM's new pass manager
for the host's triple, CPU and features, and loaded with MCJIT.

Calling convention. The entry function of a kernel is

    void @<kernel>(ptr %data, ptr %syms, i32 %nthreads)

- `data` points to an array of `void*`: the tensors' `data_ptr()`s, inputs then
  outputs in `buffer.launch` order. Element `i` of a tensor is at
  `data[k] + sum(i[j] * strides[j]) * itemsize`, with the strides of its
  launch layout (integer expressions over size symbols).
- `syms` points to an array of `int64_t`: the values of the size symbols, in
  the order of `permalloy.targets.kernel_symbols(kernel, layouts)`.
- `nthreads` is the number of threads it may use: `torch.get_num_threads()` at
  call time. Threads come from torch's libgomp (`GOMP_parallel`).

`CompiledLLVMKernel.__call__(tensors, symbols)` builds the two arrays with
prebuilt ctypes array types and calls the entry without the GIL.

Code shape. Each loop op is a stage; see `plan` for how a stage vectorizes
(the innermost contiguous loop becomes vectors of the host's width times an
unroll factor, with one masked tail chunk) and how consecutive stages that
work row by row (softmax, layer norm) share one row loop, from the facts of
the kernel analysis (`permalloy.analysis`: collapsed iteration spaces, row
reads, reduction directions), `nest` for the loop nests,
their split across threads (output elements, rows, or for a reduction to a
single value, ranges of the reduction) and reductions along outer dimensions,
`body` for loads and stores, `arith_ops`/`math_ops`/`polynomials` for scalar
code, `reductions` for accumulators, `kernel` for the module and its entry
function, `jit` for compilation and the Python side.

Modules: types, codegen, exprs, convert, arith_ops, math_ops, polynomials,
reductions, scans, scatters, sorts, plan, body, nest, kernel, jit, target,
testing.
"""

from __future__ import annotations

import importlib
from typing import Any

from permalloy.targets.descriptor import TargetDescriptor, TargetOption, one_of, positive_int


def _make(mode: str = "default", **options: Any):
    from permalloy.targets.llvm.target import LLVMTarget

    return LLVMTarget(**options)


def _unsupported_errors() -> tuple[type[Exception], ...]:
    from permalloy.targets.llvm.types import UnsupportedKernelError

    return (UnsupportedKernelError,)


TARGET = TargetDescriptor(
    name="llvm",
    summary="CPU kernels: vectorized, multithreaded LLVM IR",
    make=_make,
    devices=("cpu",),
    default_for=("cpu",),
    buffer_passes=("plan-layouts{convolutions=measured}", "convolutions-as-products{choose=measured}"),
    fusion_options="instruction-math=true",
    source_extension="ll",
    unsupported_errors=_unsupported_errors,
    options={
        "vector_bits": TargetOption(
            "the widest vectors to use, 128, 256 or 512 bits; by default the host's widest",
            one_of(128, 256, 512),
        ),
        "parallel_threshold": TargetOption(
            "elements times reduction length under which a kernel runs on one thread",
            positive_int,
        ),
    },
)
"""The `llvm` target, as the registry lists it."""

_EXPORTS = {
    "CompiledLLVMKernel": "permalloy.targets.llvm.jit",
    "HostMachine": "permalloy.targets.llvm.jit",
    "LLVMTarget": "permalloy.targets.llvm.target",
    "emit_module_llvm": "permalloy.targets.llvm.target",
    "launch_layouts": "permalloy.targets.llvm.target",
    "UnsupportedKernelError": "permalloy.targets.llvm.types",
}


def __getattr__(name: str) -> Any:
    """The code generator's names, imported on first use, so that reading
    `TARGET` does not load LLVM."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["TARGET", *_EXPORTS]
