"""
permalloy-bench: flags, the JSON it writes, failures reported rather than raised,
clear errors for bad flags. Runs use `--quick` on the smallest case.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch

from permalloy.tools.bench import cli, report, saved, timing
from permalloy.tools.bench.backends import Permalloy, parse_target_option
from permalloy.tools.bench.profiles import QUICK
from permalloy.tools.zoo import CASES

QUICK_POINTWISE = ["--quick", "--cases", "pointwise_chain", "--backends", "eager,permalloy"]


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    """Run the CLI with `--json -` and parse what it printed."""
    assert cli.main([*argv, "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return json.loads(captured.out)


def test_cli_parses_flags() -> None:
    argv = ["--device", "cpu", "--cases", "mlp,layer_norm,mlp", "--backends", "permalloy,eager"]
    args = cli.build_parser().parse_args([*argv, "--quick"])
    config = cli.parse_config(args)
    assert config.device == "cpu"
    assert config.cases == ("mlp", "layer_norm")
    assert config.backends == ("eager", "permalloy")
    assert config.profile == QUICK
    assert config.threads is None
    assert cli.parse_config(cli.build_parser().parse_args(["--threads", "1"])).threads == 1


def test_target_options_reach_permalloy_and_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    """`--target-option NAME=VALUE` (values read as Python literals where
    they are one) compiles permalloy with the option, and the JSON, its
    reading back and the table's heading say so."""
    data = run_json([*QUICK_POINTWISE, "--target-option", "parallel_threshold=4096"], capsys)
    assert data["config"]["target_options"] == {"parallel_threshold": 4096}
    assert saved.report_from_dict(data).config.target_options == (("parallel_threshold", 4096),)
    assert "permalloy target options: parallel_threshold=4096" in report.format_table(saved.report_from_dict(data))
    args = cli.build_parser().parse_args(["--target-option", "vector_bits=256", "--target-option", "x=text"])
    assert [parse_target_option(t) for t in args.target_option] == [("vector_bits", 256), ("x", "text")]


def test_cli_defaults_to_every_case_and_backend() -> None:
    config = cli.parse_config(cli.build_parser().parse_args([]))
    assert config.cases == tuple(CASES)
    assert "vit_block" in config.cases
    assert config.backends == ("eager", "inductor", "permalloy")
    assert config.profile.name == "cpu"


def test_quick_json_has_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(QUICK_POINTWISE, capsys)
    assert data["config"]["backends"] == ["eager", "permalloy"]
    assert data["copy_bandwidth"]["median_gb_per_s"] > 0
    assert data["machine"]["torch_threads"] >= 1
    (case,) = data["cases"]
    assert case["case"] == "pointwise_chain" and case["memory_bound"]
    assert case["traffic_bytes"] > 0 and case["input_sets"] >= 2
    eager, ours = case["results"]["eager"], case["results"]["permalloy"]
    assert eager["ok"] and eager["speedup_vs_eager"] == 1.0
    assert ours["ok"] and ours["error"] is None
    assert ours["compile_s"] > 0
    assert ours["accuracy"]["passed"] and ours["accuracy"]["tolerance"] == 1e-4
    assert ours["accuracy"]["relative_error"] < 1e-4 and ours["accuracy"]["max_abs_error"] < 1e-4
    timing = ours["time"]
    assert 0 < timing["min_s"] <= timing["median_s"] and timing["iqr_s"] >= 0
    assert timing["runs"] >= QUICK.min_runs
    assert ours["speedup_vs_eager"] > 0 and ours["speedup_vs_inductor"] is None
    assert ours["kernels"]["kernels"] >= 1 and ours["kernels"]["fallback_ops"] == []
    assert 0 < ours["bandwidth_fraction_of_copy"]
    assert data["geomean"]["permalloy"]["speedup_vs_eager"] > 0


def test_float64_reference_reports_each_backends_error_against_it(capsys: pytest.CaptureFixture[str]) -> None:
    """With `--float64-reference` every backend, eager float32 included, has
    its relative error against the model run in float64: rounding-sized, and
    none without the flag; the table lists them and a saved report keeps them."""
    data = run_json([*QUICK_POINTWISE, "--float64-reference"], capsys)
    assert data["config"]["float64_reference"] is True
    (case,) = data["cases"]
    for backend in ("eager", "permalloy"):
        error = case["results"][backend]["float64_error"]
        assert 0 < error < 1e-6, (backend, error)
    table = report.format_table(saved.report_from_dict(data))
    assert "rel err against the model run in float64" in table
    assert "pointwise_chain: eager " in table and ", permalloy " in table
    plain = run_json(QUICK_POINTWISE, capsys)
    assert plain["cases"][0]["results"]["permalloy"]["float64_error"] is None


def test_failing_backend_is_reported_not_raised(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(self, model):
        raise RuntimeError("lowering exploded\nwith a long traceback")

    monkeypatch.setattr(Permalloy, "compile", broken)
    data = run_json(QUICK_POINTWISE, capsys)
    results = data["cases"][0]["results"]
    assert results["eager"]["ok"] and results["eager"]["time"]["median_s"] > 0
    failed = results["permalloy"]
    assert not failed["ok"] and failed["time"] is None
    assert failed["error"] == "RuntimeError: lowering exploded"
    assert data["geomean"]["permalloy"]["speedup_vs_eager"] is None


def test_table_shows_errors_and_geomeans(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(Permalloy, "compile", lambda self, model: 1 / 0)
    assert cli.main(QUICK_POINTWISE) == 0
    captured = capsys.readouterr()
    assert "perm: ZeroDivisionError: division by zero" in captured.out
    assert "geomean" in captured.out and "copy bandwidth" in captured.out
    assert "pointwise_chain / permalloy" in captured.err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--cases", "resnet"], "unknown case 'resnet'; valid cases: pointwise_chain, layer_norm"),
        (["--cases", "mlp,,gpt2_block"], "empty case name"),
        (["--backends", "eager,tvm"], "unknown backend 'tvm'; valid backends: eager, inductor"),
        (["--device", "tpu"], "unknown device 'tpu'; valid devices: cpu, cuda"),
        (["--threads", "0"], "--threads takes a positive integer, not '0'"),
        (["--json", "/no/such/folder/out.json"], "folder /no/such/folder does not exist"),
        (["--target-option", "vector_bits"], "--target-option takes NAME=VALUE, not 'vector_bits'"),
        (["--target-option", "attention=torch"], "target 'llvm' has no option 'attention'; its options: vector_bits"),
        (["--target-option", "vector_bits=100"], "option 'vector_bits' of target 'llvm'"),
    ],
)
def test_bad_flags_list_valid_values(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_plot_without_matplotlib_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*QUICK_POINTWISE, "--plot", "out.png"])
    assert exit_info.value.code == 2
    assert "pip install 'permalloy[plot]'" in capsys.readouterr().err


def test_geomean() -> None:
    assert report.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert report.geomean([None, 3.0]) == pytest.approx(3.0)
    assert report.geomean([]) is None


def test_plot_draws_speedups_and_failures(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(Permalloy, "compile", lambda self, model: 1 / 0)
    path = tmp_path / "speedups.png"
    assert cli.main([*QUICK_POINTWISE, "--plot", str(path), "--json", "-"]) == 0
    assert path.read_bytes().startswith(b"\x89PNG")
    capsys.readouterr()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--device", "cuda", "--quick", "--cases", "mlp"]) == 1
    assert "CUDA is not available" in capsys.readouterr().err


def test_interleaved_timing_drops_a_failing_function() -> None:
    calls = []

    def fine(i: int) -> None:
        calls.append(("fine", i))

    def breaks_later(i: int) -> None:
        calls.append(("breaks", i))
        if i >= QUICK.warmup + 1:
            raise RuntimeError("second timed call")

    result = timing.measure_interleaved({"fine": fine, "breaks": breaks_later}, lambda: None, QUICK)
    assert isinstance(result["breaks"], RuntimeError)
    assert result["fine"].runs == QUICK.max_runs
    timed_calls = [c for c in calls if c[1] >= QUICK.warmup]
    assert timed_calls[:4] == [("fine", 1), ("breaks", 1), ("fine", 2), ("breaks", 2)]


def test_back_to_back_rounds_interleave_and_synchronize_around_each_round() -> None:
    events = []
    calls = {"a": lambda: events.append("a"), "b": lambda: events.append("b")}
    medians = timing.back_to_back_ms(calls, 2, 3, lambda: events.append("sync"))
    round_of = ["sync", "a", "a", "a", "sync", "sync", "b", "b", "b", "sync"]
    assert events == round_of * 2
    assert set(medians) == {"a", "b"} and all(ms >= 0 for ms in medians.values())


def test_verbose_prints_the_explain_report_of_a_failing_case(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(Permalloy, "compile", lambda self, model: 1 / 0)
    assert cli.main([*QUICK_POINTWISE, "--verbose", "--json", "-"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # stdout keeps the JSON alone
    assert "pointwise_chain: permalloy failed: ZeroDivisionError: division by zero" in captured.err
    assert "1 Dynamo graph(s), 0 graph break(s)" in captured.err
    assert "kernel pointwise" in captured.err and "compile time: graph compiled in" in captured.err


def test_verbose_explains_cases_slower_than_inductor_only() -> None:
    from permalloy.tools.bench.explained import why_explain
    from permalloy.tools.bench.results import BackendResult

    def timed(backend: str, median: float) -> BackendResult:
        return BackendResult(backend, timing=timing.TimingStats(median, median, median, median, 5, 1))

    slower = {"inductor": timed("inductor", 1e-3), "permalloy": timed("permalloy", 2e-3)}
    assert why_explain(slower) == "permalloy is slower than Inductor: 2.000 ms against 1.000 ms"
    faster = {"inductor": timed("inductor", 2e-3), "permalloy": timed("permalloy", 1e-3)}
    assert why_explain(faster) is None
    assert why_explain({"permalloy": timed("permalloy", 1e-3)}) is None


def test_a_run_stopped_before_its_end_leaves_the_cases_it_finished(
    monkeypatch: pytest.MonkeyPatch, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `--json FILE`, the report of the cases done so far is written
    after each case: a run stopped by a time limit keeps what it measured."""
    from permalloy.tools.bench import runner

    finish = runner._run_case
    started = []

    def stopped_at_the_second(index, name, *args, **kwargs):
        started.append(name)
        if index == 1:
            raise KeyboardInterrupt  # what a time limit's signal leaves
        return finish(index, name, *args, **kwargs)

    monkeypatch.setattr(runner, "_run_case", stopped_at_the_second)
    path = tmp_path / "report.json"
    arguments = ["--quick", "--cases", "pointwise_chain,layer_norm", "--backends", "eager", "--json", str(path)]
    with pytest.raises(KeyboardInterrupt):
        cli.main(arguments)
    capsys.readouterr()
    assert started == ["pointwise_chain", "layer_norm"]
    data = json.loads(path.read_text())
    assert [case["case"] for case in data["cases"]] == ["pointwise_chain"]
    assert data["cases"][0]["results"]["eager"]["time"]["median_s"] > 0
    assert saved.load_report(str(path)).cases[0].case == "pointwise_chain"
    assert not (tmp_path / "report.json.partial").exists()
