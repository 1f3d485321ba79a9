"""Random graphs compiled by permalloy against eager PyTorch, and unit tests
of the fuzzer itself (generator, comparator, shrinker).

Each seed is one test. A seed that fails because of a known compiler bug is
listed in `KNOWN_FAILURES` with its failure class and a minimal reproduction
(from `python -m tests.fuzz --seeds N --shrink`); it is a strict xfail, so
fixing the bug turns it into an unexpected pass and its line must go.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
import torch

from .compare import Outcome, compare_outputs, run_case
from .graphs import Graph, generate, runs_eagerly
from .repro import render_test
from .shrink import shrink

LLVM_SEEDS = range(200)
TRITON_SEEDS = range(40)

LLVM_FIXED_SEEDS = (60322, 60455, 64018, 65280, 65784, 73021)
"""Seeds of longer campaigns whose failures were fixed: layer norms of
constant rows and a variance of nearly equal values, whose mean was an ulp
off their common value; an average pooling of dynamic size whose index
sympy's `Mod` had written with a fraction; an rsqrt of tanh(-0), which gave
+0; a padded max pooling of an expanded and flattened tensor, whose index
dropped a `mod` because a `floordiv` of a negative base was taken for
nonnegative."""
TRITON_FIXED_SEEDS = (71908, 73021, 73438)
"""Likewise under Triton's interpreter: an integer tensor padded by nothing
with infinity; the padded pooling above; a division by tanh(-0 / x), which
gave +inf."""

KNOWN_FAILURES: dict[tuple[str, int], str] = {
    ("llvm", 68): (
        "compile-error:GraphImportError: `x0[3::3].expand((2, 3, 2))` with x0 of dynamic size s0 "
        "(4, then 6): the slice's length (s0 - 1) floordiv 3 is 1 under Dynamo's guards, which its "
        "static evaluator does not derive, so the importer cannot prove the expanded size"
    ),
}
"""(target, seed) -> "<failure class>: <minimal reproduction>"."""


def seed_cases(target: str, seeds: Sequence[int]) -> list:
    return [
        pytest.param(seed, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[(target, seed)]))
        if (target, seed) in KNOWN_FAILURES
        else seed
        for seed in seeds
    ]


def assert_passes(seed: int, target: str) -> None:
    graph = generate(seed)
    outcome = run_case(graph, "permalloy", target)
    assert outcome.passed, f"{outcome.failure}: {outcome.detail}\n\n{render_test(graph, outcome.failure, 'permalloy', target)}"


@pytest.mark.parametrize("seed", seed_cases("llvm", [*LLVM_SEEDS, *LLVM_FIXED_SEEDS]))
def test_random_graph_llvm(seed: int) -> None:
    assert_passes(seed, "llvm")


@pytest.fixture
def triton_interpreter(monkeypatch, tmp_path_factory) -> None:
    """The Triton target on CPU tensors: Triton's interpreter, a scratch kernel cache."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "permalloy-cache"))


@pytest.mark.parametrize("seed", seed_cases("triton", [*TRITON_SEEDS, *TRITON_FIXED_SEEDS]))
def test_random_graph_triton(seed: int, triton_interpreter) -> None:
    assert_passes(seed, "triton")


# The generator


def evaluate_op_by_op(graph: Graph, inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The graph's outputs from its op records, one expression at a time."""
    values: dict[str, torch.Tensor] = {spec.name: x for spec, x in zip(graph.inputs, inputs, strict=True)}
    for op in graph.ops:
        values[op.result] = eval(op.expression(), {"torch": torch}, values)  # noqa: S307
    return tuple(values[name] for name in graph.outputs)


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_generator_is_deterministic(seed: int) -> None:
    first, second = generate(seed), generate(seed)
    assert first == second
    assert first.source() == second.source()
    for a, b in zip(first.calls(), second.calls(), strict=True):
        assert all(torch.equal(x, y) and x.stride() == y.stride() for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_printed_source_reexecutes_to_the_same_result(seed: int) -> None:
    graph = generate(seed)
    assert 1 <= len(graph.inputs) <= 3 and 1 <= len(graph.ops) <= 15
    assert runs_eagerly(graph)
    namespace: dict = {"torch": torch}
    exec(graph.source(), namespace)  # noqa: S102
    for inputs in graph.calls():
        from_source = namespace["fn"](*inputs)
        from_records = evaluate_op_by_op(graph, inputs)
        for a, b in zip(from_source, from_records, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
            assert torch.equal(a.nan_to_num(), b.nan_to_num()) and torch.equal(a.isnan(), b.isnan())


def test_generator_covers_the_op_catalog_and_input_kinds() -> None:
    graphs = [generate(seed) for seed in range(300)]
    ops = {op.op for graph in graphs for op in graph.ops}
    for required in ("matmul", "cat", "stack", "layer_norm", "argmax", "var", "prod", "select", "cast", "where", "cumsum"):
        assert required in ops
    specs = [spec for graph in graphs for spec in graph.inputs]
    assert {spec.layout for spec in specs} == {"contiguous", "transposed", "strided", "expanded"}
    assert {spec.dtype for spec in specs} >= {torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool}
    assert any(graph.dynamic for graph in graphs) and not all(graph.dynamic for graph in graphs)
    assert any(size == 0 for graph in graphs for _, size in graph.sizes)


def test_rendered_test_reproduces(tmp_path) -> None:
    """A printed reproduction is a test that runs: here of a seed that passes."""
    graph = generate(1)
    source = render_test(graph, "value-mismatch:float32")
    namespace = {"__name__": f"{__package__}.rendered", "__package__": __package__}
    exec(source, namespace)  # noqa: S102
    tests = [value for name, value in namespace.items() if name.startswith("test_fuzz_seed_1_")]
    assert len(tests) == 1
    tests[0]()


# The comparator


def test_comparator_classes() -> None:
    x = torch.randn(4, 3)
    never = lambda: pytest.fail("no exact reference needed")  # noqa: E731
    assert compare_outputs((x.clone(),), (x,), never).passed
    assert compare_outputs((x.double(),), (x,), never).failure == "dtype-mismatch"
    assert compare_outputs((x.reshape(3, 4),), (x,), never).failure == "shape-mismatch"
    assert compare_outputs((x.t().contiguous().t(),), (x,), never).failure == "stride-mismatch"
    assert compare_outputs((x.expand(1, 4, 3).contiguous(),), (x.expand(1, 4, 3),), never).passed
    with_nan = x.clone()
    with_nan[0, 0] = math.nan
    assert compare_outputs((with_nan,), (x,), lambda: (x.double(),)).failure == "nan-inf-mismatch"
    assert compare_outputs((x * 1.01,), (x,), lambda: (x.double(),)).failure == "value-mismatch:float32"
    ints = torch.arange(5)
    assert compare_outputs((ints + 1,), (ints,), lambda: (ints,)).failure == "value-mismatch:int64"


def test_comparator_forgives_eager_rounding() -> None:
    """An output that matches the exact result where eager's float16 rounding is off passes."""
    exact = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    eager = torch.tensor([1.0, 2.0, 3.5], dtype=torch.float16)
    assert compare_outputs((exact.half(),), (eager,), lambda: (exact,)).passed
    assert not compare_outputs((exact.half() + 1,), (eager,), lambda: (exact,)).passed


def test_comparator_measures_outputs_of_low_precision_inputs_at_their_precision() -> None:
    """A float32 output computed from bfloat16 values, each rounded correctly
    where eager's is a unit off (a log-softmax of bfloat16 numbers, widened):
    no element can come within float32's tolerance of the exact result, which
    rounds no intermediate, so it is compared with that at bfloat16's; one
    further from the exact result than eager's still fails."""
    exact = torch.tensor([0.41255, 1.77778, 1.0], dtype=torch.float64)
    eager = torch.tensor([0.41015625, 1.7734375, 1.0])
    ours = torch.tensor([0.412109375, 1.78125, 1.0])
    assert not compare_outputs((ours,), (eager,), lambda: (exact,)).passed
    assert compare_outputs((ours,), (eager,), lambda: (exact,), torch.bfloat16).passed
    assert not compare_outputs((ours * 1.05,), (eager,), lambda: (exact,), torch.bfloat16).passed


# The shrinker


def test_shrinker_on_a_planted_failure() -> None:
    """A "bug" in every graph with an exp op shrinks to one exp over a small input."""
    seed = next(s for s in range(1000) if len(generate(s).ops) >= 8 and any(op.op == "exp" for op in generate(s).ops))
    planted = lambda graph: "planted" if any(op.op == "exp" for op in graph.ops) else None  # noqa: E731
    shrunk = shrink(generate(seed), "planted", fails=planted)
    assert [op.op for op in shrunk.ops] == ["exp"]
    assert len(shrunk.inputs) == 1 and not shrunk.dynamic
    assert all(size <= 1 for _, size in shrunk.sizes)
    assert shrunk.inputs[0].layout == "contiguous" and shrunk.inputs[0].dtype == torch.float32
    assert runs_eagerly(shrunk)


def test_shrinker_keeps_the_failure_class() -> None:
    """A shrunk graph fails with the class it was shrunk for, not another one."""
    seed = next(s for s in range(1000) if len(generate(s).ops) >= 6)
    classes = lambda graph: "many" if len(graph.ops) >= 3 else "few"  # noqa: E731
    shrunk = shrink(generate(seed), "many", fails=classes)
    assert len(shrunk.ops) == 3
    assert Outcome(classes(shrunk)).failure == "many"
