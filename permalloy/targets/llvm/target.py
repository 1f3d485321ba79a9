"""The `llvm` kernel target: planning, emission, compilation and its cache;
kernels kept as object code by the compiled-graph cache and loaded again."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import ModuleOp

from permalloy.dialects.buffer import BufferType, KernelOp, LaunchOp
from permalloy.dialects.ptensor import TensorType
from permalloy.stats import CompileTimes
from permalloy.targets import compiled_kernel_key
from permalloy.targets.llvm.jit import JIT, CompiledLLVMKernel, HostMachine
from permalloy.targets.llvm.kernel import DEFAULT_PARALLEL_THRESHOLD, KernelEmitter, llvm_name
from permalloy.targets.llvm.plan import KernelPlan, plan_kernel


class LLVMTarget:
    """
    Compiles kernels to vectorized, multithreaded host code.

    Compiled kernels are cached in this object per `compiled_kernel_key`
    (kernels that differ only in name share their code); one
    target holds one JIT engine, and keeps the host description it compiles
    for. `parallel_threshold` is the amount of work (elements times reduction
    length) under which a kernel runs on the calling thread alone;
    `vector_bits` narrows the vectors below the host's widest (256 on an
    AVX-512 host whose 512-bit units are slow, say). The seconds spent
    emitting, compiling and loading kernels add up in `times`.
    """

    name = "llvm"

    def __init__(self, parallel_threshold: int = DEFAULT_PARALLEL_THRESHOLD, vector_bits: int | None = None):
        self.host = HostMachine()
        self.parallel_threshold = parallel_threshold
        if vector_bits is not None and vector_bits not in (128, 256, 512):
            raise ValueError(f"vector_bits must be 128, 256 or 512, got {vector_bits}")
        self.f32_lanes = min(vector_bits or self.host.vector_bits, self.host.vector_bits) // 32
        self._jit: JIT | None = None
        self._cache: dict[tuple[str, tuple[str, ...]], CompiledLLVMKernel] = {}
        self._entries: dict[str, CompiledLLVMKernel] = {}
        """The kernels in the JIT, compiled or loaded, by entry name."""
        self.times = CompileTimes()

    @property
    def jit(self) -> JIT:
        if self._jit is None:
            self._jit = JIT(self.host)
        return self._jit

    def compile_kernel(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> CompiledLLVMKernel:
        key = compiled_kernel_key(kernel, layouts)
        compiled = self._cache.get(key)
        if compiled is None:
            name = f"{llvm_name(kernel.sym_name.data)}_{len(self._entries)}"
            with self.times.measure("kernel_emission"):
                plan = plan_kernel(kernel, layouts, self.f32_lanes)
                source = self._emit(plan, name, threads=self.jit.openmp)
            with self.times.measure("kernel_compilation"):
                address, code = self.jit.load(source, name)
            compiled = CompiledLLVMKernel(
                address, plan.num_args, len(plan.symbols), source, self.jit, entry=name, object_code=code
            )
            self._entries[name] = compiled
            self._cache[key] = compiled
        return compiled

    def cache_identity(self) -> str:
        """What compiled kernels depend on besides the kernel and its layouts:
        the host (triple, CPU, features), the vector width, the threshold of
        parallel work and whether kernels call OpenMP; and what the compiled
        graph depends on: torch's thread count, at which `plan-layouts`
        timed its convolutions (oneDNN's fastest layout depends on it)."""
        host = self.host
        return (
            f"{host.triple}|{host.cpu}|{host.features.flatten()}|lanes={self.f32_lanes}"
            f"|parallel={self.parallel_threshold}|openmp={self.jit.openmp}|threads={torch.get_num_threads()}"
        )

    def kernel_artifact(self, compiled: CompiledLLVMKernel) -> dict[str, str | int | bytes]:
        """What a later process needs to load `compiled` (`load_kernel`)."""
        return {
            "entry": compiled.entry,
            "tensors": compiled.num_tensors,
            "symbols": compiled.num_symbols,
            "object": compiled.object_code,
        }

    def load_kernel(self, artifact: dict[str, str | int | bytes]) -> CompiledLLVMKernel:
        """A kernel from its `kernel_artifact`, of this process or an earlier
        one on the same host (the compiled-graph cache checks that), loaded
        into this target's JIT without compiling."""
        entry, code = str(artifact["entry"]), artifact["object"]
        loaded = self._entries.get(entry)
        if loaded is not None and loaded.object_code == code:
            return loaded  # kernels of one body share their code
        if loaded is not None or not isinstance(code, bytes):
            raise ValueError(f"cannot load kernel '{entry}' into this target")
        with self.times.measure("kernel_loading"):
            address = self.jit.load_object(code, entry)
        tensors, symbols = int(artifact["tensors"]), int(artifact["symbols"])
        compiled = CompiledLLVMKernel(address, tensors, symbols, None, self.jit, entry=entry, object_code=code)
        self._entries[entry] = compiled
        return compiled

    def emit_source(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> str:
        """The LLVM IR of `kernel` for `layouts`, before optimization."""
        return self._emit(plan_kernel(kernel, layouts, self.f32_lanes), kernel.sym_name.data, threads=True)

    def assembly(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> str:
        """The optimized host assembly of `kernel`, for inspection and tests."""
        return self.jit.assembly(self.emit_source(kernel, layouts))

    def _emit(self, plan: KernelPlan, name: str, threads: bool) -> str:
        emitter = KernelEmitter(
            plan,
            name,
            triple=self.host.triple,
            threads=threads,
            parallel_threshold=self.parallel_threshold,
            avx512=self.f32_lanes == 16 and self.host.has("avx512f"),
        )
        return str(emitter.emit())


def launch_layouts(module: ModuleOp, kernel: KernelOp) -> list[BufferType]:
    """The layouts of the first launch of `kernel` in `module`, else contiguous ones."""
    for op in module.walk():
        if isinstance(op, LaunchOp) and op.kernel.root_reference.data == kernel.sym_name.data:
            return [v.type for v in (*op.inputs, *op.outputs)]  # type: ignore[misc]
    signature = kernel.function_type
    types = (*signature.inputs.data, *signature.outputs.data)
    return [BufferType(t.sizes, t.element_type) for t in types if isinstance(t, TensorType)]


def emit_module_llvm(module: ModuleOp, target: LLVMTarget | None = None) -> str:
    """The LLVM IR of every `buffer.kernel` of `module`, one module after the other."""
    target = target or LLVMTarget()
    pieces = []
    for op in module.walk():
        if isinstance(op, KernelOp):
            pieces.append(f"; kernel @{op.sym_name.data}\n" + target.emit_source(op, launch_layouts(module, op)))
    return "\n".join(pieces)
