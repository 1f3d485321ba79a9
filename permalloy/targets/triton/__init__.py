"""
The `triton` kernel target: each `buffer.kernel` as a generated Python module
holding one `@triton.jit` function and its launcher.

- `plan`: stages, groups of stages sharing rows, tiles and temporaries;
- `stages`, `body`, `arith`, `math_ops`, `reductions`: the kernel's statements;
- `compat`: helpers that run on GPUs (libdevice) and in Triton's interpreter;
- `module`: the module text; `target`: compilation, loading and launching;
- `configs`, `autotune`: block sizes and warps, benchmarked on first call on
  a GPU and remembered on disk.

Kernels run on CUDA tensors, or on CPU tensors under Triton's interpreter
(`TRITON_INTERPRET=1`).
"""

from permalloy.targets.triton.target import TritonTarget

__all__ = ["TritonTarget"]
