"""
Complex values while `complex_as_real` traces a graph again: `Pair`, a
complex tensor held as real tensors, and the helpers its rules share.

A `Pair` has two forms, each made from the other when first asked for: the
packed form, the real tensor of shape S + [2] that the layout stands for
(`permalloy.complex_layout`), which views, reductions and library calls
take, and the parts, the real and the imaginary tensor of shape S, which
arithmetic takes; so that `x * y + z` computes on parts without packing
between its ops, and a view of a product packs it once.

Operands of arithmetic rules are `Parts`: (real, imaginary), each a real
tensor or a Python number, made of a `Pair`, a real tensor (imaginary part
0) or a number (complex or real), in the dtype the op computes in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true

Number = bool | int | float | complex
Part = torch.Tensor | float | torch.SymInt | torch.SymFloat
"""A real or imaginary part: a real tensor, or a number (a Python number, a
size) for a part that is the same everywhere (the zero imaginary part of a
real operand)."""


class ComplexRuleError(Exception):
    """A rule that does not take its node's arguments (a complex exponent, a
    copy to another device): the graph keeps its fallback behaviour."""


class Pair:
    """A complex tensor as real tensors: packed, parts, or both."""

    def __init__(self, packed: torch.Tensor | None = None, parts: tuple[torch.Tensor, torch.Tensor] | None = None):
        assert packed is not None or parts is not None
        self._packed = packed
        self._parts = parts

    @staticmethod
    def of_parts(real: torch.Tensor, imag: torch.Tensor) -> Pair:
        return Pair(parts=(real, imag))

    def packed(self) -> torch.Tensor:
        """The real tensor of shape S + [2]."""
        if self._packed is None:
            self._packed = torch.stack(self._parts, dim=-1)
        return self._packed

    def parts(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The real and the imaginary part, of shape S."""
        if self._parts is None:
            last = self._packed.dim() - 1
            self._parts = (self._packed.select(last, 0), self._packed.select(last, 1))
        return self._parts

    @property
    def rank(self) -> int:
        """The rank of the complex tensor (its pair's less one)."""
        return self._packed.dim() - 1 if self._packed is not None else self._parts[0].dim()

    @property
    def real_dtype(self) -> torch.dtype:
        return (self._packed if self._packed is not None else self._parts[0]).dtype

    def shape(self) -> tuple:
        """The complex tensor's shape."""
        return tuple(self._packed.shape[:-1]) if self._packed is not None else tuple(self._parts[0].shape)

    def to(self, dtype: torch.dtype) -> Pair:
        """The pair in real dtype `dtype`."""
        if dtype == self.real_dtype:
            return self
        if self._parts is not None:
            return Pair.of_parts(*(p.to(dtype) for p in self._parts))
        return Pair(self._packed.to(dtype))


@dataclass(frozen=True)
class Result:
    """What an op's result is: its real dtype (the pair's, for a complex
    result) and device, read off the node's example value."""

    dtype: torch.dtype
    device: torch.device

    @staticmethod
    def of(example: torch.Tensor) -> Result:
        dtype = example.dtype.to_real() if example.is_complex() else example.dtype
        return Result(dtype, example.device)


Parts = tuple[Part, Part]


def parts_of(value: Any, dtype: torch.dtype) -> Parts:
    """An operand's (real, imaginary) in real dtype `dtype`."""
    if isinstance(value, Pair):
        real, imag = value.to(dtype).parts()
        return real, imag
    if isinstance(value, torch.Tensor):
        return (value if value.dtype == dtype else value.to(dtype)), 0.0
    if isinstance(value, complex):
        return value.real, value.imag
    if isinstance(value, bool | int | float):
        return float(value), 0.0
    if isinstance(value, torch.SymInt | torch.SymFloat):
        return value, 0.0
    raise ComplexRuleError(f"an operand of type {type(value).__name__}")


def real_of(value: Any, dtype: torch.dtype) -> Part:
    """A real operand (a tensor or a number) in dtype `dtype`."""
    if isinstance(value, torch.Tensor):
        return value if value.dtype == dtype else value.to(dtype)
    if isinstance(value, complex):
        raise ComplexRuleError("a complex number where the op takes a real one")
    return float(value)


def same_shape(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are known to have one shape (without adding a
    guard on symbolic sizes)."""
    return a.dim() == b.dim() and all(
        statically_known_true(x == y) for x, y in zip(a.shape, b.shape)
    )


def make_pair(real: Part, imag: Part, result: Result) -> Pair:
    """A `Pair` of two parts, broadcast to one shape, in the result's dtype;
    a number part is filled in."""
    if not isinstance(real, torch.Tensor) and not isinstance(imag, torch.Tensor):
        real = torch.full((), real, dtype=result.dtype, device=result.device)
    if not isinstance(real, torch.Tensor):
        real = torch.full_like(imag, real, dtype=result.dtype)
    if not isinstance(imag, torch.Tensor):
        imag = torch.full_like(real, imag, dtype=result.dtype)
    if not same_shape(real, imag):
        real, imag = torch.broadcast_tensors(real, imag)
    if real.dtype != result.dtype:
        real = real.to(result.dtype)
    if imag.dtype != result.dtype:
        imag = imag.to(result.dtype)
    return Pair.of_parts(real, imag)


def constant_pair(value: Number, result: Result) -> torch.Tensor:
    """A number as a packed 0-d complex tensor (shape [2])."""
    number = complex(value)
    return torch.stack(
        [
            torch.full((), number.real, dtype=result.dtype, device=result.device),
            torch.full((), number.imag, dtype=result.dtype, device=result.device),
        ]
    )


def packed_of(value: Any, result: Result) -> torch.Tensor:
    """An operand as a packed tensor in the result's dtype: a pair, a real
    tensor (imaginary part 0) or a number (a [2] tensor)."""
    if isinstance(value, Pair):
        return value.to(result.dtype).packed()
    if isinstance(value, torch.Tensor):
        return make_pair(value.to(result.dtype), 0.0, result).packed()
    return constant_pair(value, result)


def normalized_dim(dim: int, rank: int) -> int:
    """A dimension of a rank-`rank` complex tensor, counted from the front
    (a negative one counts from the complex tensor's end, before the pair's
    trailing dimension)."""
    if rank == 0:
        if dim not in (0, -1):
            raise ComplexRuleError(f"dimension {dim} of a 0-d tensor")
        return 0
    if not -rank <= dim < rank:
        raise ComplexRuleError(f"dimension {dim} of a {rank}-d tensor")
    return dim % rank


def normalized_dims(dims: Any, rank: int) -> list[int]:
    """Dimensions of a complex tensor counted from the front; None or an
    empty list (every dimension, for reductions) is every dimension."""
    if dims is None or (isinstance(dims, list | tuple) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return [normalized_dim(d, rank) for d in dims]


@dataclass
class Call:
    """One node being rewritten: its arguments by their schema names (with
    `Pair`s for complex tensors), and what its result is."""

    node: Any
    """The FX node."""
    arguments: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.arguments[name]

    @property
    def example(self) -> Any:
        """The node's example value (its first tensor for several results)."""
        value = self.node.meta["val"]
        if isinstance(value, list | tuple):
            return next(v for v in value if isinstance(v, torch.Tensor))
        return value

    @property
    def result(self) -> Result:
        return Result.of(self.example)

    @staticmethod
    def bind(node: Any, args: tuple, kwargs: dict) -> Call:
        """`args` and `kwargs` (the values of the node's arguments) by the
        names of its op's schema, defaults filled in."""
        arguments: dict[str, Any] = {}
        for position, argument in enumerate(node.target._schema.arguments):
            if position < len(args) and not argument.kwarg_only:
                arguments[argument.name] = args[position]
            elif argument.name in kwargs:
                arguments[argument.name] = kwargs[argument.name]
            elif argument.has_default_value():
                arguments[argument.name] = argument.default_value
        return Call(node, arguments)
