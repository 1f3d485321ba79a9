"""
`complex_as_real`'s rules for elementwise ops on complex tensors: arithmetic
with complex and real operands and numbers, conjugation, the functions
(`abs`, `angle`, `sgn`, `exp`, `log`, `sqrt`, `pow` with a real exponent),
comparisons, selections, casts, and building and taking apart complex values
(`real`, `imag`, `view_as_real`, `view_as_complex`, `complex`, `polar`).

Each rule computes on the parts of its operands in the dtype the op
computes in (its result's), as torch's kernels do: a product is
`(ar br - ai bi, ar bi + ai br)`, a quotient Smith's algorithm as torch
divides, a magnitude the larger part times `sqrt(1 + r^2)` (no overflow
where the magnitude is finite). A part known to be the number 0 (the
imaginary part of a real operand or number) is left out of sums and
products, which torch computes with it: where the other operand holds an
infinity or a NaN, eager's `0 * inf` makes a NaN that the rewrite does not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from permalloy.lowering.complex_values import (
    Call,
    ComplexRuleError,
    Pair,
    Part,
    Parts,
    Result,
    make_pair,
    parts_of,
    real_of,
)

aten = torch.ops.aten
prims = torch.ops.prims


# -- arithmetic on parts (tensors or numbers) ---------------------------------


def _is_zero(value: Part) -> bool:
    """Whether a part is the number 0 (never a tensor or a size symbol, whose
    comparison would guard on its value)."""
    return isinstance(value, int | float) and value == 0


def _add(x: Part, y: Part) -> Part:
    if _is_zero(y):
        return x
    if _is_zero(x):
        return y
    return x + y


def _sub(x: Part, y: Part) -> Part:
    if _is_zero(y):
        return x
    if _is_zero(x):
        return -y
    return x - y


def _mul(x: Part, y: Part) -> Part:
    if _is_zero(x) or _is_zero(y):
        return 0.0
    return x * y


def multiply(a: Parts, b: Parts) -> Parts:
    """The complex product of two operands' parts."""
    (ar, ai), (br, bi) = a, b
    return _sub(_mul(ar, br), _mul(ai, bi)), _add(_mul(ar, bi), _mul(ai, br))


def divide(a: Parts, b: Parts, result: Result) -> Parts:
    """The complex quotient `a / b`: by a real tensor or number, each part
    divided; by a complex number, its reciprocal's product; by a complex
    tensor, Smith's algorithm as torch's `c10::complex` divides (by the
    larger part of the denominator, and by zero part by part: `1 / 0` is
    `inf + nan j`)."""
    (ar, ai), (br, bi) = a, b
    if _is_zero(bi):
        return ar / br, (0.0 if _is_zero(ai) else ai / br)
    if not isinstance(br, torch.Tensor) and not isinstance(bi, torch.Tensor):
        reciprocal = 1 / complex(br, bi)
        return multiply(a, (reciprocal.real, reciprocal.imag))
    br, bi = (_tensor(p, result) for p in (br, bi))
    abs_r, abs_i = br.abs(), bi.abs()
    real_larger = abs_r >= abs_i
    larger, smaller = torch.where(real_larger, br, bi), torch.where(real_larger, bi, br)
    ratio = smaller / larger
    scale = 1 / (larger + smaller * ratio)
    real = torch.where(real_larger, _add(ar, _mul(ai, ratio)), _add(_mul(ar, ratio), ai)) * scale
    imag = torch.where(real_larger, _sub(ai, _mul(ar, ratio)), _sub(_mul(ai, ratio), ar)) * scale
    zero = (abs_r == 0) & (abs_i == 0)
    return torch.where(zero, ar / abs_r, real), torch.where(zero, ai / abs_i, imag)


def _tensor(part: Part, result: Result) -> torch.Tensor:
    """A part as a tensor (a number as a 0-d tensor of the result's dtype)."""
    if isinstance(part, torch.Tensor):
        return part
    return torch.full((), part, dtype=result.dtype, device=result.device)


def magnitude(real: torch.Tensor, imag: torch.Tensor) -> torch.Tensor:
    """`|z|` as `hypot(real, imag)` computes it: the larger part times
    `sqrt(1 + r^2)` with `r` the ratio of the smaller to it (0 where both
    are 0, infinite where one is)."""
    real, imag = real.abs(), imag.abs()
    larger, smaller = torch.maximum(real, imag), torch.minimum(real, imag)
    ratio = smaller / larger
    value = larger * torch.sqrt(1 + ratio * ratio)
    return torch.where((larger == 0) | torch.isinf(larger), larger, value)


def _pair(call: Call, parts: Parts) -> Pair:
    return make_pair(parts[0], parts[1], call.result)


# -- the rules ---------------------------------------------------------------


def add(call: Call) -> Pair:
    """add and sub (Tensor and Scalar): `self +- alpha * other`."""
    dtype = call.result.dtype
    other = parts_of(call["other"], dtype)
    alpha = call.arguments.get("alpha", 1)
    if alpha != 1:
        other = multiply(other, parts_of(alpha, dtype))
    combine = _sub if call.node.target.overloadpacket is aten.sub else _add
    (sr, si), (orr, oi) = parts_of(call["self"], dtype), other
    return _pair(call, (combine(sr, orr), combine(si, oi)))


def rsub(call: Call) -> Pair:
    """`other - alpha * self`."""
    dtype = call.result.dtype
    scaled = multiply(parts_of(call["self"], dtype), parts_of(call.arguments.get("alpha", 1), dtype))
    other = parts_of(call["other"], dtype)
    return _pair(call, (_sub(other[0], scaled[0]), _sub(other[1], scaled[1])))


def mul(call: Call) -> Pair:
    dtype = call.result.dtype
    return _pair(call, multiply(parts_of(call["self"], dtype), parts_of(call["other"], dtype)))


def div(call: Call) -> Pair:
    if call.arguments.get("rounding_mode") is not None:
        raise ComplexRuleError("a rounding mode (torch does not round complex numbers)")
    result = call.result
    quotient = divide(parts_of(call["self"], result.dtype), parts_of(call["other"], result.dtype), result)
    return _pair(call, quotient)


def reciprocal(call: Call) -> Pair:
    result = call.result
    return _pair(call, divide((1.0, 0.0), parts_of(call["self"], result.dtype), result))


def neg(call: Call) -> Pair:
    real, imag = parts_of(call["self"], call.result.dtype)
    return _pair(call, (-real, -imag))


def conj(call: Call) -> Pair:
    """conj, conj_physical, _conj: the conjugate, computed (the lazy
    conjugation bit of torch's views is a representation this layout has not)."""
    real, imag = parts_of(call["self"], call.result.dtype)
    return _pair(call, (real, -imag))


def same(call: Call) -> Any:
    """Ops that give their input's value: alias, detach, resolve_conj,
    resolve_neg, lift_fresh_copy."""
    return call["self"]


def clone(call: Call) -> Pair:
    """A clone of the pair, in torch's layout for the complex tensor's
    (preserved or contiguous; other memory formats have none for pairs)."""
    memory_format = call.arguments.get("memory_format")
    if memory_format not in (None, torch.preserve_format, torch.contiguous_format):
        raise ComplexRuleError(f"memory format {memory_format}")
    return Pair(call["self"].packed().clone(memory_format=memory_format or torch.preserve_format))


def absolute(call: Call) -> torch.Tensor:
    value = call["self"]
    return magnitude(*value.to(call.result.dtype).parts())


def angle(call: Call) -> torch.Tensor:
    real, imag = call["self"].to(call.result.dtype).parts()
    return torch.atan2(imag, real)


def sgn(call: Call) -> Pair:
    """`z / |z|`, 0 where `z` is 0."""
    real, imag = call["self"].to(call.result.dtype).parts()
    size = magnitude(real, imag)
    zero = size == 0
    safe = torch.where(zero, 1, size)
    return make_pair(torch.where(zero, 0, real / safe), torch.where(zero, 0, imag / safe), call.result)


def exp(call: Call) -> Pair:
    real, imag = call["self"].to(call.result.dtype).parts()
    scale = torch.exp(real)
    return make_pair(scale * torch.cos(imag), scale * torch.sin(imag), call.result)


def log(call: Call) -> Pair:
    real, imag = call["self"].to(call.result.dtype).parts()
    return make_pair(torch.log(magnitude(real, imag)), torch.atan2(imag, real), call.result)


def principal_sqrt(real: torch.Tensor, imag: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The principal square root: with `t = sqrt((|z| + |real|) / 2)`,
    `(t, imag / 2t)` for a nonnegative real part, else `(|imag| / 2t, +-t)`
    with the sign of `imag` (no cancellation either way)."""
    t = torch.sqrt((magnitude(real, imag) + real.abs()) / 2)
    half = imag / (2 * torch.where(t == 0, 1, t))
    right = real >= 0
    return torch.where(right, t, half.abs()), torch.where(right, half, torch.copysign(t, imag))


def sqrt(call: Call) -> Pair:
    real, imag = call["self"].to(call.result.dtype).parts()
    return make_pair(*principal_sqrt(real, imag), call.result)


def power(call: Call) -> Pair:
    """pow(complex tensor, real number): products for small whole exponents,
    the root for 1/2, else `|z|^p (cos p theta, sin p theta)`."""
    exponent = call["exponent"]
    if isinstance(exponent, complex) or not isinstance(exponent, int | float):
        raise ComplexRuleError(f"the exponent {exponent!r} (rules take a real number)")
    result = call.result
    base = call["self"].to(result.dtype)
    real, imag = base.parts()
    if exponent == 0:
        return make_pair(torch.ones_like(real), 0.0, result)
    if exponent == 0.5:
        return make_pair(*principal_sqrt(real, imag), result)
    if math.isfinite(exponent) and exponent == int(exponent) and 1 <= abs(exponent) <= 3:
        value: Parts = (real, imag)
        for _ in range(int(abs(exponent)) - 1):
            value = multiply(value, (real, imag))
        if exponent < 0:
            value = divide((1.0, 0.0), value, result)
        return make_pair(*value, result)
    size = magnitude(real, imag) ** exponent
    turn = torch.atan2(imag, real) * exponent
    return make_pair(size * torch.cos(turn), size * torch.sin(turn), result)


def _compare_dtype(*values: Any) -> torch.dtype:
    """The real dtype two operands compare in: their promoted one."""
    dtypes = [
        v.real_dtype if isinstance(v, Pair) else v.dtype
        for v in values
        if isinstance(v, Pair | torch.Tensor)
    ]
    dtype = dtypes[0]
    for other in dtypes[1:]:
        dtype = torch.promote_types(dtype, other)
    return dtype if dtype.is_floating_point else torch.get_default_dtype()


def equal(call: Call) -> torch.Tensor:
    """eq and ne: both parts equal (either differs)."""
    dtype = _compare_dtype(call["self"], call["other"])
    (ar, ai), (br, bi) = parts_of(call["self"], dtype), parts_of(call["other"], dtype)
    same_value = torch.eq(ar, br) & torch.eq(_tensor(ai, Result(dtype, call.result.device)), bi)
    return same_value if call.node.target.overloadpacket is aten.eq else ~same_value


def isnan(call: Call) -> torch.Tensor:
    real, imag = call["self"].parts()
    return torch.isnan(real) | torch.isnan(imag)


def where(call: Call) -> Pair:
    """where(condition, self, other), each part selected."""
    result = call.result
    (ar, ai), (br, bi) = parts_of(call["self"], result.dtype), parts_of(call["other"], result.dtype)
    condition = call["condition"]
    real = torch.where(condition, _tensor(ar, result), _tensor(br, result))
    imag = torch.where(condition, _tensor(ai, result), _tensor(bi, result))
    return make_pair(real, imag, result)


def masked_fill(call: Call) -> Pair:
    """masked_fill(self, mask, value): `value` where `mask` holds."""
    result = call.result
    (vr, vi), (sr, si) = parts_of(call["value"], result.dtype), parts_of(call["self"], result.dtype)
    mask = call["mask"]
    real = torch.where(mask, _tensor(vr, result), _tensor(sr, result))
    imag = torch.where(mask, _tensor(vi, result), _tensor(si, result))
    return make_pair(real, imag, result)


def _convert(value: Any, example: torch.Tensor) -> Any:
    """A value (pair or real tensor) in the dtype of `example`, torch's
    conversion: a real to a complex dtype has imaginary part 0, a complex to
    a real one keeps the real part, to bool whether it is nonzero."""
    result = Result.of(example)
    if example.is_complex():
        if isinstance(value, Pair):
            return value.to(result.dtype)
        return make_pair(value.to(result.dtype), 0.0, result)
    if not isinstance(value, Pair):
        return value.to(example.dtype)
    real, imag = value.parts()
    if example.dtype == torch.bool:
        return (real != 0) | (imag != 0)
    return real.to(example.dtype)


def to_copy(call: Call) -> Any:
    """_to_copy and convert_element_type: a conversion of dtype on one device."""
    device = call.arguments.get("device")
    source = call["self"] if "self" in call.arguments else call["a"]
    source_device = (source.packed() if isinstance(source, Pair) else source).device
    if device is not None and torch.device(device) != source_device:
        raise ComplexRuleError(f"a copy from {source_device} to {device}")
    return _convert(source, call.example)


def copy(call: Call) -> Any:
    """copy(self, src): `src` in `self`'s dtype, broadcast to its shape."""
    value = _convert(call["src"], call.example)
    target = call["self"]
    if isinstance(value, Pair):
        shape = target.packed().shape if isinstance(target, Pair) else (*target.shape, 2)
        return Pair(value.packed().expand(shape))
    shape = target.shape() if isinstance(target, Pair) else target.shape
    return value.expand(shape)


def real_part(call: Call) -> torch.Tensor:
    return call["self"].parts()[0]


def imaginary_part(call: Call) -> torch.Tensor:
    return call["self"].parts()[1]


def view_as_real(call: Call) -> torch.Tensor:
    return call["self"].packed()


def view_as_complex(call: Call) -> Pair:
    return Pair(call["self"])


def complex_of(call: Call) -> Pair:
    """complex(real, imag)."""
    result = call.result
    return make_pair(real_of(call["real"], result.dtype), real_of(call["imag"], result.dtype), result)


def polar(call: Call) -> Pair:
    """polar(abs, angle): `abs * (cos angle, sin angle)`."""
    size, turn = call["abs"], call["angle"]
    return make_pair(size * torch.cos(turn), size * torch.sin(turn), call.result)


POINTWISE_RULES: dict[Any, Callable[[Call], Any]] = {
    aten.add: add,
    aten.sub: add,
    aten.rsub: rsub,
    aten.mul: mul,
    aten.div: div,
    aten.reciprocal: reciprocal,
    aten.neg: neg,
    aten._neg_view: neg,
    aten.conj_physical: conj,
    aten._conj_physical: conj,
    aten._conj: conj,
    aten._conj_copy: conj,
    aten.conj: conj,
    aten.resolve_conj: same,
    aten.resolve_neg: same,
    aten.clone: clone,
    aten.alias: same,
    aten.detach: same,
    aten.lift_fresh_copy: same,
    aten.abs: absolute,
    aten.angle: angle,
    aten.sgn: sgn,
    aten.exp: exp,
    aten.log: log,
    aten.sqrt: sqrt,
    aten.eq.Tensor: equal,
    aten.eq.Scalar: equal,
    aten.ne.Tensor: equal,
    aten.ne.Scalar: equal,
    aten.isnan: isnan,
    aten.where.self: where,
    aten.where.ScalarSelf: where,
    aten.where.ScalarOther: where,
    aten.masked_fill: masked_fill,
    aten._to_copy: to_copy,
    prims.convert_element_type: to_copy,
    aten.copy: copy,
    aten.real: real_part,
    aten.imag: imaginary_part,
    aten.view_as_real: view_as_real,
    aten.view_as_complex: view_as_complex,
    aten.complex: complex_of,
    aten.polar: polar,
}
"""The elementwise rules, by ATen overload packet or overload."""
