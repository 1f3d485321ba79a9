"""
The ops inside a loop body that read positions: `loop.load` (one element of
an input at index expressions, optionally at computed positions and under a
mask) and `loop.index` (the value of an index expression), with the check
that their expressions use only the indices bound where they stand.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from permalloy.dialects.loop.computations import enclosing_loop, scalar_type
from permalloy.dialects.ptensor import SymListAttr, TensorType, format_shape
from permalloy.dialects.ptensor.checks import require
from permalloy.dialects.sym import (
    SymExprAttr,
    format_expr,
    parse_expr,
    parse_expr_list,
    symbol_kind,
    symbol_number,
)


def _check_index_symbols(
    op: IRDLOperation,
    exprs: Sequence[sympy.Expr],
    index_value_count: int,
) -> None:
    """Check that every symbol of `exprs` is bound where `op` stands."""
    loop = enclosing_loop(op)
    if loop is not None and not isinstance(loop.result.type, TensorType):
        return  # the loop op's own verifier reports its result type
    parallel_rank = loop.parallel_rank if loop is not None else 0
    reduction_rank = len(loop.reduction_sizes) if loop is not None else 0
    limits = {"d": parallel_rank, "r": reduction_rank, "v": index_value_count}
    meanings = {
        "d": "parallel indices",
        "r": "reduction indices",
        "v": "index value operands",
    }
    for expr in exprs:
        for sym in expr.free_symbols:
            kind = symbol_kind(sym)
            if kind == "s":
                continue
            require(
                symbol_number(sym) < limits[kind],
                lambda: (
                    f"{op.name}: '{sym.name}' in '{format_expr(expr)}' is unbound: "
                    f"there are {limits[kind]} {meanings[kind]} here"
                ),
            )


@irdl_op_definition
class LoadOp(IRDLOperation):
    """
    Reads one element of an input at index expressions.

    `%v = loop.load %a[d0, d1 * 2 + 1] : f32`. Expressions may use the enclosing
    loop's indices, size symbols, and `v0, v1, ...` bound to index-typed operands
    listed after the brackets: `%v = loop.load %w[v0, d1] (%i) : f32` reads at a
    computed position (a gather). With `if %m` the load happens only where the i1
    `%m` is true and gives zero elsewhere, so out-of-range positions are never
    read: `%v = loop.load %b[d0 - 4] if %m : f32`.
    """

    name = "loop.load"

    source = operand_def(Attribute)
    index_values = var_operand_def(IndexType)
    mask = opt_operand_def(IntegerType(1))
    indices = prop_def(SymListAttr)
    result = result_def(Attribute)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    traits = traits_def(Pure())

    def __init__(
        self,
        source: SSAValue,
        indices: Sequence[sympy.Expr | int],
        result_type: Attribute,
        index_values: Sequence[SSAValue] = (),
        mask: SSAValue | None = None,
    ):
        super().__init__(
            operands=[source, index_values, [mask] if mask is not None else []],
            result_types=[result_type],
            properties={"indices": SymListAttr(indices)},
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.source)
        self.indices.print_parameter(printer)
        if self.index_values:
            printer.print_string(" (")
            printer.print_list(self.index_values, printer.print_ssa_value)
            printer.print_string(")")
        if self.mask is not None:
            printer.print_string(" if ")
            printer.print_ssa_value(self.mask)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        unresolved_source = parser.parse_unresolved_operand()
        indices = parse_expr_list(parser)
        index_values: list[SSAValue] = []
        if parser.parse_optional_punctuation("(") is not None:
            index_values = parser.parse_comma_separated_list(
                parser.Delimiter.NONE,
                lambda: parser.resolve_operand(
                    parser.parse_unresolved_operand(), IndexType()
                ),
            )
            parser.parse_punctuation(")")
        mask = None
        if parser.parse_optional_keyword("if") is not None:
            mask = parser.resolve_operand(
                parser.parse_unresolved_operand(), IntegerType(1)
            )
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        source = parser.resolve_operand(unresolved_source, _source_type_of(parser, unresolved_source))
        op = cls(source, indices, result_type, index_values, mask)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        source_type = self.source.type
        shaped = source_shape_and_element(source_type)
        require(
            shaped is not None,
            lambda: f"loop.load reads a !ptensor.tensor or a !buffer.buffer, got {source_type}",
        )
        assert shaped is not None
        shape, element_type = shaped
        require(
            len(self.indices.data) == len(shape),
            lambda: f"loop.load: {len(self.indices.data)} indices for an input of rank {len(shape)} {format_shape(shape)}",
        )
        require(
            self.result.type == scalar_type(element_type),
            lambda: f"loop.load: result type {self.result.type} should be "
            f"{scalar_type(element_type)} to read elements of {element_type}",
        )
        _check_index_symbols(self, self.indices.data, len(self.index_values))


def _source_type_of(parser: Parser, operand) -> Attribute:
    """The type of an operand defined earlier: loads name values already typed
    (block arguments of the enclosing loop op), so the text gives no type."""
    value = parser.ssa_values.get(operand.operand_name)
    if value is None or operand.index >= len(value):
        parser.raise_error(
            f"loop.load reads %{operand.operand_name}, which is not defined before it"
        )
    return value[operand.index].type


def source_shape_and_element(
    value_type: Attribute,
) -> tuple[tuple[sympy.Expr, ...], Attribute] | None:
    """The shape and element type of anything a load may read."""
    if isinstance(value_type, TensorType):
        return value_type.sizes, value_type.element_type
    shape = getattr(value_type, "sizes", None)
    element_type = getattr(value_type, "element_type", None)
    if shape is not None and element_type is not None:
        return tuple(shape), element_type
    return None


@irdl_op_definition
class IndexOp(IRDLOperation):
    """
    The value of an integer expression over loop indices and size symbols, as
    an `index`: `%i = loop.index d0 * 8 + d1`. It gives bodies positions to
    compare (masks, iota) and sizes to compute with.
    """

    name = "loop.index"

    expr = prop_def(SymExprAttr)
    result = result_def(IndexType)

    traits = traits_def(Pure())

    def __init__(self, expr: sympy.Expr | int):
        super().__init__(
            result_types=[IndexType()], properties={"expr": SymExprAttr(expr)}
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" " + format_expr(self.expr.expr))
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> IndexOp:
        expr = parse_expr(parser)
        op = cls(expr)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def verify_(self) -> None:
        _check_index_symbols(self, [self.expr.expr], 0)
