"""
The Triton target's compile workers: how many run, the request protocol of
a worker process, errors and a worker that dies, and a kernel's first launch
waiting for its own requests. The worker runs stand-in kernel modules
whose `warmup` records what it was asked, so nothing needs a GPU.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch

from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel
from permalloy.targets.triton.compile_workers import CompileWorkers, worker_count
from permalloy.targets.triton.plan import plan_kernel
from permalloy.targets.triton.target import LaunchFacts, TritonKernel
from test_triton_launch import layouts_of

RECORDING_MODULE = """
import json, os

def warmup(symbols, config):
    if config.get("XBLOCK") == 0:
        raise ValueError("no such block size")
    if config.get("XBLOCK") == -1:
        os._exit(3)
    with open({marker!r}, "a") as f:
        f.write(json.dumps({{"pid": os.getpid(), "symbols": list(symbols), "config": config}}) + "\\n")
"""


def module_file(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "warmed.jsonl"
    path = tmp_path / "kernel_module.py"
    path.write_text(RECORDING_MODULE.format(marker=str(marker)))
    return path, marker


def request(path: Path, configs, symbols=(4096,)):
    return {"path": str(path), "module": "permalloy_test_kernel_module", "symbols": list(symbols), "configs": configs}


@pytest.mark.parametrize(
    ("environ", "cores", "expected"),
    [({}, 2, 0), ({}, 4, 4), ({}, 64, 16), ({"PERMALLOY_COMPILE_WORKERS": "3"}, 64, 3), ({"PERMALLOY_COMPILE_WORKERS": "0"}, 64, 0)],
)
def test_worker_count(environ, cores, expected):
    assert worker_count(environ, cores) == expected


@pytest.mark.parametrize("value", ["many", "-2"])
def test_a_bad_worker_count_says_what_is_expected(value):
    with pytest.raises(ValueError, match="PERMALLOY_COMPILE_WORKERS must be"):
        worker_count({"PERMALLOY_COMPILE_WORKERS": value}, 8)


def test_workers_compile_each_configuration_in_another_process(tmp_path):
    path, marker = module_file(tmp_path)
    workers = CompileWorkers(2)
    configs = [{"XBLOCK": 1024, "num_warps": 4}, {"XBLOCK": 512, "num_warps": 2}]
    answers = [workers.submit(request(path, configs, symbols=(n,))).result(timeout=60) for n in (1, 2)]
    assert answers == [{"compiled": 2, "failed": []}] * 2
    records = [json.loads(line) for line in marker.read_text().splitlines()]
    assert sorted((r["symbols"][0], r["config"]["XBLOCK"]) for r in records) == [(1, 512), (1, 1024), (2, 512), (2, 1024)]
    assert all(r["pid"] != os.getpid() for r in records)


def test_a_configuration_that_fails_is_reported_and_the_others_compile(tmp_path):
    path, marker = module_file(tmp_path)
    answer = CompileWorkers(2).submit(request(path, [{"XBLOCK": 0}, {"XBLOCK": 64}])).result(timeout=60)
    assert answer["compiled"] == 1
    assert len(answer["failed"]) == 1 and "no such block size" in answer["failed"][0]


def test_a_module_that_does_not_import_is_reported(tmp_path):
    answer = CompileWorkers(2).submit(request(tmp_path / "missing.py", [{"XBLOCK": 64}])).result(timeout=60)
    assert answer["compiled"] == 0 and answer["failed"][0].startswith("import:")


def test_a_worker_that_dies_fails_its_request_and_is_replaced(tmp_path):
    path, marker = module_file(tmp_path)
    workers = CompileWorkers(1)
    with pytest.raises(RuntimeError, match="compile worker exited with status 3"):
        workers.submit(request(path, [{"XBLOCK": -1}])).result(timeout=60)
    assert workers.submit(request(path, [{"XBLOCK": 64}])).result(timeout=60) == {"compiled": 1, "failed": []}


def contiguous_plan(text: str):
    """The Triton plan of kernel `text` for contiguous layouts."""
    kernel = parse_kernel(text)
    return plan_kernel(kernel, layouts_of(kernel), "triton_k")


class RecordingWorkers:
    """Stands for the pool: keeps each request, answers with a failure (or,
    while `starting`, never answers)."""

    def __init__(self, starting: bool = False):
        self.requests: list[dict] = []
        self.starting = starting

    def submit(self, request):
        self.requests.append(request)
        future = Future()
        if not self.starting:
            future.set_exception(RuntimeError("no workers here"))
        return future

    def ready(self):
        return not self.starting

    def start(self):
        pass


class FakeModule:
    __file__ = "/cache/kernel.py"
    __name__ = "permalloy_triton_kernel"

    def __init__(self):
        self.launched = 0

    def launch(self, tensors, symbols, config):
        self.launched += 1
        return []


def test_a_kernel_asks_once_per_sizes_and_its_first_launch_waits(tmp_path):
    plan = contiguous_plan(pointwise_kernel("[s0, 8]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32"))
    workers = RecordingWorkers()
    module = FakeModule()
    compiled = TritonKernel(LaunchFacts.of(plan), "", module, "default", None, interpret=False, workers=workers)
    compiled.direct = False
    compiled.precompile([3])
    compiled.precompile([3])
    compiled.precompile([5])
    assert [r["symbols"] for r in workers.requests] == [[3], [5]]
    assert workers.requests[0]["path"] == "/cache/kernel.py"
    assert len(workers.requests[0]["configs"]) == 1  # no tuner: the first candidate only
    compiled.chosen[(3, torch.device("cpu"))] = {"XBLOCK": 8, "RBLOCK": 0, "num_warps": 1, "num_stages": 1}
    x = torch.randn(3, 8)
    compiled([x, x, x], [3])  # a failed request only means the JIT compiles here
    assert (module.launched, compiled.compiling) == (1, [])


def test_each_candidate_configuration_is_a_request_of_its_own(tmp_path):
    """With a tuner, every candidate is compiled ahead, each in its own
    request, so that one kernel's candidates compile on several workers."""
    from permalloy.targets.triton.autotune import Autotuner

    plan = contiguous_plan(pointwise_kernel("[s0, 8]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32"))
    workers = RecordingWorkers()
    tuner = Autotuner(tmp_path, timer=lambda fn: 1.0)
    compiled = TritonKernel(LaunchFacts.of(plan), "", FakeModule(), "default", tuner, interpret=False, workers=workers)
    compiled.precompile([4096])
    expected = [[c.as_dict()] for c in compiled.candidates([4096])]
    assert len(expected) > 1 and [r["configs"] for r in workers.requests] == expected
    assert len(compiled.compiling) == len(expected)


def test_a_first_launch_while_the_pool_starts_compiles_here_without_waiting():
    plan = contiguous_plan(pointwise_kernel("[s0, 8]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32"))
    workers = RecordingWorkers(starting=True)
    module = FakeModule()
    compiled = TritonKernel(LaunchFacts.of(plan), "", module, "default", None, interpret=False, workers=workers)
    compiled.direct = False
    compiled.precompile([3])
    compiled.chosen[(3, torch.device("cpu"))] = {"XBLOCK": 8, "RBLOCK": 0, "num_warps": 1, "num_stages": 1}
    x = torch.randn(3, 8)
    compiled([x, x, x], [3])  # the request is never answered: waiting for it would hang
    assert (len(workers.requests), module.launched, compiled.compiling) == (1, 1, [])


def test_the_pool_is_ready_once_every_worker_has_started(tmp_path):
    workers = CompileWorkers(2)
    assert not workers.ready()  # not started
    workers.start()
    for future in workers._started:  # noqa: SLF001
        future.result(timeout=120)
    assert workers.ready()


def test_the_interpreter_never_asks_workers():
    plan = contiguous_plan(pointwise_kernel("[4]", ["f32"], "f32", "    %y = math.exp %a0 : f32"))
    workers = RecordingWorkers()
    compiled = TritonKernel(LaunchFacts.of(plan), "", FakeModule(), "default", None, interpret=True, workers=workers)
    compiled.precompile([])
    assert workers.requests == []


def test_starting_the_pool_starts_every_worker_once(tmp_path):
    workers = CompileWorkers(2)
    workers.start()
    workers.start()
    path, marker = module_file(tmp_path)
    assert workers.submit(request(path, [{"XBLOCK": 64}])).result(timeout=60) == {"compiled": 1, "failed": []}
    assert workers._threads._work_queue.qsize() == 0  # noqa: SLF001 - the two start requests were answered


def test_a_worker_compiles_with_the_requesting_process_triton_variables(tmp_path, monkeypatch):
    """Triton's cache directory and tools (part of a binary's cache key) are
    what the requesting process has when it asks, not when the worker started."""
    module = tmp_path / "environment_module.py"
    marker = tmp_path / "seen.json"
    module.write_text(
        "import json, os\n"
        "def warmup(symbols, config):\n"
        f"    open({str(marker)!r}, 'w').write(json.dumps({{k: v for k, v in os.environ.items() if k.startswith('TRITON_')}}))\n"
    )
    monkeypatch.setenv("TRITON_STALE_SETTING", "1")
    workers = CompileWorkers(1)
    workers.start()
    environment = {"TRITON_CACHE_DIR": str(tmp_path / "tc"), "TRITON_PTXAS_PATH": "/opt/ptxas"}
    answer = workers.submit({**request(module, [{"XBLOCK": 64}]), "environment": environment}).result(timeout=60)
    assert answer == {"compiled": 1, "failed": []}
    assert json.loads(marker.read_text()) == environment


class UnansweredWorkers(RecordingWorkers):
    """A started pool whose requests are never answered: waiting for one
    would hang."""

    def submit(self, request):
        self.requests.append(request)
        return Future()


def test_a_first_launch_of_a_recorded_binary_waits_for_no_request(monkeypatch):
    """A later process's kernel, its configuration known and its binary
    recorded, launches without waiting for the compile workers; a launch
    that needs Triton's JIT waits first (here: would hang, so is not made)."""
    plan = contiguous_plan(pointwise_kernel("[s0, 8]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32"))
    workers = UnansweredWorkers()
    module = FakeModule()
    ran = []
    module.launcher = lambda symbols, config, launches: lambda tensors, stream: ran.append((symbols, launches))
    compiled = TritonKernel(LaunchFacts.of(plan), "", module, "default", None, interpret=False, workers=workers)
    compiled.direct, compiled.stream = True, lambda device: None
    monkeypatch.setattr(compiled, "_recorded_direct", lambda tensors, key, config: ["recorded"])
    compiled.precompile([3])
    compiled.chosen[(3, torch.device("cpu"))] = {"XBLOCK": 8, "RBLOCK": 0, "num_warps": 1, "num_stages": 1}
    x = torch.randn(3, 8)
    compiled([x, x, x], [3])
    assert ran == [([3], ["recorded"])]
    assert (len(workers.requests), module.launched, len(compiled.compiling)) == (1, 0, 1)


def test_the_target_starts_its_workers_only_when_it_prepares_to_compile(monkeypatch, tmp_path):
    """Making the target starts no worker (a graph loaded from the cache
    compiles nothing); `prepare_to_compile`, before a graph is lowered, does."""
    from permalloy.targets.triton import target as triton_target

    class CountingWorkers(RecordingWorkers):
        started = 0

        def start(self):
            self.started += 1  # counts calls: the pool itself starts once

    workers = CountingWorkers()
    monkeypatch.setattr(triton_target, "shared_compile_workers", lambda: workers)
    compiling = triton_target.TritonTarget(interpret=False, cache=tmp_path)
    assert compiling.workers is workers and workers.started == 0
    compiling.prepare_to_compile()
    assert workers.started == 1
    interpreted = triton_target.TritonTarget(interpret=True, cache=tmp_path)
    interpreted.prepare_to_compile()
    assert interpreted.workers is None and workers.started == 1


TORCH_READING_MODULE = """
import json, sys
import torch

def warmup(symbols, config):
    if config.get("needs") == "tensor":
        torch.Tensor  # what torch's stand-in lacks
    with open({marker!r}, "a") as f:
        f.write(json.dumps({{
            "dtype": [type(torch.float32).__name__, type(torch.float32).__module__, str(torch.bfloat16)],
            "torch_itself": hasattr(torch, "Tensor"),
            "capability": None if hasattr(torch, "Tensor") else list(torch.cuda.get_device_capability()),
        }}) + "\\n")
"""


def torch_reading_module(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "read.jsonl"
    path = tmp_path / "torch_reading_module.py"
    path.write_text(TORCH_READING_MODULE.format(marker=str(marker)))
    return path, marker


def test_a_worker_told_the_capability_compiles_with_a_stand_in_for_torch(tmp_path):
    """Importing torch is most of a worker's start: told the GPU's
    capability, a worker gives generated modules torch's dtypes (which
    Triton's warmup reads by class name and text) and the capability, not
    torch."""
    path, marker = torch_reading_module(tmp_path)
    workers = CompileWorkers(1)
    assert workers.submit({"capability": [9, 0]}).result(timeout=60) == {"compiled": 0, "failed": []}
    assert workers.submit(request(path, [{"XBLOCK": 64}])).result(timeout=60) == {"compiled": 1, "failed": []}
    (read,) = [json.loads(line) for line in marker.read_text().splitlines()]
    assert read == {"dtype": ["dtype", "torch", "torch.bfloat16"], "torch_itself": False, "capability": [9, 0]}


def test_a_compile_that_fails_with_the_stand_in_is_done_again_with_torch(tmp_path):
    path, marker = torch_reading_module(tmp_path)
    workers = CompileWorkers(1)
    workers.submit({"capability": [8, 0]}).result(timeout=60)
    answer = workers.submit(request(path, [{"XBLOCK": 64, "needs": "tensor"}])).result(timeout=120)
    assert answer == {"compiled": 1, "failed": []}
    (read,) = [json.loads(line) for line in marker.read_text().splitlines()]
    assert read["torch_itself"] and read["dtype"] == ["dtype", "torch", "torch.bfloat16"]


def test_a_worker_not_told_a_capability_imports_torch(tmp_path):
    path, marker = torch_reading_module(tmp_path)
    workers = CompileWorkers(1)
    assert workers.submit(request(path, [{"XBLOCK": 64}])).result(timeout=120) == {"compiled": 1, "failed": []}
    assert json.loads(marker.read_text())["torch_itself"]
