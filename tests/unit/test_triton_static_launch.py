"""
Launching compiled Triton kernels through torch's static launcher: which
parameters a kernel's binary takes, their type codes, the scratch pointers
Triton adds, and the kernels it does not take. A compiled kernel and torch's
launcher are stood in for, so no GPU is needed.
"""

from __future__ import annotations

import os
import tempfile
from types import SimpleNamespace

import pytest

from permalloy.targets.triton import direct


BINARIES = tempfile.TemporaryDirectory(prefix="permalloy-test-binaries-")
"""Where the stand-in kernels' binary files are."""
CUBIN = os.path.join(BINARIES.name, "k.cubin")
with open(CUBIN, "wb") as binary_file:
    binary_file.write(b"\x7fELF in the cache")


def compiled_kernel(signature, constants=None, **metadata):
    """A stand-in for Triton's compiled kernel with this signature."""
    fields = {"name": "k", "shared": 0, "num_warps": 4, "num_ctas": 1, "global_scratch_size": 0, "profile_scratch_size": 0}
    fields.update(metadata)
    return SimpleNamespace(
        src=SimpleNamespace(signature=signature, constants=constants or {}),
        metadata=SimpleNamespace(**fields),
        metadata_group={"k.json": os.path.join(BINARIES.name, "k.json"), "k.cubin": CUBIN},
    )


class RecordingLauncher:
    """Stands for `torch._C._StaticCudaLauncher`."""

    def __init__(self):
        self.loads: list[tuple] = []
        self.launches: list[tuple] = []

    def _load_kernel(self, path, name, shared, device):
        self.loads.append((path, name, shared, device))
        return (1234, 32, 0)

    def _launch_kernel(self, *arguments):
        self.launches.append(arguments)


SIGNATURE = {"in0": "*fp32", "out0": "*bf16", "s0": "i32", "s1": "i64", "scale": "fp32", "XBLOCK": "constexpr"}


def test_parameters_skip_compile_time_ones_and_specialized_constants():
    kernel = compiled_kernel({**SIGNATURE, "s1": "constexpr"}, constants={(3,): 1, (5,): 1024})
    assert direct.launched_parameters(kernel) == ([0, 1, 2, 4], "OOif")


def test_constants_keyed_by_name_are_skipped_too():
    kernel = compiled_kernel(SIGNATURE, constants={"s1": 1, "XBLOCK": 1024})
    assert direct.launched_parameters(kernel) == ([0, 1, 2, 4], "OOif")


def test_a_parameter_type_the_launcher_does_not_take_refuses():
    assert direct.launched_parameters(compiled_kernel({**SIGNATURE, "desc": "nvTmaDesc"})) is None


def test_a_static_launch_passes_the_binary_s_parameters_and_null_scratch(monkeypatch):
    launcher = RecordingLauncher()
    monkeypatch.setattr(direct, "static_launcher", lambda: launcher)
    kernel = compiled_kernel(SIGNATURE, constants={(5,): 1024}, shared=512, num_warps=8)

    run, function, metadata = direct.static_launch(kernel, 2)
    # called as generated launchers call Triton's: every parameter, compile-time ones included
    run(10, 1, 1, 77, function, metadata, None, None, None, "in", "out", 5, 6, 0.5, 1024)

    assert launcher.loads == [(CUBIN, "k", 512, 2)]
    assert launcher.launches == [(1234, 10, 1, 1, 8, 512, "OOilfOO", ("in", "out", 5, 6, 0.5, None, None), 77)]
    # what a native host program launches with, in the metadata's place
    assert (metadata.function, metadata.warps, metadata.shared) == (1234, 8, 512)
    assert (metadata.types, metadata.positions, metadata.scratch) == ("OOilf", (0, 1, 2, 3, 4), 2)


def test_a_kernel_of_one_parameter_is_passed_a_tuple(monkeypatch):
    launcher = RecordingLauncher()
    monkeypatch.setattr(direct, "static_launcher", lambda: launcher)
    kernel = compiled_kernel({"out0": "*fp32", "XBLOCK": "constexpr"})
    run, function, _ = direct.static_launch(kernel, 0)
    run(3, 1, 1, 0, function, None, None, None, None, "out", 128)
    assert launcher.launches[0][7] == ("out", None, None)


@pytest.mark.parametrize(
    "metadata",
    [{"num_ctas": 2}, {"launch_cooperative_grid": True}, {"launch_pdl": True}, {"global_scratch_size": 64}, {"profile_scratch_size": 8}],
)
def test_kernels_the_static_launcher_does_not_run_keep_triton_s(metadata, monkeypatch):
    launcher = RecordingLauncher()
    monkeypatch.setattr(direct, "static_launcher", lambda: launcher)
    assert direct.static_launch(compiled_kernel(SIGNATURE, **metadata), 0) is None
    assert launcher.loads == []


def test_without_torch_s_launcher_compiled_kernels_launch_through_triton_s(monkeypatch):
    monkeypatch.setattr(direct, "static_launcher", lambda: None)
    kernel = compiled_kernel(SIGNATURE)
    kernel.run, kernel.function, kernel.packed_metadata = "run", "function", "metadata"
    assert direct.compiled_launches([kernel], 0) == [("run", "function", "metadata")]


def test_a_binary_outside_triton_s_cache_is_written_to_permalloy_s(monkeypatch, tmp_path):
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path))
    launcher = RecordingLauncher()
    monkeypatch.setattr(direct, "static_launcher", lambda: launcher)
    kernel = compiled_kernel(SIGNATURE)
    kernel.metadata_group = {}
    kernel.asm = {"cubin": b"\x7fELF binary"}
    direct.static_launch(kernel, 0)
    (path, *_), = launcher.loads
    assert path.startswith(str(tmp_path)) and open(path, "rb").read() == b"\x7fELF binary"


def test_a_binary_whose_cache_entry_is_gone_is_written_again(monkeypatch, tmp_path):
    """A kernel Triton keeps in memory names a cache directory since removed
    (`TRITON_CACHE_DIR` changed within the process): its bytes are loaded
    from a file of permalloy's, not the missing path."""
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path / "permalloy"))
    launcher = RecordingLauncher()
    monkeypatch.setattr(direct, "static_launcher", lambda: launcher)
    kernel = compiled_kernel(SIGNATURE)
    kernel.metadata_group = {"k.cubin": str(tmp_path / "removed" / "k.cubin")}
    kernel.asm = {"cubin": b"\x7fELF binary"}
    direct.static_launch(kernel, 0)
    (path, *_), = launcher.loads
    assert path.startswith(str(tmp_path / "permalloy")) and open(path, "rb").read() == b"\x7fELF binary"
