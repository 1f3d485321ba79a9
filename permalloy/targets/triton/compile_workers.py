"""
Compiling Triton kernels in parallel, in worker processes.

Compiling one configuration of one kernel takes Triton a fifth of a second
(most of it in LLVM and `ptxas`, which hold the interpreter lock or run as a
child process), and a model compiles hundreds: one after the other, they are
most of a GPU model's first call. When a host program is built, each kernel's
candidate configurations at the first call's sizes go to a pool of worker
processes (`warmup_worker.py`) that compile them into Triton's on-disk cache;
a kernel's first launch waits for its own requests only, then Triton's JIT
finds the binaries cached. As Inductor does, with its pool of compile workers;
and as Inductor's, a first launch while the pool is still starting
compiles in the model's process instead of waiting. Workers import Triton
but not torch (`warmup_worker.py`), so they start in about a second, in time
for a process's first graph.

The workers are separate interpreters started with the script's path, not
forks (the model's process holds a CUDA context) nor `multiprocessing` spawns
(which import the user's main module again). Their count is
`PERMALLOY_COMPILE_WORKERS`, by default one per available core up to 16 on
machines of four cores or more, else none (kernels compile in the model's
process, as without the pool). One pool serves every graph of a process,
started once.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

WORKERS_VARIABLE = "PERMALLOY_COMPILE_WORKERS"
MOST_WORKERS = 16
FEWEST_CORES = 4
"""Below this many cores, kernels compile in the model's process."""
WORKER_SCRIPT = Path(__file__).with_name("warmup_worker.py")


def worker_count(environ: dict[str, str] | None = None, cores: int | None = None) -> int:
    """How many compile workers to run: `PERMALLOY_COMPILE_WORKERS` (0 for
    none), else one per core up to `MOST_WORKERS` where there are at least
    `FEWEST_CORES`."""
    environ = os.environ if environ is None else environ
    configured = environ.get(WORKERS_VARIABLE, "").strip()
    if configured:
        try:
            count = int(configured)
        except ValueError:
            raise ValueError(
                f"{WORKERS_VARIABLE} must be a number of worker processes (0 for none), not {configured!r}"
            ) from None
        if count < 0:
            raise ValueError(f"{WORKERS_VARIABLE} must be 0 or more, not {count}")
        return count
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cores, MOST_WORKERS) if cores >= FEWEST_CORES else 0


class CompileWorkers:
    """
    A pool of worker processes compiling kernel modules into Triton's cache.

    `submit(request)` returns a future of the worker's answer (a dict with
    `compiled` and `failed`). Each of `count` threads owns one worker process,
    started on the thread's first request and restarted if it died; a worker
    that dies mid-request fails that request's future (the kernel then
    compiles in the model's process).
    """

    def __init__(self, count: int, script: Path = WORKER_SCRIPT):
        self.count = count
        self.script = script
        self._threads = ThreadPoolExecutor(max_workers=count, thread_name_prefix="permalloy-compile")
        self._local = threading.local()
        self._started: list[Future] = []
        """Each worker's first answer, once `start` has asked for it."""

    def submit(self, request: dict[str, Any]) -> Future:
        return self._threads.submit(self._ask, request)

    def start(self) -> None:
        """Start every worker now (they take a second or so to import Triton
        and load its GPU driver), so that they are ready when the first
        kernels are emitted; only the first call does anything."""
        if not self._started:
            introduction = {"capability": gpu_capability()}
            self._started = [self.submit(introduction) for _ in range(self.count)]

    def ready(self) -> bool:
        """Whether every worker has started (and answered, or died trying):
        until then a kernel's first launch compiles in the model's process
        rather than wait for the pool, as Inductor's does."""
        return bool(self._started) and all(future.done() for future in self._started)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        worker = self._worker()
        assert worker.stdin is not None and worker.stdout is not None
        try:
            worker.stdin.write(json.dumps(request) + "\n")
            worker.stdin.flush()
            answer = worker.stdout.readline()
        except OSError as error:
            raise RuntimeError(f"a compile worker failed: {error}") from error
        if not answer:
            raise RuntimeError(f"a compile worker exited with status {worker.wait()}")
        return json.loads(answer)

    def _worker(self) -> subprocess.Popen:
        """This thread's worker process, started or restarted as needed."""
        worker = getattr(self._local, "worker", None)
        if worker is None or worker.poll() is not None:
            worker = subprocess.Popen(
                [sys.executable, str(self.script)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
            self._local.worker = worker
        return worker


def triton_environment() -> dict[str, str]:
    """This process's `TRITON_*` variables now, with the cache directory Triton
    uses (which a program may have set through Triton's settings instead)."""
    environment = {name: value for name, value in os.environ.items() if name.startswith("TRITON_")}
    try:
        from triton import knobs
    except ImportError:
        return environment
    if knobs.cache.dir:
        environment["TRITON_CACHE_DIR"] = knobs.cache.dir
    return environment


def gpu_capability() -> list[int] | None:
    """The current GPU's compute capability, which a worker's stand-in for
    torch gives Triton (`warmup_worker.py`); None without a GPU (the worker
    then imports torch)."""
    try:
        import torch

        return list(torch.cuda.get_device_capability()) if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - no capability: the worker imports torch
        return None


def ptxas_version() -> str | None:
    """The `ptxas` version text this process's Triton puts in binaries' cache
    keys for the current GPU (read once per process by Triton), if its NVIDIA
    backend says."""
    try:
        import torch
        from triton.backends.nvidia import compiler

        major, minor = torch.cuda.get_device_capability()
        try:
            return compiler.get_ptxas_version(major * 10 + minor)
        except TypeError:  # a Triton whose ptxas does not depend on the GPU
            return compiler.get_ptxas_version()
    except Exception:  # noqa: BLE001 - another backend or Triton version: keys as they come
        return None


def compile_requests(module: ModuleType, symbols: Sequence[int], configs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Workers' requests to compile `module`'s kernel by its `warmup(symbols,
    config)`, one per configuration of `configs` (so that a kernel's
    candidates compile on several workers at once), in this process's Triton
    environment and for its GPU, which are read once for all of them."""
    shared = {
        "path": module.__file__,
        "module": module.__name__,
        "symbols": list(symbols),
        "environment": triton_environment(),
        "ptxas_version": ptxas_version(),
        "capability": gpu_capability(),
    }
    return [{**shared, "configs": [config]} for config in configs]


@functools.cache
def shared_compile_workers() -> CompileWorkers | None:
    """The process's pool of compile workers, made on first use; None where
    kernels compile in the model's process (`worker_count` is 0 or 1)."""
    count = worker_count()
    return CompileWorkers(count) if count > 1 else None
