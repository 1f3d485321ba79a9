"""
`loop.scatter`, the loop op of the scatters, and its terminator
`loop.scatter_yield`.

A scatter's domain is its source's shape, not its result's: each point of
the domain computes a value and the position of the result element it
lands on, and combines the value into that element. Several points may land
on one element, so the points are not independent: the op says what the
result is (its `init` operand with every value combined into it, in some
order), and each target chooses a schedule that is free of races (one
thread walking the domain, or atomic read-modify-writes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import sympy
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure

from permalloy.dialects.loop.body import _check_index_symbols
from permalloy.dialects.loop.computations import LoopOp, _parse_result_and_body, parse_ins, scalar_type
from permalloy.dialects.ptensor import ScatterKind, ScatterKindAttr, SymListAttr, TensorType, format_shape
from permalloy.dialects.ptensor.checks import require
from permalloy.dialects.sym import format_expr, parse_expr_list, symbol_kind


@irdl_op_definition
class ScatterOp(LoopOp):
    """
    The result is `init` with, for every point of the domain `over [...]`
    (indices `d0, d1, ...`), the value the body yields combined by `kind`
    into the element at the position the body's `loop.scatter_yield` gives:
    `sum`, `prod`, `max` and `min` (NaN on either side gives NaN), or
    `assign`, which replaces the element and is only meaningful where the
    values landing on one element are equal. The body reads the op's inputs
    (`ins`), never `init` nor the result: no point sees another's writes.

    ```
    %y = loop.scatter sum init(%x : !ptensor.tensor<[5, 4], f32>) ins(%i = %idx : !ptensor.tensor<[3, 4], i64>, %s = %src : !ptensor.tensor<[3, 4], f32>) over [3, 4] -> !ptensor.tensor<[5, 4], f32> {
      %k = loop.load %i[d0, d1] : i64
      %p = arith.index_cast %k : i64 to index
      %v = loop.load %s[d0, d1] : f32
      loop.scatter_yield %v at [v0, d1] (%p) : f32
    }
    ```

    The targets run it as a kernel of its own whose output holds `init`
    when it starts (the host copies it there): the LLVM target walks the
    domain in order on one thread, the Triton target combines with atomics
    (a compare-and-swap loop for products and for floats' max and min).
    Fusion inlines the producers of its inputs into its body but never groups
    it with another loop op: a reader of its result must wait for every point.
    """

    name = "loop.scatter"

    ENDS_IN_YIELD: ClassVar[bool] = False

    kind = prop_def(ScatterKindAttr)
    domain = prop_def(SymListAttr)
    inputs = var_operand_def(Attribute)
    init = operand_def(TensorType)

    def __init__(
        self,
        kind: ScatterKind,
        init: SSAValue,
        inputs: Sequence[SSAValue],
        domain: Sequence[sympy.Expr | int],
        result_type: TensorType,
        body: Region,
    ):
        super().__init__(
            operands=[inputs, init],
            result_types=[result_type],
            regions=[body],
            properties={"kind": ScatterKindAttr(kind), "domain": SymListAttr(domain)},
        )

    @property
    def parallel_sizes(self) -> tuple[sympy.Expr, ...]:
        """The domain: the shape of the source the values come from."""
        return tuple(self.domain.data)

    @property
    def terminator(self) -> ScatterYieldOp:
        terminator = self.body.block.last_op
        assert isinstance(terminator, ScatterYieldOp)
        return terminator

    @property
    def result_index(self) -> tuple[sympy.Expr, ...]:
        """The result element a point combines into: the terminator's
        expressions, whose `v0, ...` are its index values."""
        return tuple(self.terminator.indices.data)

    @property
    def yielded(self) -> SSAValue:
        return self.terminator.value

    def _print_header(self, printer: Printer) -> None:
        printer.print_string(f"{self.kind.data.value} init(")
        printer.print_ssa_value(self.init)
        printer.print_string(" : ")
        printer.print_attribute(self.init.type)
        printer.print_string(") ")

    def _print_domain(self, printer: Printer) -> None:
        printer.print_string(" over ")
        self.domain.print_parameter(printer)

    @classmethod
    def parse(cls, parser: Parser) -> ScatterOp:
        kind = parser.parse_str_enum(ScatterKind)
        parser.parse_keyword("init")
        parser.parse_punctuation("(")
        unresolved = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        init = parser.resolve_operand(unresolved, parser.parse_type())
        parser.parse_punctuation(")")
        values, arguments = parse_ins(parser)
        parser.parse_keyword("over")
        domain = parse_expr_list(parser)
        result_type, attributes, body = _parse_result_and_body(parser, arguments)
        op = cls(kind, init, values, domain, result_type, body)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        block = self.body.block
        require(
            len(block.args) == len(self.inputs),
            f"loop.scatter: the body has {len(block.args)} arguments for {len(self.inputs)} inputs",
        )
        for arg, value in zip(block.args, self.inputs):
            require(
                arg.type == value.type,
                f"loop.scatter: body argument type {arg.type} differs from its input's {value.type}",
            )
        require(
            isinstance(block.last_op, ScatterYieldOp),
            "loop.scatter: the body must end with loop.scatter_yield",
        )
        for size in self.parallel_sizes:
            bad = [s for s in size.free_symbols if symbol_kind(s) != "s"]
            require(not bad, f"loop.scatter: domain size '{format_expr(size)}' may only use size symbols")
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        require(
            self.init.type == result_type,
            f"loop.scatter: init has type {self.init.type}, but the result is {result_type}",
        )
        require(
            self.yielded.type == scalar_type(result_type.element_type),
            f"loop.scatter: the body yields {self.yielded.type}, but a result of "
            f"{result_type.element_type} needs {scalar_type(result_type.element_type)}",
        )
        positions = self.result_index
        require(
            len(positions) == result_type.rank,
            f"loop.scatter: {len(positions)} indices at loop.scatter_yield for a result of rank "
            f"{result_type.rank} {format_shape(result_type.sizes)}",
        )


@irdl_op_definition
class ScatterYieldOp(IRDLOperation):
    """
    Ends a `loop.scatter` body with the value of the current point and the
    result element it combines into, index expressions over the domain's
    indices, size symbols and `v0, v1, ...` bound to the index operands in
    parentheses: `loop.scatter_yield %v at [v0, d1] (%p) : f32`.
    """

    name = "loop.scatter_yield"

    value = operand_def(Attribute)
    index_values = var_operand_def(IndexType)
    indices = prop_def(SymListAttr)

    traits = traits_def(IsTerminator(), Pure(), HasParent(ScatterOp))

    def __init__(self, value: SSAValue, indices: Sequence[sympy.Expr | int], index_values: Sequence[SSAValue] = ()):
        super().__init__(operands=[value, index_values], properties={"indices": SymListAttr(indices)})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(" at ")
        self.indices.print_parameter(printer)
        if self.index_values:
            printer.print_string(" (")
            printer.print_list(self.index_values, printer.print_ssa_value)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> ScatterYieldOp:
        unresolved = parser.parse_unresolved_operand()
        parser.parse_keyword("at")
        indices = parse_expr_list(parser)
        index_values: list[SSAValue] = []
        if parser.parse_optional_punctuation("(") is not None:
            index_values = parser.parse_comma_separated_list(
                parser.Delimiter.NONE,
                lambda: parser.resolve_operand(parser.parse_unresolved_operand(), IndexType()),
            )
            parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value = parser.resolve_operand(unresolved, parser.parse_type())
        op = cls(value, indices, index_values)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        _check_index_symbols(self, self.indices.data, len(self.index_values))
