"""
Matrix products as contractions: `ptensor.mm` and `ptensor.bmm` lowered to
the `loop.reduce` form that a target with a matrix-product template tiles
(`analysis.contraction`), so that fusion takes their prologues and epilogues
into the product's kernel.

A half-precision product (f16, bf16) accumulates in float32, as the library
does, and rounds once: a float32 `loop.reduce sum` of the products of its
operands' elements and a `loop.pointwise` casting it to the result's type,
which fusion inlines into the product's readers (the rounding eager does
between the product and its epilogue). Float32 products are contractions
only when asked (`matmul-float32`): without TF32 a template multiplies
float32 tiles with FMAs, which never beats the library, whose product the
compiled graph then calls directly. Other element types (f64) and
matrix-vector products (one row or one column) stay library calls. A product read
only through a reshape that splits its leading dimension (a linear layer on
`[B, T, C]` inputs computes `[B * T, N]` and reads it as `[B, T, N]`) is a
contraction over the reshaped domain, so that its epilogue, written over
`[B, T, N]`, has its shape; several leading row dimensions are rows of the
product as one (`analysis.contraction`).

    %c = ptensor.mm %a, %b : !ptensor.tensor<[32, 64], f32>, !ptensor.tensor<[64, 16], f32> -> !ptensor.tensor<[32, 16], f32>

becomes

    %c = loop.reduce sum ins(%x = %a, %y = %b) over [64] -> !ptensor.tensor<[32, 16], f32> {
      %u = loop.load %x[d0, r0] : f32
      %v = loop.load %y[r0, d1] : f32
      %p = arith.mulf %u, %v : f32
      loop.yield %p : f32
    }
"""

from __future__ import annotations

from collections.abc import Callable

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Operation

from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import sizes_equal
from permalloy.lowering.loop_builder import LoopBuilder

HALF_ELEMENTS = ("f16", "bf16")
"""The element types whose products become contractions; float32 ones too
when asked (`matmul-float32`)."""


def stays_library(op: Operation, float32: bool = False) -> bool:
    """Whether a product stays a library call: its element type has no
    template, or it has one row or one column (a matrix-vector product, which
    the library runs as one, and which is no contraction once the size-1
    dimension's index is 0)."""
    result_type = op.results[0].type
    assert isinstance(result_type, pt.TensorType)
    vector = any(size == 1 for size in result_type.sizes[-2:])
    elements = (*HALF_ELEMENTS, "f32") if float32 else HALF_ELEMENTS
    return vector or result_type.element_type.name not in elements


def _domain(op: pt.MatmulOp | pt.BatchMatmulOp) -> list[sympy.Expr]:
    """The contraction's shape: the product's, or, when its one reader reshapes
    it by splitting its leading dimension (a linear layer's `[B * T, N]`
    product read as `[B, T, N]`, a batched product's `[B * H, T, T]` read as
    `[B, H, T, T]`), the reader's, so that epilogues over that shape join it."""
    result_type = op.result.type
    assert isinstance(result_type, pt.TensorType)
    sizes = list(result_type.sizes)
    uses = list(op.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, pt.ReshapeOp):
        return sizes
    view_type = uses[0].operation.result.type
    assert isinstance(view_type, pt.TensorType)
    kept = sizes[1:]
    target = list(view_type.sizes)
    if len(target) <= len(sizes) or not all(sizes_equal(a, b) for a, b in zip(target[-len(kept):], kept)):
        return sizes
    split = target[: len(target) - len(kept)]
    return target if sizes_equal(sympy.Mul(*split), sizes[0]) else sizes


def lower_matrix_product(op: pt.MatmulOp | pt.BatchMatmulOp) -> list[Operation]:
    """The contraction of `lhs @ rhs` (and its rounding to half precision),
    over its reader's reshape of the result where that splits the leading
    dimension, reshaped back to the product's shape."""
    result_type = op.result.type
    lhs_type = op.lhs.type
    assert isinstance(result_type, pt.TensorType) and isinstance(lhs_type, pt.TensorType)
    domain = _domain(op)
    split = len(domain) - result_type.rank + 1
    accumulated = pt.TensorType(domain, Float32Type())
    builder = LoopBuilder(accumulated, [lhs_type.sizes[-1]])
    indices = list(builder.parallel_indices)
    leading = sympy.Integer(0)
    for index, size in zip(indices[:split], domain[:split]):
        leading = leading * size + index
    *batch, rows, columns = [leading, *indices[split:]]
    (position,) = builder.reduction_indices
    left = builder.read(op.lhs, [*batch, rows, position])
    right = builder.read(op.rhs, [*batch, position, columns])
    product = builder.body.add(arith.MulfOp(left, right))
    ops: list[Operation] = [builder.reduce(pt.ReduceKind.SUM, product, Float32Type())]
    if result_type.element_type != Float32Type():
        rounding = LoopBuilder(pt.TensorType(domain, result_type.element_type))
        value = rounding.read(ops[-1].results[0], rounding.parallel_indices)
        ops.append(rounding.pointwise(value))
    if split > 1:
        ops.append(pt.ReshapeOp(ops[-1].results[0], result_type))
    return ops


CONTRACTION_LOWERINGS: dict[type[Operation], Callable[[Operation], list[Operation]]] = {
    pt.MatmulOp: lower_matrix_product,
    pt.BatchMatmulOp: lower_matrix_product,
}  # type: ignore[dict-item]
"""The library products lowered as contractions where a target tiles them."""
