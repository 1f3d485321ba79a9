"""
Launch records (`targets/triton/binaries.py`): what a process keeps of its
kernels' static launches so that a later one loads their binaries without
Triton's JIT. Loading itself needs a GPU (`tests/e2e` on one); here, the
records' names, their round trip through the disk, and the refusals.
"""

from __future__ import annotations

import dataclasses

from permalloy.targets.triton.binaries import LaunchRecords, launch_record, stored_launches
from permalloy.targets.triton.direct import StaticLaunch


def _static_launch(**changes) -> StaticLaunch:
    """A StaticLaunch's fields without loading anything (its constructor
    binds torch's CUDA launcher, which a CPU build lacks)."""
    launch = object.__new__(StaticLaunch)
    values = {
        "function": 1234,
        "warps": 4,
        "shared": 0,
        "types": "OOi",
        "positions": (0, 1, 3),
        "scratch": 1,
        "binary": "/cache/triton/binaries/k.cubin",
        "name": "triton_pointwise_0",
    }
    values.update(changes)
    for field in dataclasses.fields(StaticLaunch):
        object.__setattr__(launch, field.name, values[field.name])
    return launch


def test_records_round_trip_and_name_what_the_binary_depends_on(tmp_path):
    records = LaunchRecords(tmp_path)
    key = LaunchRecords.key("source", ("H200", "3.6.0"), (1024, True, True), {"XBLOCK": 1024, "num_warps": 4})
    assert key == LaunchRecords.key("source", ("H200", "3.6.0"), (1024, True, True), {"num_warps": 4, "XBLOCK": 1024})
    others = [
        LaunchRecords.key("other source", ("H200", "3.6.0"), (1024, True, True), {"XBLOCK": 1024, "num_warps": 4}),
        LaunchRecords.key("source", ("H100", "3.6.0"), (1024, True, True), {"XBLOCK": 1024, "num_warps": 4}),
        LaunchRecords.key("source", ("H200", "3.6.0"), (2048, True, True), {"XBLOCK": 1024, "num_warps": 4}),
        LaunchRecords.key("source", ("H200", "3.6.0"), (1024, True, False), {"XBLOCK": 1024, "num_warps": 4}),
        LaunchRecords.key("source", ("H200", "3.6.0"), (1024, True, True), {"XBLOCK": 512, "num_warps": 4}),
    ]
    assert key not in others and len(set(others)) == len(others)
    assert records.read(key) is None
    launch = _static_launch()
    records.write(key, [(None, launch.function, launch)])
    (record,) = records.read(key)
    assert record == launch_record(launch)
    assert record["positions"] == [0, 1, 3] and record["binary"].endswith(".cubin")


def test_a_launch_without_a_known_binary_or_not_static_is_not_recorded(tmp_path):
    records = LaunchRecords(tmp_path)
    assert launch_record(_static_launch(binary="")) is None
    assert launch_record(("triton's own launcher metadata",)) is None
    records.write("k", [(None, 1, _static_launch()), (None, 2, _static_launch(binary=""))])
    assert records.read("k") is None


def test_damaged_records_are_ignored(tmp_path):
    records = LaunchRecords(tmp_path)
    records.write("k", [(None, 1, _static_launch())])
    path = records.directory / "k.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    assert records.read("k") is None
    path.write_text('[{"binary": "x.cubin", "name": "f"}]')
    assert records.read("k") is None
    path.write_text(text.replace('"warps": 4', '"warps": "4"'))
    assert records.read("k") is None


def test_records_load_nothing_without_a_static_launcher(monkeypatch):
    import permalloy.targets.triton.binaries as binaries

    monkeypatch.setattr(binaries, "static_launcher", lambda: None)
    assert stored_launches([launch_record(_static_launch())], 0) is None


class FakeLauncher:
    """torch's static launcher as far as records go: loads record which binary,
    and launches with the values the record's positions pick."""

    def __init__(self, missing: set[str] = frozenset()):
        self.missing = missing
        self.loaded: list[tuple] = []
        self.launched: list[tuple] = []

    def _load_kernel(self, path, name, shared, device):
        if path in self.missing:
            raise RuntimeError(f"no such file: {path}")
        self.loaded.append((path, name, shared, device))
        return (None, 99, 32, 0)

    def _launch_kernel(self, function, x, y, z, warps, shared, types, values, stream):
        self.launched.append((function, (x, y, z), warps, types, values, stream))


def test_records_load_their_binaries_and_launch_the_recorded_parameters(monkeypatch):
    import permalloy.targets.triton.binaries as binaries
    import permalloy.targets.triton.direct as direct

    launcher = FakeLauncher()
    monkeypatch.setattr(binaries, "static_launcher", lambda: launcher)
    monkeypatch.setattr(direct, "static_launcher", lambda: launcher)
    (run, function, launch) = stored_launches([launch_record(_static_launch())], 2)[0]
    assert launcher.loaded == [("/cache/triton/binaries/k.cubin", "triton_pointwise_0", 0, 2)]
    assert function == 99 and launch.binary.endswith("k.cubin")
    run(8, 1, 1, "stream", function, None, None, None, None, "a", "b", 1024, 7)
    # positions (0, 1, 3) of the parameters, then one null scratch pointer
    assert launcher.launched == [(99, (8, 1, 1), 4, "OOiO", ("a", "b", 7, None), "stream")]
    launcher.missing = {"/cache/triton/binaries/k.cubin"}
    assert stored_launches([launch_record(_static_launch())], 2) is None


def test_where_triton_keeps_its_files_is_not_part_of_a_binary_s_identity(monkeypatch):
    from permalloy.targets.triton.binaries import binary_settings

    monkeypatch.setenv("TRITON_CACHE_DIR", "/tmp/a")
    monkeypatch.setenv("TRITON_HOME", "/home/b")
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    settings = binary_settings()
    assert "TRITON_CACHE_DIR" not in settings and "TRITON_HOME" not in settings
    assert "TRITON_DEFAULT_FP_FUSION" in settings  # it changes the code
