"""
The Triton target's files on disk when they are not what it wrote: kernel
modules that are truncated, not UTF-8 or a directory, and tuned
configurations that are not JSON objects. None of them stops a compile.
"""

from __future__ import annotations

import json
import threading

import pytest

from permalloy.targets.triton.autotune import Autotuner
from permalloy.targets.triton.configs import Config
from permalloy.targets.triton.loader import ModuleLoader, source_hash, write_atomically

SOURCE = "VALUE = 42\n"
STEM = "permalloy_cache_probe"


def module_path(tmp_path):
    return tmp_path / "triton" / "modules" / f"{STEM}_{source_hash(SOURCE)[:20]}.py"


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8", b"VALUE = ", b""])
def test_a_corrupt_module_file_is_rewritten(tmp_path, content):
    path = module_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    module = ModuleLoader(tmp_path).load(SOURCE, STEM)
    assert module.VALUE == 42
    assert path.read_text() == SOURCE


def test_a_directory_in_place_of_a_module_file_warns_and_uses_a_temporary_file(tmp_path):
    source = "VALUE = 43\n"
    path = tmp_path / "triton" / "modules" / f"{STEM}_{source_hash(source)[:20]}.py"
    path.mkdir(parents=True)
    with pytest.warns(RuntimeWarning, match="cannot write the kernel module"):
        module = ModuleLoader(tmp_path).load(source, STEM)
    assert module.VALUE == 43
    assert path.is_dir()


def test_threads_writing_one_file_do_not_collide(tmp_path):
    path = tmp_path / "shared.txt"
    errors = []

    def write(i: int) -> None:
        try:
            for _ in range(50):
                write_atomically(path, f"writer {i}\n")
        except OSError as error:  # pragma: no cover - the failure this test looks for
            errors.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert path.read_text().startswith("writer ")
    assert [p.name for p in tmp_path.iterdir()] == ["shared.txt"]


@pytest.mark.parametrize(
    "content",
    [b"[1, 2]", b"42", b'"XBLOCK"', b"{not json", b"\xff\xfe", b'{"XBLOCK": 64}', b'{"XBLOCK": "a", "num_warps": 4, "num_stages": 1}'],
)
def test_a_tuned_configuration_that_is_not_one_is_benchmarked_again(tmp_path, content):
    candidates = [Config(64, 0, 4, 1), Config(128, 0, 4, 1)]
    times = {candidates[0]: 2.0, candidates[1]: 1.0}
    timed = []

    def launch(tensors, symbols, config):
        timed.append(Config.from_dict(config))

    def timer(fn):
        fn()
        return times[timed[-1]]

    tuner = Autotuner(tmp_path, timer=timer)
    key_path = None
    first = tuner.choose("source", "device", launch, candidates, [], [8], 0)
    (key_path,) = (tmp_path / "triton" / "autotune").iterdir()
    key_path.write_bytes(content)
    fresh = Autotuner(tmp_path, timer=timer)
    assert fresh.choose("source", "device", launch, candidates, [], [8], 0) == first == candidates[1]
    assert fresh.benchmarked == 1
    assert json.loads(key_path.read_text()) == candidates[1].as_dict()
