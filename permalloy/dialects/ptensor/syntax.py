"""
Custom syntax the ptensor ops share: scalars written as numbers (`0.5`, `-inf`,
`nan`), and `CustomSyntaxOp`, the base of the ops whose properties are written
as words between their input and their types.
"""

from __future__ import annotations

from typing import Self

from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer

from permalloy.dialects.ptensor.types import TensorType


def parse_scalar(parser: Parser) -> float | int:
    """A number, `inf` or `nan`, optionally negated."""
    negative = parser.parse_optional_punctuation("-") is not None
    if (keyword := parser.parse_optional_keyword_in(("inf", "nan"))) is not None:
        number: float | int = float(keyword)
    else:
        number = parser.parse_number()
    return -number if negative else number


def format_scalar(attr: Attribute) -> str:
    """The text of a float or integer attribute, as `parse_scalar` reads it."""
    if isinstance(attr, FloatAttr):
        value = attr.value.data
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        text = repr(float(value))
        if "e" in text and "." not in text:
            # `1e-05` is no float literal; `1.0e-05` is
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    assert isinstance(attr, IntegerAttr)
    return str(attr.value.data)


class CustomSyntaxOp(IRDLOperation):
    """
    An op written `[%input] <properties> attr-dict : [input type ->] result type`:
    `ptensor.slice %x dim 1 start 0 end 4 step 2 : T -> T`,
    `ptensor.full 0.5 : T`. A subclass prints its properties in
    `print_properties` (each word after a space) and reads them back in
    `parse_properties`, which gives the arguments of its constructor between
    its input and its result type.
    """

    def print_properties(self, printer: Printer) -> None:
        raise NotImplementedError

    @classmethod
    def parse_properties(cls, parser: Parser) -> tuple:
        raise NotImplementedError

    def print(self, printer: Printer) -> None:
        for operand in self.operands:
            printer.print_string(" ")
            printer.print_operand(operand)
        self.print_properties(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if self.operands:
            printer.print_list((o.type for o in self.operands), printer.print_attribute)
            printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands = [
            parser.parse_unresolved_operand()
            for _ in cls.get_irdl_definition().operands
        ]
        properties = cls.parse_properties(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_types: list[Attribute] = []
        if operands:
            operand_types = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_type
            )
            if len(operand_types) != len(operands):
                parser.raise_error(
                    f"expected {len(operands)} operand types, got {len(operand_types)}"
                )
            parser.parse_punctuation("->")
        result_type = parser.parse_type()
        if not isinstance(result_type, TensorType):
            parser.raise_error(
                f"expected a !ptensor.tensor result, got {result_type}"
                if operands
                else f"{cls.name} gives a !ptensor.tensor"
            )
        inputs = [parser.resolve_operand(o, t) for o, t in zip(operands, operand_types)]
        op = cls(*inputs, *properties, result_type)
        op.attributes.update(attributes)
        return op
