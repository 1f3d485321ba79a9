"""
Compiling permalloy's depthwise weight-gradient kernel in the compile workers
before `choose-depthwise-weight-gradients` times it: one request per
candidate channel block, carrying exactly the arguments its launch passes (so
that Triton's JIT finds the worker's binary), and a kernel module a worker
can load without torch. Nothing here needs a GPU: the pool is a recording
stand-in, and the worker's Triton has no GPU driver to compile for.
"""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

from permalloy.cache import parse_module
from permalloy.dialects import buffer as buf
from permalloy.dialects import make_context
from permalloy.passes import choose_depthwise_weight_gradients as passes
from permalloy.targets.triton import depthwise_weight_gradient as gradient
from permalloy.targets.triton import depthwise_weight_gradient_kernel as kernel_module
from permalloy.targets.triton.compile_workers import CompileWorkers
from permalloy.targets.triton.depthwise_convolution import Geometry

WINDOW = Geometry((1, 1), (1, 1), (1, 1))


class RecordingPool:
    """A pool of compile workers that records its requests and answers each."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.started = 0

    def start(self) -> None:
        self.started += 1

    def submit(self, request: dict) -> Future:
        self.requests.append(request)
        answer: Future = Future()
        answer.set_result({"compiled": 1, "failed": []})
        return answer


def meta_tensors(channels_last: bool, dtype: torch.dtype = torch.float32):
    x = torch.empty(2, 32, 9, 9, dtype=dtype, device="meta")
    grad = torch.empty(2, 32, 9, 9, dtype=dtype, device="meta")
    if channels_last:
        x, grad = (t.contiguous(memory_format=torch.channels_last) for t in (x, grad))
    return grad, x, torch.empty(32, 1, 3, 3, dtype=dtype, device="meta")


@pytest.fixture
def pool(monkeypatch):
    recording = RecordingPool()
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(gradient, "shared_compile_workers", lambda: recording)
    return recording


@pytest.mark.parametrize("channels_last", [True, False])
def test_each_candidate_block_is_one_request_with_its_launch_arguments(pool, channels_last):
    grad, x, weight = meta_tensors(channels_last)
    futures = gradient.precompile(grad, x, weight, WINDOW)
    configs = gradient.candidate_configs(x)
    assert len(futures) == len(configs) == len(pool.requests) and pool.started == 1
    for request, config in zip(pool.requests, configs, strict=True):
        launch = gradient.plan_launch(grad.stride(), x.shape, x.stride(), (3, 3), (9, 9), WINDOW, config)
        assert request["path"] == kernel_module.__file__
        assert request["module"] == kernel_module.__name__
        assert request["symbols"] == list(launch.scalars)
        assert request["configs"] == [{"dtype": "float32", **launch.constants}]
        assert request["configs"][0]["BLOCK_C"] == config.block_c
        assert request["configs"][0]["num_warps"] == config.num_warps
    json.dumps(pool.requests)  # a request travels to the worker as one JSON line


def test_the_kernel_launches_with_the_arguments_it_is_compiled_for(monkeypatch):
    """The launch and the worker's request take their arguments from one
    `plan_launch`: the launch here passes the very scalars and constants."""
    launched = []

    class RecordingKernel:
        def launch(self, grid, *args, **constants):
            launched.append((grid, args[3:], constants))

    monkeypatch.setattr(gradient, "triton_depthwise_convolution_weight_gradient", RecordingKernel())
    x = torch.randn(2, 32, 9, 9).contiguous(memory_format=torch.channels_last)
    grad = torch.randn(2, 32, 9, 9).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(32, 1, 3, 3)
    config = gradient.candidate_configs(x)[1]
    gradient.depthwise_weight_gradient(grad, x, weight, WINDOW, config)
    launch = gradient.plan_launch(grad.stride(), x.shape, x.stride(), (3, 3), (9, 9), WINDOW, config)
    assert launched == [(launch.grid, launch.scalars, launch.constants)]


def test_warmup_compiles_the_kernel_for_the_requested_arguments(monkeypatch):
    compiled = []

    made = []

    class RecordingJit:
        def warmup(self, *args, **options):
            compiled.append((args, options))

    def recording_jit(function, **options):
        made.append((function, options))
        return RecordingJit()

    monkeypatch.setattr(kernel_module.triton, "jit", recording_jit)
    kernel_module._compiled_kernel.cache_clear()
    try:
        kernel_module.warmup([1, 2, 3], {"dtype": "bfloat16", "BLOCK_C": 32, "num_warps": 4})
        kernel_module.warmup([4, 5, 6], {"dtype": "float32", "BLOCK_C": 64, "num_warps": 8})
    finally:
        kernel_module._compiled_kernel.cache_clear()
    # one `@triton.jit` function compiles every request
    assert made == [(kernel_module.triton_depthwise_convolution_weight_gradient, kernel_module.JIT_OPTIONS)]
    assert compiled == [
        ((torch.bfloat16, torch.bfloat16, torch.float32, 1, 2, 3), {"grid": (1,), "BLOCK_C": 32, "num_warps": 4}),
        ((torch.float32, torch.float32, torch.float32, 4, 5, 6), {"grid": (1,), "BLOCK_C": 64, "num_warps": 8}),
    ]


def test_nothing_is_asked_without_a_pool_or_under_the_interpreter(monkeypatch):
    grad, x, weight = meta_tensors(True)
    monkeypatch.setattr(gradient, "shared_compile_workers", lambda: None)
    assert gradient.precompile(grad, x, weight, WINDOW) == []
    recording = RecordingPool()
    monkeypatch.setattr(gradient, "shared_compile_workers", lambda: recording)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert gradient.precompile(grad, x, weight, WINDOW) == [] and recording.requests == []


def test_a_worker_loads_the_kernel_module_without_torch(pool):
    """A worker told the GPU's capability imports the kernel's module with
    torch's stand-in: the module imports Triton only. Here Triton finds no
    GPU driver, so the compile itself fails, reported, not the import."""
    grad, x, weight = meta_tensors(True)
    gradient.precompile(grad, x, weight, WINDOW)
    workers = CompileWorkers(1)
    workers.submit({"capability": [9, 0]}).result(timeout=60)
    answer = workers.submit({**pool.requests[0], "capability": [9, 0]}).result(timeout=300)
    assert answer["compiled"] + len(answer["failed"]) == 1
    assert not any(failure.startswith("import:") for failure in answer["failed"])


PASS_INPUT = Path(__file__).parents[1] / "filecheck" / "passes" / "choose_depthwise_weight_gradients.mlir"


def _externs_of(module: ModuleOp) -> list[buf.ExternOp]:
    return [op for op in module.walk() if isinstance(op, buf.ExternOp)]


def test_the_pass_sends_every_backwards_blocks_before_timing_any(pool, monkeypatch):
    """With `choose=measured` on a GPU, the pass asks the workers for every
    candidate block of every backward the kernel takes, once per layout and
    geometry, before the first timing; the refused backwards ask nothing."""
    module = parse_module(PASS_INPUT.read_text())
    externs = _externs_of(module)
    twin = externs[0].clone()  # the same backward again: its blocks are asked for once
    externs[0].parent_block().insert_op_after(twin, externs[0])
    events = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(passes, "device_identity", lambda device: 0)
    monkeypatch.setattr(passes, "measured_block", lambda op, device: events.append(("timed", len(pool.requests))))
    passes.ChooseDepthwiseWeightGradientsPass(choose="measured").apply(make_context(), module)
    channels_last, nchw = gradient.CHANNELS_LAST_CONFIGS, gradient.NCHW_CONFIGS
    asked = [(r["configs"][0]["BLOCK_C"], r["configs"][0]["num_warps"], r["configs"][0]["dtype"]) for r in pool.requests]
    assert asked == [(c.block_c, c.num_warps, "float32") for c in channels_last] + [
        (c.block_c, c.num_warps, "float16") for c in nchw
    ]
    assert events and all(asked_then == len(pool.requests) for _, asked_then in events)


def test_the_pass_asks_nothing_when_it_does_not_time(pool, monkeypatch):
    module = parse_module(PASS_INPUT.read_text())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    passes.ChooseDepthwiseWeightGradientsPass(choose="always").apply(make_context(), module)
    assert pool.requests == []
