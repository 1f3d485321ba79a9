"""
Graphs that update their inputs in place: batch norm's running statistics in
a training step, buffers a model writes in inference, a cache written at one
position. AOTAutograd keeps these updates in the graph (`copy_` into the
input at its end), `write-input-updates` writes them from the kernels that
compute them, and the inputs must end as eager leaves them, on both hosts
and both targets.
"""

from __future__ import annotations

import copy
import re

import pytest
import torch
from torch import nn

from conftest import TEST_DEVICE, to_test_device


class ConvBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3), nn.BatchNorm2d(8)
        )

    def forward(self, x):
        return self.body(x).relu().mean(dim=(2, 3))


class RunningBuffers(nn.Module):
    """Inference that writes its buffers: a call count, a running average, a
    cache slot chosen by the count."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))
        self.register_buffer("average", torch.zeros(16))
        self.register_buffer("cache", torch.zeros(4, 16))

    def forward(self, x):
        self.calls.add_(1)
        self.average.mul_(0.9).add_(0.1 * x.mean(0))
        self.cache[2] = x.sum(0)
        return x * self.average + self.cache.sum(0)


def _batch_norm_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: b.detach().cpu().clone() for name, b in model.named_buffers()}


def _train_steps(model, compiled, steps=3, device="cpu"):
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(4, 3, 10, 10, generator=generator).to(device)
        compiled(x).sum().backward()


def _assert_state_matches(actual: nn.Module, expected: nn.Module) -> None:
    got, want = _batch_norm_state(actual), _batch_norm_state(expected)
    assert got.keys() == want.keys()
    for name in want:
        if want[name].is_floating_point():
            torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
        else:
            assert torch.equal(got[name], want[name]), name
    for (name, p), q in zip(actual.named_parameters(), expected.parameters(), strict=True):
        torch.testing.assert_close(p.grad.cpu(), q.grad.cpu(), rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}.grad: {m}")


@pytest.mark.parametrize("host", ["python", "native"])
def test_running_statistics_of_a_training_step_match_eager(host, fresh_backend):
    torch.manual_seed(0)
    model = ConvBatchNorm()
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="permalloy", options={"target": "llvm", "host": host, "fallback": "raise"})
    _train_steps(model, compiled)
    _train_steps(reference, reference)
    _assert_state_matches(model, reference)


def test_running_statistics_on_the_triton_target(triton_device, fresh_backend):
    torch.manual_seed(0)
    model = ConvBatchNorm().to(triton_device)
    reference = copy.deepcopy(model)
    compiled = torch.compile(model, backend="permalloy", options={"target": "triton", "fallback": "raise"})
    _train_steps(model, compiled, steps=2, device=triton_device)
    _train_steps(reference, reference, steps=2, device=triton_device)
    _assert_state_matches(model, reference)


def test_the_forward_writes_the_running_statistics_from_its_kernels(tmp_path, fresh_backend):
    """Each batch norm's three buffers are updated in the forward graph by
    the kernels computing them: no copy into them, and the graph returns
    none of them for AOTAutograd to copy."""
    model = ConvBatchNorm()
    compiled = torch.compile(model, backend="permalloy", options={"target": "llvm", "dump_dir": str(tmp_path)})
    _train_steps(model, compiled, steps=1)
    (planned,) = sorted(tmp_path.glob("graph_000/*after_plan-memory.mlir"))
    text = planned.read_text()
    host = text[text.index("func.func @forward") :]
    updated = re.findall(r"%(\w+): !buffer\.buffer<[^>]*> \{ptensor\.updated\}", host.split("\n", 1)[0])
    assert len(updated) == 6
    for name in updated:
        assert not re.search(rf"buffer\.copy %\w+, %{name} ", host), name
        assert re.search(rf"buffer\.launch @\w+ ins\([^)]*\) outs\([^)]*%{name}\b", host), name


@pytest.mark.parametrize("host", ["python", "native"])
def test_buffers_written_in_inference_match_eager(host, fresh_backend):
    model = RunningBuffers()
    reference = RunningBuffers()
    compiled = torch.compile(model, backend="permalloy", options={"target": "llvm", "host": host, "fallback": "raise"})
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(5, 16, generator=generator)
            torch.testing.assert_close(compiled(x), reference(x), rtol=1e-4, atol=1e-5)
    for name, expected in reference.named_buffers():
        actual = dict(model.named_buffers())[name]
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")


def test_buffers_written_in_inference_on_the_triton_target(triton_device, fresh_backend):
    model = RunningBuffers().to(triton_device)
    reference = RunningBuffers().to(triton_device)
    compiled = torch.compile(model, backend="permalloy", options={"target": "triton", "fallback": "raise"})
    with torch.no_grad():
        for seed in range(2):
            x = to_test_device(torch.randn(5, 16, generator=torch.Generator().manual_seed(seed)), triton_device)
            torch.testing.assert_close(compiled(x), reference(x), rtol=1e-4, atol=1e-5)
    for name, expected in reference.named_buffers():
        actual = dict(model.named_buffers())[name]
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.skipif(TEST_DEVICE != "cuda", reason="needs CUDA")
def test_reduce_overhead_replays_write_the_buffers_once_per_call(fresh_backend):
    model = RunningBuffers().cuda()
    reference = RunningBuffers().cuda()
    compiled = torch.compile(model, backend="permalloy", mode="reduce-overhead")
    with torch.no_grad():
        for seed in range(6):
            x = torch.randn(5, 16, generator=torch.Generator().manual_seed(seed)).cuda()
            torch.testing.assert_close(compiled(x), reference(x), rtol=1e-4, atol=1e-5)
    assert int(model.calls) == 6
    for name, expected in reference.named_buffers():
        torch.testing.assert_close(dict(model.named_buffers())[name], expected, rtol=1e-4, atol=1e-5)


class StaticCache(nn.Module):
    """A decoder's static key cache: each call writes its step's row in place
    (`index_copy_`) and attends over the whole cache."""

    def __init__(self):
        super().__init__()
        self.register_buffer("keys", torch.zeros(2, 16, 8))

    def forward(self, key, position):
        self.keys.index_copy_(1, position, key)
        return self.keys.sum(1)


@pytest.mark.parametrize("host", ["python", "native"])
def test_a_cache_row_is_written_in_place(host, tmp_path, fresh_backend):
    """The row goes straight into the caller's cache (`index_put_`): no copy
    of the cache into new memory and back."""
    model, reference = StaticCache(), StaticCache()
    options = {"target": "llvm", "host": host, "fallback": "raise", "dump_dir": str(tmp_path)}
    compiled = torch.compile(model, backend="permalloy", options=options)
    storage = model.keys.data_ptr()
    with torch.no_grad():
        for step in range(3):
            key = torch.randn(2, 1, 8, generator=torch.Generator().manual_seed(step))
            position = torch.tensor([step])
            torch.testing.assert_close(compiled(key, position), reference(key, position))
    torch.testing.assert_close(model.keys, reference.keys)
    assert model.keys.data_ptr() == storage
    (planned,) = sorted(tmp_path.glob("graph_000/*after_plan-memory.mlir"))
    text = planned.read_text()
    assert "buffer.writes_first_input" in text and "buffer.copy" not in text


def test_a_cache_row_on_the_triton_target(triton_device, fresh_backend):
    model, reference = StaticCache().to(triton_device), StaticCache().to(triton_device)
    compiled = torch.compile(model, backend="permalloy", options={"target": "triton", "fallback": "raise"})
    with torch.no_grad():
        for step in range(2):
            key = to_test_device(torch.randn(2, 1, 8, generator=torch.Generator().manual_seed(step)), triton_device)
            position = to_test_device(torch.tensor([step]), triton_device)
            torch.testing.assert_close(compiled(key, position), reference(key, position))
    torch.testing.assert_close(model.keys, reference.keys)


def test_explain_updates_the_running_statistics(fresh_backend):
    """`permalloy.explain` imports with value labels; the buffer updates are
    imported as updates there too, so its one run leaves them as eager's."""
    import permalloy

    model = ConvBatchNorm()
    reference = copy.deepcopy(model)
    x = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(5))
    permalloy.explain(model, x)
    reference(x)
    for name, expected in reference.named_buffers():
        actual = dict(model.named_buffers())[name]
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")
