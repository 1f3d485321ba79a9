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
them the same way. `capability` is the requesting process's GPU
compute capability, which a request without a `path` brings (`{"capability":
[9, 0]}`, answered at once): that is how a pool starts its workers ahead of
the first kernel. The worker ends when its standard input closes.

A worker compiles without importing torch, which takes a new process
several seconds (most of a pool's start, and more than a first graph takes
to compile): Triton itself does not need it. Generated modules import torch
for their launch functions, which the worker never calls; their `warmup`
passes torch dtypes to Triton, and Triton's GPU driver asks torch for the
current device and its capability. So the worker imports, as `torch`, a
stand-in that has torch's dtypes and answers those questions with the
requesting process's capability (`torch_stand_in`). Should a compile fail
with the stand-in (a Triton that asks torch for more), the worker imports
torch and compiles that request again; a request without a capability (a
caller of another version) gets torch as before.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import types


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


STAND_IN_DTYPES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
)
"""The dtypes of `torch_stand_in`, by torch's names."""


class dtype:  # noqa: N801 - Triton recognizes a torch dtype by its class's name and module
    """A torch dtype as Triton's `warmup` reads one: by its text (`torch.float32`)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    __str__ = __repr__


dtype.__module__ = "torch"


def torch_stand_in(capability: tuple[int, int]) -> types.ModuleType:
    """A module to import as `torch` in this process: torch's dtypes, and
    the answers Triton's GPU driver asks torch for (the current device, its
    compute capability `capability`, that CUDA is there, that it is not
    ROCm). It has nothing else, so that a use of anything else fails (and
    the request is compiled again with torch)."""
    stand_in = types.ModuleType("torch", "Stands for torch in a compile worker (warmup_worker.py).")
    for name in STAND_IN_DTYPES:
        setattr(stand_in, name, dtype(name))
    stand_in.cuda = types.SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 1,
        current_device=lambda: 0,
        set_device=lambda device: None,
        get_device_capability=lambda device=None: tuple(capability),
    )
    stand_in.version = types.SimpleNamespace(hip=None)
    return stand_in


def uses_stand_in() -> bool:
    """Whether `torch` here is `torch_stand_in`'s module."""
    module = sys.modules.get("torch")
    return module is not None and isinstance(getattr(module, "float32", None), dtype)


def provide_torch(request: dict) -> None:
    """Before the first request's compile: torch's stand-in where the
    request says the GPU's capability and torch is not imported, else torch."""
    if "torch" not in sys.modules:
        capability = request.get("capability")
        if capability is None:
            import_torch()
        else:
            sys.modules["torch"] = torch_stand_in(tuple(capability))
    compile_without_a_context()


def import_torch() -> None:
    """Import torch itself, in place of its stand-in where there was one,
    and forget the generated modules imported with the stand-in."""
    if uses_stand_in():
        del sys.modules["torch"]
        for name in [n for n, m in sys.modules.items() if getattr(m, "__file__", None) and n.startswith(GENERATED_PREFIX)]:
            del sys.modules[name]
    try:
        import torch  # noqa: F401 - what generated modules import
    except ImportError:
        pass


GENERATED_PREFIX = "permalloy_"
"""How the names of generated modules begin (`permalloy_triton_<hash>`)."""


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
    """Compile every configuration of one request; with torch where one
    failed with its stand-in."""
    provide_torch(request)
    if "path" not in request:
        return {"compiled": 0, "failed": []}
    answer = compile_request(request)
    if answer["failed"] and uses_stand_in():
        import_torch()  # Triton's driver, made with the stand-in, keeps its stream without a context
        answer = compile_request(request)
    return answer


def compile_request(request: dict) -> dict:
    """Compile every configuration of one request."""
    compiled, failed = 0, []
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

    serve(sys.stdin, answers)


if __name__ == "__main__":
    main()
