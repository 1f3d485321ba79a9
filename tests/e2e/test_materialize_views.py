"""
Views that the host program would copy before a library call
(`materialize-views`) run as kernels that fusion takes their producers
into: a shifted-window attention block (a layer norm, its result rolled and
partitioned into windows for the qkv product, the heads' keys transposed for
the scores' batched product, the heads merged back for the projection, the
windows reversed and rolled back into the residual) matches eager on both
targets (Triton under its interpreter on the CPU), inference and training,
and its host program copies no view.
"""

from __future__ import annotations

import glob
import os

import pytest
import torch
from conftest import assert_training_step_matches

from permalloy.tools.backend import permalloy_backend

DEVICE = os.environ.get("PERMALLOY_TEST_DEVICE", "cpu")
WINDOW = 4


class WindowAttention(torch.nn.Module):
    """One shifted-window attention block, as Swin writes it (without the
    relative position bias and the mask): rows of `[B, H, W, C]` images
    attend within `WINDOW x WINDOW` windows shifted by half a window."""

    def __init__(self, channels: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.norm = torch.nn.LayerNorm(channels)
        self.qkv = torch.nn.Linear(channels, 3 * channels)
        self.project = torch.nn.Linear(channels, channels)

    def forward(self, x):
        batch, height, width, channels = x.shape
        shift = WINDOW // 2
        y = torch.roll(self.norm(x), shifts=(-shift, -shift), dims=(1, 2))
        y = y.view(batch, height // WINDOW, WINDOW, width // WINDOW, WINDOW, channels)
        windows = y.permute(0, 1, 3, 2, 4, 5).reshape(-1, WINDOW * WINDOW, channels)
        count, tokens, _ = windows.shape
        qkv = self.qkv(windows).reshape(count, tokens, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        scores = (q * (channels // self.heads) ** -0.5) @ k.transpose(-2, -1)
        attended = scores.softmax(-1) @ v
        merged = self.project(attended.transpose(1, 2).reshape(count, tokens, channels))
        merged = merged.view(batch, height // WINDOW, width // WINDOW, WINDOW, WINDOW, channels)
        merged = merged.permute(0, 1, 3, 2, 4, 5).reshape(batch, height, width, channels)
        return x + torch.roll(merged, shifts=(shift, shift), dims=(1, 2))


pytestmark = pytest.mark.usefixtures("triton_device", "fresh_backend")


def _targets() -> list[str]:
    return ["triton"] if DEVICE == "cuda" else ["llvm", "triton"]


def _final_programs(dump_dir) -> list[str]:
    """The buffer programs of every graph dumped under `dump_dir`."""
    programs = []
    for graph in sorted(glob.glob(os.path.join(dump_dir, "graph_*"))):
        stages = sorted(glob.glob(os.path.join(graph, "*_after_plan-memory.mlir")))
        with open(stages[-1]) as f:
            programs.append(f.read())
    return programs


@pytest.mark.parametrize("target", _targets())
def test_window_attention_copies_no_view(tmp_path, target):
    torch.manual_seed(0)
    model = WindowAttention().to(DEVICE).eval()
    x = torch.randn(2, 8, 8, 16, device=DEVICE)
    compiled = torch.compile(model, backend=permalloy_backend, options={"target": target, "dump_dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    (program,) = _final_programs(tmp_path)
    assert "buffer.copy" not in program, program
    assert program.count("buffer.extern") >= 4, program  # the two linear layers and the two batched products


@pytest.mark.parametrize("target", _targets())
def test_window_attention_training_matches_eager(tmp_path, target):
    torch.manual_seed(1)
    x = torch.randn(2, 8, 8, 16, device=DEVICE)
    assert_training_step_matches(
        lambda: WindowAttention().to(DEVICE), x, {"target": target, "dump_dir": str(tmp_path)}
    )
    forward, backward = _final_programs(tmp_path)
    assert "buffer.copy" not in forward, forward
