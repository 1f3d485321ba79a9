"""
AOTAutograd's cache (`tools/autograd_cache.py`): a training step compiled
once is loaded in a later call of the backend (after Dynamo's reset, or in a
new process) without AOTAutograd's trace, permalloy's import or its
pipeline, and its loss and gradients match eager. So is an inference graph
that a traced-graph record cannot cover (one that updates its input). A
missing compiled-graph entry is a miss that compiles again; other options,
symbolic sizes and the cache turned off give no hit. Every test has its own
cache directories.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters
from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache, FXGraphCacheMiss

import permalloy
import permalloy.tools.backend as backend_module
from permalloy.compiler import CompileOptions
from permalloy.tools.autograd_cache import CompiledGraphCode

pytestmark = pytest.mark.usefixtures("fresh_backend")

REPOSITORY = Path(__file__).resolve().parents[2]


class _Block(torch.nn.Module):
    """A linear layer, GELU, layer norm and attention over the rows."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(torch.nn.functional.gelu(self.linear(x)))
        q = h.unflatten(-1, (2, 8)).transpose(1, 2)
        attended = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        return attended.transpose(1, 2).flatten(-2) + x


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return _Block()


def _input() -> torch.Tensor:
    return torch.randn(2, 12, 16, generator=torch.Generator().manual_seed(1))


def _step(model: torch.nn.Module, x: torch.Tensor, **options) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One training step of `model` compiled afresh: its loss and gradients."""
    torch._dynamo.reset()  # noqa: SLF001
    model.zero_grad(set_to_none=True)
    compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise", **options})
    loss = (compiled(x) ** 2).sum()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def _eager_step(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    loss = (model(x) ** 2).sum()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def _assert_matches_eager(step: tuple, eager: tuple) -> None:
    torch.testing.assert_close(step[0], eager[0], rtol=1e-5, atol=1e-5)
    for gradient, expected in zip(step[1], eager[1]):
        assert ((gradient - expected).norm() / expected.norm()).item() < 1e-5


def _stats_after(run) -> tuple[object, list[dict]]:
    permalloy.reset_stats()
    counters.clear()
    result = run()
    return result, permalloy.stats()


def _without_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any compilation by permalloy's pipeline fail the test."""

    def compiled(*_: object, **__: object) -> None:
        raise AssertionError("the graph was compiled")

    monkeypatch.setattr(backend_module, "compile_graph", compiled)


def _failing_backward_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make permalloy's compilation of any backward graph (one taking
    tangents) raise `RuntimeError("no backward today")`."""
    compile_graph = backend_module.compile_graph

    def forward_only(graph, options, *args, **kwargs):
        if any(n.name.startswith("tangents") for n in graph.graph.nodes if n.op == "placeholder"):
            raise RuntimeError("no backward today")
        return compile_graph(graph, options, *args, **kwargs)

    monkeypatch.setattr(backend_module, "compile_graph", forward_only)


def test_a_training_step_compiled_before_loads_without_tracing(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, x = _model(), _input()
    eager = _eager_step(model, x)
    cold, misses = _stats_after(lambda: _step(model, x))
    assert [r["cache"] for r in misses] == ["miss", "miss"]
    assert counters["aot_autograd"]["autograd_cache_saved"] == 1
    _without_compiling(monkeypatch)
    warm, hits = _stats_after(lambda: _step(model, x))
    assert counters["aot_autograd"]["autograd_cache_hit"] == 1
    assert [r["cache"] for r in hits] == ["hit", "hit"]
    for record in hits:
        times = record["compile_times"]
        assert times["import_fx"] == 0 and times["passes"] == {} and times["kernel_loading"] > 0
    assert [r["kernels"] for r in hits] == [r["kernels"] for r in misses]
    _assert_matches_eager(cold, eager)
    _assert_matches_eager(warm, eager)


def test_a_backward_graph_is_imported_once_for_the_record_and_its_compile(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AOTAutograd's cache asks for the backward graph's record before the
    graph compiles: the import and key made for the record are the ones its
    compile takes, so each graph of the step is imported and keyed once, and
    the step still matches eager."""
    import permalloy.compiler as compiler_module
    import permalloy.lowering.import_fx as import_fx

    imports, keys = [], []
    import_graph, cache_key = import_fx.import_graph, compiler_module._cache_key  # noqa: SLF001

    def counted_import(graph, *args, **kwargs):
        imports.append(graph)
        return import_graph(graph, *args, **kwargs)

    def counted_key(*args, **kwargs):
        keys.append(args[1])
        return cache_key(*args, **kwargs)

    monkeypatch.setattr(import_fx, "import_graph", counted_import)
    monkeypatch.setattr(compiler_module, "_cache_key", counted_key)
    model, x = _model(), _input()
    eager = _eager_step(model, x)
    cold, misses = _stats_after(lambda: _step(model, x))
    assert counters["aot_autograd"]["autograd_cache_saved"] == 1
    assert [r["cache"] for r in misses] == ["miss", "miss"]
    assert len(imports) == len(keys) == 2 and len({id(g) for g in imports}) == 2
    _assert_matches_eager(cold, eager)


def test_a_new_process_starts_its_training_step_warm(cache: Path) -> None:
    program = textwrap.dedent(
        """
        import json, torch, permalloy
        from torch._dynamo.utils import counters
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(24, 48), torch.nn.GELU(), torch.nn.Linear(48, 8))
        x = torch.randn(8, 24)
        expected = model(x).square().sum()
        expected.backward()
        gradients = [p.grad.clone() for p in model.parameters()]
        model.zero_grad(set_to_none=True)
        compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise"})
        loss = compiled(x).square().sum()
        loss.backward()
        torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
        for p, g in zip(model.parameters(), gradients):
            assert ((p.grad - g).norm() / g.norm()).item() < 1e-5
        print(json.dumps({"cache": [r["cache"] for r in permalloy.stats()],
                          "hits": counters["aot_autograd"]["autograd_cache_hit"]}))
        """
    )
    environment = {**os.environ, "PERMALLOY_CACHE_DIR": str(cache), "TORCHINDUCTOR_CACHE_DIR": str(cache / "torch")}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), environment.get("PYTHONPATH")]))

    def run() -> str:
        result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout.strip().splitlines()[-1]

    assert run() == '{"cache": ["miss", "miss"], "hits": 0}'
    assert run() == '{"cache": ["hit", "hit"], "hits": 1}'


def test_a_missing_compiled_graph_entry_compiles_again(cache: Path) -> None:
    model, x = _model(), _input()
    eager = _eager_step(model, x)
    _step(model, x)
    for entry in (cache / "graphs").glob("*.graph"):
        entry.unlink()
    again, records = _stats_after(lambda: _step(model, x))
    assert counters["aot_autograd"]["autograd_cache_miss"] == 1
    assert [r["cache"] for r in records] == ["miss", "miss"]
    _assert_matches_eager(again, eager)
    _, hits = _stats_after(lambda: _step(model, x))
    assert [r["cache"] for r in hits] == ["hit", "hit"] and counters["aot_autograd"]["autograd_cache_hit"] == 1


def test_other_options_are_another_entry(cache: Path) -> None:
    model, x = _model(), _input()
    _step(model, x)
    unfused, records = _stats_after(lambda: _step(model, x, fusion=False))
    assert counters["aot_autograd"]["autograd_cache_hit"] == 0
    assert [r["cache"] for r in records] == ["miss", "miss"]
    _assert_matches_eager(unfused, _eager_step(model, x))


def test_no_entry_with_the_cache_off_or_symbolic_sizes(cache: Path) -> None:
    model, x = _model(), _input()
    _stats_after(lambda: _step(model, x, cache=False))
    assert counters["aot_autograd"]["autograd_cache_saved"] == 0
    torch._dynamo.reset()  # noqa: SLF001
    compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise"}, dynamic=True)
    counters.clear()
    for rows in (12, 7):
        compiled(torch.randn(2, rows, 16)).sum().backward()
    assert counters["aot_autograd"]["autograd_cache_saved"] == 0


def test_an_inference_graph_returning_a_view_of_its_input_loads_from_aot_autograds_entry(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A traced-graph record cannot hold the view AOTAutograd's wrapper
    regenerates; AOTAutograd's entry does."""

    def viewing(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.t(), torch.softmax(x * 2 + y, -1)

    x, y = torch.randn(4, 9, generator=torch.Generator().manual_seed(2)), torch.ones(4, 9)

    def run() -> tuple[torch.Tensor, torch.Tensor]:
        torch._dynamo.reset()  # noqa: SLF001
        compiled = torch.compile(viewing, backend="permalloy", options={"fallback": "raise"})
        with torch.no_grad():
            return compiled(x, y)

    _, (miss,) = _stats_after(run)
    assert miss["cache"] == "miss" and not list((cache / "traced").glob("*.json"))
    _without_compiling(monkeypatch)
    (view, result), (hit,) = _stats_after(run)
    assert hit["cache"] == "hit" and counters["aot_autograd"]["autograd_cache_hit"] == 1
    torch.testing.assert_close(result, torch.softmax(x * 2 + y, -1))
    assert view.data_ptr() == x.data_ptr() and view.stride() == x.t().stride()


def test_compiled_graph_code_pickles_what_loads_it_and_nothing_else() -> None:
    options = CompileOptions(target="llvm")
    unloadable = CompiledGraphCode(lambda *args: args, None, options)
    assert unloadable([1, 2]) == (1, 2)
    with pytest.raises(BypassAOTAutogradCache):
        unloadable.prepare_for_serialization()
    with pytest.raises(FXGraphCacheMiss):
        pickle.loads(pickle.dumps(unloadable)).post_compile([], None, {})
    loaded = pickle.loads(pickle.dumps(unloadable))
    assert loaded.runner is None and loaded.options == options
    with pytest.raises(RuntimeError, match="before it was loaded"):
        loaded([])


def test_a_backward_graph_that_fails_to_compile_runs_as_its_aten_graph(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backward graph compiles on its first call; its failure leaves the
    forward compiled and runs the backward's ATen graph after one warning."""
    model, x = _model(), _input()
    eager = _eager_step(model, x)
    _failing_backward_compiles(monkeypatch)
    with pytest.warns(UserWarning, match="runs it eagerly: RuntimeError: no backward today"):
        step, records = _stats_after(lambda: _step(model, x, fallback="warn"))
    assert [r["compiled"] for r in records] == [True, False]
    _assert_matches_eager(step, eager)


def test_a_forward_with_gradients_on_compiles_no_backward_until_it_runs(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AOTAutograd hands the backend the backward graph with the forward;
    it compiles on its first call, so its failure waits for a backward
    call, even with `fallback="raise"`."""
    model, x = _model(), _input()
    _failing_backward_compiles(monkeypatch)
    compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        output = compiled(x)
    torch.testing.assert_close(output, model(x))
    assert [r["compiled"] for r in permalloy.stats()] == [True]
    with pytest.raises(RuntimeError, match="no backward today"):
        output.sum().backward()


def test_a_step_whose_backward_never_ran_loads_after_one_that_ran(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """AOTAutograd's entry names the backward's compiled-graph entry before
    it exists: a later call misses until a backward has run, then hits."""
    model, x = _model(), _input()
    eager = _eager_step(model, x)
    compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise"})
    compiled(x)  # forward only: the backward is never compiled
    _, records = _stats_after(lambda: _step(model, x))
    assert counters["aot_autograd"]["autograd_cache_miss"] == 1
    assert [r["cache"] for r in records] == ["hit", "miss"]  # the forward's entry, the backward compiled
    _without_compiling(monkeypatch)
    warm, hits = _stats_after(lambda: _step(model, x))
    assert [r["cache"] for r in hits] == ["hit", "hit"] and counters["aot_autograd"]["autograd_cache_hit"] == 1
    _assert_matches_eager(warm, eager)
