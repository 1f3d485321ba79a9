"""
Convolutions that are matrix products, and the views that make them one.

A convolution with a window of one element, unit strides, no padding, one
group (a ResNet bottleneck's, MobileNet's and EfficientNet's
expansions and projections, ConvNeXt's MLP written as convolutions)
computes `y[n, o, *s] = sum_c w[o, c] * x[n, c, *s]`: a matrix product over
the channels. Which product depends on the memory of its input and result:

- `rows`: where the batch and spatial dimensions of both merge into one
  (channels-last memory, or NCHW images of one pixel), the product is
  `[N * S, C] @ [C, O] -> [N * S, O]` on views of the same memory, one call
  (with a bias, one `addmm`);
- `batched`: where only the spatial dimensions merge (NCHW memory), it is
  `[N, O, C] @ [N, C, S] -> [N, O, S]`, the weight viewed with a batch
  stride of 0, one batched call (not with a bias: no library call adds one
  along the rows of a batched product);
- otherwise there is no such view, and the convolution stays one.

`product_views` works on layouts given as sizes and strides, sympy or
integers, so that the compiler (on buffer types) and the timing of the two
forms (on torch tensors) decide the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import sympy

from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import sizes_equal

Expr = sympy.Expr | int


@dataclass(frozen=True)
class Layout:
    """Sizes and strides of one operand, in elements."""

    sizes: tuple[Expr, ...]
    strides: tuple[Expr, ...]


@dataclass(frozen=True)
class ProductViews:
    """The product a pointwise convolution is: `kind` (`rows`: `mm`,
    `batched`: `bmm`) and the views of its input, weight and result that it
    multiplies, each over the same memory as the convolution's operand (the
    same offset)."""

    kind: Literal["rows", "batched"]
    input: Layout
    weight: Layout
    result: Layout


def is_pointwise_convolution(op: pt.ConvolutionOp) -> bool:
    """Whether `op` is a matrix product over channels: a window of one
    element, unit strides, no padding, one group, not transposed, and at
    least one spatial dimension."""
    return is_pointwise_geometry(pt.convolution_geometry(op), pt.tensor_type(op.weight).sizes)


def is_pointwise_geometry(geometry: Sequence, weight_sizes: Sequence[Expr]) -> bool:
    """`is_pointwise_convolution` of aten's geometry arguments (stride,
    padding, dilation, transposed, output padding, groups) and the weight's
    sizes."""
    stride, padding, _, transposed, _, groups = geometry
    return (
        len(stride) > 0
        and not transposed
        and groups == 1
        and all(s == 1 for s in stride)
        and all(p == 0 for p in padding)
        and all(size == 1 for size in weight_sizes[2:])
    )


def _merged(sizes: Sequence[Expr], strides: Sequence[Expr]) -> tuple[Expr, Expr] | None:
    """The size and stride of dimensions `sizes` (outermost first) seen as
    one, or None where their strides do not nest. A dimension of size 1 has no
    say."""
    kept = [(size, stride) for size, stride in zip(sizes, strides) if size != 1]
    total = sympy.Mul(*[sympy.sympify(s) for s in sizes])
    if not kept:
        return total, 1
    for (_, outer), (inner_size, inner) in zip(kept, kept[1:]):
        if not sizes_equal(sympy.sympify(outer), sympy.sympify(inner) * inner_size):
            return None
    return total, kept[-1][1]


def product_views(source: Layout, weight: Layout, result: Layout, biased: bool = False) -> ProductViews | None:
    """The product that the pointwise convolution of `source` (`[N, C,
    *spatial]`) by `weight` (`[O, C, 1, ...]`) into `result` (`[N, O,
    *spatial]`) is, in these layouts: `rows` where batch and spatial
    dimensions merge in both, else `batched` where the spatial ones do and
    there is no bias (`biased`); None where neither."""
    batch, channels, *spatial = source.sizes
    outputs = result.sizes[1]
    weight_o, weight_c = weight.strides[0], weight.strides[1]
    rows_in = _merged([batch, *spatial], [source.strides[0], *source.strides[2:]])
    rows_out = _merged([batch, *spatial], [result.strides[0], *result.strides[2:]])
    if rows_in is not None and rows_out is not None:
        rows = rows_in[0]
        return ProductViews(
            "rows",
            Layout((rows, channels), (rows_in[1], source.strides[1])),
            Layout((channels, outputs), (weight_c, weight_o)),
            Layout((rows, outputs), (rows_out[1], result.strides[1])),
        )
    if biased:
        return None
    pixels_in = _merged(spatial, source.strides[2:])
    pixels_out = _merged(spatial, result.strides[2:])
    if pixels_in is None or pixels_out is None:
        return None
    pixels = pixels_in[0]
    return ProductViews(
        "batched",
        Layout((batch, channels, pixels), (source.strides[0], source.strides[1], pixels_in[1])),
        Layout((batch, outputs, channels), (0, weight_o, weight_c)),
        Layout((batch, outputs, pixels), (result.strides[0], result.strides[1], pixels_out[1])),
    )
