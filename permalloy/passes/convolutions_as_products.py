"""The `convolutions-as-products` pass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from permalloy.analysis.convolution_products import (
    Layout,
    ProductViews,
    is_pointwise_convolution,
    is_pointwise_geometry,
    product_views,
)
from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.passes import check_option
from permalloy.passes.convolution_layouts import MEASURED_DEVICES, backward_product_is_faster, product_is_faster

CHOICES = ("always", "measured")
"""The values of the `choose` option."""


def _layout(value: SSAValue) -> Layout:
    layout = buf.buffer_type(value)
    return Layout(tuple(layout.sizes), tuple(layout.strides.data))


def _view(value: SSAValue, layout: Layout) -> buf.ViewOp:
    """A view of `value`'s memory with `layout`, from the same offset."""
    source = buf.buffer_type(value)
    strides = [sympy.sympify(s) for s in layout.strides]
    return buf.ViewOp(value, buf.BufferType(layout.sizes, source.element_type, strides, source.offset.expr))


def _product_extern(
    source: SSAValue, weight: SSAValue, bias: SSAValue | None, views: ProductViews, element_type
) -> tuple[list[Operation], buf.ExternOp]:
    """The views and the library call computing the pointwise convolution of
    `source` by `weight` (plus `bias`) as the product `views` describes,
    into a fresh buffer of the result's memory."""
    source_view, weight_view = _view(source, views.input), _view(weight, views.weight)
    result_type = buf.BufferType(views.result.sizes, element_type, [sympy.sympify(s) for s in views.result.strides])
    inputs: list[SSAValue] = [source_view.result, weight_view.result]
    if views.kind == "batched":
        inputs.reverse()
    if bias is not None:
        inputs.insert(0, bias)
    block = Block(arg_types=[buf.buffer_type(v).tensor_type() for v in inputs])
    arguments = list(block.args)
    result_tensor = result_type.tensor_type()
    if views.kind == "batched":
        product: Operation = pt.BatchMatmulOp(arguments[0], arguments[1], result_tensor)
    elif bias is not None:
        product = pt.AddmmOp(arguments[0], arguments[1], arguments[2], result_tensor)
    else:
        product = pt.MatmulOp(arguments[0], arguments[1], result_tensor)
    block.add_ops([product, buf.YieldOp(product.results)])
    return [source_view, weight_view], buf.ExternOp(inputs, [result_type], Region(block))


def _insert_product(
    op: buf.ExternOp, result: SSAValue, source: SSAValue, weight: SSAValue, bias: SSAValue | None, views: ProductViews
) -> None:
    """Insert before `op` the product computing its `result`, which every
    use of `result` then reads through a view (a free of it frees the
    product's buffer)."""
    layout = buf.buffer_type(result)
    operand_views, call = _product_extern(source, weight, bias, views, layout.element_type)
    image = buf.ViewOp(call.results[0], layout)
    call.results[0].name_hint = result.name_hint
    Rewriter.insert_op([*operand_views, call, image], InsertPoint.before(op))
    for use in list(result.uses):
        if isinstance(use.operation, buf.DeallocOp):
            use.operation.operands[use.index] = call.results[0]
    result.replace_all_uses_with(image.result)


def rewrite_convolution(op: buf.ExternOp, faster: Callable[[buf.ExternOp], bool]) -> bool:
    """Replace the pointwise convolution `op` holds with its matrix product,
    where its layouts have one and `faster` says the product wins; whether
    it did."""
    convolution = op.library_op
    if not isinstance(convolution, pt.ConvolutionOp) or not is_pointwise_convolution(convolution):
        return False
    biased = convolution.bias is not None
    views = product_views(_layout(op.inputs[0]), _layout(op.inputs[1]), _layout(op.results[0]), biased=biased)
    if views is None or not faster(op):
        return False
    _insert_product(op, op.results[0], op.inputs[0], op.inputs[1], op.inputs[2] if biased else None, views)
    Rewriter.erase_op(op)
    return True


def transposed_weight(layout: Layout) -> Layout:
    """A pointwise convolution's `[O, C, 1, ...]` weight seen as the
    `[C, O, 1, ...]` weight of the convolution its input gradient is."""
    sizes, strides = layout.sizes, layout.strides
    return Layout((sizes[1], sizes[0], *sizes[2:]), (strides[1], strides[0], *strides[2:]))


def rewrite_convolution_backward(op: buf.ExternOp, faster: Callable[[buf.ExternOp], bool]) -> bool:
    """Compute the input gradient of the pointwise convolution whose
    gradients `op` holds as a matrix product (the pointwise convolution of
    the result's gradient by the transposed weight), where its layouts have
    one and `faster` says the product wins; the weight's and bias's
    gradients, if asked for, stay the library's. Whether it did."""
    backward = op.library_op
    if not isinstance(backward, pt.ConvolutionBackwardOp) or not backward.output_mask.data[0]:
        return False
    if not is_pointwise_geometry(pt.convolution_geometry(backward), pt.tensor_type(backward.weight).sizes):
        return False
    grad_output, _, weight = op.inputs
    views = product_views(_layout(grad_output), transposed_weight(_layout(weight)), _layout(op.results[0]))
    if views is None or not faster(op):
        return False
    _insert_product(op, op.results[0], grad_output, weight, None, views)
    if len(op.results) > 1:
        rest = _without_input_gradient(op)
        Rewriter.insert_op(rest, InsertPoint.before(op))
        for old, new in zip(op.results[1:], rest.results):
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
    Rewriter.erase_op(op)
    return True


def _without_input_gradient(op: buf.ExternOp) -> buf.ExternOp:
    """The call of `op`'s gradients but the input's."""
    backward = op.library_op
    assert isinstance(backward, pt.ConvolutionBackwardOp)
    block = Block(arg_types=[buf.buffer_type(v).tensor_type() for v in op.inputs])
    stride, padding, dilation, transposed, output_padding, groups = pt.convolution_geometry(backward)
    rest = pt.ConvolutionBackwardOp(
        *block.args,
        stride,
        padding,
        dilation,
        groups,
        [0, *backward.output_mask.data[1:]],
        [pt.tensor_type(g) for g in backward.gradients[1:]],
        transposed,
        output_padding if transposed else None,
    )
    block.add_ops([rest, buf.YieldOp(rest.results)])
    return buf.ExternOp(list(op.inputs), [r.type for r in op.results[1:]], Region(block))  # type: ignore[misc]


@dataclass(frozen=True)
class ConvolutionsAsProductsPass(ModulePass):
    """
    Runs pointwise convolutions (a window of one element, unit strides, no
    padding, one group) as the matrix products they are: `y[n, o, *s] =
    sum_c w[o, c] * x[n, c, *s]` is one `mm` over `[N * S, C]` rows where
    the input's and result's batch and spatial dimensions merge
    (channels-last memory), else one `bmm` of the weight, viewed with a
    batch stride of 0, by the `[N, C, S]` images where their spatial ones do
    (NCHW), on views of the same memory: no copy, and no transposes of the
    convolution library's own (cuDNN converts between NCHW and NHWC around
    many of its float32 kernels). A bias rides along as `addmm`'s where the
    rows merge; with a bias and NCHW memory the convolution stays. The
    gradients of a pointwise convolution (`convolution_backward`) give the
    input's the same way, as the pointwise convolution of the result's
    gradient by the transposed weight, and leave the weight's and bias's to
    the library, asked for alone.

    It runs after `plan-layouts`, which times a pointwise convolution's
    layouts with the faster of the two forms. `choose=measured` (the
    targets' choice) keeps the library's convolution (or its input
    gradient) where that measures faster on `device` in the program's
    layouts (`cpu`, or `cuda`: the current GPU; sizes that are symbolic, or
    no GPU to time on, count the product as faster); `always` (the default)
    rewrites every one.

    Before:
    ```
    %y = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %b = %w : !buffer.buffer<[16, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 16, 5, 5], f32, strides [400, 1, 80, 16]>) {
      %c = ptensor.convolution %a, %b stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : ...
      buffer.yield %c : !ptensor.tensor<[2, 16, 5, 5], f32>
    }
    ```
    After:
    ```
    %r = buffer.view %x : ... -> !buffer.buffer<[50, 8], f32>
    %t = buffer.view %w : ... -> !buffer.buffer<[8, 16], f32, strides [1, 8]>
    %p = buffer.extern ins(%a = %r : ..., %b = %t : ...) -> (!buffer.buffer<[50, 16], f32>) {
      %c = ptensor.mm %a, %b : ...
      buffer.yield %c : !ptensor.tensor<[50, 16], f32>
    }
    %y = buffer.view %p : !buffer.buffer<[50, 16], f32> -> !buffer.buffer<[2, 16, 5, 5], f32, strides [400, 1, 80, 16]>
    ```
    """

    name = "convolutions-as-products"

    choose: str = "always"
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_option("choose", self.choose, CHOICES)
        check_option("device", self.device, MEASURED_DEVICES)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        def faster(extern: buf.ExternOp) -> bool:
            return self.choose == "always" or product_is_faster(extern, self.device)

        def faster_backward(extern: buf.ExternOp) -> bool:
            return self.choose == "always" or backward_product_is_faster(extern, self.device)

        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if not function.body.blocks:
                continue
            for extern in [o for o in function.body.block.ops if isinstance(o, buf.ExternOp)]:
                rewrite_convolution(extern, faster) or rewrite_convolution_backward(extern, faster_backward)
