"""
Differential tests of the FX importer, one ATen op (or a small combination) at
a time: capture with torch.compile, import, run the reference interpreter, and
compare with eager PyTorch on random non-zero inputs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from permalloy.lowering.import_fx.differential import compare_with_eager

TOLERANCE = {torch.float16: 2e-3, torch.bfloat16: 1e-2}
"""Relative errors allowed for half-precision outputs; others need 1e-5."""


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape)


def positive(*shape: int) -> torch.Tensor:
    return torch.rand(*shape) + 0.5


def ints(*shape: int, low: int = -5, high: int = 6) -> torch.Tensor:
    values = torch.randint(low, high, shape)
    return torch.where(values == 0, torch.ones_like(values), values)


def unit(*shape: int) -> torch.Tensor:
    return torch.rand(*shape) * 1.8 - 0.9


Case = tuple[str, Callable, Callable[[], tuple]]

UNARY: list[Case] = [
    (name, fn, lambda make=make: (make(3, 5),))
    for name, fn, make in [
        ("neg", torch.neg, randn),
        ("abs", torch.abs, randn),
        ("exp", torch.exp, randn),
        ("exp2", torch.exp2, randn),
        ("expm1", torch.expm1, randn),
        ("log", torch.log, positive),
        ("log2", torch.log2, positive),
        ("log10", torch.log10, positive),
        ("log1p", torch.log1p, positive),
        ("sqrt", torch.sqrt, positive),
        ("rsqrt", torch.rsqrt, positive),
        ("sin", torch.sin, randn),
        ("cos", torch.cos, randn),
        ("tan", torch.tan, unit),
        ("asin", torch.asin, unit),
        ("acos", torch.acos, unit),
        ("atan", torch.atan, randn),
        ("sinh", torch.sinh, randn),
        ("cosh", torch.cosh, randn),
        ("tanh", torch.tanh, randn),
        ("asinh", torch.asinh, randn),
        ("acosh", lambda x: torch.acosh(x + 1), positive),
        ("atanh", torch.atanh, unit),
        ("erf", torch.erf, randn),
        ("erfc", torch.erfc, randn),
        ("erfinv", torch.erfinv, unit),
        ("sigmoid", torch.sigmoid, randn),
        ("reciprocal", torch.reciprocal, positive),
        ("floor", lambda x: torch.floor(x * 3), randn),
        ("ceil", lambda x: torch.ceil(x * 3), randn),
        ("round", lambda x: torch.round(x * 3), randn),
        ("trunc", lambda x: torch.trunc(x * 3), randn),
        ("sign", torch.sign, randn),
        ("isnan", lambda x: torch.isnan(torch.log(x)), randn),
        ("isinf", lambda x: torch.isinf(1 / (x > 0).float()), randn),
        ("logical_not", lambda x: torch.logical_not(x > 0), randn),
        ("bitwise_not", torch.bitwise_not, ints),
        ("relu", torch.relu, randn),
        ("silu", F.silu, randn),
        ("gelu", F.gelu, randn),
        ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), randn),
        ("leaky_relu", F.leaky_relu, randn),
        ("elu", F.elu, randn),
        ("hardtanh", F.hardtanh, randn),
        ("hardswish", F.hardswish, randn),
        ("hardsigmoid", F.hardsigmoid, randn),
        ("softplus", F.softplus, randn),
        ("mish", F.mish, randn),
        ("exp_of_ints", torch.exp, ints),
        ("sqrt_of_ints", lambda x: torch.sqrt(x.abs()), ints),
        ("abs_of_ints", torch.abs, ints),
        ("floor_of_ints", torch.floor, ints),
    ]
]

BINARY: list[Case] = [
    ("add", torch.add, lambda: (randn(3, 5), randn(3, 5))),
    ("add_alpha", lambda x, y: torch.add(x, y, alpha=3), lambda: (randn(3, 5), randn(5))),
    ("sub_broadcast", torch.sub, lambda: (randn(3, 1), randn(1, 5))),
    ("mul_scalar", lambda x: x * 2.5, lambda: (randn(3, 5),)),
    ("add_int_scalar_keeps_float", lambda x: x + 2, lambda: (randn(3, 5),)),
    ("int_times_float_scalar", lambda x: x * 0.5, lambda: (ints(3, 5),)),
    ("int_plus_int_scalar", lambda x: x + 3, lambda: (ints(3, 5),)),
    ("int_plus_float_tensor", torch.add, lambda: (ints(3, 5), randn(3, 5))),
    ("int32_plus_int64", lambda x, y: x.int() + y, lambda: (ints(3, 5), ints(3, 5))),
    ("half_plus_float", lambda x, y: x.half() + y, lambda: (randn(3, 5), randn(3, 5))),
    ("zero_dim_tensor_keeps_dtype", lambda x, y: x.half() * y, lambda: (randn(3, 5), randn(()))),
    ("div", torch.div, lambda: (randn(3, 5), positive(3, 5))),
    ("div_ints_is_true_division", torch.div, lambda: (ints(3, 5), ints(3, 5))),
    ("div_floor", lambda x, y: torch.div(x, y, rounding_mode="floor"), lambda: (randn(3, 5), positive(3, 5))),
    ("div_trunc", lambda x, y: torch.div(x, y, rounding_mode="trunc"), lambda: (randn(3, 5), positive(3, 5))),
    ("div_floor_ints", lambda x, y: torch.div(x, y, rounding_mode="floor"), lambda: (ints(3, 5), ints(3, 5))),
    ("div_trunc_ints", lambda x, y: torch.div(x, y, rounding_mode="trunc"), lambda: (ints(3, 5), ints(3, 5))),
    ("floor_divide", torch.floor_divide, lambda: (ints(3, 5), ints(3, 5))),
    ("remainder", torch.remainder, lambda: (randn(3, 5), positive(3, 5))),
    ("remainder_ints", torch.remainder, lambda: (ints(3, 5), ints(3, 5))),
    ("fmod", torch.fmod, lambda: (randn(3, 5), positive(3, 5))),
    ("rsub", lambda x: 1 - x, lambda: (randn(3, 5),)),
    ("rsub_tensor", lambda x, y: torch.rsub(x, y, alpha=2), lambda: (randn(3, 5), randn(3, 5))),
    ("pow_scalar", lambda x: x ** 3.5, lambda: (positive(3, 5),)),
    ("pow_two", lambda x: x ** 2, lambda: (randn(3, 5),)),
    ("pow_half", lambda x: x ** 0.5, lambda: (positive(3, 5),)),
    ("pow_tensor", torch.pow, lambda: (positive(3, 5), randn(3, 5))),
    ("pow_scalar_base", lambda x: 2.0 ** x, lambda: (randn(3, 5),)),
    ("pow_ints", lambda x: x ** 3, lambda: (ints(3, 5),)),
    ("maximum", torch.maximum, lambda: (randn(3, 5), randn(3, 5))),
    ("minimum", torch.minimum, lambda: (randn(3, 5), randn(5))),
    ("atan2", torch.atan2, lambda: (randn(3, 5), randn(3, 5))),
    ("copysign", torch.copysign, lambda: (randn(3, 5), randn(3, 5))),
    ("logical_and", lambda x, y: torch.logical_and(x > 0, y > 0), lambda: (randn(3, 5), randn(3, 5))),
    ("logical_or", lambda x, y: torch.logical_or(x > 0, y), lambda: (randn(3, 5), randn(3, 5))),
    ("logical_xor", lambda x, y: torch.logical_xor(x, y > 0), lambda: (ints(3, 5), randn(3, 5))),
    ("bitwise_and", torch.bitwise_and, lambda: (ints(3, 5), ints(3, 5))),
    ("bitwise_or", torch.bitwise_or, lambda: (ints(3, 5), ints(3, 5))),
    ("bitwise_xor_bool", lambda x, y: (x > 0) ^ (y > 0), lambda: (randn(3, 5), randn(3, 5))),
    ("shift_left", lambda x: x << 2, lambda: (ints(3, 5, low=1),)),
    ("shift_right", lambda x: x >> 1, lambda: (ints(3, 5, low=1),)),
    ("clamp", lambda x: torch.clamp(x, -0.5, 0.7), lambda: (randn(3, 5),)),
    ("clamp_min", lambda x: torch.clamp(x, min=0.1), lambda: (randn(3, 5),)),
    ("clamp_max", lambda x: torch.clamp(x, max=0.1), lambda: (randn(3, 5),)),
    ("clamp_tensor", torch.clamp, lambda: (randn(3, 5), -positive(5), positive(3, 1))),
    ("clamp_ints_with_float_bound", lambda x: torch.clamp(x, min=0.5), lambda: (ints(3, 5),)),
    ("addcmul", lambda x, y, z: torch.addcmul(x, y, z, value=0.5), lambda: (randn(3, 5), randn(3, 5), randn(5))),
    ("addcdiv", lambda x, y, z: torch.addcdiv(x, y, z, value=2), lambda: (randn(3, 5), randn(3, 5), positive(5))),
    ("lerp", lambda x, y: torch.lerp(x, y, 0.3), lambda: (randn(3, 5), randn(3, 5))),
]

COMPARE: list[Case] = [
    (name, fn, lambda: (randn(3, 5), randn(3, 5)))
    for name, fn in [
        ("eq", lambda x, y: x.round() == y.round()),
        ("ne", lambda x, y: x.round() != y.round()),
        ("lt", torch.lt),
        ("le", torch.le),
        ("gt", torch.gt),
        ("ge", torch.ge),
        ("gt_scalar", lambda x, y: x > 0.25),
        ("int_lt_float_scalar", lambda x, y: x.long() < 0.5),
        ("int_eq_float_tensor", lambda x, y: x.round().long() == y.round()),
    ]
]

SELECT_AND_CAST: list[Case] = [
    ("where", lambda c, x, y: torch.where(c > 0, x, y), lambda: (randn(3, 5), randn(3, 5), randn(5))),
    ("where_scalar", lambda c, x: torch.where(c > 0, x, 0.5), lambda: (randn(3, 5), randn(3, 5))),
    ("where_mixed_dtypes", lambda c, x, y: torch.where(c > 0, x, y.long()), lambda: (randn(3, 5), randn(3, 5), ints(3, 5))),
    ("masked_fill", lambda x, m: x.masked_fill(m > 0, -1.5), lambda: (randn(3, 5), randn(3, 5))),
    ("masked_fill_tensor", lambda x, m, v: x.masked_fill(m > 0, v), lambda: (randn(3, 5), randn(3, 5), randn(()))),
    ("to_int", lambda x: (x * 4).to(torch.int32), lambda: (randn(3, 5),)),
    ("to_bool", lambda x: x.to(torch.bool), lambda: (randn(3, 5),)),
    ("to_half_and_back", lambda x: x.half().float(), lambda: (randn(3, 5),)),
    ("to_bfloat16", lambda x: x.bfloat16() * 2, lambda: (randn(3, 5),)),
    ("to_double", lambda x: x.double() * 3, lambda: (randn(3, 5),)),
    ("int_to_float", lambda x: x.float() / 3, lambda: (ints(3, 5),)),
    ("bool_to_float", lambda x: (x > 0).float() * 2, lambda: (randn(3, 5),)),
    ("uint8", lambda x: (x.abs() * 10).to(torch.uint8) + 1, lambda: (randn(3, 5),)),
    ("int8", lambda x: (x * 10).to(torch.int8) * 2, lambda: (randn(3, 5),)),
    ("int16", lambda x: (x * 10).to(torch.int16) - 3, lambda: (randn(3, 5),)),
    ("clone", lambda x: x.clone() + 1, lambda: (randn(3, 5),)),
    ("type_as", lambda x, y: x.type_as(y) + y, lambda: (randn(3, 5), ints(3, 5))),
]


def _reduction_cases() -> list[Case]:
    shape = (2, 3, 4)
    cases: list[Case] = []
    for dim in range(-3, 3):
        for keepdim in (False, True):
            suffix = f"dim{dim}{'_keep' if keepdim else ''}"
            cases += [
                (f"sum_{suffix}", lambda x, d=dim, k=keepdim: x.sum(d, keepdim=k), lambda: (randn(*shape),)),
                (f"mean_{suffix}", lambda x, d=dim, k=keepdim: x.mean(d, keepdim=k), lambda: (randn(*shape),)),
                (f"amax_{suffix}", lambda x, d=dim, k=keepdim: x.amax(d, keepdim=k), lambda: (randn(*shape),)),
                (f"amin_{suffix}", lambda x, d=dim, k=keepdim: x.amin(d, keepdim=k), lambda: (randn(*shape),)),
                (f"prod_{suffix}", lambda x, d=dim, k=keepdim: x.prod(d, keepdim=k), lambda: (positive(*shape),)),
                (f"argmax_{suffix}", lambda x, d=dim, k=keepdim: x.argmax(d, keepdim=k), lambda: (randn(*shape),)),
                (f"argmin_{suffix}", lambda x, d=dim, k=keepdim: x.argmin(d, keepdim=k), lambda: (randn(*shape),)),
                (f"max_dim_{suffix}", lambda x, d=dim, k=keepdim: x.max(d, keepdim=k), lambda: (randn(*shape),)),
                (f"min_dim_values_{suffix}", lambda x, d=dim, k=keepdim: x.min(d, keepdim=k).values, lambda: (randn(*shape),)),
                (f"any_{suffix}", lambda x, d=dim, k=keepdim: (x > 1).any(d, keepdim=k), lambda: (randn(*shape),)),
                (f"all_{suffix}", lambda x, d=dim, k=keepdim: (x > -1).all(d, keepdim=k), lambda: (randn(*shape),)),
                (f"var_{suffix}", lambda x, d=dim, k=keepdim: x.var(d, keepdim=k), lambda: (randn(*shape),)),
            ]
    cases += [
        ("sum_all", lambda x: x.sum(), lambda: (randn(*shape),)),
        ("sum_two_dims", lambda x: x.sum((0, 2)), lambda: (randn(*shape),)),
        ("sum_ints_gives_int64", lambda x: x.sum(1), lambda: (ints(*shape).int(),)),
        ("sum_bools", lambda x: (x > 0).sum(-1), lambda: (randn(*shape),)),
        ("sum_dtype", lambda x: x.sum(1, dtype=torch.float64), lambda: (randn(*shape),)),
        ("sum_half_input", lambda x: x.half().sum(1).float(), lambda: (randn(*shape),)),
        ("prod_all", lambda x: x.prod(), lambda: (positive(*shape),)),
        ("amax_two_dims", lambda x: x.amax((0, 1), keepdim=True), lambda: (randn(*shape),)),
        ("max_all", lambda x: x.max(), lambda: (randn(*shape),)),
        ("min_all", lambda x: x.min(), lambda: (randn(*shape),)),
        ("argmax_flat", lambda x: x.argmax(), lambda: (randn(*shape),)),
        ("argmin_flat_keepdim", lambda x: x.argmin(keepdim=True), lambda: (randn(*shape),)),
        ("any_all", lambda x: (x > 2).any(), lambda: (randn(*shape),)),
        ("all_all", lambda x: (x > -3).all(), lambda: (randn(*shape),)),
        ("mean_all", lambda x: x.mean(), lambda: (randn(*shape),)),
        ("mean_two_dims", lambda x: x.mean((0, 2), keepdim=True), lambda: (randn(*shape),)),
        ("var_mean", lambda x: torch.var_mean(x, 1, correction=0), lambda: (randn(*shape),)),
        ("std", lambda x: x.std(-1), lambda: (randn(*shape),)),
        ("logsumexp", lambda x: torch.logsumexp(x, -1), lambda: (randn(*shape),)),
        ("softmax", lambda x: torch.softmax(x, 1), lambda: (randn(*shape),)),
        ("log_softmax", lambda x: torch.log_softmax(x, -1), lambda: (randn(*shape),)),
        ("norm", lambda x: torch.linalg.vector_norm(x, dim=-1), lambda: (randn(*shape),)),
    ]
    return cases


VIEWS: list[Case] = [
    ("view", lambda x: x.view(6, 4) * 2, lambda: (randn(2, 3, 4),)),
    ("view_infer", lambda x: x.view(-1, 2) + 1, lambda: (randn(2, 3, 4),)),
    ("reshape_of_transpose", lambda x: x.transpose(0, 2).reshape(4, 6) + 1, lambda: (randn(2, 3, 4),)),
    ("permute", lambda x: x.permute(2, 0, 1) + 1, lambda: (randn(2, 3, 4),)),
    ("permute_negative", lambda x: x.permute(-1, -3, -2) * 3, lambda: (randn(2, 3, 4),)),
    ("transpose", lambda x: x.transpose(-1, 0) + 1, lambda: (randn(2, 3, 4),)),
    ("t", lambda x: x.t() + 1, lambda: (randn(3, 4),)),
    ("expand", lambda x: x.expand(2, 3, 4) + 1, lambda: (randn(3, 1),)),
    ("expand_minus_one", lambda x: x.expand(5, -1, 4) * 2, lambda: (randn(3, 1),)),
    ("slice", lambda x: x[:, 1:3] + 1, lambda: (randn(3, 5),)),
    ("slice_negative", lambda x: x[-2:, :-1] + 1, lambda: (randn(3, 5),)),
    ("slice_step", lambda x: x[:, ::2] + 1, lambda: (randn(3, 5),)),
    ("slice_clamped_end", lambda x: x[:, 2:100] + 1, lambda: (randn(3, 5),)),
    ("slice_start_past_end", lambda x: x[:, -100:2] + 1, lambda: (randn(3, 5),)),
    ("narrow", lambda x: x.narrow(1, 1, 2) * 2, lambda: (randn(3, 5),)),
    ("select", lambda x: x[1] + 1, lambda: (randn(3, 5),)),
    ("select_negative", lambda x: x[:, -1] + 1, lambda: (randn(3, 5),)),
    ("squeeze", lambda x: x.squeeze() + 1, lambda: (randn(3, 1, 5, 1),)),
    ("squeeze_dim", lambda x: x.squeeze(1) + 1, lambda: (randn(3, 1, 5, 1),)),
    ("squeeze_non_unit_dim", lambda x: x.squeeze(0) + 1, lambda: (randn(3, 1, 5),)),
    ("unsqueeze", lambda x: x.unsqueeze(-1) + x.unsqueeze(0).transpose(0, 2), lambda: (randn(3, 3),)),
    ("split", lambda x: [t * 2 for t in x.split(2, dim=1)], lambda: (randn(3, 5),)),
    ("chunk", lambda x: [t + 1 for t in x.chunk(3, dim=0)], lambda: (randn(6, 2),)),
    ("unbind", lambda x: [t + 1 for t in x.unbind(1)], lambda: (randn(2, 3),)),
    ("flatten_unflatten", lambda x: x.flatten(1).unflatten(1, (4, 3)) + 1, lambda: (randn(2, 3, 4),)),
    ("views_combined", lambda x: x.transpose(0, 1)[1:, ::2].unsqueeze(1).expand(-1, 4, -1, -1) * 2, lambda: (randn(3, 4, 5),)),
    ("as_strided", lambda x: torch.as_strided(x + 1, (3, 2), (1, 3), 1) * 2, lambda: (randn(3, 4),)),
    ("diagonal_view_of_contiguous", lambda x: (x + 1).diagonal() * 2, lambda: (randn(4, 4),)),
    ("repeat", lambda x: x.repeat(2, 3) + 1, lambda: (randn(2, 3),)),
    ("stack", lambda x, y: torch.stack([x, y], 1) * 2, lambda: (randn(2, 3), randn(2, 3))),
    ("tril", lambda x: x.tril() + 1, lambda: (randn(4, 4),)),
    ("triu", lambda x: x.triu(1) + 1, lambda: (randn(4, 4),)),
]

DATA_MOVEMENT: list[Case] = [
    ("cat", lambda x, y: torch.cat([x, y], 0) * 2, lambda: (randn(2, 3), randn(4, 3))),
    ("cat_negative_dim_mixed_dtypes", lambda x, y: torch.cat([x, y.long()], -1), lambda: (randn(2, 3), ints(2, 2))),
    ("cat_three", lambda x: torch.cat([x, x * 2, x + 1], 1), lambda: (randn(2, 3),)),
    ("pad_constant", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5) * 2, lambda: (randn(2, 3),)),
    ("pad_crop", lambda x: F.pad(x, (-1, 1)) * 2, lambda: (randn(2, 3),)),
    ("pad_reflect", lambda x: F.pad(x, (2, 1), mode="reflect") + 1, lambda: (randn(2, 3, 5),)),
    ("pad_replicate", lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate") + 1, lambda: (randn(1, 2, 3, 4),)),
    ("gather", lambda x, i: torch.gather(x, 1, i) * 2, lambda: (randn(3, 5), torch.randint(0, 5, (3, 4)))),
    ("gather_dim0", lambda x, i: torch.gather(x, 0, i) + 1, lambda: (randn(3, 5), torch.randint(0, 3, (2, 5)))),
    ("index_select", lambda x, i: torch.index_select(x, 1, i) + 1, lambda: (randn(3, 5), torch.randint(0, 5, (4,)))),
    ("index_tensor", lambda x, i: x[i] + 1, lambda: (randn(6, 3), torch.randint(0, 6, (2, 4)))),
    ("index_with_none", lambda x, i: x[:, i] + 1, lambda: (randn(3, 6, 2), torch.randint(0, 6, (4,)))),
    ("index_negative_entries", lambda x, i: x[i - 3] + 1, lambda: (randn(6, 3), torch.randint(0, 6, (4,)))),
    ("index_two_tensors", lambda x, i, j: x[i, :, j] * 2, lambda: (randn(4, 3, 5), torch.randint(0, 4, (2,)), torch.randint(0, 5, (2,)))),
    ("embedding", lambda w, i: F.embedding(i, w) * 2, lambda: (randn(10, 4), torch.randint(0, 10, (2, 3)))),
    ("scatter_add", lambda x, i, s: x.scatter_add(0, i, s), lambda: (randn(3, 4), torch.randint(0, 3, (2, 4)), randn(2, 4))),
    ("index_put", lambda x, i, v: x.index_put((i,), v), lambda: (randn(5, 3), torch.tensor([0, 3]), randn(2, 3))),
    ("index_put_accumulate", lambda x, i, v: x.index_put((i,), v, accumulate=True), lambda: (randn(5, 3), torch.tensor([1, 1, 4]), randn(3, 3))),
    ("index_copy_via_setitem", lambda x, v: _set_rows(x, v), lambda: (randn(5, 3), randn(3))),
    ("one_hot", lambda i: F.one_hot(i, 5) * 2, lambda: (torch.randint(0, 5, (4,)),)),
    ("flip", lambda x: torch.flip(x, (0, -1)) * 2, lambda: (randn(3, 4, 5),)),
    ("adaptive_avg_pool", lambda x: F.adaptive_avg_pool2d(x, (1, 1)), lambda: (randn(2, 3, 4, 4),)),
    ("adaptive_avg_pool_uneven", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), lambda: (randn(1, 2, 5, 7),)),
    ("slice_scatter", lambda x, y: torch.slice_scatter(x, y, 1, 1, 3), lambda: (randn(3, 5), randn(3, 2))),
]

GENERATORS: list[Case] = [
    ("zeros_like", lambda x: torch.zeros_like(x) + x, lambda: (randn(3, 5),)),
    ("ones", lambda x: torch.ones(3, 5) * x, lambda: (randn(3, 5),)),
    ("full", lambda x: torch.full((3, 5), 2.5) - x, lambda: (randn(3, 5),)),
    ("full_int", lambda x: torch.full((5,), 7) + x, lambda: (ints(3, 5),)),
    ("scalar_tensor", lambda x: x * torch.tensor(3.0), lambda: (randn(3, 5),)),
    ("arange", lambda x: x + torch.arange(5), lambda: (randn(3, 5),)),
    ("arange_start_step", lambda x: x + torch.arange(1, 11, 2), lambda: (randn(3, 5),)),
    ("arange_float", lambda x: x * torch.arange(0.0, 1.0, 0.2), lambda: (randn(3, 5),)),
    ("causal_mask", lambda x: x.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), 0.0), lambda: (randn(4, 4),)),
    ("small_constant", lambda x: x * torch.tensor([1.0, -2.0, 3.0]), lambda: (randn(2, 3),)),
]

LIBRARY: list[Case] = [
    ("mm", torch.mm, lambda: (randn(3, 4), randn(4, 5))),
    ("bmm", torch.bmm, lambda: (randn(2, 3, 4), randn(2, 4, 5))),
    ("matmul_batched", torch.matmul, lambda: (randn(2, 2, 3, 4), randn(4, 5))),
    ("linear", F.linear, lambda: (randn(3, 4), randn(5, 4), randn(5))),
    ("linear_3d", F.linear, lambda: (randn(2, 3, 4), randn(5, 4), randn(5))),
    ("addmm_scaled", lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0), lambda: (randn(5), randn(3, 4), randn(4, 5))),
    ("baddbmm", lambda b, x, y: torch.baddbmm(b, x, y), lambda: (randn(2, 3, 5), randn(2, 3, 4), randn(2, 4, 5))),
    ("conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), lambda: (randn(1, 2, 6, 6), randn(4, 2, 3, 3), randn(4))),
    ("conv1d_groups", lambda x, w: F.conv1d(x, w, groups=2, dilation=2), lambda: (randn(1, 4, 9), randn(4, 2, 3))),
    ("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1), lambda: (randn(1, 2, 4, 4), randn(2, 3, 3, 3))),
    ("sdpa", F.scaled_dot_product_attention, lambda: (randn(1, 2, 4, 8), randn(1, 2, 6, 8), randn(1, 2, 6, 8))),
    ("sdpa_causal_scale", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3), lambda: (randn(2, 4, 8), randn(2, 4, 8), randn(2, 4, 8))),
    ("sdpa_bool_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m > -0.5), lambda: (randn(1, 2, 4, 8), randn(1, 2, 4, 8), randn(1, 2, 4, 8), randn(4, 4))),
    ("sdpa_float_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), lambda: (randn(1, 2, 4, 8), randn(1, 2, 4, 8), randn(1, 2, 4, 8), randn(1, 1, 4, 4))),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), lambda: (randn(3, 4), randn(4), randn(4))),
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), lambda: (randn(2, 4, 3, 3), randn(4), randn(4))),
    ("batch_norm", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b), lambda: (randn(2, 3, 4), randn(3), positive(3), randn(3), randn(3))),
    ("rms_norm", lambda x, w: F.rms_norm(x, (4,), w), lambda: (randn(3, 4), randn(4))),
    ("upsample_nearest", lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), lambda: (randn(1, 2, 3, 3),)),
]


def _set_rows(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[1:4] = v
    return y


ALL_CASES: list[Case] = [
    *UNARY,
    *BINARY,
    *COMPARE,
    *SELECT_AND_CAST,
    *_reduction_cases(),
    *VIEWS,
    *DATA_MOVEMENT,
    *GENERATORS,
    *LIBRARY,
]


@pytest.mark.parametrize("name, fn, make_inputs", ALL_CASES, ids=[c[0] for c in ALL_CASES])
def test_op_matches_eager(name: str, fn: Callable, make_inputs: Callable) -> None:
    torch.manual_seed(0)
    inputs = make_inputs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comparison = compare_with_eager(fn, *inputs)
    assert comparison.result.fallback_ops == []
    for output, expected, error in zip(
        comparison.outputs, comparison.expected, comparison.errors()
    ):
        assert output.dtype == expected.dtype, name
        assert error < TOLERANCE.get(expected.dtype, 1e-5), f"{name}: error {error}"
