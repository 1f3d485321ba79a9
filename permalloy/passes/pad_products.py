"""The `pad-products` pass."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float16Type, ModuleOp
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from permalloy.dialects import ptensor as pt

PADDED_ELEMENT_TYPES = (Float16Type, BFloat16Type)
"""Element types whose library products slow down on sizes that are not
multiples of the padding: the tensor-core kernels of cuBLAS need their
contracted and column sizes aligned to 16 bytes."""

PRODUCT_OPS = (pt.MatmulOp, pt.BatchMatmulOp, pt.AddmmOp)


def padding(size: sympy.Expr, multiple: int) -> int:
    """How many elements make a static `size` a multiple of `multiple` (0 for a
    symbolic size, or a size of 1, which is a matrix-vector product)."""
    if not size.is_Integer or int(size) <= 1:
        return 0
    return -int(size) % multiple


def arithmetic_intensity(m: int, k: int, n: int) -> float:
    """Multiply-adds per element moved by an `[m, k] @ [k, n]` product:
    where it is high the product is bound by arithmetic, which the library's
    unaligned kernels do several times slower; where it is low, by memory,
    which padding only adds to. A product of no elements has none."""
    moved = m * k + k * n + m * n
    return m * k * n / moved if moved else 0.0


def padded_operand(value: SSAValue, amounts: Sequence[int], rewriter: PatternRewriter) -> SSAValue:
    """`value` with `amounts[d]` zeros appended along each dimension `d`. A
    permuted tensor (a linear layer's transposed weight) is padded before its
    permutation, so that the pad's kernel walks memory in order and the
    product reads the padded tensor transposed, as it read the original."""
    if isinstance(value, OpResult) and isinstance(value.op, pt.PermuteOp):
        permute = value.op
        source_amounts = [0] * len(amounts)
        for position, dim in enumerate(permute.dims.data):
            source_amounts[dim] = amounts[position]
        source = padded_operand(permute.input, source_amounts, rewriter)
        result_type = _grown(pt.tensor_type(value), amounts)
        return _inserted(pt.PermuteOp(source, permute.dims.data, result_type), rewriter)
    value_type = pt.tensor_type(value)
    pad = pt.PadOp(value, pt.PadMode.CONSTANT, [0] * len(amounts), list(amounts), 0.0, _grown(value_type, amounts))
    return _inserted(pad, rewriter)


def _grown(tensor: pt.TensorType, amounts: Sequence[int]) -> pt.TensorType:
    return pt.TensorType([s + a for s, a in zip(tensor.sizes, amounts)], tensor.element_type)


def _inserted(op: Operation, rewriter: PatternRewriter) -> SSAValue:
    rewriter.insert(op)
    return op.results[0]


@dataclass(frozen=True)
class PadProduct(RewritePattern):
    """A half-precision library product (`mm`, `bmm`, `addmm`) bound by
    arithmetic, whose contracted size or column count is not a multiple of
    `multiple`, multiplies operands padded with zeros to multiples of it; its
    result is the padded product's leading columns, a view. Rows are not
    padded: the library's speed does not depend on their count. The zeros
    add nothing to the product (padded rows of one operand meet padded
    columns of the other), so the result is the same."""

    multiple: int
    min_intensity: float

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, PRODUCT_OPS):
            return
        result_type = pt.tensor_type(op.result)
        if not isinstance(result_type.element_type, PADDED_ELEMENT_TYPES):
            return
        lhs, rhs = pt.tensor_type(op.lhs), pt.tensor_type(op.rhs)
        m, k, n = lhs.sizes[-2], lhs.sizes[-1], rhs.sizes[-1]
        if not (m.is_Integer and k.is_Integer and n.is_Integer):
            return
        pad_k, pad_n = padding(k, self.multiple), padding(n, self.multiple)
        if not (pad_k or pad_n) or arithmetic_intensity(int(m), int(k), int(n)) < self.min_intensity:
            return
        lead = [0] * (lhs.rank - 2)
        new_lhs = padded_operand(op.lhs, [*lead, 0, pad_k], rewriter) if pad_k else op.lhs
        new_rhs = padded_operand(op.rhs, [*lead, pad_k, pad_n], rewriter)
        padded_type = _grown(result_type, [*lead, 0, pad_n])
        if isinstance(op, pt.AddmmOp):
            bias_type = pt.tensor_type(op.bias)
            bias = op.bias
            if pad_n and bias_type.rank and pt.sizes_equal(bias_type.sizes[-1], n):
                bias = padded_operand(op.bias, [0] * (bias_type.rank - 1) + [pad_n], rewriter)
            beta = op.beta.value.data if op.beta is not None else 1.0
            alpha = op.alpha.value.data if op.alpha is not None else 1.0
            product: Operation = pt.AddmmOp(bias, new_lhs, new_rhs, padded_type, beta, alpha)
        else:
            product = type(op)(new_lhs, new_rhs, padded_type)
        result = _inserted(product, rewriter)
        if pad_n:
            columns = pt.SliceOp(result, result_type.rank - 1, 0, n, 1, result_type)
            result = _inserted(columns, rewriter)
        rewriter.replace(op, [], [result])


@dataclass(frozen=True)
class PadProductsPass(ModulePass):
    """
    Pads the operands of half-precision matrix products whose contracted size
    or column count is not a multiple of `multiple` (8 elements, 16 bytes)
    with zeros, where the product is bound by arithmetic (at least
    `min-intensity` multiply-adds per element moved), and views the padded
    product's leading columns as the result.

    cuBLAS runs such products with kernels several times slower than those
    for aligned sizes: on an H100, a language model's head (`[4096, 768]` by
    `[768, 50257]`, bfloat16) takes 3.3 ms as it is and 0.47 ms padded to
    50,264 columns, plus 0.09 ms to pad the weight. A transposed operand is
    padded before its transposition (`padded_operand`), and a pad of a
    computed operand is a kernel that fusion merges with the one computing
    it. Readers of the result read the view (a kernel reads it where it
    reads any tensor); a result the function returns is copied into the
    dense memory eager returns. Products of few multiply-adds per
    element (attention's over 197 tokens) are left alone: there the pad's
    copies cost more than the faster product saves.

    Before:
    ```
    %t = ptensor.permute %w [1, 0] : !ptensor.tensor<[50257, 768], bf16> -> !ptensor.tensor<[768, 50257], bf16>
    %y = ptensor.mm %x, %t : !ptensor.tensor<[4096, 768], bf16>, !ptensor.tensor<[768, 50257], bf16> -> !ptensor.tensor<[4096, 50257], bf16>
    ```
    After:
    ```
    %p = ptensor.pad %w constant 0.0 low [0, 0] high [7, 0] : !ptensor.tensor<[50257, 768], bf16> -> !ptensor.tensor<[50264, 768], bf16>
    %t = ptensor.permute %p [1, 0] : !ptensor.tensor<[50264, 768], bf16> -> !ptensor.tensor<[768, 50264], bf16>
    %z = ptensor.mm %x, %t : !ptensor.tensor<[4096, 768], bf16>, !ptensor.tensor<[768, 50264], bf16> -> !ptensor.tensor<[4096, 50264], bf16>
    %y = ptensor.slice %z dim 1 start 0 end 50257 step 1 : !ptensor.tensor<[4096, 50264], bf16> -> !ptensor.tensor<[4096, 50257], bf16>
    ```
    """

    name = "pad-products"

    multiple: int = 8
    min_intensity: int = 128

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = PadProduct(self.multiple, self.min_intensity)
        PatternRewriteWalker(GreedyRewritePatternApplier([pattern]), apply_recursively=False).rewrite_module(op)
