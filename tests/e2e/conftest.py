"""
Shared pieces of the end-to-end tests of the torch.compile backend.

`backend_check` (a fixture) compiles a function with
`torch.compile(fn, backend="permalloy")`, runs it and eager PyTorch on the same
inputs, and checks that the results agree:

- floats: relative error `||out - ref|| / ||ref||` below the dtype's bound AND
  `torch.testing.assert_close` element by element at the dtype's tolerance
  (float32 and float64: rtol 1e-4, atol 1e-5; float16: rtol 1e-2, atol 1e-3;
  bfloat16: rtol 2e-2, atol 1e-2); NaNs and infinities must be where eager has
  them; complex tensors likewise, as the pairs of their real dtype
  (`view_as_real`);
- integers and bools exactly;
- every output's type, shape, dtype and strides equal to eager's;
- inputs left as eager leaves them (unchanged, or mutated alike);

and that `permalloy.stats()` has one record per compiled graph, compiled for the
requested target, with exactly the expected fallback ops (none by default).

Tests of the Triton target run where `PERMALLOY_TEST_DEVICE` says: on the CPU
(the default) under Triton's interpreter, which the `triton_device` fixture
turns on for one test at a time, or on `cuda`, with their inputs moved there by
`to_test_device` (which keeps views, strides and storage offsets).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import importlib.util
import os
import pathlib
import sys
from types import ModuleType

import pytest
import torch

import permalloy

TEST_DEVICE = os.environ.get("PERMALLOY_TEST_DEVICE", "cpu")
"""Where the Triton target's tests run: "cpu" (Triton's interpreter) or "cuda"."""

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (2e-2, 1e-2),
}
"""(rtol, atol) by float dtype; rtol also bounds the relative error of the whole tensor."""


def flatten_outputs(value: Any) -> list[Any]:
    """The leaves of nested tuples and lists of outputs, in order."""
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in flatten_outputs(item)]
    return [value]


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """`||actual - expected|| / ||expected||` over the finite values of `expected`."""
    finite = torch.isfinite(expected)
    a = actual[finite].double()
    e = expected[finite].double()
    denominator = e.norm().item()
    difference = (a - e).norm().item()
    if denominator == 0.0:
        return difference
    return difference / denominator


def assert_tensor_matches(actual: torch.Tensor, expected: torch.Tensor, where: str) -> None:
    """One output against eager's: metadata exactly, values at the dtype's tolerance."""
    assert isinstance(actual, torch.Tensor), f"{where}: got {type(actual).__name__}"
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.stride() == expected.stride(), (
        f"{where}: strides {actual.stride()} != eager's {expected.stride()}"
    )
    if expected.is_complex():
        # both parts at the tolerance of the real dtype
        actual, expected = (torch.view_as_real(t.resolve_conj()) for t in (actual, expected))
    if expected.dtype in TOLERANCES:
        rtol, atol = TOLERANCES[expected.dtype]
        error = relative_error(actual, expected)
        assert error < rtol, f"{where}: relative error {error:.3g} >= {rtol}"
        torch.testing.assert_close(
            actual, expected, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{where}: {m}"
        )
    else:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, msg=lambda m: f"{where}: {m}")


def assert_outputs_match(actual: Any, expected: Any) -> None:
    """Every output of a compiled function against eager's."""
    assert type(actual) is type(expected), f"{type(actual).__name__} != {type(expected).__name__}"
    actual_leaves, expected_leaves = flatten_outputs(actual), flatten_outputs(expected)
    assert len(actual_leaves) == len(expected_leaves)
    for index, (a, e) in enumerate(zip(actual_leaves, expected_leaves, strict=True)):
        where = f"output {index}"
        if isinstance(e, torch.Tensor):
            assert_tensor_matches(a, e, where)
        else:
            assert a == e, f"{where}: {a!r} != {e!r}"


def to_test_device(value: Any, device: str = TEST_DEVICE) -> Any:
    """`value` on `device` (`TEST_DEVICE` by default): a tensor keeps its
    sizes, strides and storage offset (a view becomes the same view of a copy
    of its whole storage); other values are returned as they are. A leaf that
    requires gradients is moved as a leaf that requires them."""
    if not isinstance(value, torch.Tensor) or value.device.type == device:
        return value
    storage = value.untyped_storage()
    flat = torch.empty(0, dtype=value.dtype, device=value.device).set_(
        storage, 0, (storage.nbytes() // value.element_size(),)
    )
    moved = flat.to(device).as_strided(value.size(), value.stride(), value.storage_offset())
    return moved.requires_grad_() if value.requires_grad and value.is_leaf else moved


def target_device(target: str) -> str:
    """Where a target's kernels run in these tests: the Triton target's on
    `TEST_DEVICE`, the CPU targets' on the CPU."""
    return TEST_DEVICE if target == "triton" else "cpu"


def xfail_on_gpu(params: Sequence[Any], reason_of: Callable[..., str | None]) -> list[Any]:
    """`params` (pytest parameters), those that `reason_of(*values)` gives a
    reason for as strict xfails where the tests run on a GPU: places where
    eager's CUDA kernels differ from its CPU ones, which compiled code follows."""
    if TEST_DEVICE == "cpu":
        return list(params)
    marked = []
    for param in params:
        reason = reason_of(*param.values)
        marks = [*param.marks, pytest.mark.xfail(strict=True, reason=reason)] if reason else param.marks
        marked.append(pytest.param(*param.values, id=param.id, marks=marks))
    return marked


def clone_inputs(inputs: Sequence[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def assert_stats(target: str, fallback_ops: Sequence[str] = (), graphs: int | None = 1) -> None:
    """The stats log: `graphs` compiled graphs (any number if None), all for
    `target`, with exactly `fallback_ops` among them."""
    records = permalloy.stats()
    assert records, "no graph was compiled"
    if graphs is not None:
        assert len(records) == graphs, records
    for record in records:
        assert record["compiled"], record["reason"]
        assert record["target"] == target
    found = sorted(op for record in records for op in record["fallback_ops"])
    assert found == sorted(fallback_ops), f"fallback ops {found}, expected {sorted(fallback_ops)}"


def assert_training_step_matches(make: Callable[[], torch.nn.Module], x: torch.Tensor, options: dict) -> None:
    """One training step (a squared-sum loss) of a model `make` builds, in
    eager and compiled with the permalloy backend (`options`) on a twin with
    the same weights: every gradient, and the running statistics of every
    batch norm, match eager's."""
    from permalloy.tools.backend import permalloy_backend

    model = make()
    twin = make()
    twin.load_state_dict(model.state_dict())
    compiled = torch.compile(twin, backend=permalloy_backend, options=options)
    model(x).square().sum().backward()
    compiled(x).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)
    for (name, a), b in zip(model.named_buffers(), twin.buffers()):
        if name.endswith(("running_mean", "running_var")):
            torch.testing.assert_close(b, a, msg=name)


@dataclass
class BackendCheck:
    """Compiles functions with the permalloy backend and compares them with eager."""

    assert_outputs_match = staticmethod(assert_outputs_match)
    assert_tensor_matches = staticmethod(assert_tensor_matches)
    assert_stats = staticmethod(assert_stats)

    def compile(
        self, fn: Callable, target: str = "llvm", fullgraph: bool = True, **options: Any
    ) -> Callable:
        options = {"target": target, "fallback": "raise", **options}
        return torch.compile(fn, backend="permalloy", options=options, fullgraph=fullgraph)

    def __call__(
        self,
        fn: Callable,
        inputs: Sequence[Any] | Callable[[], Sequence[Any]],
        target: str = "llvm",
        fallback_ops: Sequence[str] = (),
        graphs: int | None = 1,
        calls: int = 1,
    ) -> Any:
        """Compile `fn`, run it on `inputs`, compare with eager and check the stats.
        `inputs` is a list (cloned for each run) or a function making fresh ones
        (which keeps views and their layouts as they are). With `graphs=None`
        Dynamo may split `fn` into any number of graphs; otherwise `fn` is one
        Dynamo graph (fullgraph) and the stats log has exactly `graphs` records.
        With `calls` > 1 the compiled function runs again on fresh inputs (a
        compiled graph's later calls may take another path than its first)."""
        permalloy.reset_stats()
        given_make = inputs if callable(inputs) else lambda: clone_inputs(inputs)
        device = target_device(target)

        def make() -> list[Any]:
            return [to_test_device(x, device) for x in given_make()]

        eager_inputs = make()
        expected = fn(*eager_inputs)
        compiled = self.compile(fn, target, fullgraph=graphs is not None)
        for call in range(calls):
            given = make()
            actual = compiled(*given)
            assert_outputs_match(actual, expected)
            for index, (after, eager_after) in enumerate(zip(given, eager_inputs, strict=True)):
                if isinstance(eager_after, torch.Tensor):
                    assert_tensor_matches(after, eager_after, f"input {index} after call {call}")
        assert_stats(target, fallback_ops, graphs)
        return actual


@pytest.fixture
def triton_on_test_device(monkeypatch, tmp_path_factory):
    """Triton kernels where the tests run (its interpreter on the CPU), a
    permalloy cache of the session's own, and Dynamo starting afresh."""
    if TEST_DEVICE == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "permalloy-cache"))
    torch._dynamo.reset()  # noqa: SLF001


@pytest.fixture(autouse=True)
def float32_without_tf32(monkeypatch):
    """Float32 convolutions and products in float32 on a GPU, as in eager's
    default for products and the bench's for both: cuDNN's TF32 default rounds
    inputs to 10 bits, so two algorithms (one per memory layout, say) would
    differ far beyond float32's tolerance."""
    if TEST_DEVICE == "cuda":
        monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
        monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)


@pytest.fixture
def cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A fresh, empty permalloy cache directory for the test, the cache on
    (for tests of the compiled-graph cache; it stands in for pytest's own
    `cache` fixture, which no test here uses), with torch's cache (where
    AOTAutograd keeps its entries) in its `torch` folder."""
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torch"))
    monkeypatch.delenv("PERMALLOY_CACHE", raising=False)
    return tmp_path


@pytest.fixture
def fresh_backend():
    """A test that starts with no compiled code in Dynamo and an empty stats log."""
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()
    yield
    torch._dynamo.reset()  # noqa: SLF001
    permalloy.reset_stats()


@pytest.fixture
def triton_device(monkeypatch, tmp_path_factory) -> str:
    """The device the Triton target's test runs on: `TEST_DEVICE`. On the CPU,
    Triton's interpreter is on for this test only; permalloy's cache (kernel
    modules, tuned configurations) is a scratch directory of the session."""
    if TEST_DEVICE == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "permalloy-cache"))
    return TEST_DEVICE


@pytest.fixture
def backend_check(fresh_backend) -> BackendCheck:
    return BackendCheck()


def differential_module() -> ModuleType:
    """The lowering's differential test module (its cases and helpers), loaded
    once by path, for the targets' tests that compile its cases."""
    name = "lowering_differential_cases"
    if name not in sys.modules:
        path = pathlib.Path(__file__).with_name("test_lowering_differential.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
