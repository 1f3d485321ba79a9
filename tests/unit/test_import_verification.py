"""
The imported module is verified before it is lowered: by the importer when
the compiled-graph cache is off, and on a cache miss otherwise, so that a
cache hit, which lowers nothing, does not pay for it.
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.ir import Block, Region

import permalloy.lowering.import_fx as import_fx
from permalloy.compiler import CompileOptions, compile_graph
from permalloy.lowering.capture import capture_with_inputs
from permalloy.lowering.import_fx import GraphImportError, verify_imported


def _function_returning_nothing(result_types: list) -> ModuleOp:
    block = Block()
    block.add_op(func.ReturnOp())
    return ModuleOp([func.FuncOp("forward", ([], result_types), Region(block))])


def test_a_module_that_does_not_verify_is_a_graph_import_error():
    verify_imported(_function_returning_nothing([]))
    with pytest.raises(GraphImportError, match="the imported IR does not verify"):
        verify_imported(_function_returning_nothing([f32]))


def test_with_the_cache_the_module_is_verified_on_a_miss_only(monkeypatch, tmp_path):
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path))
    verified: list[ModuleOp] = []

    def recording(module: ModuleOp) -> None:
        verified.append(module)
        verify_imported(module)

    monkeypatch.setattr(import_fx, "verify_imported", recording)
    (captured,) = capture_with_inputs(lambda x: torch.tanh(x) * 3, torch.randn(8, 16))
    for expected_verified in (1, 1):
        compiled = compile_graph(captured.graph_module, CompileOptions())
        assert len(verified) == expected_verified
    assert compiled.stats.cache == "hit"
    (result,) = compiled.program(*captured.inputs)
    torch.testing.assert_close(result, torch.tanh(captured.inputs[0]) * 3)
