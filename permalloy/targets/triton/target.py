"""
The Triton target: kernels compiled to generated Triton modules and launched
with the configuration the autotuner picks.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path

from permalloy.dialects.buffer import BufferType, KernelOp
from permalloy.stats import CompileTimes
from permalloy.targets import compiled_kernel_key
from permalloy.targets.triton import interpreter_enabled
from permalloy.targets.triton.autotune import Autotuner
from permalloy.targets.triton.binaries import LaunchRecords, binary_identity, stored_launches
from permalloy.targets.triton.compile_workers import CompileWorkers, compile_requests, shared_compile_workers
from permalloy.targets.triton.configs import CandidateSpace, Config, candidates
from permalloy.targets.triton.direct import (
    StaticLaunch,
    compiled_launches,
    current_stream,
    direct_launch_available,
)
from permalloy.targets.triton.loader import ModuleLoader
from permalloy.targets.triton.module import function_name, module_source
from permalloy.targets.triton.plan import KernelPlan, plan_kernel


INTERPRETER_LOCK = threading.Lock()
"""Triton's interpreter patches `triton.language` process-wide for the length
of a launch, so interpreted launches from several threads run one at a time."""


def device_name(tensor) -> str:
    """The name of the GPU holding `tensor` (part of autotuning's cache key)."""
    import torch

    return torch.cuda.get_device_name(tensor.device)


@dataclass(frozen=True)
class LaunchFacts:
    """What running a compiled kernel needs of its plan: the kernel's symbol
    (for messages), its function's name, how many of its tensors are inputs,
    its size symbols in launch order and its candidates' space. Plain data,
    which the compiled-graph cache keeps beside the module's source."""

    kernel: str
    name: str
    inputs: int
    symbols: tuple[str, ...]
    space: CandidateSpace

    @staticmethod
    def of(plan: KernelPlan) -> LaunchFacts:
        return LaunchFacts(plan.kernel.sym_name.data, plan.name, len(plan.inputs), tuple(plan.symbols), CandidateSpace.of(plan))

    def as_dict(self) -> dict:
        return {**asdict(self), "symbols": list(self.symbols), "space": self.space.as_dict()}

    @staticmethod
    def from_dict(values: dict) -> LaunchFacts:
        return LaunchFacts(
            str(values["kernel"]),
            str(values["name"]),
            int(values["inputs"]),
            tuple(map(str, values["symbols"])),
            CandidateSpace.from_dict(values["space"]),
        )


class TritonKernel:
    """
    A compiled kernel: its generated module, candidate configurations and tuner.

    The first call for given sizes, device and pointer alignments chooses a
    configuration (autotuning on a GPU); on a GPU it compiles the kernels for
    these arguments through Triton's JIT without launching, and keeps and
    runs the module's direct `launcher` for them, so every call computes one
    dictionary key and calls the compiled kernels' launchers (`direct.py`).
    Under the interpreter, or where a launch hook is installed, every call
    goes through the JIT.
    """

    def __init__(
        self,
        facts: LaunchFacts,
        source: str,
        module,
        mode: str,
        tuner: Autotuner | None,
        interpret: bool,
        workers: CompileWorkers | None = None,
        records: LaunchRecords | None = None,
    ):
        self.facts = facts
        self.records = None if interpret else records
        """Where the direct launches' records are kept for later processes."""
        self.source = source
        self.module = module
        self.mode = mode
        self.tuner = tuner
        self.interpret = interpret
        self.outputs_from = facts.inputs
        self.chosen: dict[tuple, dict[str, int]] = {}
        """The configuration of each (sizes, device) seen, ready to launch with."""
        self.direct = not interpret and direct_launch_available()
        """Whether calls after the first launch compiled kernels directly."""
        self.stream = current_stream() if self.direct else None
        self.launchers: dict[tuple, Callable] = {}
        """The direct launch of each (device index, sizes, 16-byte alignment of
        each tensor) seen: the keys of Triton's specialization."""
        self.direct_launches: dict[tuple, tuple] = {}
        """The sizes, configuration and compiled launches behind each of
        `launchers`, which native host programs launch from."""
        self.workers = None if interpret else workers
        self.requested: set[tuple[int, ...]] = set()
        """The sizes the compile workers were asked to compile this kernel for."""
        self.compiling: list[Future] = []
        """The compile workers' requests not waited for yet."""
        self.times: CompileTimes | None = None
        """Where the first launches' tuning and compilation seconds go."""

    def candidates(self, symbols: Sequence[int]) -> list[Config]:
        """The configurations to try at these sizes."""
        values = dict(zip(self.facts.symbols, (int(s) for s in symbols)))
        return candidates(self.facts.space, values, self.mode, self.interpret)

    def __call__(self, tensors: Sequence, symbols: Sequence[int]) -> None:
        if self.direct and tensors:
            device = tensors[0].get_device()
            key = (device, *symbols, *[not t.data_ptr() & 15 for t in tensors])
            run = self.launchers.get(key)
            if run is not None:
                run(tensors, self.stream(device))
                return
            self._launch(tensors, symbols, key)
            return
        with INTERPRETER_LOCK if self.interpret else contextlib.nullcontext():
            self._launch(tensors, symbols, None)

    def precompile(self, symbols: Sequence[int]) -> None:
        """Have the compile workers compile the configurations a first call at
        the sizes `symbols` would compile (every candidate when autotuning,
        else the first), while the model's process goes on."""
        sizes = tuple(int(s) for s in symbols)
        if self.workers is None or sizes in self.requested:
            return
        self.workers.start()  # where the compiler has not prepared the target: a direct use of it
        self.requested.add(sizes)
        configs = self.candidates(sizes)
        if self.tuner is None:
            configs = configs[:1]
        for request in compile_requests(self.module, sizes, [config.as_dict() for config in configs]):
            self.compiling.append(self.workers.submit(request))

    def _settle_compiling(self) -> None:
        """Before Triton's JIT first compiles here: wait for the compile
        workers' requests (`_await_compiling`), as kernel compilation time.
        A first launch that loads a recorded binary, with a configuration
        tuned before, waits for none of them."""
        if self.compiling:
            started = time.perf_counter()
            self._await_compiling()
            self._record("kernel_compilation", started)

    def _await_compiling(self) -> None:
        """Wait for the compile workers' requests of this kernel: their
        binaries are then in Triton's cache (a failed request only means the
        JIT compiles here). While the pool is still starting, the JIT
        compiles here at once instead (the pool fills Triton's cache later)."""
        if self.workers is not None and not self.workers.ready():
            self.compiling.clear()
            return
        for future in self.compiling:
            with contextlib.suppress(Exception):
                future.result()
        self.compiling.clear()

    def _launch(self, tensors: Sequence, symbols: Sequence[int], direct_key: tuple | None) -> None:
        """A call without a direct launch yet: choose the configuration on the
        first call at these sizes, then run through the direct launch kept
        under `direct_key` (made here), or through Triton's JIT where there is
        none (the interpreter, a launch hook, a kernel no launcher takes)."""
        key = (*symbols, tensors[0].device) if tensors else tuple(symbols)
        config = self.chosen.get(key)
        first = config is None
        if first:
            config = self._known_config(tensors, symbols)
            if config is None:
                self._settle_compiling()
                started = time.perf_counter()
                config = self._choose(tensors, symbols)
                self._record("autotuning", started)
            self.chosen[key] = config
        started = time.perf_counter()
        if direct_key is not None:
            launches = self._recorded_direct(tensors, direct_key, config)
            if launches is None:
                self._settle_compiling()
                started = time.perf_counter()
                launches = self._compiled_direct(tensors, symbols, config)
                if launches is not None and self.records is not None:
                    self.records.write(self._record_key(tensors, direct_key, config), launches)
            run = None if launches is None else self.module.launcher(symbols, config, launches)
            if first:
                self._record("kernel_compilation", started)
            if run is not None:
                self.launchers[direct_key] = run
                self.direct_launches[direct_key] = (tuple(symbols), config, launches)
                run(tensors, self.stream(direct_key[0]))
                return
        self._settle_compiling()
        started = time.perf_counter()
        kernels = self.module.launch(tensors, symbols, config)
        if first and not self.interpret:
            self._record("kernel_compilation", started)
        if direct_key is not None:
            launches = compiled_launches(kernels)
            if launches is not None:
                self.launchers[direct_key] = self.module.launcher(symbols, config, launches)

    def _compiled_direct(self, tensors: Sequence, symbols: Sequence[int], config: dict[str, int]) -> list | None:
        """The compiled launches of `config` for these tensors and sizes: its
        kernels compiled for them (nothing runs) and loaded on their GPU;
        None where a compiled kernel cannot be launched directly."""
        kernels = self.module.launch(tensors, symbols, config, True)
        return compiled_launches(kernels, tensors[0].get_device())

    def _record_key(self, tensors: Sequence, direct_key: tuple, config: dict[str, int]) -> str:
        """The name of the launch record of `config` at a direct launch's
        key (device index, sizes, pointer alignments) for tensors of these
        element types (Triton's JIT specializes a source for them)."""
        specialization = (*direct_key[1:], *(str(t.dtype) for t in tensors))
        return LaunchRecords.key(self.source, binary_identity(direct_key[0]), specialization, config)

    def _recorded_direct(self, tensors: Sequence, direct_key: tuple, config: dict[str, int]) -> list | None:
        """The launches of `config` at a direct launch's key loaded from a
        record an earlier process kept (`binaries.py`), without Triton's
        JIT; None where there is none, or it does not load."""
        if self.records is None:
            return None
        records = self.records.read(self._record_key(tensors, direct_key, config))
        return None if records is None else stored_launches(records, direct_key[0])

    def _direct_run(self, tensors: Sequence, symbols: Sequence[int], config: dict[str, int]) -> Callable | None:
        """The direct launch of `config` for these tensors and sizes (see
        `_compiled_direct`)."""
        launches = self._compiled_direct(tensors, symbols, config)
        return None if launches is None else self.module.launcher(symbols, config, launches)

    def native_launches(self) -> tuple[tuple, list] | None:
        """What a native host program launches for this kernel: the key of
        its one direct launch so far (device index, sizes, each tensor's
        16-byte alignment), and the temporaries and launches of the module's
        `native_launches` for it; None where the kernel has had several,
        none, a launch the static launcher does not run, or a step that
        calls back (a matrix product's library path that reshapes or casts
        a factor). Steps are launches and the library's products
        (`("product", ...)`, see the matrix-product module's)."""
        if len(self.direct_launches) != 1:
            return None
        ((key, (symbols, config, launches)),) = self.direct_launches.items()
        make = getattr(self.module, "native_launches", None)
        if make is None:
            return None
        made = make(symbols, config, launches)
        if made is None:
            return None
        temporaries, found = made
        launches = [step for step in found if step[0] != "product"]
        if not all(isinstance(kernel[2], StaticLaunch) for _, kernel, _ in launches):
            return None
        return key, temporaries, found

    def _tuning_launch(self) -> Callable[[Sequence, Sequence[int], dict[str, int]], None]:
        """What the autotuner runs a candidate with: its direct launch, made
        on the candidate's first run, or where there is none Triton's JIT."""
        runs: dict[tuple, Callable] = {}

        def launch(tensors: Sequence, symbols: Sequence[int], config: dict[str, int]) -> None:
            key = tuple(sorted(config.items()))
            run = runs.get(key)
            if run is None:
                run = self._direct_run(tensors, symbols, config) if self.direct else None
                if run is None:
                    self.module.launch(tensors, symbols, config)
                    return
                runs[key] = run
            run(tensors, self.stream(tensors[0].get_device()))

        return launch

    def _record(self, stage: str, started: float) -> None:
        """Add the seconds since `started` to `stage` of the compile times."""
        if self.times is not None:
            self.times.add(stage, time.perf_counter() - started)

    def _known_config(self, tensors: Sequence, symbols: Sequence[int]) -> dict[str, int] | None:
        """The configuration for the first call at these sizes where none is
        to be benchmarked: the only or first candidate, or one the tuner
        chose before (in this process or an earlier one)."""
        if not self.interpret and tensors and not tensors[0].is_cuda:
            return None  # `_choose` says why these cannot run
        configs = self.candidates(symbols)
        if len(configs) == 1 or self.tuner is None or self.interpret:
            return configs[0].as_dict()
        known = self.tuner.known(self.source, device_name(tensors[0]), configs, tensors, symbols)
        return None if known is None else known.as_dict()

    def _choose(self, tensors: Sequence, symbols: Sequence[int]) -> dict[str, int]:
        """The configuration for the first call at these sizes: the best guess,
        or on a GPU the fastest candidate."""
        if not self.interpret and tensors and not tensors[0].is_cuda:
            raise RuntimeError(
                f"the triton target runs kernels on CUDA tensors; @{self.facts.kernel} got "
                f"{tensors[0].device} tensors (set TRITON_INTERPRET=1 to run Triton's CPU interpreter)"
            )
        configs = self.candidates(symbols)
        config = configs[0]
        if self.tuner is not None and not self.interpret:
            device = device_name(tensors[0])
            launch = self._tuning_launch()
            config = self.tuner.choose(self.source, device, launch, configs, tensors, symbols, self.outputs_from)
        return config.as_dict()


class TritonTarget:
    """
    Compiles kernels to Triton. `interpret` (default: `TRITON_INTERPRET` is
    set) writes kernels for Triton's CPU interpreter; `mode` is the
    torch.compile mode (`max-autotune` tries more configurations); `autotune`
    turns benchmarking off (the first candidate is used). Modules, tuned
    configurations and Triton's binaries are cached on disk.
    `matmul_templates` is read by the pipeline (products become
    contractions, which this target tiles whenever they reach it).
    """

    name = "triton"

    def __init__(
        self,
        interpret: bool | None = None,
        mode: str = "default",
        autotune: bool = True,
        cache: Path | None = None,
        matmul_templates: bool = False,
    ):
        self.interpret = interpreter_enabled() if interpret is None else interpret
        self.mode = mode
        self.loader = ModuleLoader(cache)
        self.tuner = Autotuner(cache) if autotune else None
        self.records = None if self.interpret else LaunchRecords(cache)
        self.workers = None if self.interpret else shared_compile_workers()
        """The process's compile workers, started by `prepare_to_compile`."""
        self.compiled: dict[tuple[str, tuple[str, ...]], TritonKernel] = {}
        self.times = CompileTimes()
        """Where generating, importing, tuning and compiling kernels add their seconds."""

    @property
    def device(self) -> str:
        """Where a host program allocates when no argument tells: the GPU, or
        the CPU under the interpreter."""
        return "cpu" if self.interpret else "cuda"

    def plan(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> KernelPlan:
        return plan_kernel(kernel, layouts, function_name(kernel.sym_name.data))

    def prepare_to_compile(self) -> None:
        """Start the compile workers (about a second, see `warmup_worker.py`)
        before the graph is lowered, so that they are ready when its kernels
        are emitted; a graph loaded from the compiled-graph cache compiles
        nothing and starts none. (Starting them earlier, as a graph enters
        the backend, made AOTAutograd's trace, which they then run beside,
        slower by more than they saved, on an H200 host of 16 cores.)"""
        if self.workers is not None:
            self.workers.start()

    def compile_kernel(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> TritonKernel:
        key = compiled_kernel_key(kernel, layouts)  # kernels that differ only in name share one
        compiled = self.compiled.get(key)
        if compiled is None:
            with self.times.measure("kernel_emission"):
                plan = self.plan(kernel, layouts)
                source = module_source(plan, self.interpret)
            compiled = self._loaded(LaunchFacts.of(plan), source, self.workers)
            self.compiled[key] = compiled
        return compiled

    def cache_identity(self) -> str:
        """What generated modules depend on besides their IR: whether they are
        written for the interpreter."""
        return "interpreter" if self.interpret else "gpu"

    def kernel_artifact(self, compiled: TritonKernel) -> dict[str, str | int | bytes]:
        """What a later process needs to load `compiled` (`load_kernel`): its
        module's source and its launch facts. Triton's binaries and the tuned
        configurations stay in their own caches."""
        return {"source": compiled.source, "launch": json.dumps(compiled.facts.as_dict()), "interpret": int(self.interpret)}

    def load_kernel(self, artifact: dict[str, str | int | bytes]) -> TritonKernel:
        """A kernel from its `kernel_artifact`: its module written and imported
        again, without planning or generating it. The compile workers are not
        asked to compile it: the process that stored it compiled it into
        Triton's cache, where its first launch finds it sooner than a worker
        would answer (or, that cache cleared, compiles it here)."""
        if int(artifact["interpret"]) != int(self.interpret):
            raise ValueError("the kernel was generated for another Triton mode (interpreter or GPU)")
        facts = LaunchFacts.from_dict(json.loads(str(artifact["launch"])))
        return self._loaded(facts, str(artifact["source"]), workers=None)

    def _loaded(self, facts: LaunchFacts, source: str, workers: CompileWorkers | None) -> TritonKernel:
        """The kernel of a generated module's `source`, imported."""
        with self.times.measure("kernel_loading"):
            module = self.loader.load(source, facts.name)
        compiled = TritonKernel(facts, source, module, self.mode, self.tuner, self.interpret, workers, self.records)
        compiled.times = self.times
        return compiled

    def emit_source(self, kernel: KernelOp, layouts: Sequence[BufferType]) -> str:
        """The Python module generated for `kernel`: its `@triton.jit` function and launcher."""
        return module_source(self.plan(kernel, layouts), self.interpret)
