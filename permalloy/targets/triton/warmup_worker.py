"""
A compile worker: a process that compiles generated kernel modules into
Triton's on-disk cache, so that the process running the model finds them
compiled.

Run as a script (`python warmup_worker.py`), it imports nothing of permalloy
(so that it starts fast and never runs a user's main module): each line of its
standard input is a JSON request

    {"path": ".../triton_pointwise_0_<hash>.py", "module": "permalloy_triton_<hash>",
     "symbols": [4096], "configs": [{"XBLOCK": 1024, "RBLOCK": 0, "num_warps": 4, "num_stages": 1}],
     "environment": {"TRITON_CACHE_DIR": "/home/me/.triton/cache", "TRITON_PTXAS_PATH": "..."}}

and it answers each with one JSON line on its standard output:
`{"compiled": 1, "failed": ["<config>: <error>"]}`. It calls the module's
`warmup(symbols, config)` for each configuration; a configuration that does
not compile (too many registers, shared memory) is reported, not raised:
the model's process meets the same error when it compiles it and skips it as
the autotuner does. `environment` is the requesting process's `TRITON_*`
variables at that moment, which the worker takes on: they choose Triton's
cache directory and tools (`ptxas`), which are part of a binary's cache key,
and a caller may have changed them since the worker started (Inductor points
`TRITON_PTXAS_PATH` at torch's own `ptxas`). `ptxas_version` is the version
text the requesting process's Triton put in its binaries' cache key: Triton
reads it once per process, so a process that changed `TRITON_PTXAS_PATH` after
its first compile keys binaries by the earlier `ptxas`, and the worker keys
them the same way. An empty request (`{}`) is answered
once the worker has imported Triton and torch, which is how a pool starts its
workers ahead of the first kernel. The worker ends when its standard input closes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys


def load_module(path: str, name: str):
    """The generated module at `path`, imported once under `name` (Triton
    reads a kernel's source through its module)."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def take_environment(environment: dict[str, str]) -> None:
    """Set the `TRITON_*` variables to exactly those of `environment`."""
    for name in [n for n in os.environ if n.startswith("TRITON_")]:
        if name not in environment:
            del os.environ[name]
    os.environ.update(environment)


def key_binaries_by_ptxas_version(version: str) -> None:
    """Make Triton's NVIDIA backend put `version` in binaries' cache keys, as
    the requesting process's does (nothing where that backend differs)."""
    try:
        from triton.backends.nvidia import compiler
    except ImportError:
        return
    if hasattr(compiler, "get_ptxas_version"):
        compiler.get_ptxas_version = lambda *_, **__: version


def handle(request: dict) -> dict:
    """Compile every configuration of one request."""
    compiled, failed = 0, []
    if "path" not in request:
        return {"compiled": 0, "failed": []}
    take_environment(request.get("environment", {}))
    if request.get("ptxas_version"):
        key_binaries_by_ptxas_version(request["ptxas_version"])
    try:
        module = load_module(request["path"], request["module"])
    except Exception as error:  # noqa: BLE001 - reported to the requesting process
        return {"compiled": 0, "failed": [f"import: {type(error).__name__}: {error}"]}
    for config in request["configs"]:
        try:
            module.warmup(tuple(request["symbols"]), config)
            compiled += 1
        except Exception as error:  # noqa: BLE001 - reported to the requesting process
            failed.append(f"{config}: {type(error).__name__}: {error}")
    return {"compiled": compiled, "failed": failed}


def compile_without_a_context() -> None:
    """Give Triton's JIT a stream that makes no CUDA context: compiling needs
    the device's kind and capability, not a context, and a context per worker
    would hold half a gigabyte of the GPU's memory. Where Triton's driver has
    no such attribute, the JIT makes its context as usual."""
    try:
        from triton.runtime import driver

        active = driver.active
        if hasattr(active, "get_current_stream"):
            active.get_current_stream = lambda device=None: 0
    except Exception:  # noqa: BLE001 - only memory is at stake
        pass


def serve(requests, answers) -> None:
    """Answer each request line of `requests` on `answers`, until the end of input."""
    for line in requests:
        if line.strip():
            answers.write(json.dumps(handle(json.loads(line))) + "\n")
            answers.flush()


def main() -> None:
    # Answers go to the original standard output; anything a compiler prints
    # goes to standard error, so that it cannot break a JSON line.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import triton  # noqa: F401 - imported before the first request, which then only compiles

    try:
        import torch  # noqa: F401 - what generated modules import
    except ImportError:
        pass

    compile_without_a_context()
    serve(sys.stdin, answers)


if __name__ == "__main__":
    main()
