"""
FFTs on the pair layout: torch's `_fft_r2c`, `_fft_c2c` and `_fft_c2r` as
custom ops of the `permalloy` namespace that take and give complex tensors
as real pairs (`permalloy.fft_r2c`, `fft_c2c`, `fft_c2r`), and
`complex_as_real`'s rules writing the ATen ops as them. The importer makes
each a `ptensor.fft` library op, whose extern call views its pair as complex,
runs torch's FFT and views the result as a pair again
(`permalloy.complex_layout`).

Their dimensions are those of the complex tensor (of the real input, for
r2c), counted from the front.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from permalloy.complex_layout import fft_c2c_as_real, fft_c2r_as_real, fft_r2c_as_real
from permalloy.lowering.complex_values import Call, Pair, normalized_dim

aten = torch.ops.aten


@torch.library.custom_op("permalloy::fft_r2c", mutates_args=())
def fft_r2c(source: torch.Tensor, dims: list[int], normalization: int, onesided: bool) -> torch.Tensor:
    """torch's `_fft_r2c`, its complex result as a pair."""
    return fft_r2c_as_real(source, dims, normalization, onesided).clone()


@torch.library.custom_op("permalloy::fft_c2c", mutates_args=())
def fft_c2c(pair: torch.Tensor, dims: list[int], normalization: int, forward: bool) -> torch.Tensor:
    """torch's `_fft_c2c` on pairs."""
    return fft_c2c_as_real(pair, dims, normalization, forward).clone()


@torch.library.custom_op("permalloy::fft_c2r", mutates_args=())
def fft_c2r(pair: torch.Tensor, dims: list[int], normalization: int, last_dim_size: int) -> torch.Tensor:
    """torch's `_fft_c2r` of a pair (a real result)."""
    return fft_c2r_as_real(pair, dims, normalization, last_dim_size)


@fft_r2c.register_fake
def _fft_r2c_fake(source, dims, normalization, onesided):
    return fft_r2c_as_real(source, dims, normalization, onesided).clone()


@fft_c2c.register_fake
def _fft_c2c_fake(pair, dims, normalization, forward):
    return fft_c2c_as_real(pair, dims, normalization, forward).clone()


@fft_c2r.register_fake
def _fft_c2r_fake(pair, dims, normalization, last_dim_size):
    return fft_c2r_as_real(pair, dims, normalization, last_dim_size)


FFT_OPS = (
    torch.ops.permalloy.fft_r2c.default,
    torch.ops.permalloy.fft_c2c.default,
    torch.ops.permalloy.fft_c2r.default,
)
"""The custom ops, as the rewritten graphs call them."""


def _dims(dims: Any, rank: int) -> list[int]:
    return [normalized_dim(d, rank) for d in dims]


def r2c(call: Call) -> Pair:
    source = call["self"]
    dims = _dims(call["dim"], source.dim())
    return Pair(torch.ops.permalloy.fft_r2c(source, dims, call["normalization"], call["onesided"]))


def c2c(call: Call) -> Pair:
    value = call["self"]
    dims = _dims(call["dim"], value.rank)
    return Pair(torch.ops.permalloy.fft_c2c(value.packed(), dims, call["normalization"], call["forward"]))


def c2r(call: Call) -> torch.Tensor:
    value = call["self"]
    dims = _dims(call["dim"], value.rank)
    return torch.ops.permalloy.fft_c2r(value.packed(), dims, call["normalization"], call["last_dim_size"])


FFT_RULES: dict[Any, Callable[[Call], Any]] = {
    aten._fft_r2c.default: r2c,
    aten._fft_c2c.default: c2c,
    aten._fft_c2r.default: c2r,
}
"""The FFT rules, by ATen overload."""
