"""
`mode="reduce-overhead"`: compiled graphs replayed as CUDA graphs. On the CPU
the runner only passes calls through; the capture itself needs a GPU.
"""

from __future__ import annotations

import pytest
import torch

from permalloy.targets.cuda_graph import CudaGraphRunner

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_cpu_calls_pass_through():
    calls = []

    def run(x, scale):
        calls.append(scale)
        return (x * scale,)

    runner = CudaGraphRunner(run)
    x = torch.randn(4)
    for scale in (1, 2, 3, 4):
        (out,) = runner(x, scale)
        torch.testing.assert_close(out, x * scale)
    assert calls == [1, 2, 3, 4] and runner.replays == 0 and not runner.captures


@needs_cuda
def test_a_graph_is_captured_after_warm_up_and_replayed_with_new_inputs():
    weight = torch.randn(8, device="cuda")
    calls = []

    def run(x, w):
        calls.append(1)
        return (torch.exp(x) * w, x.sum(0))

    runner = CudaGraphRunner(run, warmup=2)
    results = []
    for step in range(5):
        x = torch.randn(3, 8, device="cuda")
        out = runner(x, weight)
        results.append((x, out))
    assert runner.replays == 3  # the capturing call replays too
    for x, (scaled, total) in results:
        torch.testing.assert_close(scaled, torch.exp(x) * weight)
        torch.testing.assert_close(total, x.sum(0))
    (state,) = runner.captures.values()
    assert state.fixed == [False, True]


@needs_cuda
def test_reduce_overhead_mode_compiles_to_replayed_graphs():
    import permalloy

    torch._dynamo.reset()
    permalloy.reset_stats()
    fn = torch.compile(lambda x: torch.softmax(x, -1) * 2, backend="permalloy", mode="reduce-overhead")
    inputs = [torch.randn(16, 300, device="cuda") for _ in range(5)]
    outputs = [fn(x) for x in inputs]
    for x, out in zip(inputs, outputs):
        torch.testing.assert_close(out, torch.softmax(x, -1) * 2)
    (record,) = permalloy.stats()
    assert record["compiled"] and record["target"] == "triton"
