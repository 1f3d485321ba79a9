"""
Where permalloy's compile time goes, case by case (`--compile-times`), and
how long a compile takes once the cache holds it (`--warm-compile`).

The stages come from `permalloy.stats()` (`CompileTimes`), summed over a
case's graphs: AOTAutograd, import, each pass, kernel emission, compilation,
loading and tuning, host-program generation and the compiled-graph cache.
Dynamo's tracing is not measured by permalloy: what the first call took
beyond the measured stages (Dynamo, guards, the first run itself) is
reported as `dynamo_and_other`.

A warm compile runs the case again in a new process (`python -m
permalloy.tools.bench.compile_times`) with the caches the cold compile
filled: for permalloy its compiled graphs, Triton's modules, tuned
configurations and binaries; for Inductor its own cache folder (its FX graph
and AOTAutograd caches and Triton's binaries), which the cold compile's
session keeps until the warm process ran.

A cold compile in a new process (`--cold-process`) runs the case with
empty cache folders as the process's first compile: it pays what a user's
new process pays once (starting permalloy's compile workers or Inductor's,
loading libraries), where a warm compile comes after a one-layer ReLU's
compile that paid it. The bench's own first call of a case is not
one: eager, and Inductor before permalloy, ran the case's operations in the
bench's process first, and what the process keeps of that (cuDNN's chosen
convolution algorithms, cuBLAS's handles and workspaces, loaded modules)
spares the backend that comes later part of its first call.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

STAGES = (
    "aot_autograd",
    "import_fx",
    "kernel_emission",
    "kernel_compilation",
    "kernel_loading",
    "autotuning",
    "host_program",
    "cache_lookup",
    "cache_store",
)
"""The stages of `CompileTimes` besides the passes, in pipeline order."""


def summed_compile_times(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The compile-time stages of the stats `records` (one per graph) summed,
    passes by name; with the cache's hits and misses."""
    times: dict[str, Any] = {stage: 0.0 for stage in STAGES}
    passes: dict[str, float] = {}
    for record in records:
        measured = record.get("compile_times") or {}
        for stage in STAGES:
            times[stage] += measured.get(stage) or 0.0
        for name, seconds in (measured.get("passes") or {}).items():
            passes[name] = passes.get(name, 0.0) + seconds
    times["passes"] = passes
    times["permalloy_s"] = sum(r.get("compile_seconds", 0.0) for r in records)
    times["cache_hits"] = sum(r.get("cache") == "hit" for r in records)
    times["cache_misses"] = sum(r.get("cache") == "miss" for r in records)
    return times


def measured_seconds(times: dict[str, Any]) -> float:
    """The seconds of the measured stages, passes included."""
    return sum(times.get(stage) or 0.0 for stage in STAGES) + sum(times.get("passes", {}).values())


def add_first_call_remainder(times: dict[str, Any], first_call_s: float | None) -> None:
    """Add `dynamo_and_other`: the first call's seconds less the measured stages."""
    if first_call_s is not None:
        times["first_call_s"] = first_call_s
        times["dynamo_and_other"] = first_call_s - measured_seconds(times)


# -- warm and cold compiles, in a new process -------------------------------------------------


STARTING_ENVIRONMENT = types.MappingProxyType(dict(os.environ))
"""The environment of the bench's process when it started (before any
backend compiled): what a warm process gets, as a new process of the user's
would, rather than what a backend set since (Inductor sets
`TRITON_PTXAS_PATH` for the rest of its process)."""

SESSION_VARIABLES = ("PERMALLOY_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
"""The cache folders a backend's session sets, which its warm process shares."""


def warm_environment() -> dict[str, str]:
    """The environment of a warm process: the bench's starting one with the
    current session's cache folders."""
    environment = dict(STARTING_ENVIRONMENT)
    for name in SESSION_VARIABLES:
        environment.pop(name, None)
        if name in os.environ:
            environment[name] = os.environ[name]
    return environment


def warm_compile(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """`compile_in_new_process` with the current session's caches."""
    return compile_in_new_process(*args, **kwargs, environment=warm_environment())


def cold_compile(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """`compile_in_new_process` with empty cache folders of its own (removed
    after), the case being the process's first compile."""
    with tempfile.TemporaryDirectory(prefix="permalloy-cold-") as folder:
        environment = dict(STARTING_ENVIRONMENT)
        for name in SESSION_VARIABLES:
            environment[name] = os.path.join(folder, name.lower())
        return compile_in_new_process(*args, **kwargs, environment=environment, first=True)


def compile_in_new_process(
    suite: str,
    case: str,
    device: str,
    quick: bool,
    train: bool,
    threads: int | None,
    backend: str = "permalloy",
    target_options: Sequence[tuple[str, Any]] = (),
    *,
    environment: dict[str, str],
    first: bool = False,
) -> dict[str, Any]:
    """Compile `case` with `backend` (permalloy or inductor) in a new process
    of `environment` (which names its cache folders: `$PERMALLOY_CACHE_DIR`,
    `$TORCHINDUCTOR_CACHE_DIR`, `$TRITON_CACHE_DIR`), with the current thread
    count (part of the CPU target's cache key; `threads`, else torch's now),
    and permalloy's `target_options`: its first call's seconds and, for
    permalloy, compile times; or `{"error": ...}`. With `first` the case is
    the process's first compile (see `_new_process_main`)."""
    import torch

    argv = [sys.executable, "-m", "permalloy.tools.bench.compile_times", "--suite", suite, "--case", case]
    argv += ["--backend", backend]
    argv += ["--device", device, *(["--quick"] if quick else []), *(["--train"] if train else [])]
    argv += ["--threads", str(threads if threads is not None else torch.get_num_threads())]
    argv += ["--first"] if first else []
    for name, value in target_options:
        argv += ["--target-option", f"{name}={value!r}"]
    environment = dict(environment)
    package_root = str(Path(__file__).resolve().parents[3])
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, environment.get("PYTHONPATH")]))
    result = subprocess.run(argv, capture_output=True, text=True, env=environment, check=False)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit status {result.returncode}"}
    return json.loads(result.stdout.strip().splitlines()[-1])


def _new_process_main(argv: Sequence[str] | None = None) -> int:
    """The new process of a warm or cold compile: the case compiled and
    called once, its times as one line of JSON (for Inductor, the first
    call's seconds and its FX graph cache's hits and misses). Before it, a
    warm compile compiles a one-layer ReLU, which pays the process's
    one-time costs (a pool of compile workers started, libraries loaded), so
    that its time is the graph's own; with `--first` (a cold compile) the
    case is the process's first compile, which pays them, as a user's new
    process does (`graphs_before`: the graphs Dynamo compiled before the
    case). Either way the backend's modules are imported before it
    (`backend_import_s`)."""
    import torch

    import permalloy
    from permalloy.tools.bench.backends import Inductor, Permalloy, parse_target_option
    from permalloy.tools.bench.profiles import profile_for
    from permalloy.tools.bench.runner import full_float32, make_workload
    from permalloy.tools.bench.suites import make_suite
    from permalloy.tools.bench.timing import synchronizer, timed

    parser = argparse.ArgumentParser(prog="permalloy.tools.bench.compile_times")
    parser.add_argument("--suite", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--backend", choices=("permalloy", "inductor"), default="permalloy")
    parser.add_argument("--target-option", action="append", default=[])
    parser.add_argument("--first", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    profile, workload = profile_for(args.device, args.quick), make_workload(args.train)
    options = dict(parse_target_option(text) for text in args.target_option)
    adapter = Permalloy(args.device, False, options) if args.backend == "permalloy" else Inductor()
    sync = synchronizer(args.device)
    started = time.perf_counter()
    importlib.import_module("permalloy.tools.backend" if args.backend == "permalloy" else "torch._inductor.compile_fx")
    process = {"backend_import_s": time.perf_counter() - started}
    with torch.set_grad_enabled(workload.grad_enabled), full_float32():
        if not args.first:
            (warmup,) = workload.prepare_inputs([(torch.randn(8, device=args.device),)])
            relu = workload.prepare(torch.nn.Sequential(torch.nn.ReLU()), warmup)
            workload.step(adapter.compile(relu), relu)(warmup)
        case = make_suite(args.suite).build(args.case, profile, profile.size.seed)
        inputs = tuple(t.to(args.device) for t in case.inputs)
        model = workload.prepare(case.model.to(args.device), inputs)
        (inputs,) = workload.prepare_inputs([inputs])
        process["graphs_before"] = torch._dynamo.utils.counters["stats"]["unique_graphs"]  # noqa: SLF001
        torch._dynamo.reset()  # noqa: SLF001
        torch._dynamo.utils.counters.clear()  # noqa: SLF001 - the counts of the warm-up's compile
        permalloy.reset_stats()
        compiled = adapter.compile(model)
        _, seconds = timed(lambda: workload.step(compiled, model)(inputs), sync)
        records = permalloy.stats()
        # what the new process runs is checked against eager, as the bench's own first call is
        accuracy = workload.compare(workload.results(compiled, model, [inputs]), workload.results(model, model, [inputs]))
    checked = {"relative_error": accuracy.relative_error, "accurate": accuracy.passed, **process}
    if args.backend == "inductor":
        print(json.dumps({"first_call_s": seconds, **_inductor_cache_counts(), **checked}))
        return 0
    times = summed_compile_times(records)
    add_first_call_remainder(times, seconds)
    print(json.dumps({**times, **checked}))
    return 0


def _inductor_cache_counts() -> dict[str, int]:
    """Inductor's FX graph cache hits and misses in this process, which say
    whether its warm compile was one."""
    from torch._dynamo.utils import counters

    inductor = counters["inductor"]
    return {"cache_hits": inductor["fxgraph_cache_hit"], "cache_misses": inductor["fxgraph_cache_miss"]}


# -- the table --------------------------------------------------------------------------

def _stage(key: str):
    return lambda times: _seconds(times.get(key))


def _passes(times: dict[str, Any]) -> str:
    return _seconds(sum(times.get("passes", {}).values()))


def _cache(times: dict[str, Any]) -> str:
    seconds = (times.get("cache_lookup") or 0.0) + (times.get("cache_store") or 0.0)
    return f"{seconds:.2f} {times.get('cache_hits', 0)}/{times.get('cache_misses', 0)}"


def _top_passes(times: dict[str, Any]) -> str:
    top = sorted(times.get("passes", {}).items(), key=lambda item: -item[1])[:3]
    return ", ".join(f"{name} {seconds:.2f}" for name, seconds in top)


_COLUMNS = (
    ("first call s", _stage("first_call_s")),
    ("dynamo+other", _stage("dynamo_and_other")),
    ("aot", _stage("aot_autograd")),
    ("import", _stage("import_fx")),
    ("passes", _passes),
    ("emit", _stage("kernel_emission")),
    ("compile", _stage("kernel_compilation")),
    ("load", _stage("kernel_loading")),
    ("tune", _stage("autotuning")),
    ("host", _stage("host_program")),
    ("cache h/m", _cache),
    ("top passes", _top_passes),
)
"""Each column's title and cell, from a case's summed compile times."""


_NEW_PROCESS_COLUMNS = (
    ("cold_process", "new cold s (perm)", "new cold s (ind)",
     "cold in a new process: the first call of the process's first compile, with empty caches "
     "(permalloy's share), and Inductor's"),
    ("warm_compile", "warm s (perm)", "warm s (ind)",
     "warm: the first call in a new process with the caches filled (permalloy's share), and Inductor's"),
)
"""The optional columns of compiles in a new process, each a pair (permalloy,
Inductor): the `BackendResult` field, the titles and the legend's words."""


def format_compile_times(cases: Sequence[Any]) -> list[str]:
    """permalloy's compile time per case, stage by stage (seconds), with the
    compiles in a new process where they ran (cold and warm; permalloy's, and
    Inductor's beside it); no lines when no case has them."""
    rows = []
    for case in cases:
        result = case.results.get("permalloy")
        times = None if result is None else result.kernels.get("compile_times")
        if times:
            rows.append(_row(case.case, times, result, case.results.get("inductor")))
    if not rows:
        return []
    titles = ["case", *(title for title, _ in _COLUMNS)]
    for _, permalloy_title, inductor_title, _ in _NEW_PROCESS_COLUMNS:
        titles += [permalloy_title, inductor_title]
    fixed = len(_COLUMNS) + 1
    kept = [i for i in range(len(titles)) if i < fixed or any(row[i] != "-" for row in rows)]
    legends = [
        legend
        for n, (*_, legend) in enumerate(_NEW_PROCESS_COLUMNS)
        if {fixed + 2 * n, fixed + 2 * n + 1} & set(kept)
    ]
    titles, rows = [titles[i] for i in kept], [[row[i] for i in kept] for row in rows]
    table = [titles, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(titles))]
    left = {0, titles.index("top passes"), *range(fixed, len(titles))}
    aligned = [
        "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in table
    ]
    aligned = [line.rstrip() for line in aligned]
    legend = (
        "compile times (permalloy, seconds, summed over a case's graphs): first call (Dynamo "
        "included), Dynamo and the rest of the first call, AOTAutograd, import, passes, kernel "
        "emission, compilation, loading and tuning, host program, compiled-graph cache (lookup "
        "and store; hits/misses), the three costliest passes"
    )
    legend += "".join(f"; {words}, where it ran" for words in legends)
    return ["", aligned[0], "  ".join("-" * w for w in widths), *aligned[1:], "", legend]


def _row(case: str, times: dict[str, Any], permalloy: Any, inductor: Any | None) -> list[str]:
    cells = [case, *(cell(times) for _, cell in _COLUMNS)]
    for field, *_ in _NEW_PROCESS_COLUMNS:
        ours, theirs = getattr(permalloy, field), inductor and getattr(inductor, field)
        cells.append(_new_process_cell(ours, lambda w: f"{w.get('first_call_s', 0.0):.2f} ({w.get('permalloy_s', 0.0):.2f})"))
        cells.append(_new_process_cell(theirs, lambda w: f"{w.get('first_call_s', 0.0):.2f}"))
    return cells


def _new_process_cell(compiled: dict[str, Any] | None, text: Callable[[dict[str, Any]], str]) -> str:
    if compiled is None:
        return "-"
    if "error" in compiled:
        return f"error: {compiled['error'][:40]}"
    return text(compiled) + (" FAIL" if compiled.get("accurate") is False else "")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    sys.exit(_new_process_main())
