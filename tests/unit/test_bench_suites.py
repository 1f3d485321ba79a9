"""
permalloy-bench's suites and profile: `--suite models` runs whole models of the
broad suite end to end (accuracy against eager and every field of a row),
Dynamo's graphs and graph breaks are counted per backend, `--profile` gives
host and kernel time per call with the top kernels, a model that needs a
missing package is a row that says so, and geomeans count only accurate cases.
"""

from __future__ import annotations

import json

import pytest
import torch

from permalloy.tools.bench import cli, report
from permalloy.tools.bench.graphs import dynamo_graphs
from permalloy.tools.bench.kernel_profile import generated_totals
from permalloy.tools.bench.suites import CaseUnavailable, ModelSuite, make_suite
from permalloy.tools.bench.profiles import QUICK
from permalloy.tools.bench.progress import Progress
from permalloy.tools.bench.results import BenchConfig
from permalloy.tools.bench.runner import run_benchmark
from permalloy.tools.models import MODELS


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    """Run the CLI with `--json -` and parse what it printed."""
    assert cli.main([*argv, "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_models_suite_runs_two_models_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--suite", "models", "--quick", "--cases", "small_cnn,distilbert"]
    data = run_json([*argv, "--backends", "eager,permalloy", "--profile"], capsys)
    assert data["config"]["suite"] == "models" and data["config"]["profile_kernels"]
    assert [c["case"] for c in data["cases"]] == ["small_cnn", "distilbert"]
    for case in data["cases"]:
        assert case["error"] is None and not case["skipped"]
        assert case["family"] == MODELS[case["case"]].family
        assert case["input_sets"] >= 2 and case["input_shapes"]
        ours = case["results"]["permalloy"]
        assert ours["ok"], ours["error"]
        assert ours["accuracy"]["passed"] and ours["accuracy"]["relative_error"] < 1e-4
        assert ours["compile_s"] > 0 and ours["time"]["median_s"] > 0
        assert ours["kernels"]["graphs"] >= 1 and ours["kernels"]["kernels"] >= 1
        assert ours["kernels"]["graphs_fell_back"] == 0
        assert ours["dynamo"]["graphs"] >= 1 and ours["dynamo"]["graph_breaks"] >= 0
        profile = ours["profile"]
        assert profile["back_to_back_ms"] > 0 and profile["top_kernels"]
        assert all(0 <= k["share"] <= 1 for k in profile["top_kernels"])
        assert profile["generated_ms"] is None and profile["generated_launches"] is None  # GPU only
        assert profile["generated_by_kind_ms"] is None
        assert len(profile["kernels"]) >= len(profile["top_kernels"])
        assert [k["name"] for k in profile["kernels"][: len(profile["top_kernels"])]] == [k["name"] for k in profile["top_kernels"]]
        assert case["results"]["eager"]["dynamo"] is None
    assert data["geomean"]["permalloy"]["cases"] == 2


def test_models_suite_lists_every_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--suite", "models", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(MODELS)
    assert len(MODELS) >= 30
    families = {spec.family for spec in MODELS.values()}
    assert {"decoder", "encoder", "encoder-decoder", "vision-transformer", "convnet",
            "audio", "block"} <= families


def test_unknown_suite_and_case_list_valid_names(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--suite", "zo"])
    assert "valid suites: zoo, models, timm" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--suite", "models", "--cases", "resnet,gpt3"])
    err = capsys.readouterr().err
    assert "unknown case 'gpt3'" in err and "resnet" in err


def test_missing_package_is_a_skipped_row(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unavailable(self, name, profile, seed):
        raise CaseUnavailable("skipped: timm is not installed")

    monkeypatch.setattr(ModelSuite, "build", unavailable)
    data = run_json(["--suite", "models", "--quick", "--cases", "resnet",
                     "--backends", "eager"], capsys)
    (case,) = data["cases"]
    assert case["skipped"] and case["error"] == "skipped: timm is not installed"
    assert case["results"] == {}


def test_graph_breaks_are_counted_with_their_reasons() -> None:
    def broken(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    torch._dynamo.reset()
    with dynamo_graphs() as record:
        torch.compile(broken, backend="eager")(torch.randn(4))
    assert record.graphs == 2 and record.graph_breaks == 1 and len(record.reasons) == 1


def test_geomeans_skip_inaccurate_cases() -> None:
    config = BenchConfig("cpu", ("pointwise_chain", "layer_norm"), ("eager", "permalloy"), QUICK)
    ran = run_benchmark(config, Progress(None, len(config.cases)))
    first, second = (case.results["permalloy"] for case in ran.cases)
    assert report.geomeans(ran)["permalloy"]["cases"] == 2
    first.accuracy = type(first.accuracy)(1.0, 1.0, 1e-4)
    means = report.geomeans(ran)
    assert means["permalloy"]["cases"] == 1
    assert means["permalloy"]["speedup_vs_eager"] == pytest.approx(second.speedup_vs_eager)


def test_suites_build_cases_from_seeds() -> None:
    zoo = make_suite("zoo")
    first, again = zoo.build("layer_norm", QUICK, 0), zoo.build("layer_norm", QUICK, 0)
    other = zoo.build("layer_norm", QUICK, 1)
    assert torch.equal(first.inputs[0], again.inputs[0])
    assert not torch.equal(first.inputs[0], other.inputs[0])
    assert zoo.memory_bound("layer_norm") and not zoo.memory_bound("mlp")
    models = make_suite("models")
    assert models.family("resnet") == "convnet" and not models.memory_bound("resnet")


def test_saved_reports_merge_into_one_table(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = []
    for case in ("pointwise_chain", "layer_norm"):
        paths.append(str(tmp_path / f"{case}.json"))
        argv = ["--quick", "--cases", case, "--backends", "eager,permalloy", "--json", paths[-1]]
        assert cli.main(argv) == 0
    capsys.readouterr()
    merged = run_json(["--merge", ",".join(paths)], capsys)
    assert [c["case"] for c in merged["cases"]] == ["pointwise_chain", "layer_norm"]
    assert merged["geomean"]["permalloy"]["cases"] == 2
    assert cli.main(["--merge", ",".join(paths)]) == 0
    table = capsys.readouterr().out
    assert "pointwise_chain" in table and "layer_norm" in table and "geomean" in table


def test_merge_refuses_other_configurations(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    quick = str(tmp_path / "quick.json")
    train = str(tmp_path / "train.json")
    base = ["--quick", "--cases", "pointwise_chain", "--backends", "eager"]
    assert cli.main([*base, "--json", quick]) == 0
    assert cli.main([*base, "--train", "--json", train]) == 0
    capsys.readouterr()
    assert cli.main(["--merge", f"{quick},{train}"]) == 1
    assert "must share device, workload" in capsys.readouterr().err


def test_profile_splits_generated_kernels_from_library_ones() -> None:
    kernels = [
        ("triton_poi_fused_add_0", 0.002, 3.0),  # Inductor's
        ("triton_fused_reduce_sum_pointwise_4", 0.001, 1.0),  # permalloy's
        ("sm80_xmma_fprop_implicit_gemm_f32f32", 0.005, 2.0),  # cuDNN's
        ("void at::native::elementwise_kernel<128, 2>", 0.004, 5.0),  # eager's
    ]
    seconds, launches = generated_totals(kernels)
    assert seconds == pytest.approx(0.003) and launches == 4.0
    assert generated_totals([]) == (0, 0)


class _StandInTimm:
    """A `timm` module of one model, a small CNN at timm's 64-pixel input size,
    standing in for timm where it is not installed."""

    __spec__ = None

    class Net(torch.nn.Sequential):
        pretrained_cfg = {"input_size": (3, 64, 64)}

    @staticmethod
    def is_model(name: str) -> bool:
        return name == "tiny_net"

    @classmethod
    def create_model(cls, name: str, pretrained: bool, num_classes: int) -> torch.nn.Module:
        assert name == "tiny_net" and not pretrained
        return cls.Net(
            torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(8, num_classes),
        )


def test_timm_suite_takes_any_timm_model_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from permalloy.tools.models import timm_catalog

    monkeypatch.setitem(sys.modules, "timm", _StandInTimm)
    monkeypatch.setattr(timm_catalog, "timm_installed", lambda: True)
    suite = make_suite("timm")
    assert "resnet50" in suite.names() and suite.family("resnet50") == "convnet"
    assert suite.accepts("tiny_net") and not suite.accepts("no_such_net")
    case = suite.build("tiny_net", QUICK, 0)
    assert [tuple(x.shape) for x in case.inputs] == [(1, 3, 64, 64)] and not case.model.training
    data = run_json(["--suite", "timm", "--quick", "--cases", "tiny_net", "--backends", "eager,permalloy"], capsys)
    (row,) = data["cases"]
    assert row["family"] == "timm" and row["error"] is None
    ours = row["results"]["permalloy"]
    assert ours["ok"] and ours["accuracy"]["passed"], ours
    with pytest.raises(SystemExit):
        cli.main(["--suite", "timm", "--cases", "no_such_net"])
    assert "unknown case 'no_such_net'" in capsys.readouterr().err


def test_timm_suite_without_timm_skips_its_rows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from permalloy.tools.models import timm_catalog

    monkeypatch.setattr(timm_catalog, "timm_installed", lambda: False)
    data = run_json(["--suite", "timm", "--quick", "--cases", "resnet50", "--backends", "eager"], capsys)
    (row,) = data["cases"]
    assert row["skipped"] and row["error"] == "skipped: timm is not installed"


def test_generated_kernels_are_sorted_into_kinds_by_their_names() -> None:
    from permalloy.tools.bench.kernel_profile import generated_by_kind, generated_kind

    names = {
        "triton_poi_fused_gelu_view_2": "pointwise",  # Inductor's
        "triton_poi_fused_convolution_relu_1": "pointwise",
        "triton_red_fused_sum_view_3": "reduction",
        "triton_per_fused_native_layer_norm_backward_2": "reduction",
        "triton_tem_fused_mm_0": "template",
        "triton_pointwise_erf_6": "pointwise",  # permalloy's
        "triton_fused_pointwise_rsqrt_reduce_sum_pointwise_3": "reduction",
        "triton_scan_cumsum_1": "reduction",
        "triton_flash_attention_forward": "template",
        "triton_scatter_add_4": "other",
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n": None,  # a library's
    }
    assert {name: generated_kind(name) for name in names} == names
    kernels = [("triton_poi_a", 2e-6, 1.0), ("triton_red_b", 3e-6, 2.0), ("ampere_sgemm", 9e-6, 1.0)]
    assert generated_by_kind(kernels) == pytest.approx({"pointwise": 2e-3, "reduction": 3e-3, "template": 0.0, "other": 0.0})


def test_the_profile_table_shows_generated_time_by_kind() -> None:
    from types import SimpleNamespace

    from permalloy.tools.bench.kernel_profile import format_profiles

    def profile(pointwise: float, reduction: float) -> dict:
        top = [{"name": "triton_red_x", "ms": reduction, "share": 0.5, "calls": 1.0}]
        return {
            "back_to_back_ms": 2.0, "kernel_ms": 1.5, "host_ms": 0.5, "launches": 3.0,
            "generated_ms": pointwise + reduction, "generated_launches": 2.0,
            "generated_by_kind_ms": {"pointwise": pointwise, "reduction": reduction, "template": 0.0, "other": 0.0},
            "top_kernels": top, "kernels": top,
        }  # fmt: skip

    results = {"inductor": SimpleNamespace(profile=profile(0.41, 0.66)), "permalloy": SimpleNamespace(profile=profile(0.55, 1.12))}
    lines = format_profiles([SimpleNamespace(case="bart", results=results)], ("inductor", "permalloy"))
    permalloy_line = next(line for line in lines if line.strip().startswith("permalloy"))
    assert permalloy_line.endswith("(pointwise 0.550, reduction 1.120)")
