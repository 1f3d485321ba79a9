"""The `unfuse-bias-add` pass."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, Float64Type, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from permalloy.dialects import ptensor as pt

ELEMENTWISE_OPS = (pt.UnaryOp, pt.BinaryOp, pt.CompareOp, pt.WhereOp, pt.CastOp)
"""Ops that compute each element of their result from the same element of
their operands: a kernel can take a bias add in as its prologue."""

UNFUSED_ELEMENT_TYPES = (Float32Type, Float64Type)
"""Element types whose products are unfused. A half-precision `addmm` adds the
bias to the product before rounding it; unfused, the product rounds first."""


KERNEL_READERS = (*ELEMENTWISE_OPS, pt.ReduceOp)
"""Ops whose kernels can take a bias add in as they load their operand
(a reduction adds it to each element it reads)."""


def feeds_only(value: SSAValue, readers: tuple[type[Operation], ...]) -> bool:
    """Whether every use of `value`, looking through views, is one of
    `readers` (a value the function returns, or that a library op or any
    other op reads, is not)."""
    for use in value.uses:
        user = use.operation
        if isinstance(user, pt.VIEW_OPS):
            if not feeds_only(user.results[0], readers):
                return False
        elif not isinstance(user, readers):
            return False
    return bool(value.uses)


def unfusable(result: SSAValue, readers: tuple[type[Operation], ...] = ELEMENTWISE_OPS) -> bool:
    """Whether a library op's `result` may lose its bias to its readers: a
    float32 or float64 value that only `readers` read."""
    element_type = pt.tensor_type(result).element_type
    return isinstance(element_type, UNFUSED_ELEMENT_TYPES) and feeds_only(result, readers)


@dataclass(frozen=True)
class UnfuseAddmm(RewritePattern):
    """`addmm(bias, a, b)` with unit scales, in float32 or float64, whose
    result only elementwise ops read, becomes `bias + mm(a, b)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: pt.AddmmOp, rewriter: PatternRewriter) -> None:
        if op.beta is not None or op.alpha is not None:
            return
        if not unfusable(op.result):
            return
        result_type = pt.tensor_type(op.result)
        product = pt.MatmulOp(op.lhs, op.rhs, result_type)
        biased = pt.BinaryOp(pt.BinaryKind.ADD, op.bias, product.result, result_type)
        new_ops: list[Operation] = [product, biased]
        rewriter.replace(op, new_ops, [biased.result])


@dataclass(frozen=True)
class UnfuseConvolutionBias(RewritePattern):
    """`convolution(x, w, bias)` in float32 or float64, whose result only
    elementwise ops and reductions read, becomes `convolution(x, w) + bias`
    with the bias viewed as `[C, 1, ..., 1]`: the library adds a bias as one
    more pass over its output, which the readers' kernels do for free (a
    channel layer norm after a depthwise convolution reads it through
    reductions)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: pt.ConvolutionOp, rewriter: PatternRewriter) -> None:
        if op.bias is None:
            return
        if not unfusable(op.result, KERNEL_READERS):
            return
        result_type = pt.tensor_type(op.result)
        bias_type = pt.tensor_type(op.bias)
        spatial = result_type.rank - 2
        channels = pt.TensorType([bias_type.sizes[0], *([1] * spatial)], bias_type.element_type)
        unbiased = pt.ConvolutionOp(
            op.input, op.weight, None, op.stride.data, op.padding.data, op.dilation.data,
            op.groups.value.data, result_type, op.transposed is not None,
            None if op.output_padding is None else op.output_padding.data,
        )
        per_channel = pt.ReshapeOp(op.bias, channels)
        biased = pt.BinaryOp(pt.BinaryKind.ADD, unbiased.result, per_channel.result, result_type)
        rewriter.replace(op, [unbiased, per_channel, biased], [biased.result])


@dataclass(frozen=True)
class UnfuseBiasAddPass(ModulePass):
    """
    Splits a matrix product with a bias (`ptensor.addmm`) into the product
    (`ptensor.mm`) and an elementwise add, where only elementwise ops read its
    result, so that fusion takes the add into the kernel of its readers.

    On a GPU, a library product that adds a bias picks smaller tiles than the
    plain product (cuBLAS's bias epilogue), and the add itself costs nothing
    inside a kernel that reads the product anyway: a linear layer followed by
    an activation or a residual add runs faster as `mm` and one fused kernel.
    Products whose result is returned, reduced or read by another library op
    keep their bias (an add of their own would be one more pass over memory),
    as do products with `beta` or `alpha` scales and half-precision products,
    which add the bias before rounding. A convolution's bias is unfused by the
    same rule, reductions counting as readers too (`UnfuseConvolutionBias`):
    the library adds it in a pass of its own over the output.

    Before:
    ```
    %y = ptensor.addmm %bias, %x, %w : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
    %z = ptensor.unary tanh %y : !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[8, 64], f32>
    ```
    After:
    ```
    %p = ptensor.mm %x, %w : !ptensor.tensor<[8, 32], f32>, !ptensor.tensor<[32, 64], f32> -> !ptensor.tensor<[8, 64], f32>
    %y = ptensor.binary add %bias, %p : !ptensor.tensor<[64], f32>, !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[8, 64], f32>
    %z = ptensor.unary tanh %y : !ptensor.tensor<[8, 64], f32> -> !ptensor.tensor<[8, 64], f32>
    ```
    """

    name = "unfuse-bias-add"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([UnfuseAddmm(), UnfuseConvolutionBias()])
        PatternRewriteWalker(patterns, apply_recursively=False).rewrite_module(op)
