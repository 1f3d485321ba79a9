"""
The library ops, run as extern calls into torch: matrix products
(`ptensor.mm`, `bmm`, `addmm`), convolutions and their gradients
(`ptensor.convolution`, `convolution_backward`), scaled dot-product attention
and the gradient of an embedding table; `LIBRARY_OPS` lists them with
`ptensor.fft` (`spectral.py`). Each takes float tensors of one dtype.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects.ptensor.checks import check_float_operands, check_shape, require
from permalloy.dialects.ptensor.spectral import FftOp
from permalloy.dialects.ptensor.types import (
    IntListAttr,
    TensorType,
    broadcast_shapes,
    format_shape,
    is_integer,
    sizes_equal,
    tensor_type,
)
from permalloy.dialects.sym import FloorDiv, format_expr


class _MatrixProductOp(IRDLOperation):
    """Shared structure of `ptensor.mm` and `ptensor.bmm`: `lhs @ rhs`."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: TensorType):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])


@irdl_op_definition
class MatmulOp(_MatrixProductOp):
    """
    Matrix product of two 2-D tensors, run by a library.

    `%c = ptensor.mm %a, %b : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>`.
    """

    name = "ptensor.mm"

    def verify_(self) -> None:
        lhs, rhs, result = (tensor_type(v) for v in (self.lhs, self.rhs, self.result))
        check_float_operands(self, self.lhs, self.rhs, self.result)
        require(lhs.rank == 2 and rhs.rank == 2, "ptensor.mm takes 2-D tensors")
        require(
            sizes_equal(lhs.sizes[1], rhs.sizes[0]),
            f"ptensor.mm: inner sizes {format_expr(lhs.sizes[1])} and "
            f"{format_expr(rhs.sizes[0])} differ",
        )
        check_shape(self.name, result, [lhs.sizes[0], rhs.sizes[1]])


@irdl_op_definition
class BatchMatmulOp(_MatrixProductOp):
    """
    Batched matrix product of two 3-D tensors, run by a library.

    `%c = ptensor.bmm %a, %b : !ptensor.tensor<[2, 4, 8], f32>, !ptensor.tensor<[2, 8, 16], f32> -> !ptensor.tensor<[2, 4, 16], f32>`.
    """

    name = "ptensor.bmm"

    def verify_(self) -> None:
        lhs, rhs, result = (tensor_type(v) for v in (self.lhs, self.rhs, self.result))
        check_float_operands(self, self.lhs, self.rhs, self.result)
        require(lhs.rank == 3 and rhs.rank == 3, "ptensor.bmm takes 3-D tensors")
        require(
            sizes_equal(lhs.sizes[0], rhs.sizes[0])
            and sizes_equal(lhs.sizes[2], rhs.sizes[1]),
            f"ptensor.bmm: shapes {format_shape(lhs.sizes)} and "
            f"{format_shape(rhs.sizes)} do not multiply",
        )
        check_shape(self.name, result, [lhs.sizes[0], lhs.sizes[1], rhs.sizes[2]])


@irdl_op_definition
class AddmmOp(IRDLOperation):
    """
    `beta * bias + alpha * (lhs @ rhs)` with a broadcast bias, run by a library.

    `%c = ptensor.addmm %bias, %a, %b : !ptensor.tensor<[16], f32>, !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 16], f32> -> !ptensor.tensor<[4, 16], f32>`.
    """

    name = "ptensor.addmm"

    bias = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    beta = opt_prop_def(FloatAttr[Float64Type])
    alpha = opt_prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$bias `,` $lhs `,` $rhs (`beta` $beta^)? (`alpha` $alpha^)? attr-dict `:` "
        "type($bias) `,` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self,
        bias: SSAValue,
        lhs: SSAValue,
        rhs: SSAValue,
        result_type: TensorType,
        beta: float = 1.0,
        alpha: float = 1.0,
    ):
        super().__init__(
            operands=[bias, lhs, rhs],
            result_types=[result_type],
            properties={
                "beta": None if beta == 1.0 else FloatAttr(beta, Float64Type()),
                "alpha": None if alpha == 1.0 else FloatAttr(alpha, Float64Type()),
            },
        )

    def verify_(self) -> None:
        bias, lhs, rhs, result = (
            tensor_type(v) for v in (self.bias, self.lhs, self.rhs, self.result)
        )
        check_float_operands(self, self.bias, self.lhs, self.rhs, self.result)
        require(lhs.rank == 2 and rhs.rank == 2, "ptensor.addmm takes 2-D matrices")
        require(
            sizes_equal(lhs.sizes[1], rhs.sizes[0]),
            "ptensor.addmm: inner sizes differ",
        )
        expected = [lhs.sizes[0], rhs.sizes[1]]
        try:
            broadcast_shapes(bias.sizes, expected)
        except ValueError as error:
            raise VerifyException(f"ptensor.addmm: bias: {error}") from error
        check_shape(self.name, result, expected)


class _ConvolutionGeometryOp(IRDLOperation):
    """
    Shared properties of `ptensor.convolution` and its backward: aten's
    stride, padding, dilation and groups, and `transposed` with its
    `output_padding`.
    """

    stride = prop_def(IntListAttr)
    padding = prop_def(IntListAttr)
    dilation = prop_def(IntListAttr)
    groups = prop_def(IntegerAttr[I64])
    transposed = opt_prop_def(UnitAttr)
    output_padding = opt_prop_def(IntListAttr)

    traits = traits_def(Pure())

    @staticmethod
    def geometry_properties(
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        groups: int,
        transposed: bool,
        output_padding: Sequence[int] | None,
    ) -> dict[str, Attribute | None]:
        return {
            "stride": IntListAttr(stride),
            "padding": IntListAttr(padding),
            "dilation": IntListAttr(dilation),
            "groups": IntegerAttr(groups, 64),
            "transposed": UnitAttr() if transposed else None,
            "output_padding": IntListAttr(output_padding)
            if transposed and output_padding is not None
            else None,
        }

    def is_depthwise_2d(self) -> bool:
        """One filter per channel, over two spatial dimensions, not transposed."""
        source, weight = tensor_type(self.input), tensor_type(self.weight)  # both ops define them
        return (
            self.transposed is None
            and source.rank == 4
            and self.groups.value.data == source.sizes[1] == weight.sizes[0]
            and weight.sizes[1] == 1
        )

    def verify_kernel_parameters(self, name: str, count: str) -> IntListAttr | None:
        """Check that the optional attribute `name`, where given, is `count`
        ("two", "four") positive integers: the parameters of the kernel of
        permalloy's that runs the op instead of the library; the attribute,
        None where it is not given."""
        value = self.attributes.get(name)
        if value is None:
            return None
        length = {"two": 2, "four": 4}[count]
        require(
            isinstance(value, IntListAttr) and len(value.data) == length and min(value.data) >= 1,
            lambda: f"{self.name}: {name} must be {count} positive integers, got {value}",
        )
        assert isinstance(value, IntListAttr)
        return value

    def verify_geometry(self, source: TensorType, weight: TensorType) -> int:
        """Check the ranks and the per-dimension lists; give the number of
        spatial dimensions."""
        spatial = source.rank - 2
        require(spatial >= 1, f"{self.name} takes an input of rank 3 or more")
        require(weight.rank == source.rank, f"{self.name}: weight rank differs")
        for name, values in (
            ("stride", self.stride.data),
            ("padding", self.padding.data),
            ("dilation", self.dilation.data),
        ):
            require(len(values) == spatial, f"{self.name}: {name} needs {spatial} entries")
        return spatial


def convolution_geometry(op: ConvolutionOp | ConvolutionBackwardOp) -> list:
    """aten's stride, padding, dilation, transposed, output_padding and groups
    arguments of a convolution or its backward, as Python values."""
    spatial = len(op.stride.data)
    output_padding = [0] * spatial if op.output_padding is None else op.output_padding.data
    return [
        list(op.stride.data),
        list(op.padding.data),
        list(op.dilation.data),
        op.transposed is not None,
        list(output_padding),
        op.groups.value.data,
    ]


@irdl_op_definition
class ConvolutionOp(_ConvolutionGeometryOp):
    """
    N-d convolution (aten.convolution), run by a library.

    `%y = ptensor.convolution %x, %w, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : ...`.
    `transposed` with `output_padding` gives the transposed convolution.
    """

    name = "ptensor.convolution"

    TILE: ClassVar[str] = "depthwise_tile"
    """An optional attribute on a 2-d depthwise convolution (one filter per
    channel), `[tile_h, tile_w, block_c, num_warps]`: run by permalloy's
    depthwise kernel with that tile where Triton runs (GPU tensors, or
    Triton's interpreter), instead of the library
    (`choose-depthwise-kernels`)."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = (
        "$input `,` $weight (`,` $bias^)? `stride` $stride `padding` $padding "
        "`dilation` $dilation `groups` $groups (`transposed` $transposed^)? "
        "(`output_padding` $output_padding^)? attr-dict `:` type($input) `,` "
        "type($weight) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        groups: int,
        result_type: TensorType,
        transposed: bool = False,
        output_padding: Sequence[int] | None = None,
    ):
        super().__init__(
            operands=[input, weight, [bias] if bias is not None else []],
            result_types=[result_type],
            properties=self.geometry_properties(
                stride, padding, dilation, groups, transposed, output_padding
            ),
        )

    def verify_(self) -> None:
        source, weight, result = (
            tensor_type(self.input),
            tensor_type(self.weight),
            tensor_type(self.result),
        )
        operands = [self.input, self.weight, self.result]
        if self.bias is not None:
            operands.append(self.bias)
        check_float_operands(self, *operands)
        spatial = self.verify_geometry(source, weight)
        if self.transposed is not None:
            return
        expected = [source.sizes[0], weight.sizes[0]]
        for i in range(spatial):
            size, kernel = source.sizes[2 + i], weight.sizes[2 + i]
            expected.append(
                FloorDiv(
                    size
                    + 2 * self.padding.data[i]
                    - self.dilation.data[i] * (kernel - 1)
                    - 1,
                    self.stride.data[i],
                )
                + 1
            )
        check_shape(self.name, result, expected)
        if self.verify_kernel_parameters(self.TILE, "four") is not None:
            require(
                self.is_depthwise_2d(),
                lambda: f"ptensor.convolution: {self.TILE} is given only to a 2-d depthwise convolution",
            )


@irdl_op_definition
class ConvolutionBackwardOp(_ConvolutionGeometryOp):
    """
    The gradients of a convolution (aten.convolution_backward), run by a
    library: with respect to its input, weight and bias, each computed when
    its entry of `output_mask` is 1.

    `%gx, %gw, %gb = ptensor.convolution_backward %dy, %x, %w stride [1, 1]
    padding [1, 1] dilation [1, 1] groups 1 output_mask [1, 1, 1] : ...`.
    The results are the masked-in gradients, in that order.
    """

    name = "ptensor.convolution_backward"

    WEIGHT_BLOCK: ClassVar[str] = "depthwise_weight_block"
    """An optional attribute on the backward of a 2-d depthwise convolution
    whose weight gradient is asked for, `[block_c, num_warps]`: that
    gradient is computed by permalloy's depthwise weight-gradient kernel with
    that block of channels where Triton runs (GPU tensors, or Triton's
    interpreter), the others by the library
    (`choose-depthwise-weight-gradients`)."""

    grad_output = operand_def(TensorType)
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    output_mask = prop_def(IntListAttr)
    gradients = var_result_def(TensorType)

    assembly_format = (
        "$grad_output `,` $input `,` $weight `stride` $stride `padding` $padding "
        "`dilation` $dilation `groups` $groups (`transposed` $transposed^)? "
        "(`output_padding` $output_padding^)? `output_mask` $output_mask attr-dict "
        "`:` type($grad_output) `,` type($input) `,` type($weight) `->` type($gradients)"
    )

    def __init__(
        self,
        grad_output: SSAValue,
        input: SSAValue,
        weight: SSAValue,
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        groups: int,
        output_mask: Sequence[bool],
        result_types: Sequence[TensorType],
        transposed: bool = False,
        output_padding: Sequence[int] | None = None,
    ):
        super().__init__(
            operands=[grad_output, input, weight],
            result_types=[result_types],
            properties={
                **self.geometry_properties(
                    stride, padding, dilation, groups, transposed, output_padding
                ),
                "output_mask": IntListAttr([int(bool(m)) for m in output_mask]),
            },
        )

    def verify_(self) -> None:
        check_float_operands(self, self.grad_output, self.input, self.weight, *self.gradients)
        source, weight = tensor_type(self.input), tensor_type(self.weight)
        self.verify_geometry(source, weight)
        mask = self.output_mask.data
        require(
            len(mask) == 3 and all(m in (0, 1) for m in mask),
            "ptensor.convolution_backward: output_mask needs 3 entries of 0 or 1",
        )
        require(
            len(self.gradients) == sum(mask),
            f"ptensor.convolution_backward: output_mask {list(mask)} asks for "
            f"{sum(mask)} results, not {len(self.gradients)}",
        )
        channels = (
            weight.sizes[1] * self.groups.value.data if self.transposed else weight.sizes[0]
        )
        expected = [source.sizes, weight.sizes, [channels]]
        wanted = [shape for shape, m in zip(expected, mask) if m]
        for gradient, shape in zip(self.gradients, wanted):
            check_shape(self.name, tensor_type(gradient), list(shape))
        block = self.verify_kernel_parameters(self.WEIGHT_BLOCK, "two")
        if block is not None:
            require(
                all(v & (v - 1) == 0 for v in block.data),
                lambda: f"{self.name}: {self.WEIGHT_BLOCK} takes powers of two (channels, warps), got {block}",
            )
            require(
                mask[1] == 1 and self.is_depthwise_2d(),
                lambda: f"{self.name}: {self.WEIGHT_BLOCK} is given only to a 2-d depthwise convolution's "
                "backward that computes the weight's gradient",
            )


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """
    Scaled dot-product attention `softmax(q @ k^T * scale + mask) @ v`, run by a
    library, on `[..., L, E]` queries and `[..., S, E]` keys and values.

    `%o = ptensor.attention %q, %k, %v causal scale 0.125 : ...`. The optional
    mask is boolean (true keeps) or additive float, broadcast to `[..., L, S]`.
    """

    name = "ptensor.attention"

    KERNEL: ClassVar[str] = "kernel"
    """An optional string attribute, `KERNELS`: `"triton"`, run by
    permalloy's flash kernel where Triton runs (GPU tensors, or Triton's
    interpreter but for bfloat16, which it multiplies wrongly), with the
    math's semantics (a row whose scores are all -inf
    gives NaN), instead of torch's fused attention; `"measured"`, by the
    flash kernel on a GPU where it times faster than torch's fused attention
    on the first call at each size, else by torch's."""
    KERNELS: ClassVar[tuple[str, ...]] = ("triton", "measured")

    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    causal = opt_prop_def(UnitAttr)
    scale = opt_prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$query `,` $key `,` $value (`mask` $mask^)? (`causal` $causal^)? "
        "(`scale` $scale^)? attr-dict `:` type($query) `,` type($key) `,` "
        "type($value) (`,` type($mask)^)? `->` type($result)"
    )

    def __init__(
        self,
        query: SSAValue,
        key: SSAValue,
        value: SSAValue,
        mask: SSAValue | None,
        causal: bool,
        scale: float | None,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[query, key, value, [mask] if mask is not None else []],
            result_types=[result_type],
            properties={
                "causal": UnitAttr() if causal else None,
                "scale": None if scale is None else FloatAttr(scale, Float64Type()),
            },
        )

    def verify_(self) -> None:
        query, key, value, result = (
            tensor_type(v) for v in (self.query, self.key, self.value, self.result)
        )
        check_float_operands(self, self.query, self.key, self.value, self.result)
        require(query.rank >= 2, "ptensor.attention: query must have rank 2 or more")
        require(
            query.rank == key.rank == value.rank,
            "ptensor.attention: query, key and value differ in rank",
        )
        require(
            sizes_equal(query.sizes[-1], key.sizes[-1]),
            "ptensor.attention: query and key differ in their last size",
        )
        require(
            sizes_equal(key.sizes[-2], value.sizes[-2]),
            "ptensor.attention: key and value differ in sequence length",
        )
        check_shape(self.name, result, [*query.sizes[:-1], value.sizes[-1]])
        kernel = self.attributes.get(self.KERNEL)
        require(
            kernel is None or (isinstance(kernel, StringAttr) and kernel.data in self.KERNELS),
            lambda: f"ptensor.attention: kernel must be one of {', '.join(self.KERNELS)} where given, got {kernel}",
        )


@irdl_op_definition
class EmbeddingBackwardOp(IRDLOperation):
    """
    The gradient of an embedding table, run by a library: each row of
    `grad_output [*indices.shape, D]` added into row `indices[...]` of a zero
    `[num_weights, D]` table (rows at `padding_idx` left zero; with
    `scale_by_frequency`, each row's sum divided by how often its index occurs).

    `%g = ptensor.embedding_backward %d, %i padding 0 : !ptensor.tensor<[8, 64], f32>, !ptensor.tensor<[8], i64> -> !ptensor.tensor<[1000, 64], f32>`.
    """

    name = "ptensor.embedding_backward"

    grad_output = operand_def(TensorType)
    indices = operand_def(TensorType)
    padding_idx = prop_def(IntegerAttr[I64])
    scale_by_frequency = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$grad_output `,` $indices `padding` $padding_idx (`scale_by_frequency` $scale_by_frequency^)? "
        "attr-dict `:` type($grad_output) `,` type($indices) `->` type($result)"
    )

    def __init__(
        self,
        grad_output: SSAValue,
        indices: SSAValue,
        padding_idx: int,
        scale_by_frequency: bool,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[grad_output, indices],
            result_types=[result_type],
            properties={
                "padding_idx": IntegerAttr(padding_idx, 64),
                "scale_by_frequency": UnitAttr() if scale_by_frequency else None,
            },
        )

    def verify_(self) -> None:
        grad, indices, result = (tensor_type(v) for v in (self.grad_output, self.indices, self.result))
        check_float_operands(self, self.grad_output, self.result)
        require(is_integer(indices.element_type), "ptensor.embedding_backward: indices are integers")
        require(result.rank == 2, "ptensor.embedding_backward: the result is a [num_weights, D] table")
        expected = [*indices.sizes, result.sizes[1]]
        require(
            len(expected) == grad.rank and all(sizes_equal(a, b) for a, b in zip(grad.sizes, expected)),
            f"ptensor.embedding_backward: grad_output shape {list(grad.sizes)} should be {expected} "
            "(the indices' shape, then the table's row width)",
        )


LIBRARY_OPS: tuple[type[IRDLOperation], ...] = (
    FftOp,
    MatmulOp,
    BatchMatmulOp,
    AddmmOp,
    ConvolutionOp,
    ConvolutionBackwardOp,
    AttentionOp,
    EmbeddingBackwardOp,
)
