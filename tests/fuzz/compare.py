"""Runs a graph eagerly and compiled, and classifies any disagreement.

Failure classes: `compile-error:<type>`, `runtime-error:<type>`, `timeout`,
`dtype-mismatch`, `shape-mismatch`, `nan-inf-mismatch`, `value-mismatch:<dtype>`
and `stride-mismatch` (checked in that order; the first that applies names the
failure). Floats are compared at their dtype's tolerance: the relative error
`||a-b||/||b||` under rtol AND `torch.testing.assert_close(rtol, atol)`;
integers and bools exactly; NaNs and infinities by position. An element that
differs from eager but agrees with the exact result (the graph computed in
float64) is not a failure: eager's own rounding (float16 ops rounded one by
one, say) is no bug of the compiler. Fresh allocations are filled with NaN
while a case runs, so a read of memory that nothing wrote is reproducible.
"""

from __future__ import annotations

import inspect
import signal
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch._dynamo

from .graphs import Graph, quiet

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (2e-2, 1e-2),
}
"""(rtol, atol) by float dtype; rtol also bounds the relative error of the whole tensor."""

BACKENDS = ("permalloy", "inductor")
TARGETS = ("llvm", "triton")


@dataclass(frozen=True)
class Outcome:
    """A case's result: `failure` is None when the compiled function agrees with eager."""

    failure: str | None
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.failure is None


class CaseTimeout(Exception):
    """A case ran longer than its time limit."""


@contextmanager
def time_limit(seconds: int | None, error: type[Exception] = CaseTimeout) -> Iterator[None]:
    """Raises `error` in the body after `seconds` (main thread on Unix; no limit otherwise)."""
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum, frame):
        raise error(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    """Fresh tensors (`torch.empty`) filled with NaN (integers: their largest
    value), so that reading memory nothing wrote fails the same way every run."""
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


def compile_function(fn: Callable, backend: str, target: str, dynamic: bool) -> Callable:
    """`fn` under torch.compile: permalloy on `target` (raising instead of falling
    back to eager), or Inductor."""
    if backend == "permalloy":
        options = {"target": target, "fallback": "raise"}
        return torch.compile(fn, backend="permalloy", options=options, fullgraph=True, dynamic=dynamic)
    if backend == "inductor":
        return torch.compile(fn, backend="inductor", fullgraph=True, dynamic=dynamic)
    raise ValueError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")


def error_class(error: BaseException) -> str:
    """`compile-error:<type>` for errors of compilation (inside the backend or
    Dynamo), `runtime-error:<type>` for errors of running compiled code."""
    inner = getattr(error, "inner_exception", None) or error.__cause__ or error
    if isinstance(error, CaseTimeout) or isinstance(inner, CaseTimeout):
        return "timeout"
    if isinstance(error, torch._dynamo.exc.BackendCompilerFailed):  # noqa: SLF001
        return f"compile-error:{type(inner).__name__}"
    if isinstance(error, torch._dynamo.exc.TorchDynamoException):  # noqa: SLF001
        return f"compile-error:{type(error).__name__}"
    return f"runtime-error:{type(error).__name__}"


def error_message(error: BaseException) -> str:
    """The error's type and message, less Dynamo's advice on verbose logging."""
    message = str(error).split("Set TORCHDYNAMO_VERBOSE")[0].strip()
    return f"{type(error).__name__}: {message[:2000]}"


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """`||actual - expected|| / ||expected||` over the elements finite in both."""
    finite = torch.isfinite(expected) & torch.isfinite(actual)
    a, e = actual[finite].double(), expected[finite].double()
    denominator = e.norm().item()
    difference = (a - e).norm().item()
    return difference if denominator == 0.0 else difference / denominator


def elementwise_close(actual: torch.Tensor, expected: torch.Tensor, precision: torch.dtype | None = None) -> torch.Tensor:
    """Per element: equal (integers, bools) or close at the dtype's tolerance,
    or at `precision`'s where that is looser (floats; NaN matches NaN, an
    infinity only the same infinity)."""
    if expected.dtype in TOLERANCES:
        rtol, atol = max(TOLERANCES[expected.dtype], TOLERANCES.get(precision, (0.0, 0.0)))
        return torch.isclose(actual.double(), expected.double(), rtol=rtol, atol=atol, equal_nan=True)
    return actual == expected


def special_positions_differ(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Per element: whether NaN-ness or infinities differ."""
    a, e = actual.double(), expected.double()
    return (torch.isnan(a) != torch.isnan(e)) | ((torch.isinf(a) | torch.isinf(e)) & (a != e))


def strides_differ(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """Whether strides differ along any dim of more than one element (a tensor
    without elements has no layout to compare)."""
    if expected.numel() == 0:
        return False
    return any(
        size > 1 and a != e
        for size, a, e in zip(expected.shape, actual.stride(), expected.stride(), strict=True)
    )


def values_match(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """The value check of the comparison (metadata already equal)."""
    if not bool(elementwise_close(actual, expected).all()):
        return False
    if expected.dtype in TOLERANCES:
        return relative_error(actual, expected) < TOLERANCES[expected.dtype][0]
    return True


def least_precise(inputs: Sequence[torch.Tensor]) -> torch.dtype | None:
    """The float dtype of `inputs` with the loosest tolerance, if any."""
    floats = [x.dtype for x in inputs if isinstance(x, torch.Tensor) and x.dtype in TOLERANCES]
    return max(floats, key=lambda dtype: TOLERANCES[dtype], default=None)


def closer_to_exact(
    actual: torch.Tensor, expected: torch.Tensor, exact: torch.Tensor, precision: torch.dtype | None = None
) -> bool:
    """Whether every element of `actual` agrees with eager's or with the exact
    result's (rounded to the output's dtype), and `actual` as a whole is no
    further from the exact result than eager is (or within tolerance of it).
    `precision`, the least precise float dtype of the inputs, bounds how
    close an element can come to the exact result, which rounds no
    intermediate: a float32 output computed from bfloat16 values is compared
    with it at bfloat16's tolerance (with eager's, at float32's)."""
    rounded = exact.to(expected.dtype)
    if not bool((elementwise_close(actual, expected) | elementwise_close(actual, rounded, precision)).all()):
        return False
    if expected.dtype in TOLERANCES:
        rtol = TOLERANCES[expected.dtype][0]
        ours, eagers = relative_error(actual, exact), relative_error(expected, exact)
        return relative_error(actual, expected) < rtol or ours <= max(2 * eagers, rtol)
    return True


def compare_outputs(
    actual: object,
    expected: tuple[torch.Tensor, ...],
    exact: Callable[[], tuple[torch.Tensor, ...]],
    precision: torch.dtype | None = None,
) -> Outcome:
    """Compares a compiled function's outputs with eager's; `exact` gives the
    float64 reference, asked for only when values disagree; `precision` is
    the inputs' least precise float dtype (`closer_to_exact`)."""
    if not isinstance(actual, tuple) or len(actual) != len(expected):
        return Outcome("shape-mismatch", f"outputs {type(actual).__name__} of {len(actual)}, eager {len(expected)}")
    mismatches: list[tuple[str, str]] = []
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        where = f"output {index}"
        if not isinstance(a, torch.Tensor) or a.dtype != e.dtype:
            mismatches.append(("dtype-mismatch", f"{where}: {getattr(a, 'dtype', type(a))} != {e.dtype}"))
            continue
        if a.shape != e.shape:
            mismatches.append(("shape-mismatch", f"{where}: {tuple(a.shape)} != {tuple(e.shape)}"))
            continue
        if not values_match(a, e) and not closer_to_exact(a, e, exact()[index], precision):
            if e.is_floating_point() and bool(special_positions_differ(a, e).any()):
                mismatches.append(("nan-inf-mismatch", f"{where}: NaN/inf positions differ"))
            else:
                detail = f"{where}: relative error {relative_error(a, e):.3g}" if e.is_floating_point() else where
                mismatches.append((f"value-mismatch:{str(e.dtype).removeprefix('torch.')}", detail))
            continue
        if strides_differ(a, e):
            mismatches.append(("stride-mismatch", f"{where}: strides {a.stride()} != {e.stride()}, shape {tuple(e.shape)}"))
    if not mismatches:
        return Outcome(None)
    order = ["dtype-mismatch", "shape-mismatch", "nan-inf-mismatch", "value-mismatch", "stride-mismatch"]
    mismatches.sort(key=lambda m: order.index(m[0].split(":")[0]))
    return Outcome(mismatches[0][0], "; ".join(detail for _, detail in mismatches))


def float64_variant(fn: Callable) -> Callable:
    """`fn` recompiled from its source with every float dtype it names replaced
    by float64: the function that computes the exact reference."""
    source = textwrap.dedent(inspect.getsource(fn))
    for dtype in ("torch.float16", "torch.bfloat16", "torch.float32"):
        source = source.replace(dtype, "torch.float64")
    namespace: dict = {"torch": torch}
    exec(compile(source, f"<float64 {fn.__name__}>", "exec"), namespace)  # noqa: S102
    return namespace[fn.__name__]


def exact_outputs(fn: Callable, inputs: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """`fn`'s outputs computed in float64 throughout (float inputs, casts and the
    default dtype of Python scalars)."""
    wide = [x.to(torch.float64) if x.is_floating_point() else x for x in inputs]
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with quiet():
            return float64_variant(fn)(*wide)
    finally:
        torch.set_default_dtype(previous)


def run_function(
    fn: Callable,
    calls: list[list[torch.Tensor]],
    backend: str = "permalloy",
    target: str = "llvm",
    dynamic: bool = False,
    timeout: int | None = 300,
) -> Outcome:
    """Compiles `fn` (with symbolic sizes if `dynamic`), calls it on each list
    of inputs in `calls` and compares each call with eager."""
    torch._dynamo.reset()  # noqa: SLF001
    compiled = compile_function(fn, backend, target, dynamic=dynamic)
    try:
        with poisoned_allocations():
            return compare_calls(fn, compiled, calls, timeout)
    finally:
        torch._dynamo.reset()  # noqa: SLF001


def compare_calls(fn: Callable, compiled: Callable, calls: list[list[torch.Tensor]], timeout: int | None) -> Outcome:
    """Calls eager and compiled `fn` on each list of inputs; the first disagreement."""
    for inputs in calls:
        with quiet():
            expected = fn(*inputs)
        try:
            with time_limit(timeout), quiet():
                actual = compiled(*inputs)
        except Exception as error:  # noqa: BLE001 - every error is a finding
            return Outcome(error_class(error), error_message(error))
        exact = lambda inputs=inputs: exact_outputs(fn, inputs)  # noqa: E731
        outcome = compare_outputs(actual, expected, exact, least_precise(inputs))
        if not outcome.passed:
            shapes = ", ".join(str(tuple(x.shape)) for x in inputs)
            call = f" (call with input shapes {shapes})" if len(calls) > 1 else ""
            return Outcome(outcome.failure, outcome.detail + call)
    return Outcome(None)


def run_case(graph: Graph, backend: str = "permalloy", target: str = "llvm", timeout: int | None = 300) -> Outcome:
    """Compiles a generated graph and compares it with eager at each of its size sets."""
    return run_function(graph.function(), graph.calls(), backend, target, graph.dynamic, timeout)


def assert_matches_eager(
    fn: Callable, calls: list[list[torch.Tensor]], backend: str = "permalloy", target: str = "llvm", dynamic: bool = False
) -> None:
    """Fails with the failure class and its detail unless the compiled `fn` agrees with eager."""
    outcome = run_function(fn, calls, backend, target, dynamic)
    assert outcome.passed, f"{outcome.failure}: {outcome.detail}"
