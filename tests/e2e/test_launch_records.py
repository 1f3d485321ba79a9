"""
On a GPU, a kernel's first launch in a later process loads the binary an
earlier one recorded (`targets/triton/binaries.py`) instead of going
through Triton's JIT. A second compile of the same graph has a new target,
as a new process would: its kernels hold nothing in memory.
"""

from __future__ import annotations

import pytest
import torch

from permalloy.compiler import CompileOptions, compile_graph
from permalloy.lowering.capture import capture_with_inputs

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _softmax_scaled(x, y):
    return torch.softmax(x, -1) * y + 1


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_later_target_launches_recorded_binaries_without_triton_s_jit(monkeypatch, dtype):
    from triton.runtime.jit import JITFunction

    x = torch.randn(64, 1000, device="cuda", dtype=dtype)
    y = torch.randn(64, 1000, device="cuda", dtype=dtype)
    expected = _softmax_scaled(x, y)
    (captured,) = capture_with_inputs(_softmax_scaled, x, y)
    first = compile_graph(captured.graph_module, CompileOptions(target="triton", cache=False))
    (result,) = first.program(*captured.inputs)
    torch.testing.assert_close(result, expected)

    compiled_by_jit: list[JITFunction] = []
    run = JITFunction.run

    def counted(self, *args, **kwargs):
        compiled_by_jit.append(self)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(JITFunction, "run", counted)
    second = compile_graph(captured.graph_module, CompileOptions(target="triton", cache=False))
    for _ in range(2):
        (again,) = second.program(*captured.inputs)
        torch.testing.assert_close(again, expected)
    assert compiled_by_jit == [], "a recorded kernel went through Triton's JIT"
