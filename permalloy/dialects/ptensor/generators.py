"""
The generators, ops with no tensor operands: `ptensor.full` (one scalar
everywhere), `ptensor.constant` (given elements), `ptensor.iota` (torch.arange)
and `ptensor.rand` (random floats from torch's generator).
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    TensorType as BuiltinTensorType,
)
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from permalloy.dialects.ptensor.checks import require
from permalloy.dialects.ptensor.kinds import RandomDistribution, RandomDistributionAttr
from permalloy.dialects.ptensor.syntax import CustomSyntaxOp, format_scalar, parse_scalar
from permalloy.dialects.ptensor.types import (
    TensorType,
    format_shape,
    is_float,
    scalar_attr,
    tensor_type,
)


@irdl_op_definition
class FullOp(CustomSyntaxOp):
    """
    A tensor with every element equal to a scalar.

    `%c = ptensor.full 0.5 : !ptensor.tensor<[s0, 4], f32>`. The value is a float
    attribute for float tensors and an integer one for integer and bool tensors.
    """

    name = "ptensor.full"

    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, value: float | int | bool, result_type: TensorType):
        super().__init__(
            result_types=[result_type],
            properties={"value": scalar_attr(value, result_type.element_type)},
        )

    def print_properties(self, printer: Printer) -> None:
        printer.print_string(f" {format_scalar(self.value)}")

    @classmethod
    def parse_properties(cls, parser: Parser) -> tuple[float | int]:
        return (parse_scalar(parser),)

    def verify_(self) -> None:
        result = tensor_type(self.result)
        if is_float(result.element_type):
            require(
                isinstance(self.value, FloatAttr),
                "ptensor.full of a float tensor needs a float value",
            )


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """
    A tensor of static shape whose elements are given.

    `%c = ptensor.constant dense<[1.0, 2.0]> : tensor<2xf32> -> !ptensor.tensor<[2], f32>`.
    """

    name = "ptensor.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$value attr-dict `->` type($result)"

    def __init__(self, value: DenseIntOrFPElementsAttr, result_type: TensorType):
        super().__init__(result_types=[result_type], properties={"value": value})

    def verify_(self) -> None:
        result = tensor_type(self.result)
        value_type = self.value.type
        require(
            isinstance(value_type, BuiltinTensorType),
            "ptensor.constant: the value must have a builtin tensor type",
        )
        assert isinstance(value_type, BuiltinTensorType)
        require(
            result.static_sizes() == tuple(value_type.get_shape()),
            f"ptensor.constant: the value's shape {list(value_type.get_shape())} "
            f"differs from the result's {format_shape(result.sizes)}",
        )
        require(
            value_type.element_type == result.element_type,
            "ptensor.constant: the value's element type differs from the result's",
        )


@irdl_op_definition
class IotaOp(CustomSyntaxOp):
    """
    A 1-D tensor `start, start + step, ...` (torch.arange).

    `%i = ptensor.iota start 0 step 1 : !ptensor.tensor<[s0], i64>`.
    """

    name = "ptensor.iota"

    start = prop_def(FloatAttr | IntegerAttr)
    step = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, start: float | int, step: float | int, result_type: TensorType):
        element_type = result_type.element_type
        super().__init__(
            result_types=[result_type],
            properties={
                "start": scalar_attr(start, element_type),
                "step": scalar_attr(step, element_type),
            },
        )

    def print_properties(self, printer: Printer) -> None:
        printer.print_string(
            f" start {format_scalar(self.start)} step {format_scalar(self.step)}"
        )

    @classmethod
    def parse_properties(cls, parser: Parser) -> tuple[float | int, float | int]:
        parser.parse_keyword("start")
        start = parse_scalar(parser)
        parser.parse_keyword("step")
        return start, parse_scalar(parser)

    def verify_(self) -> None:
        require(tensor_type(self.result).rank == 1, "ptensor.iota gives a 1-D tensor")


@irdl_op_definition
class RandOp(IRDLOperation):
    """
    A tensor of independent random floats, uniform in [0, 1) or standard normal.

    `%r = ptensor.rand uniform : !ptensor.tensor<[4, 4], f32>`. The values come
    from torch's generator at run time, so the op is not pure.
    """

    name = "ptensor.rand"

    distribution = prop_def(RandomDistributionAttr)
    result = result_def(TensorType)

    assembly_format = "$distribution attr-dict `:` type($result)"

    def __init__(self, distribution: RandomDistribution, result_type: TensorType):
        super().__init__(
            result_types=[result_type],
            properties={"distribution": RandomDistributionAttr(distribution)},
        )

    def verify_(self) -> None:
        require(
            is_float(tensor_type(self.result).element_type),
            "ptensor.rand gives a float tensor",
        )
