"""
The real-pair layout of complex tensors.

permalloy's IR has no complex element type: a complex tensor of shape S is a
real tensor of shape S + [2] (real part, imaginary part) of the matching real
dtype, torch's `view_as_real` of it. This module holds the torch-level
conversions between the two, which are views and copy nothing for the
layouts torch can view, and the FFTs on the pair layout, which the
`complex_as_real` rewrite's custom ops, the `ptensor.fft` library op's extern
call and its reference semantics share.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

aten = torch.ops.aten

COMPLEX_DTYPES = (torch.complex64, torch.complex128)
"""The complex dtypes the pair layout represents (not complex32, whose
float16 arithmetic torch does in its own precision)."""


def is_complex_tensor(value: object) -> bool:
    """Whether `value` is a complex tensor (fake or real)."""
    return isinstance(value, torch.Tensor) and value.is_complex()


def as_real(value: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its real pair (a view when it has no lazy
    conjugation or negation bit, which are resolved first)."""
    return torch.view_as_real(value.resolve_conj().resolve_neg())


def viewable_as_complex(pair: torch.Tensor) -> bool:
    """Whether torch can view a real pair tensor as complex: the pair
    dimension contiguous, every other stride and the offset even."""
    strides = pair.stride()
    return (
        strides[-1] == 1
        and all(stride % 2 == 0 for stride in strides[:-1])
        and pair.storage_offset() % 2 == 0
    )


def as_complex(pair: torch.Tensor) -> torch.Tensor:
    """A real pair tensor as complex: a view when its layout allows one
    (`viewable_as_complex`), else a view of a contiguous copy."""
    if not viewable_as_complex(pair):
        pair = pair.clone(memory_format=torch.contiguous_format)
    return torch.view_as_complex(pair)


def fft_r2c_as_real(
    source: torch.Tensor, dims: Sequence[int], normalization: int, onesided: bool
) -> torch.Tensor:
    """torch's `_fft_r2c` of a real tensor, giving its result as a pair."""
    return torch.view_as_real(aten._fft_r2c.default(source, list(dims), normalization, onesided))


def fft_c2c_as_real(
    pair: torch.Tensor, dims: Sequence[int], normalization: int, forward: bool
) -> torch.Tensor:
    """torch's `_fft_c2c` of a complex tensor given and returned as pairs."""
    return torch.view_as_real(
        aten._fft_c2c.default(as_complex(pair), list(dims), normalization, forward)
    )


def fft_c2r_as_real(
    pair: torch.Tensor, dims: Sequence[int], normalization: int, last_dim_size: int
) -> torch.Tensor:
    """torch's `_fft_c2r` of a complex tensor given as a pair (a real result)."""
    return aten._fft_c2r.default(as_complex(pair), list(dims), normalization, last_dim_size)
