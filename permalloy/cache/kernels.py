"""
Compiled kernels into and out of the cache, around a kernel target.

The host program asks its target for each launch's kernel
(`compile_kernel(kernel, layouts)`). On a miss, `RecordingTarget` passes the
request on and keeps, per kernel symbol and launch layouts, the symbols the
launch passes and the artifact the target gives of the compiled kernel
(`kernel_artifact`: the LLVM target's object code, the Triton target's
generated module and launch facts). On a hit, `LoadingTarget`
hands the host program each launch's kernel, the target's `load_kernel` of
the stored artifact, which compiles nothing, with its symbols
(`prepared_launch`), so that the kernel's body is not needed. A target that
keeps no artifacts compiles its kernels from the buffer-level module again,
past the pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from permalloy.cache.entry import KernelRecord
from permalloy.dialects.buffer import BufferType, KernelOp
from permalloy.targets import CompiledKernel, KernelTarget, kernel_symbols


def launch_key(kernel: KernelOp, layouts: Sequence[BufferType]) -> tuple[str, tuple[str, ...]]:
    """A kernel launch within one module: its kernel symbol and layouts."""
    return kernel.sym_name.data, tuple(str(layout) for layout in layouts)


class RecordingTarget:
    """`target`, keeping the artifact of every kernel it compiles (`records`);
    `complete` while every kernel compiled has one."""

    def __init__(self, target: KernelTarget):
        self.target = target
        self.records: dict[tuple[str, tuple[str, ...]], KernelRecord] = {}
        self.complete = True

    def compile_kernel(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> CompiledKernel:
        compiled = self.target.compile_kernel(kernel, layouts)
        key = launch_key(kernel, layouts)
        if key not in self.records:
            export = getattr(self.target, "kernel_artifact", None)
            artifact = export(compiled) if export is not None else None
            if artifact is None:
                self.complete = False
            else:
                symbols = tuple(kernel_symbols(kernel, layouts))
                self.records[key] = KernelRecord(key[0], key[1], symbols, artifact)
        return compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


class LoadingTarget:
    """`target`, loading the kernels of `records` rather than compiling them;
    kernels without a record are compiled."""

    def __init__(self, target: KernelTarget, records: Sequence[KernelRecord]):
        self.target = target
        self.records = {(r.kernel, r.layouts): r for r in records}
        self.loaded: dict[tuple[str, tuple[str, ...]], CompiledKernel] = {}

    def prepared_launch(
        self, name: str, layouts: Sequence[BufferType]
    ) -> tuple[CompiledKernel, list[str]] | None:
        """The loaded kernel `name` for `layouts` and the symbols it takes;
        None when the entry holds no artifact for it."""
        key = (name, tuple(str(layout) for layout in layouts))
        record = self.records.get(key)
        load = getattr(self.target, "load_kernel", None)
        if record is None or load is None:
            return None
        compiled = self.loaded.get(key)
        if compiled is None:
            compiled = self.loaded[key] = load(record.artifact)
        return compiled, list(record.symbols)

    def compile_kernel(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> CompiledKernel:
        prepared = self.prepared_launch(kernel.sym_name.data, layouts)
        return prepared[0] if prepared is not None else self.target.compile_kernel(kernel, layouts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)
