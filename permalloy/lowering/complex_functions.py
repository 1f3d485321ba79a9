"""
`complex_as_real`'s rules for the transcendental functions of complex
tensors and for their products: the trigonometric and hyperbolic functions
(`sin`, `cos`, `tan`, `sinh`, `cosh`, `tanh` and `tanh`'s gradient),
`log2`, `log10`, `rsqrt`, powers with a complex or tensor exponent or a
complex tensor as exponent, `prod` and `cumprod`.

The formulas are those of C's complex functions, on parts:
`sin(a + bi) = (sin a cosh b, cos a sinh b)`, `sinh(a + bi) =
(sinh a cos b, cosh a sin b)`, and `tanh` by Kahan's algorithm (no
cancellation near the poles, and its limit `(+-1, 4 sin b cos b e^-2|a|)`
beyond `|a| = 20`, before `sinh(a)^2` can overflow). A part that
multiplies the sine of a zero is that zero, as C's functions give it, and
not `inf * 0`. `tan z = -i tanh(iz)` and `sin`, `cos` likewise through
the hyperbolic functions. A power with a complex exponent `w` is
`exp(w log z)`, and at a zero base what C's `cpow` gives, as torch's CPU
kernels do (0 for a positive real part of `w`, `inf + nan i` for a negative
one, NaNs for 0). `prod` multiplies halves of the reduced dimension, a tree
of complex products, and `cumprod` doubles the reach of its prefix products
each round.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from permalloy.lowering.complex_pointwise import divide, magnitude, multiply, power, principal_sqrt
from permalloy.lowering.complex_values import (
    Call,
    ComplexRuleError,
    Pair,
    Parts,
    Result,
    make_pair,
    normalized_dims,
    parts_of,
)

aten = torch.ops.aten

LARGE_TANH_ARGUMENT = 20.0
"""The real part beyond which `tanh` takes its limit: `tanh(20)` is 1 in
float64, and `sinh(20)^2` is far from overflowing float32."""


def _operand(call: Call, name: str = "self") -> tuple[torch.Tensor, torch.Tensor]:
    """An operand's parts as tensors in the result's real dtype."""
    result = call.result
    real, imag = parts_of(call[name], result.dtype)
    real = real if isinstance(real, torch.Tensor) else torch.full((), real, dtype=result.dtype, device=result.device)
    return real, torch.zeros_like(real) if not isinstance(imag, torch.Tensor) else imag


def _times_sine(factor: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """`factor * sin(angle)`, exactly `angle` where `angle` is a zero (an
    infinite factor does not make it a NaN)."""
    return torch.where(angle == 0, angle, factor * torch.sin(angle))


def hyperbolic_sine(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.sinh(a) * torch.cos(b), _times_sine(torch.cosh(a), b)


def hyperbolic_cosine(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.cosh(a) * torch.cos(b), _times_sine(torch.sinh(a), b)


def hyperbolic_tangent(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Kahan's `tanh`: with `t = tan b`, `s = sinh a`, `beta = 1 + t^2`,
    `rho = sqrt(1 + s^2)`: `(beta rho s, t) / (1 + beta s^2)`; beyond
    `LARGE_TANH_ARGUMENT`, `(copysign(1, a), 4 sin b cos b e^-2|a|)`."""
    large = a.abs() > LARGE_TANH_ARGUMENT
    moderate = torch.where(large, torch.zeros_like(a), a)
    t = torch.tan(b)
    s = torch.sinh(moderate)
    beta = 1 + t * t
    rho = torch.sqrt(1 + s * s)
    denominator = 1 + beta * s * s
    real = beta * rho * s / denominator
    imag = t / denominator
    limit_imag = 4 * torch.sin(b) * torch.cos(b) * torch.exp(-2 * a.abs())
    return (
        torch.where(large, torch.copysign(torch.ones_like(a), a), real),
        torch.where(large, limit_imag, imag),
    )


def _hyperbolic(function: Callable) -> Callable[[Call], Pair]:
    def rule(call: Call) -> Pair:
        return make_pair(*function(*_operand(call)), call.result)

    rule.__doc__ = f"{function.__name__} of a complex tensor, on its parts."
    return rule


def sine(call: Call) -> Pair:
    """`sin z = -i sinh(iz)`: `(sin a cosh b, cos a sinh b)`."""
    a, b = _operand(call)
    p, q = hyperbolic_sine(-b, a)
    return make_pair(q, -p, call.result)


def cosine(call: Call) -> Pair:
    """`cos z = cosh(iz)`: `(cos a cosh b, -sin a sinh b)`."""
    a, b = _operand(call)
    return make_pair(*hyperbolic_cosine(-b, a), call.result)


def tangent(call: Call) -> Pair:
    """`tan z = -i tanh(iz)`."""
    a, b = _operand(call)
    p, q = hyperbolic_tangent(-b, a)
    return make_pair(q, -p, call.result)


def tanh_backward(call: Call) -> Pair:
    """tanh_backward(grad_output, output): `grad * conj(1 - output^2)`."""
    dtype = call.result.dtype
    out = parts_of(call["output"], dtype)
    square = multiply(out, out)
    slope = (1 - square[0], square[1])  # the conjugate of 1 - out^2
    return make_pair(*multiply(parts_of(call["grad_output"], dtype), slope), call.result)


def _logarithm_in_base(base: float) -> Callable[[Call], Pair]:
    def rule(call: Call) -> Pair:
        real, imag = _operand(call)
        scale = 1 / math.log(base)
        return make_pair(torch.log(magnitude(real, imag)) * scale, torch.atan2(imag, real) * scale, call.result)

    rule.__doc__ = f"log{int(base)}: the natural logarithm over log({int(base)})."
    return rule


def rsqrt(call: Call) -> Pair:
    """`1 / sqrt(z)`, the principal root's reciprocal."""
    result = call.result
    root = principal_sqrt(*_operand(call))
    return make_pair(*divide((1.0, 0.0), root, result), result)


def general_power(base: Parts, exponent: Parts, result: Result) -> Pair:
    """`exp(w log z)`; at a zero base, C's `cpow`: 0 where `w`'s real part
    is positive, `inf + nan i` where it is negative."""
    br, bi = (p if isinstance(p, torch.Tensor) else torch.full((), p, dtype=result.dtype, device=result.device)
              for p in base)  # fmt: skip
    logarithm = (torch.log(magnitude(br, bi)), torch.atan2(bi, br))
    er, ei = multiply(exponent, logarithm)
    scale = torch.exp(er)
    real, imag = scale * torch.cos(ei), scale * torch.sin(ei)
    zero = (br == 0) & (bi == 0)
    vanishes, overflows = zero & (exponent[0] > 0), zero & (exponent[0] < 0)
    real = torch.where(vanishes, 0.0, torch.where(overflows, math.inf, real))
    imag = torch.where(vanishes, 0.0, torch.where(overflows, math.nan, imag))
    return make_pair(real, imag, result)


def pow_of_tensor(call: Call) -> Pair:
    """pow.Tensor_Scalar: a real exponent takes `power`'s exact forms, a
    complex one the general power."""
    exponent = call["exponent"]
    if not isinstance(exponent, complex) and isinstance(exponent, int | float):
        return power(call)
    if not isinstance(exponent, complex):
        raise ComplexRuleError(f"the exponent {exponent!r}")
    result = call.result
    return general_power(parts_of(call["self"], result.dtype), (exponent.real, exponent.imag), result)


def pow_of_tensors(call: Call) -> Pair:
    """pow.Tensor_Tensor, either of them complex."""
    result = call.result
    return general_power(parts_of(call["self"], result.dtype), parts_of(call["exponent"], result.dtype), result)


def pow_of_number(call: Call) -> Pair:
    """pow.Scalar: a number raised to a (complex) tensor."""
    result = call.result
    return general_power(parts_of(call["self"], result.dtype), parts_of(call["exponent"], result.dtype), result)


def _product_along(parts: tuple[torch.Tensor, torch.Tensor], dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The complex product of the entries along `dim` (kept, of size 1): the
    first half times the second, until one entry is left; an odd entry out
    waits for the next round."""
    real, imag = parts
    while real.shape[dim] > 1:
        count = real.shape[dim]
        half = count // 2
        first = (real.narrow(dim, 0, half), imag.narrow(dim, 0, half))
        second = (real.narrow(dim, half, half), imag.narrow(dim, half, half))
        real, imag = multiply(first, second)
        if count % 2:
            real = torch.cat([real, parts[0].narrow(dim, count - 1, 1)], dim)
            imag = torch.cat([imag, parts[1].narrow(dim, count - 1, 1)], dim)
        parts = (real, imag)
    if real.shape[dim] == 0:
        ones = torch.ones_like(real.sum(dim, keepdim=True))
        return ones, torch.zeros_like(ones)
    return real, imag


def prod(call: Call) -> Pair:
    """prod and prod.dim_int: a tree of complex products over the dimension
    (every dimension, flattened, for the default overload)."""
    result = call.result
    value = call["self"]
    if not isinstance(value, Pair):
        raise ComplexRuleError("a product of a real tensor into a complex dtype")
    real, imag = value.to(result.dtype).parts()
    if "dim" not in call.arguments:
        flat = (real.reshape(-1), imag.reshape(-1))
        real, imag = _product_along(flat, 0)
        return make_pair(real.reshape(()), imag.reshape(()), result)
    if value.rank == 0:
        return make_pair(real, imag, result)
    (dim,) = normalized_dims(call["dim"], value.rank)
    real, imag = _product_along((real, imag), dim)
    if not call.arguments.get("keepdim", False):
        real, imag = real.squeeze(dim), imag.squeeze(dim)
    return make_pair(real, imag, result)


def cumprod(call: Call) -> Pair:
    """cumprod: prefix products by doubling (each round multiplies every
    entry by the one `2^k` before it), `log2(n)` rounds of complex products."""
    result = call.result
    value = call["self"]
    real, imag = value.to(result.dtype).parts()
    if value.rank == 0:
        return make_pair(real, imag, result)
    (dim,) = normalized_dims(call["dim"], value.rank)
    count, step = real.shape[dim], 1
    while step < count:
        earlier = (real.narrow(dim, 0, count - step), imag.narrow(dim, 0, count - step))
        later = (real.narrow(dim, step, count - step), imag.narrow(dim, step, count - step))
        product = multiply(later, earlier)
        real = torch.cat([real.narrow(dim, 0, step), product[0]], dim)
        imag = torch.cat([imag.narrow(dim, 0, step), product[1]], dim)
        step *= 2
    return make_pair(real, imag, result)


FUNCTION_RULES: dict[Any, Callable[[Call], Any]] = {
    aten.sinh: _hyperbolic(hyperbolic_sine),
    aten.cosh: _hyperbolic(hyperbolic_cosine),
    aten.tanh: _hyperbolic(hyperbolic_tangent),
    aten.sin: sine,
    aten.cos: cosine,
    aten.tan: tangent,
    aten.tanh_backward: tanh_backward,
    aten.log2: _logarithm_in_base(2.0),
    aten.log10: _logarithm_in_base(10.0),
    aten.rsqrt: rsqrt,
    aten.pow.Tensor_Scalar: pow_of_tensor,
    aten.pow.Tensor_Tensor: pow_of_tensors,
    aten.pow.Scalar: pow_of_number,
    aten.prod.default: prod,
    aten.prod.dim_int: prod,
    aten.cumprod.default: cumprod,
}
"""The rules of transcendental functions, powers and products, by ATen
overload packet or overload."""
