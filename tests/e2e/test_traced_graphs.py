"""
Traced-graph records: an inference graph compiled once is loaded in a later
call of the backend (a new process, or after Dynamo's reset) without
AOTAutograd's trace or the import, and matches eager. Graphs whose
AOTAutograd wrapper does more than call them, and training graphs, get no
record; a record that is damaged or whose entry is gone is a miss. Every test
has its own cache directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import permalloy
import permalloy.tools.backend as backend_module

pytestmark = pytest.mark.usefixtures("fresh_backend")

REPOSITORY = Path(__file__).resolve().parents[2]


def _records(cache: Path) -> list[Path]:
    return sorted((cache / "traced").glob("*.json"))


def _graph(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x * 2 + y, -1).sum(0) + (x @ y.t()).mean()


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    return torch.randn(16, 33, generator=generator), torch.randn(16, 33, generator=generator)


def _compile(fn: Callable, *args: torch.Tensor, dynamic: bool | None = False, **options) -> tuple[object, list[dict]]:
    """`fn` compiled afresh and called on `args` (its result), and the stats records."""
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    compiled = torch.compile(fn, backend="permalloy", dynamic=dynamic, options={"fallback": "raise", **options})
    result = compiled(*args)
    return result, permalloy.stats()


def _without_aot_autograd(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any trace by AOTAutograd through the backend fail the test."""

    def traced(*_: object, **__: object) -> None:
        raise AssertionError("AOTAutograd traced the graph")

    monkeypatch.setattr(backend_module, "aten_backend", traced)


def test_a_warm_inference_call_skips_aot_autograd_and_the_import(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _inputs()
    with torch.no_grad():
        cold, (miss,) = _compile(_graph, x, y)
        assert miss["cache"] == "miss" and len(_records(cache)) == 1
        _without_aot_autograd(monkeypatch)
        warm, (hit,) = _compile(_graph, x, y)
    torch.testing.assert_close(cold, _graph(x, y))
    torch.testing.assert_close(warm, _graph(x, y))
    assert hit["cache"] == "hit" and hit["kernels"] == miss["kernels"]
    times = hit["compile_times"]
    assert times["aot_autograd"] == 0 and times["import_fx"] == 0 and times["passes"] == {}
    assert times["cache_lookup"] > 0 and times["kernel_loading"] > 0
    assert hit["peak_intermediate_bytes"] == miss["peak_intermediate_bytes"]


def test_a_new_process_starts_warm_from_the_record(cache: Path) -> None:
    program = textwrap.dedent(
        """
        import json, torch, permalloy
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(24, 48), torch.nn.GELU(), torch.nn.LayerNorm(48)).eval()
        x = torch.randn(8, 24)
        compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise"})
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        (record,) = permalloy.stats()
        print(json.dumps({"cache": record["cache"], "aot": record["compile_times"]["aot_autograd"]}))
        """
    )
    environment = {**os.environ, "PERMALLOY_CACHE_DIR": str(cache)}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), environment.get("PYTHONPATH")]))

    def run() -> str:
        result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout.strip().splitlines()[-1]

    first = run()
    assert '"cache": "miss"' in first
    assert run() == '{"cache": "hit", "aot": 0.0}'


def test_without_its_record_a_hit_comes_from_aot_autograds_cache(cache: Path) -> None:
    """AOTAutograd's entry of the graph still loads it without the import."""
    x, y = _inputs()
    with torch.no_grad():
        _compile(_graph, x, y)
        for record in _records(cache):
            record.unlink()
        warm, (hit,) = _compile(_graph, x, y)
    torch.testing.assert_close(warm, _graph(x, y))
    assert hit["cache"] == "hit" and hit["compile_times"]["import_fx"] == 0


def test_without_its_record_or_aot_autograds_entry_a_hit_imports_the_graph(cache: Path) -> None:
    x, y = _inputs()
    with torch.no_grad():
        _compile(_graph, x, y)
        for record in _records(cache):
            record.unlink()
        shutil.rmtree(cache / "torch")
        warm, (hit,) = _compile(_graph, x, y)
    torch.testing.assert_close(warm, _graph(x, y))
    assert hit["cache"] == "hit" and hit["compile_times"]["import_fx"] > 0 and hit["compile_times"]["aot_autograd"] > 0
    assert len(_records(cache)) == 1  # written again


def test_a_record_whose_entry_is_gone_compiles_again(cache: Path) -> None:
    x, y = _inputs()
    with torch.no_grad():
        _compile(_graph, x, y)
        for entry in (cache / "graphs").glob("*.graph"):
            entry.unlink()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again, (record,) = _compile(_graph, x, y)
    torch.testing.assert_close(again, _graph(x, y))
    assert record["cache"] == "miss"
    with torch.no_grad():
        _, (hit,) = _compile(_graph, x, y)
    assert hit["cache"] == "hit" and hit["compile_times"]["aot_autograd"] == 0


@pytest.mark.parametrize(
    "damage", [b"", b"{not json", b"[1]", b'{"format": 999}', b'{"format": 1, "entry": "x"}', b"bumped input 99"]
)
def test_a_damaged_record_is_a_miss_and_is_written_again(cache: Path, damage: bytes) -> None:
    x, y = _inputs()
    with torch.no_grad():
        _compile(_graph, x, y)
        (record,) = _records(cache)
        if damage == b"bumped input 99":  # well formed, but not of this graph's inputs
            damage = record.read_bytes().replace(b'"bumped_inputs": []', b'"bumped_inputs": [99]')
        record.write_bytes(damage)
        shutil.rmtree(cache / "torch")  # AOTAutograd's entry would serve the graph
        again, (stats,) = _compile(_graph, x, y)
    torch.testing.assert_close(again, _graph(x, y))
    assert stats["cache"] == "hit" and stats["compile_times"]["aot_autograd"] > 0
    assert record.read_bytes() != damage


def test_an_entry_that_does_not_load_warns_once(cache: Path) -> None:
    x, y = _inputs()
    with torch.no_grad():
        _compile(_graph, x, y)
        (entry,) = (cache / "graphs").glob("*.graph")
        entry.write_bytes(b"\x00 not an entry")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again, (stats,) = _compile(_graph, x, y)
    torch.testing.assert_close(again, _graph(x, y))
    assert stats["cache"] == "miss"
    assert len([w for w in caught if "compiled-graph cache entry" in str(w.message)]) == 1


def _mutating(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x.add_(y)
    return x * 2


def test_an_input_update_runs_in_the_loaded_program(cache: Path) -> None:
    x, y = _inputs()
    with torch.no_grad():
        _compile(_mutating, x.clone(), y)
        assert len(_records(cache)) == 1
        warm_input, eager_input = x.clone(), x.clone()
        version = warm_input._version
        warm, (hit,) = _compile(_mutating, warm_input, y)
    assert hit["compile_times"]["aot_autograd"] == 0
    assert warm_input._version > version  # autograd sees the update, as through AOTAutograd
    torch.testing.assert_close(warm, _mutating(eager_input, y))
    torch.testing.assert_close(warm_input, eager_input)


def test_with_gradients_on_and_none_needed_the_result_needs_none(cache: Path) -> None:
    x, y = _inputs()
    _compile(_graph, x, y)
    warm, (hit,) = _compile(_graph, x, y)
    assert hit["compile_times"]["aot_autograd"] == 0
    assert not warm.requires_grad  # type: ignore[attr-defined]
    torch.testing.assert_close(warm, _graph(x, y))


def test_a_module_s_parameters_are_inputs_of_the_record(cache: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU()).eval()
    images = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        _compile(model, images)
        warm, (hit,) = _compile(model, images)
        torch.testing.assert_close(warm, model(images), rtol=1e-5, atol=1e-5)
    assert hit["compile_times"]["aot_autograd"] == 0


def test_inputs_in_other_strides_have_their_own_record(cache: Path) -> None:
    x, y = _inputs()
    with torch.no_grad():
        _compile(_graph, x, y)
        transposed = x.t().contiguous().t()
        other, (stats,) = _compile(_graph, transposed, y)
    torch.testing.assert_close(other, _graph(x, y))
    assert stats["compile_times"]["aot_autograd"] > 0 and len(_records(cache)) == 2


def _returns_a_view(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.view(-1), x + y


def _training_step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x * y).sum()


@torch.library.custom_op("permalloy_traced_test::tripled", mutates_args=())
def _tripled(x: torch.Tensor) -> torch.Tensor:
    return x * 3


@_tripled.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def _calls_a_custom_op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return _tripled(x) + y


@pytest.mark.parametrize(
    ("fn", "how"),
    [
        (_returns_a_view, "an output aliasing an input"),
        (_training_step, "an input needing gradients"),
        (_graph, "autocast"),
        (_graph, "symbolic sizes"),
        (_calls_a_custom_op, "a custom op, which may change under its name"),
    ],
)
def test_graphs_the_wrapper_does_more_for_get_no_record(cache: Path, fn: Callable, how: str) -> None:
    x, y = _inputs()
    if how == "an input needing gradients":
        x.requires_grad_(True)
    dynamic = True if how == "symbolic sizes" else False
    with torch.autocast("cpu", enabled=how == "autocast"):
        result, _ = _compile(fn, x.clone() if how != "an input needing gradients" else x, y, dynamic=dynamic)
    assert _records(cache) == []
    with torch.autocast("cpu", enabled=how == "autocast"):
        expected = fn(x.clone() if how != "an input needing gradients" else x, y)
    torch.testing.assert_close(result, expected)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v) * 2


def test_attention_kernel_settings_have_their_own_records(cache: Path) -> None:
    """Which fused kernels torch's attention may use decides what AOTAutograd
    traces it into, and Dynamo's graph does not show it."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    generator = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 3, 8, 16, generator=generator) for _ in range(3))
    with torch.no_grad():
        _compile(_attention, q, k, v)
        with sdpa_kernel(SDPBackend.MATH):
            math, (stats,) = _compile(_attention, q, k, v)
    assert stats["compile_times"]["aot_autograd"] > 0 and len(_records(cache)) == 2
    torch.testing.assert_close(math, _attention(q, k, v), rtol=1e-5, atol=1e-5)


def test_an_input_with_a_negative_bit_gets_no_record(cache: Path) -> None:
    z = torch.randn(16, 33, dtype=torch.cfloat, generator=torch.Generator().manual_seed(7))
    x, y = _inputs()
    with torch.no_grad():
        result, _ = _compile(_graph, z.conj().imag, y)
    assert _records(cache) == []
    torch.testing.assert_close(result, _graph(z.conj().imag, y))
