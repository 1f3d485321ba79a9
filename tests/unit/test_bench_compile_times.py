"""
permalloy-bench's compile-time breakdown (`--compile-times`) and warm compile
(`--warm-compile`, a new process with the cache the first compile filled), in
the JSON and the table; the cold compile starts from an empty cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from permalloy.tools.bench import cli
from permalloy.tools.bench.compile_times import STAGES, summed_compile_times

QUICK_POINTWISE = ["--quick", "--cases", "pointwise_chain", "--backends", "eager,permalloy"]


def _permalloy_result(data: dict) -> dict:
    (case,) = data["cases"]
    return case["results"]["permalloy"]


def _bench_in_own_process(arguments: list[str]) -> subprocess.CompletedProcess:
    """permalloy-bench run with `arguments` in a process of its own, as a
    user runs it (without this process's cache folder), having succeeded."""
    bench = [sys.executable, "-c", "import sys; from permalloy.tools.bench.cli import main; sys.exit(main())"]
    environment = {k: v for k, v in os.environ.items() if k != "PERMALLOY_CACHE_DIR"}
    run = subprocess.run([*bench, *arguments], capture_output=True, text=True, env=environment, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def test_the_json_breaks_compile_time_down(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*QUICK_POINTWISE, "--json", "-"]) == 0
    result = _permalloy_result(json.loads(capsys.readouterr().out))
    times = result["kernels"]["compile_times"]
    assert set(STAGES) <= set(times)
    assert times["cache_misses"] == 1 and times["cache_hits"] == 0, "each case compiles cold"
    assert times["import_fx"] > 0 and times["kernel_compilation"] > 0 and times["aot_autograd"] > 0
    assert {"convert-ptensor-to-loop", "fuse-loops", "plan-memory"} <= set(times["passes"])
    assert times["first_call_s"] == result["compile_s"]
    assert 0 < times["permalloy_s"] < times["first_call_s"]
    assert times["dynamo_and_other"] > 0
    (graph,) = result["kernels"]["per_graph"]
    assert graph["cache"] == "miss" and graph["compile_times"]["passes"]
    assert result["warm_compile"] is None


def test_the_table_shows_the_breakdown_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(QUICK_POINTWISE) == 0
    assert "dynamo+other" not in capsys.readouterr().out
    assert cli.main([*QUICK_POINTWISE, "--compile-times"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if "dynamo+other" in line)
    assert "passes" in lines[header] and "top passes" in lines[header] and "warm" not in lines[header]
    row = lines[header + 2]
    assert row.startswith("pointwise_chain") and " 0/1 " in row


def test_a_warm_compile_hits_the_cache_in_a_new_process() -> None:
    """The bench runs in a process of its own, as a user runs it, so that
    what earlier tests left in this one (compiled code, torch's settings)
    cannot change the graph it compiles cold."""
    run = _bench_in_own_process([*QUICK_POINTWISE, "--warm-compile", "--json", "-"])
    data = json.loads(run.stdout[run.stdout.index("{") :])
    assert data["config"]["warm_compile"] and data["config"]["compile_times"]
    warm = _permalloy_result(data)["warm_compile"]
    assert "error" not in warm, warm
    keys = ("cache_hits", "cache_misses", "cache_lookup", "kernel_compilation", "import_fx")
    assert warm["cache_hits"] == 1 and warm["cache_misses"] == 0, {k: warm.get(k) for k in keys}
    assert warm["passes"] == {} and warm["kernel_compilation"] == 0 and warm["kernel_loading"] > 0
    assert 0 < warm["permalloy_s"] < warm["first_call_s"]
    assert warm["accurate"] and warm["relative_error"] < 1e-4  # checked against eager in the warm process
    assert warm["graphs_before"] == 1  # the one-layer ReLU that paid the process's one-time costs


def test_inductor_compiles_warm_beside_permalloy(tmp_path) -> None:
    """With Inductor among the backends, its warm compile runs too, in a new
    process with the cache folder of its cold compile, where its FX graph
    cache hits; the table shows both warm first calls."""
    cases = ["--quick", "--cases", "pointwise_chain", "--backends", "eager,inductor,permalloy"]
    report = tmp_path / "report.json"
    run = _bench_in_own_process([*cases, "--warm-compile", "--json", str(report)])
    (case,) = json.loads(report.read_text())["cases"]
    warm = case["results"]["inductor"]["warm_compile"]
    assert warm["cache_hits"] >= 1 and warm["cache_misses"] == 0, warm
    lines = run.stdout.splitlines()
    header = next(line for line in lines if "warm s (perm)" in line)
    assert header.rstrip().endswith("warm s (ind)")
    row = lines[lines.index(header) + 2].split()
    permalloy_warm, inductor_warm = float(row[-3]), float(row[-1])
    assert permalloy_warm > 0 and inductor_warm > 0


def test_the_bench_session_restores_the_cache_directory(capsys: pytest.CaptureFixture[str]) -> None:
    before = os.environ.get("PERMALLOY_CACHE_DIR")
    assert cli.main([*QUICK_POINTWISE, "--json", "-"]) == 0
    capsys.readouterr()
    assert os.environ.get("PERMALLOY_CACHE_DIR") == before, "the session restores the cache directory"


def test_summed_compile_times_add_graphs_and_passes() -> None:
    first = {"import_fx": 0.5, "aot_autograd": None, "passes": {"cse": 0.25}}
    second = {"import_fx": 0.25, "aot_autograd": 1.0, "passes": {"cse": 0.5, "dce": 1.0}}
    records = [
        {"compile_seconds": 1.0, "cache": "miss", "compile_times": first},
        {"compile_seconds": 2.0, "cache": "hit", "compile_times": second},
    ]
    times = summed_compile_times(records)
    assert times["import_fx"] == 0.75 and times["aot_autograd"] == 1.0
    assert times["passes"] == {"cse": 0.75, "dce": 1.0}
    assert (times["cache_hits"], times["cache_misses"], times["permalloy_s"]) == (1, 1, 3.0)


def test_the_table_keeps_each_warm_column_that_has_a_value() -> None:
    """Each warm column shows where any case has its value: Inductor's alone
    when permalloy's warm compile did not run (its cold one failed its check)."""
    from types import SimpleNamespace

    from permalloy.tools.bench.compile_times import format_compile_times

    def case(permalloy_warm, inductor_warm):
        times = {"compile_times": {"first_call_s": 1.0}}
        permalloy = SimpleNamespace(kernels=times, warm_compile=permalloy_warm, cold_process=None)
        inductor = SimpleNamespace(kernels={}, warm_compile=inductor_warm, cold_process=None)
        return SimpleNamespace(case="c", results={"permalloy": permalloy, "inductor": inductor})

    def header(cases) -> str:
        return next(line for line in format_compile_times(cases) if line.startswith("case"))

    assert header([case(None, {"first_call_s": 0.5})]).rstrip().endswith("warm s (ind)")
    assert "warm s (perm)" not in header([case(None, {"first_call_s": 0.5})])
    both = header([case({"first_call_s": 2.0, "permalloy_s": 0.1}, {"first_call_s": 0.5})])
    assert "warm s (perm)" in both and both.rstrip().endswith("warm s (ind)")
    assert "warm" not in header([case(None, None)])


def test_the_table_shows_cold_compiles_in_a_new_process_beside_the_warm_ones() -> None:
    from types import SimpleNamespace

    from permalloy.tools.bench.compile_times import format_compile_times

    cold = {"first_call_s": 3.0, "permalloy_s": 1.25}
    permalloy = SimpleNamespace(kernels={"compile_times": {"first_call_s": 1.0}}, warm_compile=None, cold_process=cold)
    inductor = SimpleNamespace(kernels={}, warm_compile=None, cold_process={"first_call_s": 4.0})
    lines = format_compile_times([SimpleNamespace(case="c", results={"permalloy": permalloy, "inductor": inductor})])
    header = next(line for line in lines if line.startswith("case"))
    assert header.rstrip().endswith("new cold s (perm)  new cold s (ind)") and "warm" not in header
    row = lines[lines.index(header) + 2]
    assert row.rstrip().endswith("3.00 (1.25)        4.00")
    assert "cold in a new process" in lines[-1] and "warm:" not in lines[-1]


def test_a_cold_compile_in_a_new_process_starts_from_empty_caches() -> None:
    """`--cold-process` compiles the case again in a new process whose cache
    folders are empty (not the session's, which the first compile filled):
    its graph misses the cache and runs the pipeline, and its result is
    checked against eager there."""
    run = _bench_in_own_process([*QUICK_POINTWISE, "--cold-process", "--json", "-"])
    data = json.loads(run.stdout[run.stdout.index("{") :])
    assert data["config"]["cold_process"] and data["config"]["compile_times"]
    result = _permalloy_result(data)
    cold = result["cold_process"]
    assert "error" not in cold, cold
    assert cold["cache_hits"] == 0 and cold["cache_misses"] == 1
    assert {"convert-ptensor-to-loop", "fuse-loops"} <= set(cold["passes"]) and cold["kernel_compilation"] > 0
    assert 0 < cold["permalloy_s"] < cold["first_call_s"]
    assert cold["accurate"] and cold["relative_error"] < 1e-4
    assert cold["graphs_before"] == 0 and cold["backend_import_s"] >= 0  # the process's first compile
    assert result["warm_compile"] is None


def test_a_warm_process_gets_the_starting_environment_and_the_session_s_caches(monkeypatch) -> None:
    """What a backend set in the bench's process after it started (Inductor
    sets `TRITON_PTXAS_PATH`) does not reach a warm process; the session's
    cache folders do."""
    from permalloy.tools.bench.compile_times import STARTING_ENVIRONMENT, warm_environment

    monkeypatch.setenv("PERMALLOY_TEST_SET_AFTER_START", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", "/tmp/session-cache")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    environment = warm_environment()
    assert "PERMALLOY_TEST_SET_AFTER_START" not in environment
    assert environment["PERMALLOY_CACHE_DIR"] == "/tmp/session-cache"
    assert "TORCHINDUCTOR_CACHE_DIR" not in environment
    assert environment.get("PATH") == STARTING_ENVIRONMENT.get("PATH")


def test_a_compile_in_a_new_process_that_misses_eager_is_marked_in_the_table() -> None:
    from permalloy.tools.bench.compile_times import _new_process_cell

    def first_call(warm):
        return f"{warm['first_call_s']:.2f}"

    assert _new_process_cell({"first_call_s": 1.5, "accurate": False, "relative_error": 0.3}, first_call) == "1.50 FAIL"
    assert _new_process_cell({"first_call_s": 1.5, "accurate": True, "relative_error": 1e-7}, first_call) == "1.50"
