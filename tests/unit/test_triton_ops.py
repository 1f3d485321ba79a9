"""
Semantics of the Triton target's translations, run in Triton's interpreter
(`TRITON_INTERPRET=1`, set for each test only): integer division and unsigned
operations as arith defines them, i1 arithmetic, float predicates, the math
helpers (libdevice on GPUs, float64 formulas in the interpreter), rounding to
bfloat16, reductions in chunks (NaN, ties, unsigned order, empty domains),
int64 indexing, and the source as a reader sees it.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, run, tensor
from permalloy.targets.triton import TritonTarget
from permalloy.targets.triton.compat import LIBDEVICE_MATH


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> TritonTarget:
    return TritonTarget(interpret=True, cache=tmp_path_factory.mktemp("cache"))


def pointwise(target, inputs, result_type, body, result="%y", out_dtype=None):
    """Run a one-op pointwise kernel over 1-D inputs; the output tensor."""
    shape = f"[{inputs[0].numel()}]"
    names = [_element(x.dtype) for x in inputs]
    kernel = parse_kernel(pointwise_kernel(shape, names, result_type, body, result=result))
    out = torch.empty(inputs[0].shape, dtype=out_dtype or inputs[0].dtype)
    run(target, kernel, inputs, [out])
    return out


def _element(dtype: torch.dtype) -> str:
    return {
        torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16", torch.int8: "i8",
        torch.uint8: "ui8", torch.int32: "i32", torch.int64: "i64", torch.bool: "i1",
    }[dtype]  # fmt: skip


# -- integers --------------------------------------------------------------------


def _c_div(a: int, b: int) -> int:
    if b == 0:
        b = 1
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


@pytest.mark.parametrize("op", ["divsi", "remsi", "floordivsi", "ceildivsi"])
def test_signed_division_never_traps_and_rounds_as_arith_says(target, op):
    a = torch.tensor([7, -7, 7, -7, 5, -2147483648, 3, 0], dtype=torch.int32)
    b = torch.tensor([2, 2, -2, -2, 0, -1, 3, 5], dtype=torch.int32)
    out = pointwise(target, [a, b], "i32", f"    %y = arith.{op} %a0, %a1 : i32")
    expected = []
    for x, y in zip(a.tolist(), b.tolist()):
        y = 1 if y == 0 else y
        q = _c_div(x, y)
        if op == "divsi":
            value = q
        elif op == "remsi":
            value = x - q * y
        elif op == "floordivsi":
            value = x // y
        else:
            value = -((-x) // y)
        expected.append((value + 2**31) % 2**32 - 2**31)
    assert out.tolist() == expected


def test_unsigned_operations_read_signless_bits_as_unsigned(target):
    a = torch.tensor([200, 3, 255, 16], dtype=torch.uint8)
    b = torch.tensor([7, 250, 0, 2], dtype=torch.uint8)
    body = """
    %q = arith.divui %a0, %a1 : i8
    %r = arith.remui %a0, %a1 : i8
    %m = arith.maxui %q, %r : i8
    %s = arith.shrui %a0, %a1 : i8
    %y = arith.addi %m, %s : i8"""
    out = pointwise(target, [a, b], "i8", body, out_dtype=torch.int8).view(torch.uint8)
    expected = []
    for x, y in zip(a.tolist(), b.tolist()):
        d = y or 1
        expected.append((max(x // d, x % d) + (x >> y)) % 256)
    assert [v for i, v in enumerate(out.tolist()) if i != 1] == [v for i, v in enumerate(expected) if i != 1]


def test_i1_arithmetic_follows_its_bits(target):
    a = torch.tensor([True, True, False, False])
    b = torch.tensor([True, False, True, False])
    body = """
    %s = arith.addi %a0, %a1 : i1
    %e = arith.extsi %s : i1 to i32
    %f = arith.sitofp %a0 : i1 to f32
    %g = arith.fptosi %f : f32 to i32
    %y = arith.addi %e, %g : i32"""
    out = pointwise(target, [a, b], "i32", body, out_dtype=torch.int32)
    assert out.tolist() == [0 - 1, -1 - 1, -1 + 0, 0 + 0]
    low = torch.tensor([2, 3, -1, 0], dtype=torch.int32)
    bits = pointwise(target, [low], "i1", "    %y = arith.trunci %a0 : i32 to i1", out_dtype=torch.bool)
    assert bits.tolist() == [False, True, True, False]


@pytest.mark.parametrize(
    "predicate", ["oeq", "one", "olt", "ole", "ogt", "oge", "ueq", "une", "ult", "ule", "ugt", "uge", "ord", "uno"]
)
def test_float_predicates_treat_nan_as_ordered_or_unordered(target, predicate):
    nan = float("nan")
    a = torch.tensor([1.0, 2.0, nan, 1.0, nan, -0.0])
    b = torch.tensor([2.0, 2.0, 1.0, nan, nan, 0.0])
    out = pointwise(target, [a, b], "i1", f"    %y = arith.cmpf {predicate}, %a0, %a1 : f32", out_dtype=torch.bool)
    compare = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
               "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}  # fmt: skip
    expected = []
    for x, y in zip(a.tolist(), b.tolist()):
        unordered = math.isnan(x) or math.isnan(y)
        if predicate == "ord":
            expected.append(not unordered)
        elif predicate == "uno":
            expected.append(unordered)
        elif predicate == "une":
            expected.append(unordered or x != y)
        elif predicate == "one":
            expected.append(not unordered and x != y)
        else:
            holds = compare[predicate[1:]](x, y)
            expected.append(holds if predicate[0] == "o" else (unordered or holds))
    assert out.tolist() == expected


def test_maximumf_propagates_nan_and_maxnumf_drops_it(target):
    a = torch.tensor([1.0, float("nan"), 3.0, -1.0])
    b = torch.tensor([2.0, 1.0, float("nan"), -2.0])
    prop = pointwise(target, [a, b], "f32", "    %y = arith.maximumf %a0, %a1 : f32")
    drop = pointwise(target, [a, b], "f32", "    %y = arith.maxnumf %a0, %a1 : f32")
    torch.testing.assert_close(prop, torch.maximum(a, b), equal_nan=True)
    torch.testing.assert_close(drop, torch.fmax(a, b))


# -- math ----------------------------------------------------------------------

UNARY_MATH = {
    "tanh": (torch.tanh, "any"), "expm1": (torch.expm1, "any"), "log1p": (torch.log1p, "positive"),
    "log10": (torch.log10, "positive"), "tan": (torch.tan, "unit"), "sinh": (torch.sinh, "any"),
    "cosh": (torch.cosh, "any"), "asinh": (torch.asinh, "any"), "acosh": (torch.acosh, "above_one"),
    "atanh": (torch.atanh, "unit"), "atan": (torch.atan, "wide"), "asin": (torch.asin, "unit"),
    "acos": (torch.acos, "unit"), "trunc": (torch.trunc, "wide"), "roundeven": (torch.round, "halves"),
    "round": (lambda x: torch.sign(x) * torch.floor(x.abs() + 0.5), "halves"), "cbrt": (lambda x: torch.sign(x) * x.abs().pow(1 / 3), "wide"),
}  # fmt: skip
BINARY_MATH = {
    "atan2": ("math.atan2", torch.atan2),
    "powf": ("math.powf", torch.pow),
    "copysign": ("math.copysign", torch.copysign),
}


def _values(domain: str) -> torch.Tensor:
    torch.manual_seed(0)
    x = torch.randn(256, dtype=torch.float64)
    values = {
        "any": x * 2, "positive": x.abs() + 1e-3, "unit": torch.tanh(x) * 0.99,
        "above_one": x.abs() + 1.0, "wide": x * 50,
        "halves": torch.cat([torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 3.49]), x[:250] * 10]),
    }[domain]  # fmt: skip
    values[:4] = values[:4] * 1e-7 if domain in ("any", "unit") else values[:4]
    return values.float()


def test_every_helper_math_function_is_tested():
    assert set(LIBDEVICE_MATH) == set(UNARY_MATH) | {"atan2", "pow", "copysign"}


@pytest.mark.parametrize("name", sorted(UNARY_MATH))
def test_unary_math_helpers_match_torch(target, name):
    reference, domain = UNARY_MATH[name]
    x = _values(domain)
    out = pointwise(target, [x], "f32", f"    %y = math.{name} %a0 : f32")
    torch.testing.assert_close(out, reference(x.double()).float(), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(n for n, (_, domain) in UNARY_MATH.items() if domain in ("any", "unit", "wide")))
def test_unary_math_helpers_keep_the_sign_of_zero(target, name):
    """f(-0) and f(+0) have the signs torch gives them (-0 for the odd
    functions): a sign a later division turns into an infinity of that sign."""
    x = torch.tensor([-0.0, 0.0, -1e-30, 1e-30])
    out = pointwise(target, [x], "f32", f"    %y = math.{name} %a0 : f32")
    reference = UNARY_MATH[name][0](x)
    assert torch.equal(torch.signbit(out), torch.signbit(reference)), (out.tolist(), reference.tolist())


@pytest.mark.parametrize("name", sorted(BINARY_MATH))
def test_binary_math_helpers_match_torch(target, name):
    op, reference = BINARY_MATH[name]
    torch.manual_seed(1)
    a, b = torch.randn(64) * 3, torch.randn(64) * 3
    if name == "powf":
        a[:32] = a[:32].abs()
        b[32:] = torch.round(b[32:])
    if name == "copysign":
        b[:4] = torch.tensor([0.0, -0.0, float("inf"), -float("inf")])
    out = pointwise(target, [a, b], "f32", f"    %y = {op} %a0, %a1 : f32")
    torch.testing.assert_close(out, reference(a.double(), b.double()).float(), rtol=2e-6, atol=1e-6, equal_nan=True)


def test_bfloat16_rounds_to_nearest_even(target):
    x = torch.cat([torch.tensor([1 + 2**-8 + 2**-12, 1 + 3 * 2**-8, -(1 + 2**-8 + 2**-12), 3.3e38, 1e-40]), torch.randn(251) * 100])
    out = pointwise(target, [x], "bf16", "    %y = arith.truncf %a0 : f32 to bf16", out_dtype=torch.bfloat16)
    assert torch.equal(out.view(torch.int16), x.bfloat16().view(torch.int16))
    i = torch.randint(-(2**20), 2**20, (256,), dtype=torch.int32)
    converted = pointwise(target, [i], "bf16", "    %y = arith.sitofp %a0 : i32 to bf16", out_dtype=torch.bfloat16)
    assert torch.equal(converted, i.bfloat16())


# -- reductions ------------------------------------------------------------------


def reduce(target, kind, x, result_element, value_element=None, rows=None):
    """Reduce each row of a 2-D `x` with a `loop.reduce <kind>`."""
    n, m = x.shape
    element = _element(x.dtype)
    value = value_element or element.lstrip("u")
    source = tensor(f"[{n}, {m}]", element)
    out_type = tensor(f"[{n}]", result_element)
    text = f"""
buffer.kernel @k(%t: {source}) -> ({out_type}) {{
  %r = loop.reduce {kind} ins(%x = %t : {source}) over [{m}] -> {out_type} {{
    %v = loop.load %x[d0, r0] : {value}
    loop.yield %v : {value}
  }}
  buffer.yield %r : {out_type}
}}"""
    torch_dtype = {"i64": torch.int64, "i1": torch.bool}.get(result_element, x.dtype)
    out = torch.empty(n, dtype=torch_dtype)
    run(target, parse_kernel(text), [x], [out])
    return out


@pytest.mark.parametrize("length", [300, 5000])
def test_argmax_and_argmin_take_the_first_extreme_nan_first(target, length):
    torch.manual_seed(0)
    x = torch.randint(0, 3, (4, length)).float()
    x[1, length - 7] = 9.0
    x[1, length - 3] = 9.0
    x[2, length // 2] = float("nan")
    x[2, length - 1] = float("nan")
    x[3] = -float("inf")
    for kind, fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
        assert reduce(target, kind, x, "i64").tolist() == fn(x, 1).tolist()


@pytest.mark.parametrize("length", [300, 5000])
def test_max_min_propagate_nan_and_prod_sum_in_chunks(target, length):
    torch.manual_seed(0)
    x = torch.rand(3, length) + 0.5
    x[0, length - 2] = float("nan")
    torch.testing.assert_close(reduce(target, "max", x, "f32"), x.amax(1), equal_nan=True)
    torch.testing.assert_close(reduce(target, "min", x, "f32"), x.amin(1), equal_nan=True)
    y = torch.rand(3, length) * 0.02 + 0.995
    torch.testing.assert_close(reduce(target, "prod", y, "f32"), y.double().prod(1).float(), rtol=1e-4, atol=0)
    torch.testing.assert_close(reduce(target, "sum", y, "f32"), y.double().sum(1).float(), rtol=1e-5, atol=0)


def test_integer_reductions_wrap_and_order_unsigned(target):
    u = torch.tensor([[200, 3, 255], [1, 2, 3]], dtype=torch.uint8)
    assert reduce(target, "max", u, "ui8").tolist() == [255, 3]
    assert reduce(target, "min", u, "ui8").tolist() == [3, 1]
    i = torch.tensor([[100, 100, 100], [-100, -100, 50]], dtype=torch.int8)
    assert reduce(target, "sum", i, "i8").tolist() == [(300 + 128) % 256 - 128, (-150 + 128) % 256 - 128]
    flags = torch.tensor([[True, False, False], [False, False, False]])
    assert reduce(target, "any", flags, "i1").tolist() == [True, False]
    assert reduce(target, "all", flags, "i1").tolist() == [False, False]
    assert reduce(target, "sum", flags, "i1").tolist() == [True, False]


def test_empty_reductions_give_the_identity(target):
    x = torch.empty(3, 0)
    assert reduce(target, "sum", x, "f32").tolist() == [0.0] * 3
    assert reduce(target, "prod", x, "f32").tolist() == [1.0] * 3
    assert reduce(target, "max", x, "f32").tolist() == [-math.inf] * 3


# -- indexing and the source -----------------------------------------------------------


def test_int64_indexing_path_computes_the_same(target):
    text = pointwise_kernel("[s0, 4]", ["f32"], "f32", "    %y = math.exp %a0 : f32")
    kernel = parse_kernel(text)
    x, out = torch.randn(5, 4), torch.empty(5, 4)
    compiled = run(target, kernel, [x], [out], symbols={"s0": 5})
    function = getattr(compiled.module, compiled.facts.name)
    wide = torch.empty(5, 4)
    function[(1,)](x, wide, 5, XBLOCK=32, IDX64=True)
    assert torch.equal(wide, out)
    torch.testing.assert_close(out, torch.exp(x))


def test_the_source_names_the_kernel_and_quotes_its_loop_ir(target):
    kernel = parse_kernel(pointwise_kernel("[8]", ["f32"], "f32", "    %y = math.tanh %a0 : f32"))
    from permalloy.targets.llvm.testing import layout

    x = torch.randn(8)
    source = target.emit_source(kernel, [layout(x), layout(x)])
    assert "def triton_k(in0, out0, XBLOCK: tl.constexpr):" in source
    assert "# %1 = math.tanh %0 : f32" in source or "math.tanh" in source.split("@triton.jit\ndef triton_k")[1]
    assert "def _tanh(x):" in source and "libdevice" not in source  # the interpreter's helper
    gpu = TritonTarget(interpret=False).emit_source(kernel, [layout(x), layout(x)])
    assert "libdevice.tanh(x)" in gpu


def test_compiled_kernels_refuse_cpu_tensors_without_the_interpreter(tmp_path):
    gpu = TritonTarget(interpret=False, cache=tmp_path)
    kernel = parse_kernel(pointwise_kernel("[8]", ["f32"], "f32", "    %y = math.exp %a0 : f32"))
    with pytest.raises(RuntimeError, match="CUDA tensors"):
        run(gpu, kernel, [torch.randn(8)], [torch.empty(8)])


# -- kernels kept in the compiled-graph cache -----------------------------------------


def test_a_kernel_loaded_from_its_artifact_runs_as_compiled_and_asks_no_workers(tmp_path):
    target = TritonTarget(interpret=True, cache=tmp_path)
    kernel = parse_kernel(pointwise_kernel("[s0, 8]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32"))
    compiled = run(target, kernel, [torch.randn(3, 8), torch.randn(3, 8)], [torch.empty(3, 8)], symbols={"s0": 3})
    artifact = target.kernel_artifact(compiled)
    assert json.loads(json.dumps(artifact)) == artifact  # plain data, as the cache stores it
    target.workers = object()  # a started pool: only kernels compiled here may ask it
    loaded = target.load_kernel(artifact)
    assert (loaded.facts, loaded.source, loaded.workers) == (compiled.facts, compiled.source, None)
    x, y = torch.randn(5, 8), torch.randn(5, 8)
    first, again = torch.empty(5, 8), torch.empty(5, 8)
    compiled([x, y, first], [5])
    loaded([x, y, again], [5])
    assert torch.equal(first, again) and torch.equal(first, x + y)


def test_a_kernel_written_for_the_other_triton_mode_is_not_loaded(tmp_path):
    target = TritonTarget(interpret=True, cache=tmp_path)
    kernel = parse_kernel(pointwise_kernel("[4]", ["f32"], "f32", "    %y = math.exp %a0 : f32"))
    compiled = run(target, kernel, [torch.randn(4)], [torch.empty(4)])
    with pytest.raises(ValueError, match="another Triton mode"):
        target.load_kernel({**target.kernel_artifact(compiled), "interpret": 0})
