"""
Choosing a kernel's launch configuration by timing the candidates.

On the first call of a kernel for given sizes on a GPU, every candidate
configuration runs on scratch copies of the tensors it writes (so that
in-place kernels do not change their inputs) and the fastest, by median time,
is kept: in memory, and on disk under `<cache>/triton/autotune/`, keyed by the
kernel's source, the device name and the sizes, so a later process starts
with it. Candidates that fail to compile (too many registers, shared memory)
are skipped.

The candidates run with the caller's Python dispatch modes set aside: the
first call of a graph runs under AOTAutograd's mode that inspects every
operator it sees, which adds about 0.3 ms of Python to each torch operator
a candidate calls (the library's product) and none to a Triton launch, and
so would rank configurations by that mode's overhead rather than by their
own time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from permalloy.targets.triton.configs import Config
from permalloy.targets.triton.loader import cache_dir, source_hash, write_atomically

Launch = Callable[[Sequence, Sequence[int], dict], None]
Timer = Callable[[Callable[[], Any]], float]
"""Median milliseconds of a callable."""


def gpu_timer(warmup_ms: int = 1, repeat_ms: int = 4) -> Timer:
    """Times a callable on the GPU with `triton.testing.do_bench` (median).

    Each sample runs after an L2 flush (a 256 MiB write, about 0.1 ms on an
    H100), so four milliseconds give a kernel of tens of microseconds, most
    of a model's, some thirty samples: enough to rank configurations whose
    times differ by a few percent. A model's first call benchmarks several
    hundred configurations, so these budgets are a good part of its compile
    time."""

    def time(fn: Callable[[], Any]) -> float:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=warmup_ms, rep=repeat_ms, return_mode="median"))

    return time


class Autotuner:
    """Picks and remembers the fastest configuration of each kernel and size."""

    def __init__(self, directory: Path | None = None, timer: Timer | None = None):
        self.directory = (directory or cache_dir()) / "triton" / "autotune"
        self.timer = timer or gpu_timer()
        self.chosen: dict[str, Config] = {}
        self.benchmarked = 0
        """How many kernels were benchmarked (rather than found in a cache)."""

    def choose(
        self,
        source: str,
        device: str,
        launch: Launch,
        candidates: Sequence[Config],
        tensors: Sequence,
        symbols: Sequence[int],
        outputs_from: int,
    ) -> Config:
        """The best of `candidates` for these tensors and sizes on `device` (a
        device name, part of the cache key)."""
        config = self.known(source, device, candidates, tensors, symbols)
        if config is not None:
            return config
        config = self._benchmark(launch, candidates, tensors, symbols, outputs_from)
        self.benchmarked += 1
        key = self._key(source, device, tensors, symbols)
        try:
            write_atomically(self.directory / f"{key}.json", json.dumps(config.as_dict()))
        except OSError:
            pass  # the cache only saves time: this process keeps its choice in memory
        self.chosen[key] = config
        return config

    def known(
        self, source: str, device: str, candidates: Sequence[Config], tensors: Sequence, symbols: Sequence[int]
    ) -> Config | None:
        """The configuration chosen earlier, in this process or one before
        it, for these tensors and sizes; None where there is none (`choose`
        would benchmark)."""
        if len(candidates) == 1:
            return candidates[0]
        key = self._key(source, device, tensors, symbols)
        config = self.chosen.get(key) or self._read(key, candidates)
        if config is not None:
            self.chosen[key] = config
        return config

    @staticmethod
    def _key(source: str, device: str, tensors: Sequence, symbols: Sequence[int]) -> str:
        return source_hash(source, device, repr(tuple(symbols)), repr([tuple(t.shape) for t in tensors]))

    def _read(self, key: str, candidates: Sequence[Config]) -> Config | None:
        path = self.directory / f"{key}.json"
        try:
            values = json.loads(path.read_text())
            config = Config.from_dict(values) if isinstance(values, dict) else None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return config if config in candidates else None

    def _benchmark(self, launch: Launch, candidates: Sequence[Config], tensors: Sequence, symbols: Sequence[int], outputs_from: int) -> Config:
        from torch.utils._python_dispatch import _disable_current_modes

        with _disable_current_modes():
            return self._timed_best(launch, candidates, tensors, symbols, outputs_from)

    def _timed_best(self, launch: Launch, candidates: Sequence[Config], tensors: Sequence, symbols: Sequence[int], outputs_from: int) -> Config:
        scratch = scratch_tensors(tensors, outputs_from)
        timings: list[tuple[float, int]] = []
        for position, config in enumerate(candidates):
            values = config.as_dict()
            try:
                launch(scratch, symbols, values)
                time = self.timer(lambda values=values: launch(scratch, symbols, values))
            except Exception:  # noqa: BLE001 - a configuration that does not compile is skipped
                continue
            timings.append((time, position))
        if not timings:
            return candidates[0]
        return candidates[min(timings)[1]]


def scratch_tensors(tensors: Sequence, outputs_from: int) -> list:
    """`tensors` with every output, and every input sharing memory with one,
    replaced by a fresh tensor of the same layout (inputs keep their values)."""
    import torch

    written = {t.untyped_storage().data_ptr() for t in tensors[outputs_from:]}
    result = []
    for position, tensor in enumerate(tensors):
        if position >= outputs_from or tensor.untyped_storage().data_ptr() in written:
            copy = torch.empty_strided(tensor.size(), tensor.stride(), dtype=tensor.dtype, device=tensor.device)
            if position < outputs_from:
                copy.copy_(tensor)
            result.append(copy)
        else:
            result.append(tensor)
    return result
