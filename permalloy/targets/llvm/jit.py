"""
Compilation for the host CPU and the Python side of a launch.

`HostMachine` describes the CPU this process runs on (triple, CPU name,
features, vector width) and holds its LLVM target machine. `JIT` optimizes
modules with LLVM's new pass manager at O3, compiles them to object code and
loads that into one MCJIT engine (object code is what the compiled-graph
cache keeps of a kernel), whose LLVM context and machine code are freed with the `JIT`
(kernels keep their JIT alive). The OpenMP entry points kernels call (`GOMP_parallel`,
`omp_get_thread_num`, `omp_get_num_threads`) are bound to the libgomp that
torch ships, so kernels share torch's thread pool.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from collections.abc import Sequence
from functools import cached_property

import llvmlite.binding as llvm
import torch
from llvmlite.binding.newpassmanagers import NewPassManager

OPENMP_SYMBOLS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")


def find_libgomp() -> str | None:
    """The libgomp in torch's package (the one torch itself uses), else the system's."""
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    candidates = sorted(glob.glob(os.path.join(torch_lib, "libgomp*.so*")))
    if candidates:
        return candidates[0]
    return ctypes.util.find_library("gomp")


class HostMachine:
    """The host CPU as LLVM sees it."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features()
        target = llvm.Target.from_triple(self.triple)
        self.target_machine = target.create_target_machine(
            cpu=self.cpu, features=self.features.flatten(), opt=3, jit=True
        )

    @cached_property
    def quick_target_machine(self) -> llvm.TargetMachine:
        """A target machine generating code without optimizing it (LLVM's fast
        instruction selection), for code whose cost is in what it calls."""
        target = llvm.Target.from_triple(self.triple)
        return target.create_target_machine(cpu=self.cpu, features=self.features.flatten(), opt=0, jit=True)

    def has(self, feature: str) -> bool:
        return bool(self.features.get(feature, False))

    @cached_property
    def vector_bits(self) -> int:
        """Width of the widest vector registers: 512 (AVX-512), 256 (AVX2), 128."""
        if self.has("avx512f"):
            return 512
        if self.has("avx2") or self.has("avx"):
            return 256
        return 128

    @property
    def f32_lanes(self) -> int:
        """f32 elements per vector register: 16 with AVX-512, 8 with AVX2."""
        return self.vector_bits // 32


class JIT:
    """Optimizes LLVM IR and loads it into this process."""

    def __init__(self, host: HostMachine):
        self.host = host
        self.openmp = self._bind_openmp()
        self._context = llvm.create_context()
        empty = llvm.parse_assembly("", context=self._context)
        self._engine = llvm.create_mcjit_compiler(empty, host.target_machine)
        self._names = 0
        tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        tuning.loop_vectorization = False  # kernels come vectorized
        self._pass_builder = llvm.create_pass_builder(host.target_machine, tuning)

    def __del__(self) -> None:
        """Frees the machine code and then the LLVM context its modules live in
        (a context freed first would leave the engine's modules dangling)."""
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.close()
        context = getattr(self, "_context", None)
        if context is not None:
            context.close()

    def _bind_openmp(self) -> bool:
        """Make the OpenMP entry points resolvable by JIT-compiled code."""
        path = find_libgomp()
        if path is None:
            return False
        try:
            library = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            for name in OPENMP_SYMBOLS:
                llvm.add_symbol(name, ctypes.cast(getattr(library, name), ctypes.c_void_p).value)
        except (OSError, AttributeError):
            return False
        return True

    def fresh_name(self, stem: str) -> str:
        """A function name no module loaded into this JIT has used."""
        self._names += 1
        return f"{stem}_{self._names}"

    def optimize(self, text: str) -> llvm.ModuleRef:
        module = llvm.parse_assembly(text, context=self._context)
        module.verify()
        manager = self._pass_builder.getModulePassManager()
        try:
            manager.run(module, self._pass_builder)
        finally:
            # llvmlite's ModulePassManager inherits ObjectRef's empty `_dispose`
            # ahead of the one that frees it: free it here, once.
            NewPassManager._dispose(manager)  # noqa: SLF001
            manager.detach()
        return module

    def compile(self, text: str, optimize: bool = True) -> bytes:
        """Optimize a module (unless not `optimize`: straight-line code of
        calls, which LLVM's passes make no faster, as a host program's) and
        compile it to object code for the host."""
        if optimize:
            module = self.optimize(text)
            machine = self.host.target_machine
        else:
            module = llvm.parse_assembly(text, context=self._context)
            module.verify()
            machine = self.host.quick_target_machine
        try:
            return machine.emit_object(module)
        finally:
            module.close()

    def load_object(self, code: bytes, entry: str) -> int:
        """Load object code (of `compile`, in this process or an earlier one on
        the same host); the address of its function `entry`."""
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        self._engine.finalize_object()
        address = self._engine.get_function_address(entry)
        if not address:
            raise ValueError(f"the object code defines no function '{entry}'")
        return address

    def load(self, text: str, entry: str, optimize: bool = True) -> tuple[int, bytes]:
        """Optimize (see `compile`), compile and load a module; the address of
        its function `entry`, and the object code."""
        code = self.compile(text, optimize)
        return self.load_object(code, entry), code

    def assembly(self, text: str) -> str:
        """The host assembly of an (optimized) module, for inspection."""
        return self.host.target_machine.emit_assembly(self.optimize(text))


_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)


class CompiledLLVMKernel:
    """
    A loaded kernel: `kernel(tensors, symbols)` runs it on the tensors'
    storage with `torch.get_num_threads()` threads, and raises torch's
    `RuntimeError("ZeroDivisionError")` when an integer division met a zero
    divisor (its outputs are then unspecified, as torch leaves them).
    """

    def __init__(
        self,
        address: int,
        num_tensors: int,
        num_symbols: int,
        source: str | None,
        jit: JIT,
        entry: str = "",
        object_code: bytes = b"",
    ):
        self._jit = jit  # owns the machine code: it lives as long as any of its kernels
        self.address = address
        """The entry `i32 (ptr data, ptr symbols, i32 threads)`, which native host programs call."""
        self._function = _ENTRY(address)
        self.num_tensors = num_tensors
        self._pointers = ctypes.c_void_p * num_tensors
        self._symbols = ctypes.c_int64 * max(num_symbols, 1)
        self.num_symbols = num_symbols
        self.source = source
        """The LLVM IR before optimization; None for a kernel loaded from object code."""
        self.entry = entry
        """The name of the entry function in the object code."""
        self.object_code = object_code
        """The compiled module, which a later process can load (`JIT.load_object`)."""

    def __call__(self, tensors: Sequence[torch.Tensor], symbols: Sequence[int]) -> None:
        if len(tensors) != self.num_tensors or len(symbols) != self.num_symbols:
            raise ValueError(
                f"this kernel takes {self.num_tensors} tensors and "
                f"{self.num_symbols} symbols, got {len(tensors)} and {len(symbols)}"
            )
        pointers = self._pointers(*[t.data_ptr() for t in tensors])
        values = self._symbols(*symbols)
        if self._function(pointers, values, torch.get_num_threads()):
            raise RuntimeError("ZeroDivisionError")
