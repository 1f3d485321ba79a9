"""
`permalloy-bench --profile`: where each millisecond of a call goes.

For each backend of a case, after its timed calls:
- back-to-back time per call: many calls queued without a synchronization
  between them, one at the end, wall clock over the count. On a GPU this is
  what a training loop or a server sees: the host prepares the next call while
  the device runs the last one.
- kernel time per call: the device kernels' durations that `torch.profiler`
  records over a few calls, summed, over the count (GPU only: on a CPU the
  kernels run on the host and are part of the wall clock).
- host time per call: back-to-back time minus kernel time, the time the device
  waits for the host. Near zero when the device is the bottleneck; most of the
  call when launches, allocations and Python dominate.
- generated kernel time per call and launches (GPU only): the share of the
  kernel time and launches in kernels a compiler generated (Triton's, named
  `triton_*` by Inductor and permalloy alike), the rest being library calls
  (cuDNN, cuBLAS) and eager's own kernels; it tells which side loses.
- generated kernel time by kind (GPU only): pointwise, reductions (scans and
  sorts among them), templates (Inductor's, permalloy's flash attention and
  depthwise convolution) and the rest, read off the kernels' names
  (`generated_kind`): where two compilers' generated totals differ, which
  kind of kernel makes the difference. permalloy's matrix-product template
  keeps the name of its loop op (`reduce_sum`), so it counts as a reduction.
- the ten most expensive kernels with each one's time per call and share of the
  backend's kernel time (on a CPU: the profiler's operators by self time); the
  JSON keeps every kernel too (`kernels`), for comparing two runs kernel by
  kernel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

TOP_KERNELS = 10
"""How many of a backend's most expensive kernels the profile keeps."""
KERNEL_NAME_CHARS = 60
"""Kernel names are cut to this many characters in the table (whole in the JSON)."""
GENERATED_PREFIX = "triton"
"""How the names of generated GPU kernels begin (Inductor's and permalloy's)."""
GENERATED_KINDS = ("pointwise", "reduction", "template", "other")
"""The kinds `generated_kind` sorts generated kernels into."""
_INDUCTOR_PREFIXES = (
    # Inductor's names begin with the kind, then name the ATen ops they fuse
    # (triton_poi_fused_convolution_relu_1 is pointwise work after a convolution).
    ("triton_poi_", "pointwise"),
    ("triton_red_", "reduction"),
    ("triton_per_", "reduction"),
    ("triton_tem_", "template"),
)
_PERMALLOY_MARKERS = (
    # permalloy's name the loop ops a kernel fuses (triton_fused_reduce_sum_pointwise_3),
    # or its own kernels (triton_flash_attention_forward).
    ("template", ("flash_attention", "depthwise_convolution")),
    ("reduction", ("reduce", "scan", "sort")),
    ("pointwise", ("pointwise",)),
)


@dataclass(frozen=True)
class ProfileSettings:
    """How many calls each measurement takes."""

    back_to_back_calls: int
    profiled_calls: int


def settings_for(device: str, quick: bool) -> ProfileSettings:
    """Few calls in a quick run; more on a GPU, where each call is short."""
    if quick:
        return ProfileSettings(back_to_back_calls=3, profiled_calls=2)
    if device == "cuda":
        return ProfileSettings(back_to_back_calls=50, profiled_calls=10)
    return ProfileSettings(back_to_back_calls=10, profiled_calls=3)


def profile_backend(
    call: Callable[[int], Any], device: str, settings: ProfileSettings
) -> dict[str, Any]:
    """The profile of `call(i)` (rotating its inputs by `i`) on `device`, as JSON-ready data."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    call(0)
    sync()
    start = time.perf_counter()
    for i in range(settings.back_to_back_calls):
        call(i)
    sync()
    back_to_back_s = (time.perf_counter() - start) / settings.back_to_back_calls
    kernels = _profiled_kernels(call, device, sync, settings.profiled_calls)
    kernel_s = sum(seconds for _, seconds, _ in kernels) if device == "cuda" else None
    total = sum(seconds for _, seconds, _ in kernels)
    ranked = sorted(kernels, key=lambda k: -k[1])
    generated_s, generated_launches = generated_totals(kernels) if device == "cuda" else (None, None)
    return {
        "back_to_back_ms": back_to_back_s * 1e3,
        "kernel_ms": None if kernel_s is None else kernel_s * 1e3,
        "host_ms": None if kernel_s is None else max(back_to_back_s - kernel_s, 0.0) * 1e3,
        "launches": sum(count for _, _, count in kernels) if device == "cuda" else None,
        "generated_ms": None if generated_s is None else generated_s * 1e3,
        "generated_launches": generated_launches,
        "generated_by_kind_ms": generated_by_kind(kernels) if device == "cuda" else None,
        "top_kernels": [
            {
                "name": name,
                "ms": seconds * 1e3,
                "share": seconds / total if total > 0 else 0.0,
                "calls": count,
            }
            for name, seconds, count in ranked[:TOP_KERNELS]
        ],
        "kernels": [
            {"name": name, "ms": seconds * 1e3, "calls": count}
            for name, seconds, count in ranked
        ],
    }


def generated_totals(kernels: list[tuple[str, float, float]]) -> tuple[float, float]:
    """The seconds and launches per call of the generated kernels among
    (name, seconds per call, launches per call)."""
    generated = [k for k in kernels if k[0].startswith(GENERATED_PREFIX)]
    return sum(seconds for _, seconds, _ in generated), sum(count for _, _, count in generated)


def generated_kind(name: str) -> str | None:
    """The kind of a generated kernel by its name (one of `GENERATED_KINDS`),
    None for a kernel no compiler generated."""
    if not name.startswith(GENERATED_PREFIX):
        return None
    for prefix, kind in _INDUCTOR_PREFIXES:
        if name.startswith(prefix):
            return kind
    for kind, markers in _PERMALLOY_MARKERS:
        if any(marker in name for marker in markers):
            return kind
    return "other"


def generated_by_kind(kernels: list[tuple[str, float, float]]) -> dict[str, float]:
    """Milliseconds per call of the generated kernels among (name, seconds per
    call, launches per call), by `generated_kind`."""
    totals = dict.fromkeys(GENERATED_KINDS, 0.0)
    for name, seconds, _ in kernels:
        kind = generated_kind(name)
        if kind is not None:
            totals[kind] += seconds * 1e3
    return totals


def _profiled_kernels(
    call: Callable[[int], Any], device: str, sync: Callable[[], None], calls: int
) -> list[tuple[str, float, float]]:
    """(name, seconds per call, launches per call) of every kernel the profiler
    saw: device kernels on a GPU, operators by self CPU time on a CPU."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as profiler:
        for i in range(calls):
            call(i)
        sync()
    kernels = []
    for event in profiler.key_averages():
        if device == "cuda":
            if event.device_type != DeviceType.CUDA:
                continue
            micros = event.self_device_time_total
        else:
            if event.key.startswith(("ProfilerStep", "Torch-Compiled Region")):
                continue
            micros = event.self_cpu_time_total
        if micros > 0:
            kernels.append((event.key, micros * 1e-6 / calls, event.count / calls))
    return kernels


def format_profiles(cases: list[Any], backends: tuple[str, ...]) -> list[str]:
    """The profile section of the table: per case, each backend's times per call
    and its top kernels side by side."""
    lines = [
        "",
        "profile (per call, ms): back-to-back, device kernels, host = back-to-back - kernels,"
        " generated kernels' time and launches (and their time by kind)",
    ]
    for case in cases:
        profiled = [(b, case.results[b].profile) for b in backends if b in case.results]
        profiled = [(b, p) for b, p in profiled if p is not None]
        if not profiled:
            continue
        lines.append("")
        lines.append(f"{case.case}:")
        failed = [(b, p) for b, p in profiled if "error" in p]
        profiled = [(b, p) for b, p in profiled if "error" not in p]
        lines += [f"  {backend:<10} profile failed: {p['error']}" for backend, p in failed]
        for backend, p in profiled:
            lines.append(
                f"  {backend:<10} b2b {p['back_to_back_ms']:8.3f}  kernels {_ms(p['kernel_ms'])}"
                f"  host {_ms(p['host_ms'])}  launches {_count(p['launches'])}"
                f"  generated {_ms(p.get('generated_ms'))} in {_count(p.get('generated_launches'))}"
                + _kinds_text(p.get("generated_by_kind_ms"))
            )
        if profiled:
            lines.extend(_top_kernel_rows(profiled))
    return lines


def _top_kernel_rows(profiled: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Rank by rank, each backend's kernel at that rank: share, ms, name."""
    width = KERNEL_NAME_CHARS + 18
    header = "  ".join(f"{'top kernels: ' + b:<{width}}" for b, _ in profiled)
    rows = [f"  {header}".rstrip()]
    depth = max(len(p["top_kernels"]) for _, p in profiled)
    for rank in range(depth):
        cells = []
        for _, p in profiled:
            tops = p["top_kernels"]
            if rank < len(tops):
                k = tops[rank]
                name = k["name"][:KERNEL_NAME_CHARS]
                cells.append(f"{k['share']:5.1%} {k['ms']:8.3f}  {name}".ljust(width))
            else:
                cells.append(" " * width)
        rows.append(("  " + "  ".join(cells)).rstrip())
    return rows


def _kinds_text(kinds: dict[str, float] | None) -> str:
    """The generated time by kind, where measured: `  (pointwise 0.41, reduction 0.66, ...)`."""
    if not kinds:
        return ""
    return "  (" + ", ".join(f"{kind} {ms:.3f}" for kind, ms in kinds.items() if ms > 0) + ")"


def _ms(value: float | None) -> str:
    return "       -" if value is None else f"{value:8.3f}"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
