"""
The torch.compile backend's options, dumps, fallback and statistics.

- Unknown options, targets, fallback values and modes are errors that list the
  valid ones.
- `dump_dir` (and PERMALLOY_DUMP_DIR) writes one folder per graph, with the
  stages in pipeline order; every .mlir stage parses back with `permalloy-opt`
  and prints as the same text.
- A graph that cannot compile warns once and runs eagerly (`fallback="warn"`),
  or raises (`fallback="raise"`).
- `permalloy.stats()` describes each compiled graph; `reset_stats()` clears it.
- The backend is found by name, without importing permalloy first.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import permalloy
import permalloy.tools.backend as backend
from permalloy.pipeline import default_pipeline

pytestmark = pytest.mark.usefixtures("fresh_backend")

OPT = [sys.executable, "-c", "from permalloy.tools.opt import main; main()"]
"""`permalloy-opt`, run with this interpreter."""


def _compile(fn, **kwargs):
    return torch.compile(fn, backend="permalloy", **kwargs)


def _inner(error: BaseException) -> BaseException:
    """The exception the backend raised, inside Dynamo's wrapper."""
    assert isinstance(error, BackendCompilerFailed), type(error)
    return error.inner_exception


def _pointwise(x):
    return x.sin() * 2 + 1


# -- option checking ----------------------------------------------------------


def test_unknown_option_lists_the_valid_ones() -> None:
    with pytest.raises(BackendCompilerFailed) as caught:
        _compile(_pointwise, options={"targte": "llvm"})(torch.randn(4))
    error = _inner(caught.value)
    assert isinstance(error, backend.PermalloyOptionError)
    message = str(error)
    assert "'targte'" in message
    for name in backend.VALID_OPTIONS:
        assert name in message
    assert {"target", "dump_dir", "fallback"} <= set(backend.VALID_OPTIONS)


@pytest.mark.parametrize(
    ("kwargs", "pattern", "valid"),
    [
        ({"options": {"target": "cuda"}}, "unknown target 'cuda'", ("llvm", "reference")),
        ({"options": {"fallback": "ignore"}}, "unknown fallback 'ignore'", ("warn", "raise")),
        ({"mode": "fastest"}, "unknown mode 'fastest'", backend.VALID_MODES),
        ({"options": {"mode": "fastest"}}, "unknown mode 'fastest'", backend.VALID_MODES),
    ],
    ids=["target", "fallback", "mode", "mode_as_option"],
)
def test_bad_values_list_the_valid_ones(kwargs, pattern, valid) -> None:
    with pytest.raises(BackendCompilerFailed) as caught:
        _compile(_pointwise, **kwargs)(torch.randn(4))
    error = _inner(caught.value)
    assert isinstance(error, backend.PermalloyOptionError)
    assert pattern in str(error)
    for value in valid:
        assert value in str(error)


def test_parse_options_accepts_the_valid_ones(tmp_path: Path) -> None:
    options = backend.parse_options(
        {"target": "reference", "dump_dir": tmp_path, "fallback": "raise"}, "max-autotune"
    )
    assert options.target == "reference"
    assert (options.fallback, options.mode) == ("raise", "max-autotune")
    assert options.dump_dir == str(tmp_path)
    defaults = backend.parse_options(None, None)
    assert (defaults.fallback, defaults.dump_dir, defaults.mode) == ("warn", None, "default")


def test_default_target_on_cpu_is_llvm() -> None:
    _compile(_pointwise)(torch.randn(4))
    (record,) = permalloy.stats()
    assert record["target"] == "llvm"


@pytest.mark.parametrize("mode", backend.VALID_MODES)
def test_every_valid_mode_compiles(mode: str) -> None:
    x = torch.randn(3, 5)
    torch.testing.assert_close(_compile(_pointwise, mode=mode)(x), _pointwise(x))
    (record,) = permalloy.stats()
    assert record["compiled"]


# -- stage dumps ----------------------------------------------------------------


def _two_graphs(x, w):
    y = torch.softmax(x @ w, dim=-1)
    torch._dynamo.graph_break()  # noqa: SLF001
    return (y.t() * 2).sum(0) + y.amax()


def _stage_names(folder: Path) -> list[str]:
    """The files of a graph's folder, in stage order, without their numbers."""
    files = sorted(folder.iterdir())
    numbers = [int(f.name.split("_", 1)[0]) for f in files]
    assert numbers == list(range(len(files))), [f.name for f in files]
    return [f.name.split("_", 1)[1] for f in files]


def _check_dumps(root: Path) -> None:
    """One folder per compiled graph, with every stage in pipeline order, and
    .mlir stages that permalloy-opt parses and prints back identically."""
    records = permalloy.stats()
    folders = sorted(root.iterdir())
    assert [f.name for f in folders] == [f"graph_{i:03d}" for i in range(len(records))]
    assert len(records) == 2
    passes = [f"after_{name.split('{')[0]}.mlir" for name in default_pipeline(target="llvm")]
    for folder, record in zip(folders, records, strict=True):
        names = _stage_names(folder)
        kernels = names[1 + len(passes) : -2]
        assert names[0] == "imported.mlir"
        assert names[1 : 1 + len(passes)] == passes
        assert names[-2:] == ["host.py", "host.ll"]
        assert len(kernels) == record["kernels"] > 0
        assert all(re.fullmatch(r"kernel_\w+\.ll", k) for k in kernels), kernels
        host = next(folder.glob("*_host.py")).read_text()
        assert host.startswith("def host(")
        assert "define i32 @" in next(folder.glob("*_host.ll")).read_text()
        for kernel in sorted(folder.glob("*_kernel_*.ll")):
            assert "define " in kernel.read_text()
        _check_round_trip(sorted(folder.glob("*.mlir")))


def _check_round_trip(files: list[Path]) -> None:
    """permalloy-opt reads every file (one run, --split-input-file) and prints
    each as the text it read."""
    assert files
    texts = [f.read_text() for f in files]
    joined = "\n// -----\n".join(texts)
    result = subprocess.run(
        [*OPT, "--split-input-file"], input=joined, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    printed = result.stdout.split("// -----")
    assert len(printed) == len(files)
    for path, text, again in zip(files, texts, printed, strict=True):
        assert again.strip("\n") == text.strip("\n"), f"{path.name} prints differently"


def test_dump_dir_writes_every_stage_of_every_graph(tmp_path: Path) -> None:
    x, w = torch.randn(4, 6), torch.randn(6, 5)
    compiled = _compile(_two_graphs, options={"dump_dir": str(tmp_path / "dumps")})
    torch.testing.assert_close(compiled(x, w), _two_graphs(x, w))
    _check_dumps(tmp_path / "dumps")


def test_dump_dir_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PERMALLOY_DUMP_DIR", str(tmp_path / "env"))
    x, w = torch.randn(4, 6), torch.randn(6, 5)
    torch.testing.assert_close(_compile(_two_graphs)(x, w), _two_graphs(x, w))
    _check_dumps(tmp_path / "env")


def test_a_dumped_stage_parses_back_alone(tmp_path: Path) -> None:
    """A single stage file, given to permalloy-opt as a path."""
    _compile(_pointwise, options={"dump_dir": str(tmp_path)})(torch.randn(8))
    (stage,) = tmp_path.glob("graph_000/*_after_convert-loop-to-buffer.mlir")
    result = subprocess.run([*OPT, str(stage)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip("\n") == stage.read_text().strip("\n")


def test_no_dumps_without_the_option(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PERMALLOY_DUMP_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    _compile(_pointwise)(torch.randn(8))
    assert list(tmp_path.iterdir()) == []


# -- graphs that cannot compile --------------------------------------------------


def _failing_compile(graph, options, *_, **__):
    raise RuntimeError("lowering exploded")


def _permalloy_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "permalloy could not compile" in str(w.message)]


def test_failure_warns_once_and_runs_eagerly(monkeypatch) -> None:
    monkeypatch.setattr(backend, "compile_graph", _failing_compile)
    compiled = _compile(_pointwise, options={"fallback": "warn"})
    x = torch.randn(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            torch.testing.assert_close(compiled(x), _pointwise(x))
    (message,) = _permalloy_warnings(caught)
    assert "RuntimeError: lowering exploded" in message
    (record,) = permalloy.stats()
    assert not record["compiled"]
    assert record["reason"] == "RuntimeError: lowering exploded"


def test_failure_raises_with_fallback_raise(monkeypatch) -> None:
    monkeypatch.setattr(backend, "compile_graph", _failing_compile)
    with pytest.raises(BackendCompilerFailed) as caught:
        _compile(_pointwise, options={"fallback": "raise"})(torch.randn(3))
    assert isinstance(_inner(caught.value), RuntimeError)
    assert "lowering exploded" in str(caught.value)


def _complex(x):
    z = torch.view_as_complex(x)
    return torch.asinh(z * z).abs() + 1


def test_complex_ops_without_a_rule_warn_once_and_run_eagerly() -> None:
    """Complex tensors compile as real pairs (`complex_as_real`); a graph
    with an op on them that no rule writes so (`asinh`) runs eagerly, after
    one warning naming the op."""
    compiled = _compile(_complex)
    x = torch.randn(5, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            torch.testing.assert_close(compiled(x), _complex(x))
    (message,) = _permalloy_warnings(caught)
    assert "no rule writes these ops on real pairs: aten.asinh.default" in message
    (record,) = permalloy.stats()
    assert not record["compiled"]
    assert "ComplexGraphError" in record["reason"]


def test_complex_ops_without_a_rule_raise_with_fallback_raise() -> None:
    with pytest.raises(BackendCompilerFailed, match="aten.asinh.default"):
        _compile(_complex, options={"fallback": "raise"})(torch.randn(5, 2))


# -- statistics ---------------------------------------------------------------------


def _mixed(x, w):
    """A kernel (pointwise), a library call (mm) and a fallback op (median)."""
    return torch.median((x @ w).relu() + 1, dim=1).values


def test_stats_describe_each_graph() -> None:
    x, w = torch.randn(4, 6), torch.randn(6, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = _compile(_mixed, options={"target": "reference"})(x, w)
    torch.testing.assert_close(result, _mixed(x, w))
    (record,) = permalloy.stats()
    assert record["compiled"] is True
    assert record["reason"] == ""
    assert record["target"] == "reference"
    assert record["kernels"] >= 1
    assert record["extern_calls"] >= 2
    assert record["fallback_ops"] == ["aten.median.dim"]
    assert 0 < record["compile_seconds"] < 60


def test_stats_give_the_host_time_per_call_after_the_first_calls() -> None:
    """`host_us_per_call`: the median time of calls 2 to 11 around the host
    program (of those made so far), None after the first call only; later
    calls leave it as it is."""
    from permalloy.stats import HOST_TIMED_CALLS

    x = torch.randn(1024)
    compiled = _compile(_pointwise)
    values = []
    for call in range(HOST_TIMED_CALLS + 4):
        torch.testing.assert_close(compiled(x), _pointwise(x))
        (record,) = permalloy.stats()
        values.append(record["host_us_per_call"])
    assert values[0] is None
    assert all(0 < v < 1e6 for v in values[1:])
    assert values[HOST_TIMED_CALLS] == values[-1], "calls after the timed ones do not count"


def test_stats_accumulate_and_reset() -> None:
    x = torch.randn(8)
    _compile(_pointwise)(x)
    _compile(lambda y: y.exp().sum())(x)
    records = permalloy.stats()
    assert len(records) == 2
    assert all(r["compiled"] and r["target"] == "llvm" and r["fallback_ops"] == [] for r in records)
    records.clear()
    assert len(permalloy.stats()) == 2, "stats() gives a copy"
    permalloy.reset_stats()
    assert permalloy.stats() == []


# -- found by name ------------------------------------------------------------------

_BY_NAME = """
import sys, torch
assert "permalloy" not in sys.modules
x = torch.randn(4)
y = torch.compile(lambda x: x.sin() + 1, backend="permalloy")(x)
torch.testing.assert_close(y, x.sin() + 1)
import permalloy
(record,) = permalloy.stats()
assert record["compiled"] and record["kernels"] >= 1, record
print("compiled by name")
"""


def test_backend_works_by_name_without_importing_permalloy() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PERMALLOY_DUMP_DIR"}
    result = subprocess.run(
        [sys.executable, "-c", _BY_NAME], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "compiled by name" in result.stdout
    assert "could not compile" not in result.stderr


def test_matrix_products_write_into_results_the_program_allocates(tmp_path: Path) -> None:
    """`mm`, `bmm` and `addmm` are called with `out=` on tensors the host
    program allocates (no layout fix after), and match eager."""

    def products(a, b, c, bias):
        return (a @ b).relu(), torch.bmm(c, c.transpose(1, 2)), torch.addmm(bias, a, b, beta=0.5, alpha=2.0)

    inputs = [torch.randn(4, 6), torch.randn(6, 5), torch.randn(3, 4, 7), torch.randn(5)]
    compiled = _compile(products, options={"dump_dir": str(tmp_path), "fallback": "raise"})
    for got, want in zip(compiled(*inputs), products(*inputs), strict=True):
        torch.testing.assert_close(got, want)
    (host,) = tmp_path.glob("graph_000/*host.py")
    source = host.read_text()
    calls = [line.strip() for line in source.splitlines() if line.strip().startswith("extern_")]
    assert len(calls) == 3 and all(call.endswith(")") and "), v" in call for call in calls), calls
    assert ".contiguous()" not in source


def test_the_mode_can_be_given_among_the_options() -> None:
    """torch.compile takes `mode=` or `options=`, not both: the mode may come
    as an option, and a mode given both ways must agree."""
    assert backend.parse_options({"mode": "max-autotune", "fusion": True}, None).mode == "max-autotune"
    assert backend.parse_options({"mode": "max-autotune"}, "max-autotune").mode == "max-autotune"
    with pytest.raises(backend.PermalloyOptionError, match="differ"):
        backend.parse_options({"mode": "max-autotune"}, "reduce-overhead")
    x = torch.randn(4)
    torch.testing.assert_close(_compile(_pointwise, options={"mode": "max-autotune"})(x), _pointwise(x))
