"""The cycle collector is paused while permalloy compiles, and left as it was."""

from __future__ import annotations

import gc

import torch

from permalloy import compiler
from permalloy.garbage_collection import garbage_collection_paused
from permalloy.tools.backend import permalloy_backend


def test_the_collector_is_off_inside_and_as_it_was_after():
    assert gc.isenabled()
    with garbage_collection_paused():
        assert not gc.isenabled()
        with garbage_collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with garbage_collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_graph_compiles_with_the_collector_off_and_it_is_back_on_after(monkeypatch):
    seen = []
    compile_graph = compiler.compile_graph

    def watched(*args, **kwargs):
        seen.append(gc.isenabled())
        return compile_graph(*args, **kwargs)

    monkeypatch.setattr("permalloy.tools.backend.compile_graph", watched)
    torch._dynamo.reset()
    x = torch.randn(8)
    result = torch.compile(lambda t: t * 2 + 1, backend=permalloy_backend, options={"cache": False})(x)
    torch.testing.assert_close(result, x * 2 + 1)
    assert seen == [False]
    assert gc.isenabled()
