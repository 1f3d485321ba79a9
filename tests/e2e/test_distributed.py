"""
The backend under torch.distributed, on the CPU: two processes (spawned) on
127.0.0.1 with the gloo backend, the LLVM target.

- `torch.compile(DistributedDataParallel(model), backend=permalloy)`: Dynamo's
  DDP optimizer splits the graph at the gradient buckets' boundaries (1 MiB
  buckets, the smallest its first bucket allows, and layers of 1 MiB), and
  each piece's forward and backward graph is compiled; a few SGD steps give
  the gradients and parameters of the uncompiled DDP run.
- A model sharded with FSDP2 (`torch.distributed.fsdp.fully_shard`): in
  torch 2.13 FSDP2's hooks (all-gathers before a module's forward,
  reduce-scatters after its backward) are `torch._dynamo.disable`d, so Dynamo
  breaks the graph at each sharded module and the collectives run eagerly;
  permalloy compiles the computation between them (on gathered, unsharded
  parameters). Gradients and parameters match the uncompiled FSDP2 run.

Under DDP, Dynamo compiles the user's module's frame (torch.nn's own frames,
such as `nn.Sequential.forward`, are not compiled as frames of their own
below DDP's), so the model is a module of this file.
"""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")

WORLD = 2
STEPS = 3


class Net(nn.Module):
    """Four linear layers of about 1 MiB of parameters each, with a layer norm
    and pointwise activations between them."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Linear(16, 1024), nn.Linear(1024, 256), nn.Linear(256, 1024), nn.Linear(1024, 4)]
        )
        self.norm = nn.LayerNorm(256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first, second, third, last = self.layers
        h = nn.functional.gelu(first(x))
        h = torch.relu(self.norm(second(h)))
        h = torch.tanh(third(h))
        return last(h)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _full(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor's whole value (an FSDP2 DTensor's, gathered)."""
    full = tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor
    return full.detach().clone()


def _train(wrap, compiled: bool, inputs: list[torch.Tensor]) -> tuple[list, list, list]:
    """STEPS of SGD on the wrapped model; the gradients of each step, the
    final parameters, and permalloy's stats records of the run."""
    import permalloy

    torch.manual_seed(0)
    model = Net()
    wrapped = wrap(model)
    optimizer = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    permalloy.reset_stats()
    torch._dynamo.reset()  # noqa: SLF001
    options = {"target": "llvm", "fallback": "raise"}
    run = torch.compile(wrapped, backend="permalloy", options=options) if compiled else wrapped
    gradients = []
    for x in inputs:
        optimizer.zero_grad()
        run(x).pow(2).mean().backward()
        gradients.append([_full(p.grad) for p in wrapped.parameters()])
        optimizer.step()
    return gradients, [_full(p) for p in wrapped.parameters()], permalloy.stats()


def _ddp(model: nn.Module) -> nn.Module:
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, bucket_cap_mb=1)


def _fsdp2(model: nn.Module) -> nn.Module:
    from torch.distributed.fsdp import fully_shard

    for layer in model.layers:
        fully_shard(layer)
    return fully_shard(model)


def _worker(rank: int, port: int, kind: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        torch.manual_seed(100 + rank)  # each rank its own batches
        inputs = [torch.randn(8, 16) for _ in range(STEPS)]
        wrap = _ddp if kind == "ddp" else _fsdp2
        eager_gradients, eager_parameters, _ = _train(wrap, False, inputs)
        gradients, parameters, records = _train(wrap, True, inputs)
        for step, (ours, theirs) in enumerate(zip(gradients, eager_gradients)):
            for index, (a, b) in enumerate(zip(ours, theirs)):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"step {step} gradient {index}")
        for a, b in zip(parameters, eager_parameters):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
        assert records and all(r["compiled"] for r in records), records
        if kind == "ddp":
            # Dynamo's DDP optimizer split the forward at bucket boundaries:
            # several forward graphs, each with its backward graph
            assert len(records) >= 4 and len(records) % 2 == 0, len(records)
    finally:
        dist.destroy_process_group()


def _spawn(kind: str) -> None:
    previous = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"  # two processes on a shared machine
    try:
        mp.spawn(_worker, args=(_free_port(), kind), nprocs=WORLD, join=True)
    finally:
        if previous is None:
            os.environ.pop("OMP_NUM_THREADS")
        else:
            os.environ["OMP_NUM_THREADS"] = previous


def test_compiled_ddp_with_graphs_split_at_buckets_trains_like_eager_ddp():
    _spawn("ddp")


def test_compiled_fsdp2_model_trains_like_eager_fsdp2():
    _spawn("fsdp2")
