"""
The default pipelines, as plain lists of pass names.

The torch.compile backend runs exactly these names through the same registry
as `permalloy-opt -p`, so any compiled graph can be replayed as text:

    permalloy-opt graph.mlir -p convert-ptensor-to-loop,cse,dce,materialize-views,squeeze-leading-unit-dims,fuse-loops,cse,dce,convert-loop-to-buffer,write-input-updates,plan-memory
"""

from __future__ import annotations

from collections.abc import Collection

from permalloy.targets.registry import target_descriptor

TENSOR_LEVEL = ["canonicalize", "cse", "dce"]
"""Clean-up of the imported ptensor IR."""

LOOP_LEVEL = ["convert-ptensor-to-loop", "cse", "dce"]
"""Lowering to loops (view elimination) and clean-up of the loop bodies."""

FUSION = ["materialize-views", "squeeze-leading-unit-dims", "fuse-loops", "cse", "dce"]
"""Fusion into fewer kernels (after giving the views the host program would
copy for its library calls kernels that fusion can take in, and dropping
leading dimensions of size 1, so that loop ops over the same rows have the
same leading size), and clean-up of the fused bodies."""

BUFFER_LEVEL = ["convert-loop-to-buffer", "write-input-updates", "plan-memory"]
"""The host program over buffers, with kernels as symbols, the inputs the
graph updates written in place, and its memory plan."""


def default_pipeline(
    fusion: bool = True,
    target: str | None = None,
    deterministic: bool = False,
    matmul_templates: bool = False,
    optional_passes: Collection[str] = (),
    optional_buffer_passes: Collection[str] = (),
) -> list[str]:
    """The pass names that take an imported graph to a host program for
    `target`, with the passes the target adds (its `TargetDescriptor`'s
    `tensor_passes`, `loop_passes` and `buffer_passes`: the GPU target's
    `unfuse-bias-add`, `split-reductions` and `plan-layouts`, and its
    `fusion_options`); None means no target's additions. `deterministic`
    (torch's deterministic algorithms are on) keeps the float scatters that
    sum or multiply for torch on a target whose scatters use atomics;
    `matmul_templates` lowers half-precision matrix products to contractions
    on a target that tiles them; `optional_passes` are the target's passes
    that the compile's options turn on (`TargetDescriptor.optional_passes`),
    `optional_buffer_passes` its buffer-level ones
    (`TargetDescriptor.optional_buffer_passes`)."""
    if target is not None:
        descriptor = target_descriptor(target)
        return descriptor.pipeline(
            fusion,
            TENSOR_LEVEL,
            LOOP_LEVEL,
            FUSION,
            BUFFER_LEVEL,
            deterministic,
            matmul_templates,
            optional_passes,
            optional_buffer_passes,
        )
    return [*TENSOR_LEVEL, *LOOP_LEVEL, *(FUSION if fusion else []), *BUFFER_LEVEL]


def pipeline_text(names: list[str]) -> str:
    """The `-p` text of a pipeline: `a,b,c`."""
    return ",".join(names)
