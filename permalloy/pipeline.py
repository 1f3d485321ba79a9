"""
The default pipelines, as plain lists of pass names.

The torch.compile backend runs exactly these names through the same registry
as `permalloy-opt -p`, so any compiled graph can be replayed as text:

    permalloy-opt graph.mlir -p convert-ptensor-to-loop,cse,dce,fuse-loops,cse,dce,convert-loop-to-buffer,plan-memory
"""

from __future__ import annotations

TENSOR_LEVEL = ["canonicalize", "cse", "dce"]
"""Clean-up of the imported ptensor IR."""

GPU_TENSOR_LEVEL = ["unfuse-bias-add"]
"""For GPU targets: products with a bias that elementwise ops read become plain
products, their bias added in the readers' kernel."""

LOOP_LEVEL = ["convert-ptensor-to-loop", "cse", "dce"]
"""Lowering to loops (view elimination) and clean-up of the loop bodies."""

GPU_LOOP_LEVEL = ["split-reductions"]
"""For GPU targets: reductions with few results split into two, for parallelism."""

FUSION = ["fuse-loops", "cse", "dce"]
"""Fusion into fewer kernels, and clean-up of the fused bodies."""

BUFFER_LEVEL = ["convert-loop-to-buffer", "plan-memory"]
"""The host program over buffers, with kernels as symbols, and its memory plan."""


GPU_TARGETS = ("triton",)
"""Kernel targets that run on a GPU."""


def default_pipeline(fusion: bool = True, target: str | None = None) -> list[str]:
    """The pass names that take an imported graph to a host program for
    `target` (GPU targets add `GPU_TENSOR_LEVEL` and `GPU_LOOP_LEVEL`)."""
    gpu = target in GPU_TARGETS
    return [
        *TENSOR_LEVEL,
        *(GPU_TENSOR_LEVEL if gpu and fusion else []),
        *LOOP_LEVEL,
        *(GPU_LOOP_LEVEL if gpu else []),
        *(FUSION if fusion else []),
        *BUFFER_LEVEL,
    ]


def pipeline_text(names: list[str]) -> str:
    """The `-p` text of a pipeline: `a,b,c`."""
    return ",".join(names)
