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

from permalloy.analysis.convolution_products import Layout, ProductViews, is_pointwise_convolution, product_views
from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.passes.convolution_layouts import product_is_faster

CHOICES = ("always", "measured")
"""The values of the `choose` option."""

DEVICES = ("cpu", "cuda")
"""The values of the `device` option: where `measured` times the two forms."""


def _layout(value: SSAValue) -> Layout:
    layout = buf.buffer_type(value)
    return Layout(tuple(layout.sizes), tuple(layout.strides.data))


def _view(value: SSAValue, layout: Layout) -> buf.ViewOp:
    """A view of `value`'s memory with `layout`, from the same offset."""
    source = buf.buffer_type(value)
    strides = [sympy.sympify(s) for s in layout.strides]
    return buf.ViewOp(value, buf.BufferType(layout.sizes, source.element_type, strides, source.offset.expr))


def _product_call(op: buf.ExternOp, views: ProductViews) -> tuple[list[Operation], buf.ExternOp]:
    """The views and the library call computing `op`'s convolution as the
    product `views` describes, into a fresh buffer of the result's memory."""
    convolution = op.library_op
    assert isinstance(convolution, pt.ConvolutionOp)
    source, weight = _view(op.inputs[0], views.input), _view(op.inputs[1], views.weight)
    element_type = buf.buffer_type(op.results[0]).element_type
    result_type = buf.BufferType(views.result.sizes, element_type, [sympy.sympify(s) for s in views.result.strides])
    inputs: list[SSAValue] = [source.result, weight.result]
    if views.kind == "batched":
        inputs.reverse()
    if convolution.bias is not None:
        inputs.insert(0, op.inputs[2])
    block = Block(arg_types=[buf.buffer_type(v).tensor_type() for v in inputs])
    arguments = list(block.args)
    result_tensor = result_type.tensor_type()
    if views.kind == "batched":
        product: Operation = pt.BatchMatmulOp(arguments[0], arguments[1], result_tensor)
    elif convolution.bias is not None:
        product = pt.AddmmOp(arguments[0], arguments[1], arguments[2], result_tensor)
    else:
        product = pt.MatmulOp(arguments[0], arguments[1], result_tensor)
    block.add_ops([product, buf.YieldOp(product.results)])
    return [source, weight], buf.ExternOp(inputs, [result_type], Region(block))


def rewrite_convolution(op: buf.ExternOp, faster: Callable[[buf.ExternOp], bool]) -> bool:
    """Replace the pointwise convolution `op` holds with its matrix product,
    where its layouts have one and `faster` says the product wins; whether
    it did."""
    convolution = op.library_op
    if not isinstance(convolution, pt.ConvolutionOp) or not is_pointwise_convolution(convolution):
        return False
    views = product_views(
        _layout(op.inputs[0]), _layout(op.inputs[1]), _layout(op.results[0]), biased=convolution.bias is not None
    )
    if views is None or not faster(op):
        return False
    operand_views, call = _product_call(op, views)
    result = op.results[0]
    image = buf.ViewOp(call.results[0], buf.buffer_type(result))
    call.results[0].name_hint = result.name_hint
    Rewriter.insert_op([*operand_views, call, image], InsertPoint.before(op))
    for use in list(result.uses):
        if isinstance(use.operation, buf.DeallocOp):
            use.operation.operands[use.index] = call.results[0]
    result.replace_all_uses_with(image.result)
    Rewriter.erase_op(op)
    return True


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
    rows merge; with a bias and NCHW memory the convolution stays.

    It runs after `plan-layouts`, which times a pointwise convolution's
    layouts with the faster of the two forms. `choose=measured` (the
    targets' choice) keeps the library's convolution where it measures
    faster on `device` in the program's layouts (`cpu`, or `cuda`: the
    current GPU; sizes that are symbolic, or no GPU to time on, count the
    product as faster); `always` (the default) rewrites every one.

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
        if self.choose not in CHOICES:
            raise ValueError(f"choose={self.choose!r} is not valid; valid values: {', '.join(CHOICES)}")
        if self.device not in DEVICES:
            raise ValueError(f"device={self.device!r} is not valid; valid values: {', '.join(DEVICES)}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        def faster(extern: buf.ExternOp) -> bool:
            return self.choose == "always" or product_is_faster(extern, self.device)

        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if not function.body.blocks:
                continue
            for extern in [o for o in function.body.block.ops if isinstance(o, buf.ExternOp)]:
                rewrite_convolution(extern, faster)
