"""
A picture of the speedups: one group of bars per case (and the geometric mean),
one bar per compiled backend, its speedup over eager (or over Inductor when eager
did not run), on a log scale where 1x is the baseline. Needs matplotlib, the
optional `plot` extra: `pip install 'permalloy[plot]'`.
"""

from __future__ import annotations

import math
from typing import Any

from permalloy.tools.bench.backends import BenchError
from permalloy.tools.bench.report import geomeans
from permalloy.tools.bench.results import BenchReport

COLORS = {"inductor": "#4c72b0", "permalloy": "#dd8452", "eager": "#8c8c8c"}


def require_matplotlib() -> None:
    """Raise a `BenchError` saying how to install matplotlib when it is missing."""
    try:
        import matplotlib  # noqa: F401 - only its presence is checked
    except ImportError as error:
        raise BenchError(
            "--plot needs matplotlib, which is not installed; "
            "install it with: pip install 'permalloy[plot]' (or pip install matplotlib)"
        ) from error


def plot_baseline(backends: tuple[str, ...]) -> str:
    """What the bars are speedups over: eager when it ran, else Inductor."""
    for baseline in ("eager", "inductor"):
        if baseline in backends and len(backends) > 1:
            return baseline
    raise BenchError("--plot needs eager or inductor and one more backend in --backends")


def write_plot(report: BenchReport, path: str) -> None:
    """Draw the speedup bars of `report` into the image file `path`."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    baseline = plot_baseline(report.config.backends)
    bars = [b for b in report.config.backends if b != baseline]
    labels, values = _series(report, bars, baseline)
    figure, axes = plt.subplots(figsize=(max(8.0, 0.9 * len(labels) + 2), 4.8))
    _draw_bars(axes, labels, values, bars)
    _decorate(axes, report, baseline, len(labels))
    _scale(axes, [v for series in values.values() for v in series if v is not None])
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _series(
    report: BenchReport, bars: list[str], baseline: str
) -> tuple[list[str], dict[str, list[float | None]]]:
    """Case labels (the geometric mean last) and each backend's speedups."""
    attribute = f"speedup_vs_{baseline}"
    labels = [c.case for c in report.cases] + ["geomean"]
    means = geomeans(report)
    values = {
        b: [_speedup(c, b, attribute) for c in report.cases] + [means[b][attribute]] for b in bars
    }
    return labels, values


def _speedup(case: Any, backend: str, attribute: str) -> float | None:
    result = case.results.get(backend)
    return None if result is None else getattr(result, attribute)


def _draw_bars(
    axes: Any, labels: list[str], values: dict[str, list[float | None]], bars: list[str]
) -> None:
    """Grouped bars from 1x up (faster) or down (slower), their values at their
    ends; a cross where a backend has no time."""
    width = 0.8 / max(len(bars), 1)
    for k, backend in enumerate(bars):
        for i, value in enumerate(values[backend]):
            x = i - 0.4 + width * (k + 0.5)
            if value is None:
                axes.text(x, 1.0, "×", ha="center", va="center", color=COLORS.get(backend, "k"))
                continue
            label = backend if i == 0 else None
            axes.bar(x, value - 1.0, width, bottom=1.0, color=COLORS.get(backend), label=label)
            above = value >= 1.0
            axes.text(x, value, f" {value:.3g}x ", ha="center", va="bottom" if above else "top",
                      fontsize=7, rotation=90)


def _scale(axes: Any, speedups: list[float]) -> None:
    """A log scale around 1x with room for the bars' labels, ticks written as `2x`."""
    from matplotlib.ticker import FuncFormatter

    axes.set_yscale("log")
    top, bottom = max([1.0, *speedups]), min([1.0, *speedups])
    axes.set_ylim(bottom / 4, top * 4)
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
    axes.yaxis.set_minor_formatter(FuncFormatter(_minor_label))


def _minor_label(value: float, _position: Any) -> str:
    """Minor ticks labelled at 2x, 5x, 0.2x, ... only, so labels never crowd."""
    if value <= 0:
        return ""
    leading = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}x" if round(leading) in (2, 5) else ""


def _decorate(axes: Any, report: BenchReport, baseline: str, count: int) -> None:
    """Axes, the 1x line, the legend and a title naming the machine."""
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.axvline(count - 1.5, color="grey", linewidth=0.5, linestyle=":")
    axes.set_xticks(range(count))
    axes.set_xticklabels([c.case for c in report.cases] + ["geomean"], rotation=30, ha="right")
    axes.set_ylabel(f"speedup over {baseline} (log scale)")
    machine = report.machine.get("gpu", report.machine["cpu"])
    flags = " --quick" if report.config.profile.name == "quick" else ""
    flags += " --train" if report.config.train else ""
    title = f"permalloy-bench --device {report.config.device}{flags}: {machine}"
    axes.set_title(title, fontsize=10)
    _handles, names = axes.get_legend_handles_labels()
    if names:
        axes.legend(loc="upper left", fontsize=8)
