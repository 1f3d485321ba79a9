"""
The log channels (`permalloy.logs`): `PERMALLOY_LOGS` turns them on when the
backend compiles a graph; each channel's records say what it promises
(fusion decisions with their rules, kernels and host program, fallbacks with
their reasons, recompilations, compile-time summaries); without the
variable nothing is logged; an unknown channel is an error listing the
valid ones.
"""

from __future__ import annotations

import logging

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import permalloy
from permalloy import logs

pytestmark = pytest.mark.usefixtures("fresh_backend")


@pytest.fixture(autouse=True)
def quiet_channels(monkeypatch):
    """Each test starts and ends with every channel silenced."""
    monkeypatch.delenv(logs.ENVIRONMENT_VARIABLE, raising=False)
    logs.configure("")
    yield
    logs.configure("")


def scaled_median(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    total = torch.relu(x).sum()
    return torch.median(torch.sigmoid(y) * total, dim=-1).values


def _compile_and_run(fn=scaled_median, *inputs):
    inputs = inputs or (torch.randn(8, 8), torch.randn(4, 4))
    return torch.compile(fn, backend="permalloy", options={"target": "llvm"})(*inputs)


def _messages(caplog, channel: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == f"permalloy.{channel}"]


def test_channels_log_what_they_promise(monkeypatch, caplog):
    monkeypatch.setenv(logs.ENVIRONMENT_VARIABLE, "fusion,output_code,fallback,compile_time")
    with caplog.at_level(logging.DEBUG):
        _compile_and_run()
    fusion = _messages(caplog, "fusion")
    assert any("stay in different kernels: reduction-to-one-element" in m for m in fusion), fusion
    assert not any(m.startswith("inlined") for m in fusion)  # inlines are DEBUG records: +fusion
    code = _messages(caplog, "output_code")
    assert any(m.startswith("kernel reduce_sum_0:") and "define" in m for m in code), code
    assert any(m.startswith("host program:") and "def " in m for m in code), code
    assert _messages(caplog, "fallback") == ["aten.median.dim runs with torch: no converter for this op"]
    (summary,) = _messages(caplog, "compile_time")
    assert summary.startswith("graph compiled in") and "slowest passes:" in summary
    assert _messages(caplog, "recompiles") == []


def test_plus_and_all_turn_on_debug_records(monkeypatch, caplog):
    monkeypatch.setenv(logs.ENVIRONMENT_VARIABLE, "+fusion")
    with caplog.at_level(logging.DEBUG):
        _compile_and_run()
    assert any(m.startswith("inlined ") for m in _messages(caplog, "fusion"))
    assert _messages(caplog, "compile_time") == []
    assert logs.parse_channels("all") == {name: logging.INFO for name in logs.CHANNELS}
    assert logs.parse_channels("all,+fusion")["fusion"] == logging.DEBUG


def test_recompilation_of_the_same_code_is_logged(monkeypatch, caplog):
    monkeypatch.setenv(logs.ENVIRONMENT_VARIABLE, "recompiles")

    def double(x):
        return x * 2

    compiled = torch.compile(double, backend="permalloy", dynamic=False)
    with caplog.at_level(logging.DEBUG):
        compiled(torch.randn(3))
        assert _messages(caplog, "recompiles") == []
        compiled(torch.randn(3, 2))
    (message,) = _messages(caplog, "recompiles")
    assert message.startswith("compiling double at ") and "test_logs.py:" in message and "again" in message


def test_silent_by_default(caplog):
    with caplog.at_level(logging.DEBUG, logger="root"):
        logging.getLogger().setLevel(logging.DEBUG)
        _compile_and_run()
    assert [r for r in caplog.records if r.name.startswith("permalloy.")] == []


def test_an_unknown_channel_lists_the_valid_ones(monkeypatch):
    monkeypatch.setenv(logs.ENVIRONMENT_VARIABLE, "fusion,fusoin")
    with pytest.raises(BackendCompilerFailed) as caught:
        _compile_and_run()
    message = str(caught.value)
    assert "unknown PERMALLOY_LOGS channel 'fusoin'" in message
    for name in logs.CHANNELS:
        assert name in message
    with pytest.raises(logs.LogSettingError, match="valid channels: fusion, output_code"):
        logs.parse_channels("+nope")
