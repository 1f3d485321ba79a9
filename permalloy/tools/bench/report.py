"""
The results for people (a table with geometric means of the speedups) and for
machines (JSON).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import Any

from permalloy.tools.bench.accuracy import GRADIENT_FLOOR, Accuracy, GradientAccuracy
from permalloy.tools.bench.compile_times import format_compile_times
from permalloy.tools.bench.kernel_profile import format_profiles
from permalloy.tools.bench.results import BackendResult, BenchReport, CaseResult

SCHEMA_VERSION = 1
NOTE_CHARS = 70
"""Errors in the table's notes column are cut to this many characters."""
NOISY_IQR = 0.25
"""A time whose interquartile range exceeds this fraction of its median is
marked noisy (`~`) in the table."""


def geomean(values: Iterable[float]) -> float | None:
    """The geometric mean of positive values; None when there are none."""
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def geomeans(report: BenchReport) -> dict[str, dict[str, float | None]]:
    """Per backend: geometric means of its speedups over eager and over Inductor,
    over the cases where it ran accurately (and so did Inductor, for the ratio
    to Inductor): a fast wrong answer counts for nothing."""
    means = {}
    for backend in report.config.backends:
        accurate = [c for c in report.cases if _accurate(c, backend)]
        both = [c for c in accurate if _accurate(c, "inductor")]
        means[backend] = {
            "speedup_vs_eager": geomean(c.results[backend].speedup_vs_eager for c in accurate),
            "speedup_vs_inductor": geomean(c.results[backend].speedup_vs_inductor for c in both),
            "cases": sum(c.results[backend].timing is not None for c in accurate),
            "cases_vs_inductor": sum(c.results[backend].timing is not None for c in both),
        }
    return means


def _accurate(case: CaseResult, backend: str) -> bool:
    """Whether `backend` ran `case`, was timed, and matched eager (eager always does)."""
    result = case.results.get(backend)
    if result is None or result.timing is None or not result.ok:
        return False
    return result.accuracy is None or result.accuracy.passed


def to_dict(report: BenchReport) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    config = report.config
    return {
        "schema": SCHEMA_VERSION,
        "machine": report.machine,
        "config": {
            "device": config.device,
            "mode": "train" if config.train else "inference",
            "suite": config.suite,
            "profile_kernels": config.profile_kernels,
            "compile_times": config.compile_times,
            "warm_compile": config.warm_compile,
            "cold_process": config.cold_process,
            "float64_reference": config.float64_reference,
            "cases": list(config.cases),
            "backends": list(config.backends),
            "target_options": dict(config.target_options),
            "profile": config.profile.as_dict(),
        },
        "copy_bandwidth": None if report.copy is None else report.copy.as_dict(),
        "first_use_s": report.first_use_s,
        "cases": [c.as_dict() for c in report.cases],
        "geomean": geomeans(report),
    }


def to_json(report: BenchReport) -> str:
    """The report as indented JSON text (no NaN or infinity: those become null)."""
    return json.dumps(_finite(to_dict(report)), indent=2, allow_nan=False)


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# The table -----------------------------------------------------------------------

_SHORT = {"eager": "eager", "inductor": "ind", "permalloy": "perm"}


def format_table(report: BenchReport) -> str:
    """The results as a plain-text table, one row per case, geometric means last."""
    families = any(c.family for c in report.cases)
    memory_bound = any(c.memory_bound for c in report.cases)
    columns = _columns(report.config.backends, report.config.train, families, memory_bound)
    rows = [[title for title, _ in columns]]
    rows += [[cell(case) for _, cell in columns] for case in report.cases]
    rows.append(_geomean_row(report, columns))
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = [_format_row(row, widths) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(-1, lines[1])
    legend = _legend(report.config.backends, report.config.train)
    profiles = format_profiles(report.cases, report.config.backends)
    if not any(r.profile for c in report.cases for r in c.results.values()):
        profiles = []
    config = report.config
    compile_times = format_compile_times(report.cases) if config.compile_times else []
    float64 = format_float64_errors(report) if config.float64_reference else []
    return "\n".join([_header(report), "", *lines, "", *legend, *float64, *profiles, *compile_times])


def format_float64_errors(report: BenchReport) -> list[str]:
    """With `--float64-reference`: each case's relative errors against its
    model run in float64, eager float32's first, a line per case."""
    lines = ["", "rel err against the model run in float64 (eager float32's included):"]
    for case in report.cases:
        errors = [
            f"{backend} {result.float64_error:.1e}"
            for backend, result in case.results.items()
            if result.float64_error is not None
        ]
        lines.append(f"  {case.case}: {', '.join(errors) if errors else 'not available'}")
    return lines


def _columns(
    backends: tuple[str, ...], train: bool, families: bool = False, memory_bound: bool = True
) -> list[tuple[str, Callable[[CaseResult], str]]]:
    """(title, cell function) of every column, for the backends that ran; a
    training run compares gradients and has no bandwidth."""
    compiled = [b for b in backends if b != "eager"]
    columns: list[tuple[str, Callable[[CaseResult], str]]] = [("case", lambda c: c.case)]
    if families:
        columns.append(("family", lambda c: c.family or ""))
    columns += [(f"{_SHORT[b]} ms", _time_cell(b)) for b in backends]
    if "eager" in backends:
        columns += [(f"{_SHORT[b]}/eager", _speedup_cell(b, "eager")) for b in compiled]
    if "inductor" in backends:
        others = [b for b in compiled if b != "inductor"]
        columns += [(f"{_SHORT[b]}/ind", _speedup_cell(b, "inductor")) for b in others]
    columns += [(f"{_SHORT[b]} compile s", _compile_cell(b)) for b in compiled]
    columns += [(f"{_SHORT[b]} graphs", _graphs_cell(b)) for b in compiled]
    columns += [(f"{_SHORT[b]} kernels", _kernels_cell(b)) for b in compiled]
    error = "grad err" if train else "rel err"
    columns += [(f"{_SHORT[b]} {error}", _accuracy_cell(b)) for b in compiled]
    if "permalloy" in backends and not train and memory_bound:
        columns.append(("perm BW/copy", _bandwidth_cell("permalloy")))
    columns.append(("notes", _notes_cell))
    return columns


def _result_cell(backend: str, show: Callable[[BackendResult], str]) -> Callable[[CaseResult], str]:
    """A cell showing `show(result)`, or `-` where the backend has no result."""

    def cell(case: CaseResult) -> str:
        result = case.results.get(backend)
        return "-" if result is None else show(result)

    return cell


def _time_cell(backend: str) -> Callable[[CaseResult], str]:
    def show(r: BackendResult) -> str:
        if r.timing is None:
            return "error" if r.error else "-"
        noisy = r.timing.iqr_s > NOISY_IQR * r.timing.median_s
        return f"{'~' if noisy else ''}{r.timing.median_s * 1e3:.3f}"

    return _result_cell(backend, show)


def _speedup_cell(backend: str, baseline: str) -> Callable[[CaseResult], str]:
    attribute = f"speedup_vs_{baseline}"
    return _result_cell(backend, lambda r: _ratio(getattr(r, attribute)))


def _compile_cell(backend: str) -> Callable[[CaseResult], str]:
    return _result_cell(backend, lambda r: "-" if r.compile_s is None else f"{r.compile_s:.2f}")


def _graphs_cell(backend: str) -> Callable[[CaseResult], str]:
    """Dynamo's graphs, with the graph breaks between them when there are any."""

    def show(r: BackendResult) -> str:
        if r.dynamo is None:
            return "-"
        breaks = f" ({r.dynamo.graph_breaks} brk)" if r.dynamo.graph_breaks else ""
        return f"{r.dynamo.graphs}{breaks}"

    return _result_cell(backend, show)


def _kernels_cell(backend: str) -> Callable[[CaseResult], str]:
    def show(r: BackendResult) -> str:
        k = r.kernels
        if "kernels" not in k or not k.get("graphs"):
            return "-"
        if backend == "permalloy":
            return f"{k['kernels']} +{k['extern_calls']} ext"
        if "generated_kernel_count" in k:
            return f"{k['kernels']} [{k['generated_kernel_count']}]"
        return str(k["kernels"])

    return _result_cell(backend, show)


def _accuracy_cell(backend: str) -> Callable[[CaseResult], str]:
    def show(r: BackendResult) -> str:
        if r.accuracy is None:
            return "-"
        mark = "" if r.accuracy.passed else " FAIL"
        return f"{r.accuracy.relative_error:.1e}{mark}"

    return _result_cell(backend, show)


def _bandwidth_cell(backend: str) -> Callable[[CaseResult], str]:
    def show(r: BackendResult) -> str:
        fraction = r.bandwidth_fraction_of_copy
        return "-" if fraction is None else f"{fraction:.0%}"

    return _result_cell(backend, show)


def _notes_cell(case: CaseResult) -> str:
    """Errors, eager fallbacks and fallback ops, shortest first."""
    if case.skipped:
        return _cut(case.error or "skipped")
    if case.error:
        return _cut(f"case: {case.error}")
    notes = []
    for backend, r in case.results.items():
        short, eager_graphs = _SHORT[backend], r.kernels.get("graphs_fell_back")
        if r.error:
            notes.append(f"{short}: {r.error}")
        if eager_graphs:
            notes.append(f"{short}: {eager_graphs} graph(s) ran eagerly")
        if r.kernels.get("fallback_ops"):
            notes.append(f"{short} fallback ops: {', '.join(r.kernels['fallback_ops'])}")
        if r.accuracy is not None and not r.accuracy.passed:
            notes.append(f"{short}: {_difference(r.accuracy)}")
    return "; ".join(_cut(n) for n in notes)


def _difference(accuracy: Accuracy) -> str:
    """What differs from eager in a failed accuracy check."""
    if isinstance(accuracy, GradientAccuracy):
        return f"gradients differ from eager (worst: {accuracy.worst})"
    return "outputs differ from eager"


def _geomean_row(report: BenchReport, columns: list[tuple[str, Any]]) -> list[str]:
    """The geometric means under the speedup columns, blanks elsewhere."""
    means = geomeans(report)
    row = []
    for title, _ in columns:
        row.append(_geomean_cell(title, means))
    row[0] = "geomean"
    return row


def _geomean_cell(title: str, means: dict[str, dict[str, float | None]]) -> str:
    for backend, short in _SHORT.items():
        for baseline, suffix in (("eager", "/eager"), ("inductor", "/ind")):
            if title == short + suffix and backend in means:
                return _ratio(means[backend][f"speedup_vs_{baseline}"])
    return ""


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _cut(text: str) -> str:
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 3] + "..."


def _format_row(row: list[str], widths: list[int]) -> str:
    """Case and notes left-aligned, numbers right-aligned."""
    cells = [
        cell.ljust(width) if i in (0, len(row) - 1) else cell.rjust(width)
        for i, (cell, width) in enumerate(zip(row, widths))
    ]
    return "  ".join(cells).rstrip()


def _header(report: BenchReport) -> str:
    """Where the run happened and the copy bandwidth it is measured against."""
    m, profile = report.machine, report.config.profile
    size = profile.size
    device = m.get("gpu", f"{m['cpu']}, {m['cpu_count']} cores, {m['torch_threads']} torch threads")
    if m.get("load_average"):
        device += ", load average " + " ".join(f"{x:.2f}" for x in m["load_average"])
    mode = "training steps" if report.config.train else "inference"
    if report.config.suite == "zoo":
        sizes = (
            f"batch {size.batch}, seq {size.seq}, hidden {size.hidden}, "
            f"heads {size.heads}, channels {size.channels}, image {size.image}"
        )
    else:
        sizes = f"each model's {profile.name!r} sizes (inputs in the JSON)"
    lines = [
        f"permalloy-bench, {report.config.suite} suite, on {report.config.device} ({mode}): {device}",
        f"torch {m['torch']}, permalloy {m['permalloy']}, python {m['python']}, {m['platform']}",
        f"profile {profile.name}: {sizes}",
    ]
    if report.config.target_options:
        options = ", ".join(f"{name}={value!r}" for name, value in report.config.target_options)
        lines.append(f"permalloy target options: {options}")
    if report.copy is not None:
        copy = report.copy
        lines.append(
            f"copy bandwidth ({copy.nbytes / 2**20:.0f} MiB read+written): "
            f"{copy.median_bytes_per_s / 1e9:.1f} GB/s median, "
            f"{copy.best_bytes_per_s / 1e9:.1f} GB/s best"
        )
    return "\n".join(lines)


def _legend(backends: tuple[str, ...], train: bool) -> list[str]:
    """What the columns mean."""
    lines = [
        "times: median of the timed calls in ms (min and IQR in the JSON), ~ where the IQR "
        f"exceeds {NOISY_IQR:.0%} of the median; x/eager, x/ind: speedup of x over eager, "
        "over Inductor; geomeans over the cases a backend ran accurately (x/ind: where "
        "Inductor did too)",
        "graphs: graphs Dynamo captured (brk: graph breaks between them)",
    ]
    if train:
        lines += [
            "training step: gradients set to None, forward, loss = sum(out * fixed random "
            "seed), backward to parameters and floating inputs; models in train mode",
            "compile s: first step, Dynamo and forward and backward graphs included; "
            "grad err: largest over gradients g of ||g - eager|| / max(||eager||, floor), "
            f"floor = {GRADIENT_FLOOR:g} x sqrt(numel) x RMS of eager's gradients "
            "(FAIL above 1e-4 for float32; each gradient's error in the JSON)",
        ]
    else:
        lines.append(
            "compile s: first call, Dynamo included; rel err: ||out - eager|| / ||eager|| "
            "(FAIL above 1e-4 for float32)"
        )
    if "permalloy" in backends and train:
        lines.append(
            "perm kernels: generated kernels + library (extern) calls, forward and "
            "backward graphs together"
        )
    elif "permalloy" in backends:
        lines.append(
            "perm kernels: generated kernels + library (extern) calls; perm BW/copy (where "
            "cases are memory-bound): bytes of inputs read once and outputs written once "
            "over the median time, as a fraction of copy bandwidth"
        )
    if "inductor" in backends:
        lines.append(
            "ind kernels: kernels in Inductor's generated code "
            "[torch._inductor.metrics.generated_kernel_count]"
        )
    return lines
