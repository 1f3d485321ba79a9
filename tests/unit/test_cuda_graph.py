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


def test_a_replay_is_admitted_only_for_arguments_the_graph_was_captured_for():
    """The fast check before a replay: parameters at their addresses, copied
    inputs of the captured sizes, strides and dtype, other values equal."""
    from permalloy.targets.cuda_graph import _Capture

    weight, x = torch.randn(8), torch.randn(3, 8)
    state = _Capture(addresses=[None, weight.data_ptr(), None], fixed=[False, True, False])
    state.inputs = [x.clone(), weight, 2]
    state.captured(graph=object(), args=[x, weight, 2], updated=(0, 1))
    assert (state.fixed_positions, state.copied_positions, state.value_positions) == ([1], [0], [2])
    assert state.copied_back == [0]  # the written parameter is written where it is
    assert state.admits((torch.randn(3, 8), weight, 2))
    assert not state.admits((torch.randn(3, 8), weight.clone(), 2))  # the parameter moved
    assert not state.admits((torch.randn(4, 8), weight, 2))
    assert not state.admits((torch.randn(8, 3).t(), weight, 2))
    assert not state.admits((torch.randn(3, 8, dtype=torch.float64), weight, 2))
    assert not state.admits((torch.randn(3, 8), weight, 3))
    assert not state.admits((torch.randn(3, 8), weight))
    assert not _Capture().admits((x, weight, 2))  # nothing captured yet


@needs_cuda
def test_replays_follow_the_arguments_signatures_and_moved_parameters():
    weight = torch.randn(8, device="cuda")
    runner = CudaGraphRunner(lambda x, w: (x * w, x + 1), warmup=1)
    for rows in (3, 3, 5, 5, 3):
        x = torch.randn(rows, 8, device="cuda")
        scaled, shifted = runner(x, weight)
        torch.testing.assert_close(scaled, x * weight)
        torch.testing.assert_close(shifted, x + 1)
    assert len(runner.captures) == 2 and runner.replays == 3
    moved = weight.clone()
    for _ in range(3):
        x = torch.randn(3, 8, device="cuda")
        (scaled, _shifted) = runner(x, moved)
        torch.testing.assert_close(scaled, x * moved)


@needs_cuda
def test_an_argument_the_graph_writes_is_written_once_per_call():
    """A fixed argument (a buffer) is written where it is; a copied one is
    copied back after each replay; the capturing call writes either once."""

    def run(x, counter):
        counter.add_(1)
        return (x * counter,)

    runner = CudaGraphRunner(run, warmup=2, updated=(1,))
    counter = torch.zeros(1, device="cuda")
    for call in range(1, 6):
        x = torch.randn(4, device="cuda")
        (out,) = runner(x, counter)
        torch.testing.assert_close(out, x * call)
    assert int(counter) == 5 and runner.replays == 3
    for _ in range(3):
        fresh = torch.zeros(1, device="cuda")
        (out,) = runner(x, fresh)
        torch.testing.assert_close(out, x)
        assert int(fresh) == 1
