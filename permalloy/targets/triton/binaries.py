"""
Compiled kernels' launch records on disk, so that a new process launches
them without Triton's JIT.

A kernel's first launch in a process compiles it through Triton's JIT for the
arguments' specialization, even when Triton's cache holds the binary: the JIT
binds the arguments, computes the specialization and the cache key, reads the
cached metadata and binary, and on its first use in a process sets up its
CUDA driver. A launch through torch's static launcher needs only the binary's
file, its function's name, its shared memory, warps and parameter types
(`direct.StaticLaunch`). Those are kept here, one JSON file per kernel
source, GPU, compiler versions and code-changing settings, sizes, pointer
alignments, element types and configuration; a later process loads the
binaries from them directly (`stored_launches`).
A record that is missing, unreadable or names a binary that no longer loads
is ignored: the JIT compiles the kernel as on a first run, and the record is
written again.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from permalloy.targets.triton.compile_workers import ptxas_version, triton_environment
from permalloy.targets.triton.direct import Launch, StaticLaunch, loaded_launch, static_launcher
from permalloy.targets.triton.loader import cache_dir, source_hash, write_atomically

RECORD_FIELDS = ("binary", "name", "shared", "warps", "types", "positions", "scratch")
"""What a record keeps of each static launch of a kernel."""

LOCATION_VARIABLES = frozenset({"TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR"})
"""Triton's settings that say where files go, not what a binary is: a
record names its binary's file, wherever a later process keeps its cache."""


def binary_identity(device: int) -> tuple[str, ...]:
    """What a compiled binary depends on besides its source, sizes and
    configuration: the GPU, Triton's version, its `ptxas` and the settings
    that change its code now (which a program may change while it runs)."""
    return (*_compilers(device), json.dumps(sorted(binary_settings().items())))


@functools.cache
def _compilers(device: int) -> tuple[str, str, str]:
    """GPU `device`'s name, Triton's version and its `ptxas`'s, read once."""
    import torch
    import triton

    return torch.cuda.get_device_name(device), triton.__version__, str(ptxas_version())


def binary_settings() -> dict[str, str]:
    """The settings Triton keys its own binaries on (the environment
    variables it names as invalidating its cache); for a Triton that does not
    name them, every `TRITON_*` setting but those of `LOCATION_VARIABLES`."""
    try:
        from triton.compiler.compiler import get_cache_invalidating_env_vars
    except ImportError:
        environment = triton_environment()
        return {name: value for name, value in environment.items() if name not in LOCATION_VARIABLES}
    return dict(get_cache_invalidating_env_vars())


class LaunchRecords:
    """Launch records under `<cache>/triton/launches/`."""

    def __init__(self, directory: Path | None = None):
        self.directory = (directory or cache_dir()) / "triton" / "launches"

    @staticmethod
    def key(source: str, identity: Sequence[str], specialization: Sequence[Any], config: dict[str, int]) -> str:
        """The record's name: the kernel's module source, what identifies the
        GPU and the compilers (`identity`), what the binary was specialized
        for (sizes, pointer alignments, element types), and the
        configuration."""
        return source_hash(source, *identity, repr(tuple(specialization)), repr(sorted(config.items())))

    def read(self, key: str) -> list[dict[str, Any]] | None:
        """The records of each launch of the kernel, or None where there are
        none or they are not well formed."""
        try:
            values = json.loads((self.directory / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(values, list) or not all(_well_formed(v) for v in values):
            return None
        return values

    def write(self, key: str, launches: Sequence[Launch]) -> None:
        """Keep the launches, when each goes through the static launcher and
        knows its binary's file; the cache only saves time, so a failure to
        write is ignored."""
        records = [launch_record(metadata) for _, _, metadata in launches]
        if not records or any(r is None for r in records):
            return
        try:
            write_atomically(self.directory / f"{key}.json", json.dumps(records))
        except OSError:
            pass


def launch_record(launch: Any) -> dict[str, Any] | None:
    """The record of one static launch, None for another kind of launch or
    one whose binary's file is not known."""
    if not isinstance(launch, StaticLaunch) or not launch.binary or not launch.name:
        return None
    return {
        "binary": launch.binary,
        "name": launch.name,
        "shared": launch.shared,
        "warps": launch.warps,
        "types": launch.types,
        "positions": list(launch.positions),
        "scratch": launch.scratch,
    }


def stored_launches(records: Sequence[dict[str, Any]], device: int) -> list[Launch] | None:
    """The launches of `records`, their binaries loaded on GPU `device`
    through torch's static launcher; None where one does not load (a binary
    removed since, a launcher that is not there)."""
    launcher = static_launcher()
    if launcher is None:
        return None
    launches: list[Launch] = []
    for record in records:
        try:
            launch = loaded_launch(
                launcher,
                record["binary"],
                record["name"],
                record["warps"],
                record["shared"],
                record["types"],
                record["positions"],
                record["scratch"],
                device,
            )
        except Exception:  # noqa: BLE001 - any failure: the JIT compiles the kernel instead
            return None
        launches.append(launch)
    return launches


def _well_formed(record: Any) -> bool:
    if not isinstance(record, dict) or set(record) != set(RECORD_FIELDS):
        return False
    integers = ("shared", "warps", "scratch")
    return (
        isinstance(record["binary"], str)
        and isinstance(record["name"], str)
        and isinstance(record["types"], str)
        and all(isinstance(record[name], int) for name in integers)
        and isinstance(record["positions"], list)
        and all(isinstance(p, int) for p in record["positions"])
    )
