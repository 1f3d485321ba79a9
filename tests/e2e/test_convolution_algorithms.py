"""
cuDNN's algorithm search for compiled graphs' convolutions (the Triton
target's `convolution_algorithms` option; its interpreter on the CPU, or the
GPU that `PERMALLOY_TEST_DEVICE` names): with the default every convolution
and convolution gradient a compiled graph runs, forward and backward, runs
with torch's `cudnn.benchmark` on, and the user's setting is back after each
call (the library's forward convolution is seen to run with it on in
Triton's interpreter, where the host program calls torch's function); with `"torch"` the user's setting decides;
the LLVM target changes nothing; the results match eager's.
"""

from __future__ import annotations

import pytest
import torch

from conftest import TEST_DEVICE
from permalloy.tools.backend import permalloy_backend

class SettingSpy:
    """Records each write of torch's `cudnn.benchmark` setting, and the
    setting at each call of torch's convolution (the forward's library call),
    while `on`: install it before compiling, as the host program binds
    torch's convolution when it is built."""

    def __init__(self, monkeypatch) -> None:
        self.on = False
        self.writes: list[bool] = []
        self.at_convolutions: list[bool] = []
        write, convolution = torch._C._set_cudnn_benchmark, torch.convolution  # noqa: SLF001

        def recorded_write(value: bool) -> None:
            if self.on:
                self.writes.append(value)
            write(value)

        def recorded_convolution(*args, **kwargs):
            if self.on:
                self.at_convolutions.append(torch.backends.cudnn.benchmark)
            return convolution(*args, **kwargs)

        monkeypatch.setattr(torch._C, "_set_cudnn_benchmark", recorded_write)  # noqa: SLF001
        monkeypatch.setattr(torch, "convolution", recorded_convolution)


class ConvBlock(torch.nn.Module):
    """A 3x3 convolution, batch norm and ReLU, then a strided 3x3 convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.second = torch.nn.Conv2d(8, 4, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(torch.relu(self.norm(self.first(x))))


def _compiled(options: dict, device: str) -> tuple[torch.nn.Module, torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = ConvBlock().to(device)
    x = torch.randn(2, 3, 12, 12, device=device)
    return model, torch.compile(model, backend=permalloy_backend, options=options), x


@pytest.mark.parametrize("user_setting", [False, True], ids=["user_off", "user_on"])
@pytest.mark.parametrize(
    ("option", "searched"), [({}, True), ({"convolution_algorithms": "torch"}, None)], ids=["measured", "torch"]
)
def test_inference_convolutions_run_with_the_search(
    fresh_backend, triton_device, monkeypatch, option, searched, user_setting
):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", user_setting)
    spy = SettingSpy(monkeypatch)
    model, compiled, x = _compiled({"target": "triton", **option}, triton_device)
    model.eval()
    with torch.no_grad():
        expected = model(x)
        compiled(x)  # compiles
        spy.on = True
        out = compiled(x)
        spy.on = False
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    assert spy.writes == ([] if searched is None else [True, user_setting])
    if TEST_DEVICE == "cpu":
        assert spy.at_convolutions == [user_setting if searched is None else True] * 2
    assert torch.backends.cudnn.benchmark is user_setting


@pytest.mark.parametrize(("option", "writes"), [({}, [True, False]), ({"convolution_algorithms": "torch"}, [])])
def test_the_passes_run_with_the_search(fresh_backend, triton_device, monkeypatch, option, writes):
    """The compile's passes (whose timings on a GPU call the library) run with
    the search on, then the first call: one setting and one restore each."""
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    monkeypatch.setenv("PERMALLOY_CACHE", "0")  # a compile that runs the passes
    spy = SettingSpy(monkeypatch)
    model, compiled, x = _compiled({"target": "triton", **option}, triton_device)
    model.eval()
    spy.on = True
    with torch.no_grad():
        compiled(x)
    assert spy.writes == writes * 2
    assert torch.backends.cudnn.benchmark is False


def test_training_convolutions_and_their_gradients_run_with_the_search(fresh_backend, triton_device, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    spy = SettingSpy(monkeypatch)
    model, compiled, x = _compiled({"target": "triton"}, triton_device)
    model.train()
    compiled(x).sum().backward()  # compiles both graphs
    model.zero_grad()
    spy.on = True
    compiled(x).square().sum().backward()
    spy.on = False
    gradients = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).square().sum().backward()
    for got, expected in zip(gradients, (p.grad for p in model.parameters()), strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    # the forward graph's call, then the backward graph's (its convolutions' gradients)
    assert spy.writes == [True, False, True, False]
    if TEST_DEVICE == "cpu":
        assert spy.at_convolutions == [True, True]
    assert torch.backends.cudnn.benchmark is False


def test_the_llvm_target_leaves_the_setting_alone(fresh_backend, monkeypatch):
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    spy = SettingSpy(monkeypatch)
    model, compiled, x = _compiled({"target": "llvm"}, "cpu")
    with torch.no_grad():
        compiled(x)
        spy.on = True
        compiled(x)
    assert spy.writes == []
