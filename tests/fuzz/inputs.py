"""Random inputs of a fuzzed graph: sizes, dtypes and memory layouts.

An input's layout is how it sits in memory: contiguous, `transposed` (its last
two dims swapped in storage), `strided` (every other element of its last dim)
or `expanded` (its first dim broadcast from size 1). Values are seeded, never
all zero, and small enough that float16 sums stay well inside its range.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LAYOUTS = ("contiguous", "transposed", "strided", "expanded")
INPUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool)


@dataclass(frozen=True)
class InputSpec:
    """One input: its name, its shape as size-symbol names, dtype and layout."""

    name: str
    dims: tuple[str, ...]
    dtype: torch.dtype
    layout: str = "contiguous"

    def shape(self, sizes: dict[str, int]) -> tuple[int, ...]:
        return tuple(sizes[d] for d in self.dims)


def storage_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """The shape of the contiguous tensor that `layout`'s view is taken from."""
    if layout == "transposed" and len(shape) >= 2:
        return shape[:-2] + (shape[-1], shape[-2])
    if layout == "strided" and len(shape) >= 1:
        return shape[:-1] + (2 * shape[-1],)
    if layout == "expanded" and len(shape) >= 1:
        return (1,) + shape[1:]
    return shape


def random_values(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    """Seeded values of `dtype`: normal floats, small integers, random bools; never all zero."""
    if dtype == torch.bool:
        values = torch.rand(shape, generator=generator) < 0.5
    elif dtype.is_floating_point:
        values = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    else:
        values = torch.randint(-4, 5, shape, generator=generator, dtype=dtype)
    if values.numel() > 0 and not values.any():
        values.view(-1)[0] = 1
    return values


def make_input(shape: tuple[int, ...], dtype: torch.dtype, layout: str, seed: int) -> torch.Tensor:
    """A seeded input of `shape` and `dtype`, laid out in memory as `layout` says."""
    generator = torch.Generator().manual_seed(seed)
    shape = tuple(shape)
    base = random_values(storage_shape(shape, layout), dtype, generator)
    if layout == "transposed" and len(shape) >= 2:
        return base.transpose(-1, -2)
    if layout == "strided" and len(shape) >= 1:
        return base[..., 1::2]
    if layout == "expanded" and len(shape) >= 1:
        return base.expand(shape)
    return base


def make_inputs(specs: list[InputSpec], sizes: dict[str, int], seed: int) -> list[torch.Tensor]:
    """Every input of a graph at `sizes`, each seeded from `seed` and its name."""
    return [make_input(spec.shape(sizes), spec.dtype, spec.layout, input_seed(seed, spec)) for spec in specs]


def input_seed(seed: int, spec: InputSpec) -> int:
    """The seed of one input's values: the graph's seed and the input's number
    (`x2` is 2), so an input keeps its values when others are removed."""
    return seed * 131 + int(spec.name.lstrip("x"))
