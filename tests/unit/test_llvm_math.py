"""The LLVM target against torch: every `math` op, accuracy and special values."""

from __future__ import annotations

import math

import pytest
import torch

from permalloy.targets.llvm import LLVMTarget
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, relative_error, run

SPECIAL = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-30, -1e-30, 1e-40, 88.72, 88.73, -103.9, 1e30]


@pytest.fixture(scope="module")
def target() -> LLVMTarget:
    return LLVMTarget()


def apply(target, op: str, inputs: list[torch.Tensor], element: str = "f32") -> torch.Tensor:
    n = inputs[0].numel()
    operands = ", ".join(f"%a{k}" for k in range(len(inputs)))
    kernel = parse_kernel(pointwise_kernel(f"[{n}]", [element] * len(inputs), element,
                                           f"    %y = math.{op} {operands} : {element}"))  # fmt: skip
    out = torch.empty_like(inputs[0])
    run(target, kernel, inputs, [out])
    return out


def check(out: torch.Tensor, ref: torch.Tensor) -> None:
    """Elementwise allclose (nan where torch has nan) and norm-wise relative error."""
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6, equal_nan=True)
    finite = ref.isfinite()
    assert relative_error(out[finite], ref[finite]) < 1e-5


def dense(low: float, high: float, n: int = 20011, special: bool = True) -> torch.Tensor:
    x = torch.linspace(low, high, n, dtype=torch.float64)
    x = x[torch.randperm(n)]
    if special:
        x = torch.cat([torch.tensor(SPECIAL, dtype=torch.float64), x])
    return x.float()


# f32 functions computed by inline polynomials, over ranges that cross every branch.
POLYNOMIAL = {
    "exp": (torch.exp, -110.0, 95.0),
    "exp2": (torch.exp2, -155.0, 130.0),
    "expm1": (torch.expm1, -20.0, 90.0),
    "log": (torch.log, -1.0, 1e4),
    "log2": (torch.log2, -1.0, 1e4),
    "log10": (torch.log10, -1.0, 1e4),
    "log1p": (torch.log1p, -1.5, 1e3),
    "tanh": (torch.tanh, -12.0, 12.0),
    "erf": (torch.erf, -6.0, 6.0),
}


@pytest.mark.parametrize("op", sorted(POLYNOMIAL))
def test_polynomial_functions(target, op):
    reference, low, high = POLYNOMIAL[op]
    x = dense(low, high)
    out = apply(target, op, [x])
    check(out, reference(x.double()).float())


@pytest.mark.parametrize("op", ["expm1", "tanh", "erf", "log1p"])
def test_polynomial_functions_keep_the_sign_of_zero(target, op):
    """f(-0) = -0 and f(+0) = +0, as torch gives them: a sign a later
    division or rsqrt turns into an infinity of that sign."""
    x = torch.tensor([-0.0, 0.0, -1e-30, 1e-30])
    out = apply(target, op, [x])
    reference = POLYNOMIAL[op][0](x)
    assert torch.equal(torch.signbit(out), torch.signbit(reference)), (out.tolist(), reference.tolist())


@pytest.mark.parametrize("op", ["exp", "expm1", "tanh", "erf", "log1p"])
def test_polynomial_functions_near_zero(target, op):
    x = torch.cat([torch.logspace(-30, 0, 5000), -torch.logspace(-30, -0.01, 5000)]).float()
    out = apply(target, op, [x])
    check(out, POLYNOMIAL[op][0](x.double()).float())


@pytest.mark.parametrize("op", ["log", "log2", "log10"])
def test_logarithms_over_all_magnitudes(target, op):
    x = torch.cat([torch.logspace(-45, 38, 20000, dtype=torch.float64).float(), torch.tensor([1.0, 2.0, 0.5])])
    out = apply(target, op, [x])
    check(out, POLYNOMIAL[op][0](x.double()).float())


def test_special_values(target):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, -1.0])
    nan, inf = float("nan"), float("inf")
    expected = {
        "exp": [nan, inf, 0.0, 1.0, 1.0, math.exp(-1)],
        "expm1": [nan, inf, -1.0, 0.0, -0.0, math.expm1(-1)],
        "log": [nan, inf, nan, -inf, -inf, nan],
        "log1p": [nan, inf, nan, 0.0, -0.0, -inf],
        "tanh": [nan, 1.0, -1.0, 0.0, -0.0, math.tanh(-1)],
        "erf": [nan, 1.0, -1.0, 0.0, -0.0, math.erf(-1)],
    }
    for op, values in expected.items():
        out = apply(target, op, [x])
        torch.testing.assert_close(out, torch.tensor(values), equal_nan=True, rtol=1e-6, atol=0)


LIBM_UNARY = {
    "sqrt": (torch.sqrt, 0.0, 100.0),
    "rsqrt": (torch.rsqrt, 0.01, 100.0),
    "sin": (torch.sin, -10.0, 10.0),
    "cos": (torch.cos, -10.0, 10.0),
    "tan": (torch.tan, -1.5, 1.5),
    "asin": (torch.asin, -1.0, 1.0),
    "acos": (torch.acos, -1.0, 1.0),
    "atan": (torch.atan, -50.0, 50.0),
    "sinh": (torch.sinh, -10.0, 10.0),
    "cosh": (torch.cosh, -10.0, 10.0),
    "asinh": (torch.asinh, -50.0, 50.0),
    "acosh": (torch.acosh, 1.0, 50.0),
    "atanh": (torch.atanh, -0.99, 0.99),
    "absf": (torch.abs, -5.0, 5.0),
    "floor": (torch.floor, -5.0, 5.0),
    "ceil": (torch.ceil, -5.0, 5.0),
    "trunc": (torch.trunc, -5.0, 5.0),
    "roundeven": (torch.round, -5.0, 5.0),
    "round": (lambda x: torch.sign(x) * torch.floor(x.abs() + 0.5), -5.0, 5.0),
}


@pytest.mark.parametrize("element", ["f32", "f64"])
@pytest.mark.parametrize("op", sorted(LIBM_UNARY))
def test_other_unary_functions(target, op, element):
    reference, low, high = LIBM_UNARY[op]
    dtype = torch.float32 if element == "f32" else torch.float64
    x = dense(low, high, 4099, special=False).to(dtype)
    if op in ("round", "roundeven"):
        x[:8] = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5])
    out = apply(target, op, [x], element)
    check(out, reference(x.double()).to(dtype))


@pytest.mark.parametrize("op", sorted(POLYNOMIAL))
def test_f64_transcendentals(target, op):
    reference, low, high = POLYNOMIAL[op]
    x = dense(low, high, 4099).double()
    out = apply(target, op, [x], "f64")
    torch.testing.assert_close(out, reference(x), rtol=1e-12, atol=0, equal_nan=True)


BINARY = {
    "atan2": (torch.atan2, -5.0, 5.0),
    "powf": (torch.pow, 0.1, 4.0),
    "copysign": (torch.copysign, -5.0, 5.0),
}


@pytest.mark.parametrize("element", ["f32", "f64"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_functions(target, op, element):
    reference, low, high = BINARY[op]
    dtype = torch.float32 if element == "f32" else torch.float64
    x, y = (dense(low, high, 4099, special=False).to(dtype) for _ in range(2))
    out = apply(target, op, [x, y], element)
    check(out, reference(x.double(), y.double()).to(dtype))


def test_fma(target):
    a, b, c = (torch.randn(1000) for _ in range(3))
    out = apply(target, "fma", [a, b, c])
    check(out, (a.double() * b.double() + c.double()).float())


def test_absi(target):
    x = torch.randint(-1000, 1000, (1000,), dtype=torch.int32)
    kernel = parse_kernel(pointwise_kernel("[1000]", ["i32"], "i32", "    %y = math.absi %a0 : i32"))
    out = torch.empty_like(x)
    run(target, kernel, [x], [out])
    assert torch.equal(out, x.abs())


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_math_on_half_floats(target, element):
    dtype = torch.float16 if element == "f16" else torch.bfloat16
    x = torch.randn(1000).to(dtype)
    out = apply(target, "exp", [x], element)
    assert torch.equal(out, torch.exp(x.float()).to(dtype))


def test_sigmoid_shape(target):
    x = dense(-120.0, 120.0)
    body = """
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a0 : f32
    %e = math.exp %n : f32
    %d = arith.addf %e, %one : f32
    %y = arith.divf %one, %d : f32"""
    kernel = parse_kernel(pointwise_kernel(f"[{x.numel()}]", ["f32"], "f32", body))
    out = torch.empty_like(x)
    run(target, kernel, [x], [out])
    check(out, torch.sigmoid(x.double()).float())


@pytest.mark.parametrize("op", sorted(POLYNOMIAL))
def test_polynomials_on_row_uniform_values(target, op):
    """A value loaded once per row is computed as a scalar, outside the vector loop."""
    reference, low, high = POLYNOMIAL[op]
    column = dense(low, high, 500).reshape(-1, 1).expand(-1, 37)  # stride 0 along d1
    kernel = parse_kernel(pointwise_kernel(f"[{column.shape[0]}, 37]", ["f32"], "f32", f"    %y = math.{op} %a0 : f32"))
    out = torch.empty(column.shape)
    run(target, kernel, [column], [out])
    check(out, reference(column.double()).float())
