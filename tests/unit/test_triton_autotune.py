"""
Launch configurations and their autotuning: the candidates of each kind of
kernel and mode, the choice by timing (with a fake timer here), its cache on
disk, scratch copies that keep in-place kernels from changing their inputs,
and, on a GPU, a real tuning run.
"""

from __future__ import annotations

import json

import pytest
import torch

from permalloy.dialects.buffer import BufferType
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, tensor
from permalloy.targets.triton.autotune import Autotuner, scratch_tensors
from permalloy.targets.triton.configs import CandidateSpace, Config, candidates
from permalloy.targets.triton.plan import plan_kernel


def _plan(text: str):
    kernel = parse_kernel(text)
    types = [*kernel.function_type.inputs.data, *kernel.function_type.outputs.data]
    return plan_kernel(kernel, [BufferType(t.sizes, t.element_type) for t in types], "triton_k")


def _space(text: str) -> CandidateSpace:
    return CandidateSpace.of(_plan(text))


def _row_sum(size: str) -> str:
    source, result = tensor(f"[s0, {size}]", "f32"), tensor("[s0]", "f32")
    return f"""
buffer.kernel @k(%t: {source}) -> ({result}) {{
  %r = loop.reduce sum ins(%x = %t : {source}) over [{size}] -> {result} {{
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {result}
}}"""


POINTWISE = pointwise_kernel("[s0, 64]", ["f32"], "f32", "    %y = math.exp %a0 : f32")


def test_pointwise_candidates_vary_the_block_and_max_autotune_tries_more():
    space = _space(POINTWISE)
    default = candidates(space, {"s0": 4096})
    wide = candidates(space, {"s0": 4096}, mode="max-autotune")
    assert default[0] == Config(1024, 0, 4, 1)
    assert [c.XBLOCK for c in default] == [1024, 512, 256]  # FLAT_WIDE_ONLY are left out
    assert len({c.XBLOCK for c in wide}) >= 5
    assert set(default) < set(wide)
    small = candidates(space, {"s0": 1})
    assert max(c.XBLOCK for c in small) == 64


def test_reduction_candidates_fit_the_rows_in_a_tile():
    persistent = candidates(_space(_row_sum("512")), {"s0": 1000})
    assert all(c.RBLOCK == 0 and c.XBLOCK * 512 <= 4096 for c in persistent)
    looped = candidates(_space(_row_sum("s1")), {"s0": 8, "s1": 100000})
    assert {c.RBLOCK for c in looped} == {512, 1024, 2048}
    assert all(c.XBLOCK <= 8 for c in looped)
    short = candidates(_space(_row_sum("s1")), {"s0": 8, "s1": 100})
    assert {c.RBLOCK for c in short} == {128}


@pytest.mark.parametrize("text", [POINTWISE, _row_sum("512"), _row_sum("s1")], ids=["pointwise", "persistent", "looped"])
def test_a_kernel_s_candidate_space_kept_as_json_gives_its_plan_s_candidates(text):
    """The compiled-graph cache keeps a kernel's `CandidateSpace` (JSON), not
    its plan: the space must give the plan's candidates at any size and mode."""
    space = _space(text)
    kept = CandidateSpace.from_dict(json.loads(json.dumps(space.as_dict())))
    assert kept == space
    for sizes in ({"s0": 1, "s1": 7}, {"s0": 4096, "s1": 100000}, {"s0": 37, "s1": 300}):
        for mode, interpret in (("default", False), ("max-autotune", False), ("default", True)):
            assert candidates(kept, sizes, mode, interpret) == candidates(space, sizes, mode, interpret)


def test_the_interpreter_gets_one_configuration_with_large_blocks():
    (config,) = candidates(_space(POINTWISE), {"s0": 10}, interpret=True)
    assert config.XBLOCK == 1024
    (looped,) = candidates(_space(_row_sum("s1")), {"s0": 3, "s1": 5000}, interpret=True)
    assert looped.RBLOCK == 256 and looped.XBLOCK == 4


class FakeKernel:
    """A launch that records its configurations, timed by a table."""

    def __init__(self, times: dict[int, float], failing: int | None = None):
        self.times = times
        self.failing = failing
        self.launched: list[dict] = []

    def launch(self, tensors, symbols, config):
        if config["XBLOCK"] == self.failing:
            raise RuntimeError("out of resources")
        self.launched.append(config)

    def timer(self, fn):
        fn()
        return self.times[self.launched[-1]["XBLOCK"]]


def test_the_fastest_configuration_is_chosen_and_cached_on_disk(tmp_path):
    configs = [Config(1024), Config(512), Config(256), Config(2048)]
    fake = FakeKernel({1024: 3.0, 512: 1.0, 256: 2.0}, failing=2048)
    tuner = Autotuner(tmp_path, timer=fake.timer)
    tensors = [torch.randn(4), torch.empty(4)]
    chosen = tuner.choose("source", "GPU", fake.launch, configs, tensors, [4], 1)
    assert chosen == Config(512) and tuner.benchmarked == 1
    (saved,) = (tmp_path / "triton" / "autotune").glob("*.json")
    assert json.loads(saved.read_text())["XBLOCK"] == 512
    again = Autotuner(tmp_path, timer=lambda fn: pytest.fail("a cached choice is not benchmarked"))
    assert again.known("source", "GPU", configs, tensors, [4]) == Config(512)
    assert again.known("source", "GPU", configs, tensors, [5]) is None  # other sizes: to be benchmarked
    assert again.choose("source", "GPU", fake.launch, configs, tensors, [4], 1) == Config(512)
    assert again.benchmarked == 0
    fresh = FakeKernel({1024: 1.0, 512: 2.0, 256: 3.0})
    other = Autotuner(tmp_path, timer=fresh.timer)
    assert other.choose("source", "another GPU", fresh.launch, configs[:3], tensors, [4], 1) == Config(1024)
    assert other.benchmarked == 1


class RecordingMode(torch.utils._python_dispatch.TorchDispatchMode):
    """A dispatch mode like the one AOTAutograd runs a graph's first call
    under: it sees every operator."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_candidates_run_outside_the_caller_s_dispatch_modes(tmp_path):
    ran_under: list[list] = []

    def launch(tensors, symbols, config):
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        ran_under.append(_get_current_dispatch_mode_stack())
        torch.mm(tensors[0], tensors[0], out=tensors[1])

    tuner = Autotuner(tmp_path, timer=lambda fn: float(fn() or 1.0))
    tensors = [torch.randn(4, 4), torch.empty(4, 4)]
    mode = RecordingMode()
    with mode:
        tuner.choose("source", "GPU", launch, [Config(1024), Config(512)], tensors, [4], 1)
        torch.mm(tensors[0], tensors[0])
    assert ran_under and all(stack == [] for stack in ran_under)
    assert mode.seen == ["aten.mm.default"], "the caller's mode is back after tuning, and saw none of its runs"


def test_scratch_copies_protect_inputs_that_outputs_overwrite():
    base = torch.arange(8.0)
    alias = base[2:6]
    other = torch.ones(4)
    scratch = scratch_tensors([other, alias, alias], 2)
    assert scratch[0] is other
    assert scratch[1] is not alias and torch.equal(scratch[1], alias)
    assert scratch[2].data_ptr() != alias.data_ptr() and scratch[2].stride() == alias.stride()


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@needs_cuda
def test_kernels_are_tuned_on_first_call_on_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path))
    import permalloy

    torch._dynamo.reset()
    x = torch.randn(64, 1000, device="cuda")
    fn = torch.compile(lambda x: torch.softmax(x, -1), backend="permalloy", options={"fallback": "raise"})
    torch.testing.assert_close(fn(x), torch.softmax(x, -1))
    assert permalloy.stats()[-1]["target"] == "triton"
    assert list((tmp_path / "triton" / "autotune").glob("*.json"))
