"""
Saved results read back: the JSON that `--json` writes becomes a `BenchReport`
again, and several runs of one configuration (a long suite split over several
processes or machines, each with `--cases`) merge into one report, whose table
and geomeans are those of one run (`permalloy-bench --merge A.json,B.json`).
"""

from __future__ import annotations

import json
from typing import Any

from permalloy.tools.bench.accuracy import Accuracy, GradientAccuracy
from permalloy.tools.bench.backends import BenchError
from permalloy.tools.bench.graphs import DynamoGraphs
from permalloy.tools.bench.profiles import Profile
from permalloy.tools.bench.results import BackendResult, BenchConfig, BenchReport, CaseResult
from permalloy.tools.bench.timing import CopyBandwidth, TimingStats
from permalloy.tools.zoo import ZooSize


def load_report(path: str) -> BenchReport:
    """The report saved at `path` by `--json`; a `BenchError` says what is wrong with it."""
    try:
        with open(path, encoding="utf-8") as saved:
            data = json.load(saved)
        return report_from_dict(data)
    except OSError as error:
        raise BenchError(f"cannot read {path}: {error.strerror}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise BenchError(f"{path} is not a permalloy-bench JSON report ({error})") from None


def merge_reports(reports: list[BenchReport]) -> BenchReport:
    """One report holding every case of `reports`, which must share device,
    workload, suite, backends and profile; a case in several keeps its last run."""
    if not reports:
        raise BenchError("--merge needs at least one report")
    first = reports[0]
    key = _configuration_key(first.config)
    for other in reports[1:]:
        if _configuration_key(other.config) != key:
            raise BenchError(
                "reports to merge must share device, workload, suite, backends and profile: "
                f"{_configuration_key(other.config)} differs from {key}"
            )
    cases = {case.case: case for report in reports for case in report.cases}
    config = first.config
    merged = BenchConfig(
        config.device, tuple(cases), config.backends, config.profile, config.threads,
        train=config.train, suite=config.suite, profile_kernels=config.profile_kernels,
        compile_times=config.compile_times, warm_compile=config.warm_compile,
        cold_process=config.cold_process,
        float64_reference=config.float64_reference,
    )
    return BenchReport(merged, first.machine, first.copy, first.first_use_s, list(cases.values()))


def _configuration_key(config: BenchConfig) -> tuple:
    return (config.device, config.train, config.suite, config.backends, config.profile.name)


def report_from_dict(data: dict[str, Any]) -> BenchReport:
    """The inverse of `report.to_dict`."""
    raw = data["config"]
    profile = dict(raw["profile"])
    profile["size"] = ZooSize(**profile["size"])
    config = BenchConfig(
        raw["device"],
        tuple(raw["cases"]),
        tuple(raw["backends"]),
        Profile(**profile),
        train=raw["mode"] == "train",
        suite=raw.get("suite", "zoo"),
        profile_kernels=raw.get("profile_kernels", False),
        compile_times=raw.get("compile_times", False),
        warm_compile=raw.get("warm_compile", False),
        cold_process=raw.get("cold_process", False),
        float64_reference=raw.get("float64_reference", False),
        target_options=tuple(raw.get("target_options", {}).items()),
    )
    copy = data.get("copy_bandwidth")
    copy_bandwidth = None if copy is None else CopyBandwidth(copy["bytes"], _timing(copy["time"]))
    cases = [_case(c) for c in data["cases"]]
    return BenchReport(config, data["machine"], copy_bandwidth, data["first_use_s"], cases)


def _case(data: dict[str, Any]) -> CaseResult:
    case = CaseResult(
        data["case"],
        data["memory_bound"],
        input_shapes=data["input_shapes"],
        traffic_bytes=data["traffic_bytes"],
        input_sets=data["input_sets"],
        error=data["error"],
        skipped=data.get("skipped", False),
        family=data.get("family"),
    )
    case.results = {name: _backend(r) for name, r in data["results"].items()}
    return case


def _backend(data: dict[str, Any]) -> BackendResult:
    dynamo = data.get("dynamo")
    return BackendResult(
        data["backend"],
        ok=data["ok"],
        error=data["error"],
        compile_s=data["compile_s"],
        accuracy=None if data["accuracy"] is None else _accuracy(data["accuracy"]),
        timing=None if data["time"] is None else _timing(data["time"]),
        kernels=data["kernels"],
        dynamo=None if dynamo is None else DynamoGraphs(**dynamo),
        profile=data.get("profile"),
        warm_compile=data.get("warm_compile"),
        cold_process=data.get("cold_process"),
        speedup_vs_eager=data["speedup_vs_eager"],
        speedup_vs_inductor=data["speedup_vs_inductor"],
        bandwidth_gb_per_s=data["bandwidth_gb_per_s"],
        bandwidth_fraction_of_copy=data["bandwidth_fraction_of_copy"],
        float64_error=data.get("float64_error"),
    )


def _accuracy(data: dict[str, Any]) -> Accuracy:
    fields = {k: v for k, v in data.items() if k != "passed"}
    for error in ("relative_error", "max_abs_error"):  # saved as null when not finite
        if fields.get(error) is None:
            fields[error] = float("inf")
    if "worst" in fields or "errors" in fields:
        return GradientAccuracy(**fields)
    return Accuracy(**fields)


def _timing(data: dict[str, Any]) -> TimingStats:
    return TimingStats(**{k: v for k, v in data.items() if k != "iqr_s"})
