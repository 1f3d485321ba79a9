"""
Wall-clock measurement: warm-up, then many timed calls summarized by their
median, best and interquartile range; and the bandwidth of a large tensor copy,
the yardstick of memory-bound kernels. On CUDA every timed call is bracketed by
`torch.cuda.synchronize()`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from permalloy.tools.bench.profiles import Profile

Sync = Callable[[], None]


def synchronizer(device: str) -> Sync:
    """What waits for the device's queued work: `torch.cuda.synchronize` on CUDA."""
    if device == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def timed(fn: Callable[[], Any], sync: Sync) -> tuple[Any, float]:
    """Call `fn` once; its result and the seconds it took, device work included."""
    sync()
    start = time.perf_counter()
    result = fn()
    sync()
    return result, time.perf_counter() - start


@dataclass(frozen=True)
class TimingStats:
    """A summary of the timed calls of one function."""

    median_s: float
    min_s: float
    q1_s: float
    q3_s: float
    runs: int
    warmup: int

    @property
    def iqr_s(self) -> float:
        """The interquartile range: how spread the middle half of the runs is."""
        return self.q3_s - self.q1_s

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median_s,
            "min_s": self.min_s,
            "q1_s": self.q1_s,
            "q3_s": self.q3_s,
            "iqr_s": self.iqr_s,
            "runs": self.runs,
            "warmup": self.warmup,
        }


def summarize(times: list[float], warmup: int) -> TimingStats:
    """Median, best and quartiles of `times` (at least one)."""
    ordered = sorted(times)
    if len(ordered) > 1:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = ordered[0]
    return TimingStats(statistics.median(ordered), ordered[0], q1, q3, len(ordered), warmup)


def choose_runs(estimate_s: float, profile: Profile) -> int:
    """How many timed calls fit the profile's budget, within its bounds."""
    wanted = math.ceil(profile.budget_s / max(estimate_s, 1e-9))
    return max(profile.min_runs, min(profile.max_runs, wanted))


def measure(call: Callable[[int], Any], sync: Sync, profile: Profile) -> TimingStats:
    """
    Time `call(i)` for i = 0, 1, 2, ... (the caller rotates its inputs by `i`):
    `profile.warmup` untimed calls, then as many timed ones as the budget allows.
    """
    result = measure_interleaved({"call": call}, sync, profile)["call"]
    if isinstance(result, Exception):
        raise result
    return result


def measure_interleaved(
    calls: dict[str, Callable[[int], Any]], sync: Sync, profile: Profile
) -> dict[str, TimingStats | Exception]:
    """
    Time several functions in turn, one call of each per round, so that whatever
    else the machine does slows them alike. Each first gets `profile.warmup`
    untimed calls; the number of rounds fits the budget to the slowest one. A
    function that raises is dropped from later rounds and gets its exception.
    """
    outcome: dict[str, TimingStats | Exception] = {}
    estimates = {name: _warm_up(call, sync, profile.warmup) for name, call in calls.items()}
    for name, estimate in estimates.items():
        if isinstance(estimate, Exception):
            outcome[name] = estimate
    live = {name: calls[name] for name in calls if name not in outcome}
    runs = choose_runs(max([estimates[n] for n in live], default=0.0), profile)
    times: dict[str, list[float]] = {name: [] for name in live}
    for i in range(runs):
        for name in [n for n in live if n not in outcome]:
            try:
                times[name].append(timed(lambda: live[name](profile.warmup + i), sync)[1])
            except Exception as error:  # noqa: BLE001 - the caller reports it
                outcome[name] = error
    for name in live:
        outcome.setdefault(name, summarize(times[name], profile.warmup))
    return {name: outcome[name] for name in calls}


def back_to_back_ms(calls: dict[str, Callable[[], Any]], rounds: int, per_round: int, sync: Sync) -> dict[str, float]:
    """The median milliseconds per call of each function of `calls`, timed in
    `rounds` interleaved rounds of `per_round` back-to-back calls each (one
    synchronization around a round, so that launches overlap as in a model's
    loop), one function after the other in every round."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            sync()
            begin = time.perf_counter()
            for _ in range(per_round):
                call()
            sync()
            samples[name].append((time.perf_counter() - begin) / per_round * 1000)
    return {name: statistics.median(times) for name, times in samples.items()}


def _warm_up(call: Callable[[int], Any], sync: Sync, warmup: int) -> float | Exception:
    """The fastest of `warmup` untimed calls (at least one), or what one raised."""
    try:
        return min(timed(lambda i=i: call(i), sync)[1] for i in range(max(warmup, 1)))
    except Exception as error:  # noqa: BLE001 - the caller reports it
        return error


@dataclass(frozen=True)
class CopyBandwidth:
    """`dst.copy_(src)` on a large tensor: bytes read plus bytes written, over time."""

    nbytes: int
    timing: TimingStats

    @property
    def median_bytes_per_s(self) -> float:
        return self.nbytes / self.timing.median_s

    @property
    def best_bytes_per_s(self) -> float:
        return self.nbytes / self.timing.min_s

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.nbytes,
            "median_gb_per_s": self.median_bytes_per_s / 1e9,
            "best_gb_per_s": self.best_bytes_per_s / 1e9,
            "time": self.timing.as_dict(),
        }


def copy_bandwidth(device: str, profile: Profile) -> CopyBandwidth:
    """The bandwidth of copying `profile.copy_numel` float32 elements on `device`."""
    src = torch.randn(profile.copy_numel, device=device)
    dst = torch.empty_like(src)
    sync = synchronizer(device)
    copy_profile = _copy_profile(profile)
    timing = measure(lambda _: dst.copy_(src), sync, copy_profile)
    return CopyBandwidth(2 * src.nbytes, timing)


def _copy_profile(profile: Profile) -> Profile:
    """The profile's copy repetitions as a fixed number of timed runs."""
    return replace(
        profile,
        warmup=max(profile.warmup, 1),
        min_runs=profile.copy_runs,
        max_runs=profile.copy_runs,
    )
