"""
The `loop` dialect: computations as an iteration domain and a scalar body.

A `loop.pointwise` computes one element of its result per point of its domain
(the result's shape, indexed by `d0, d1, ...`). A `loop.reduce` computes one
element per point of its parallel domain (the result's shape, `d0, ...`) by
combining the values its body yields over a reduction domain (`r0, r1, ...`).
Bodies read their inputs with `loop.load` at index expressions over the loop
indices and size symbols, compute with the upstream `arith` and `math` ops, and
end with `loop.yield`.

Views do not exist at this level: a transpose, a broadcast or a slice is only a
different index expression in the loads that read it.

    %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[8, 4], f32> {
      %v = loop.load %a[d1, d0] : f32
      %e = math.exp %v : f32
      loop.yield %e : f32
    }
    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects.ptensor import (
    ReduceKind,
    ReduceKindAttr,
    SymListAttr,
    TensorType,
    format_shape,
    is_bool,
)
from permalloy.dialects.sym import (
    SymExprAttr,
    format_expr,
    parse_expr,
    parse_expr_list,
    symbol_kind,
    symbol_number,
)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise VerifyException(message)


class LoopOp(IRDLOperation):
    """
    Shared structure of `loop.pointwise` and `loop.reduce`: tensor inputs bound
    to the block arguments of an isolated body that yields one scalar.
    """

    inputs = var_operand_def(Attribute)
    result = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), Pure(), RecursiveMemoryEffect())

    @property
    def parallel_rank(self) -> int:
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        return result_type.rank

    @property
    def reduction_sizes(self) -> tuple[sympy.Expr, ...]:
        return ()

    @property
    def yielded(self) -> SSAValue:
        terminator = self.body.block.last_op
        assert isinstance(terminator, YieldOp)
        return terminator.value

    def _verify_body(self) -> None:
        block = self.body.block
        _require(
            len(block.args) == len(self.inputs),
            f"{self.name}: the body has {len(block.args)} arguments for "
            f"{len(self.inputs)} inputs",
        )
        for arg, value in zip(block.args, self.inputs):
            _require(
                arg.type == value.type,
                f"{self.name}: body argument type {arg.type} differs from its "
                f"input's {value.type}",
            )
        _require(
            isinstance(block.last_op, YieldOp),
            f"{self.name}: the body must end with loop.yield",
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        self._print_header(printer)
        print_ins(printer, self.body.block, self.inputs)
        self._print_domain(printer)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def _print_header(self, printer: Printer) -> None:
        pass

    def _print_domain(self, printer: Printer) -> None:
        pass


def print_ins(printer: Printer, block: Block, inputs: Sequence[SSAValue]) -> None:
    """Print `ins(%arg = %value : type, ...)`: the body's arguments bound to inputs."""
    printer.print_string("ins(")
    for i, (arg, value) in enumerate(zip(block.args, inputs)):
        if i:
            printer.print_string(", ")
        printer.print_ssa_value(arg)
        printer.print_string(" = ")
        printer.print_ssa_value(value)
        printer.print_string(" : ")
        printer.print_attribute(value.type)
    printer.print_string(")")


def parse_ins(
    parser: Parser, argument_type: Callable[[Attribute], Attribute] = lambda t: t
) -> tuple[list[SSAValue], list[Parser.Argument]]:
    """Parse `ins(%arg = %value : type, ...)` into values and block arguments;
    `argument_type` gives an argument's type from its value's (the same by
    default), and may raise a parse error for a value type it does not take."""
    parser.parse_keyword("ins")
    values: list[SSAValue] = []
    arguments: list[Parser.Argument] = []

    def parse_one() -> None:
        argument = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        arguments.append(argument.resolve(argument_type(value_type)))
        values.append(parser.resolve_operand(operand, value_type))

    parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_one)
    return values, arguments


def _parse_result_and_body(
    parser: Parser, arguments: list[Parser.Argument]
) -> tuple[TensorType, dict[str, Attribute], Region]:
    """Parse `-> type attributes {...} {body}` after the inputs of a loop op."""
    parser.parse_punctuation("->")
    result_type = parser.parse_type()
    if not isinstance(result_type, TensorType):
        parser.raise_error(f"expected a !ptensor.tensor result, got {result_type}")
    attributes = parser.parse_optional_attr_dict_with_keyword()
    body = parser.parse_region(arguments)
    return result_type, dict(attributes.data) if attributes else {}, body


@irdl_op_definition
class PointwiseOp(LoopOp):
    """
    One element of the result per point of its shape (indices `d0, d1, ...`),
    computed by the body.

    ```
    %y = loop.pointwise ins(%a = %x : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
      %v = loop.load %a[d0] : f32
      loop.yield %v : f32
    }
    ```
    """

    name = "loop.pointwise"

    def __init__(
        self, inputs: Sequence[SSAValue], result_type: TensorType, body: Region
    ):
        super().__init__(operands=[inputs], result_types=[result_type], regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> PointwiseOp:
        values, arguments = parse_ins(parser)
        result_type, attributes, body = _parse_result_and_body(parser, arguments)
        op = cls(values, result_type, body)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        self._verify_body()
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        _require(
            self.yielded.type == scalar_type(result_type.element_type),
            f"loop.pointwise: the body yields {self.yielded.type}, but a result of "
            f"{result_type.element_type} needs {scalar_type(result_type.element_type)}",
        )


@irdl_op_definition
class ReduceOp(LoopOp):
    """
    One element of the result per point of its shape (indices `d0, ...`), the
    combination by `kind` of the body's values over the reduction domain
    `over [...]` (indices `r0, ...`). `argmax` and `argmin` give the i64
    row-major position in the reduction domain of the first extreme value.

    ```
    %m = loop.reduce max ins(%a = %x : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4], f32> {
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }
    ```
    """

    name = "loop.reduce"

    kind = prop_def(ReduceKindAttr)
    reduction = prop_def(SymListAttr)

    def __init__(
        self,
        kind: ReduceKind,
        inputs: Sequence[SSAValue],
        reduction_sizes: Sequence[sympy.Expr | int],
        result_type: TensorType,
        body: Region,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            regions=[body],
            properties={
                "kind": ReduceKindAttr(kind),
                "reduction": SymListAttr(reduction_sizes),
            },
        )

    @property
    def reduction_sizes(self) -> tuple[sympy.Expr, ...]:
        return self.reduction.data

    def _print_header(self, printer: Printer) -> None:
        printer.print_string(f"{self.kind.data.value} ")

    def _print_domain(self, printer: Printer) -> None:
        printer.print_string(" over ")
        self.reduction.print_parameter(printer)

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        kind = parser.parse_str_enum(ReduceKind)
        values, arguments = parse_ins(parser)
        parser.parse_keyword("over")
        sizes = parse_expr_list(parser)
        result_type, attributes, body = _parse_result_and_body(parser, arguments)
        op = cls(kind, values, sizes, result_type, body)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        self._verify_body()
        _require(
            len(self.reduction_sizes) >= 1,
            "loop.reduce: the reduction domain needs at least one dimension",
        )
        for size in self.reduction_sizes:
            bad = [s for s in size.free_symbols if symbol_kind(s) != "s"]
            _require(
                not bad,
                f"loop.reduce: reduction size '{format_expr(size)}' may only use "
                "size symbols",
            )
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        kind = self.kind.data
        value_type = self.yielded.type
        if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
            _require(
                result_type.element_type == IntegerType(64),
                f"loop.reduce {kind} gives i64",
            )
        elif kind in (ReduceKind.ANY, ReduceKind.ALL):
            _require(
                is_bool(result_type.element_type) and is_bool(value_type),
                f"loop.reduce {kind} reduces i1 values into an i1 result",
            )
        else:
            _require(
                value_type == scalar_type(result_type.element_type),
                f"loop.reduce: the body yields {value_type}, but a result of "
                f"{result_type.element_type} needs {scalar_type(result_type.element_type)}",
            )


def scalar_type(element_type: Attribute) -> Attribute:
    """The type of one element inside a loop body: unsigned integers are read as
    signless ones, since `arith` computes on signless integers."""
    if isinstance(element_type, IntegerType):
        return IntegerType(element_type.width.data)
    return element_type


def enclosing_loop(op: Operation) -> LoopOp | None:
    """The loop op whose body holds `op`, if any."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, LoopOp):
        parent = parent.parent_op()
    return parent


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
            _require(
                symbol_number(sym) < limits[kind],
                f"{op.name}: '{sym.name}' in '{format_expr(expr)}' is unbound: "
                f"there are {limits[kind]} {meanings[kind]} here",
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
        _require(
            shaped is not None,
            f"loop.load reads a !ptensor.tensor or a !buffer.buffer, got {source_type}",
        )
        assert shaped is not None
        shape, element_type = shaped
        _require(
            len(self.indices.data) == len(shape),
            f"loop.load: {len(self.indices.data)} indices for an input of rank "
            f"{len(shape)} {format_shape(shape)}",
        )
        _require(
            self.result.type == scalar_type(element_type),
            f"loop.load: result type {self.result.type} should be "
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


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a loop body with the value of the current point: `loop.yield %v : f32`."""

    name = "loop.yield"

    value = operand_def(Attribute)

    traits = traits_def(IsTerminator(), Pure(), HasParent(PointwiseOp, ReduceOp))

    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


@irdl_op_definition
class FusedOp(IRDLOperation):
    """
    Several loop ops computed by one kernel, in order: later members read the
    results of earlier ones, and the results the group yields leave it. Members
    over the same rows, reading each other only within a row, share the loop
    over those rows; every other result of a member stays inside the kernel.

    ```
    %s, %y = loop.fused ins(%a = %x : !ptensor.tensor<[4, 8], f32>) -> (!ptensor.tensor<[4, 1], f32>, !ptensor.tensor<[4, 8], f32>) {
      %m = loop.reduce max ins(%b = %a : !ptensor.tensor<[4, 8], f32>) over [8] -> !ptensor.tensor<[4, 1], f32> {...}
      %e = loop.pointwise ins(%b = %a : ..., %c = %m : ...) -> !ptensor.tensor<[4, 8], f32> {...}
      loop.fused_yield %m, %e : !ptensor.tensor<[4, 1], f32>, !ptensor.tensor<[4, 8], f32>
    }
    ```
    """

    name = "loop.fused"

    inputs = var_operand_def(Attribute)
    results_ = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), Pure(), RecursiveMemoryEffect())

    def __init__(
        self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region
    ):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    @property
    def members(self) -> list[LoopOp]:
        return [op for op in self.body.block.ops if isinstance(op, LoopOp)]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_ins(printer, self.body.block, self.inputs)
        printer.print_string(" -> (")
        printer.print_list((r.type for r in self.results), printer.print_attribute)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> FusedOp:
        values, arguments = parse_ins(parser)
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_type
        )
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(arguments)
        op = cls(values, result_types, body)
        if attributes is not None:
            op.attributes.update(attributes.data)
        return op

    def verify_(self) -> None:
        block = self.body.block
        _require(
            len(block.args) == len(self.inputs),
            "loop.fused: one body argument per input",
        )
        for op in block.ops:
            _require(
                isinstance(op, LoopOp | FusedYieldOp),
                f"loop.fused holds loop ops only, not {op.name}",
            )
        terminator = block.last_op
        _require(
            isinstance(terminator, FusedYieldOp),
            "loop.fused: the body must end with loop.fused_yield",
        )
        assert isinstance(terminator, FusedYieldOp)
        _require(
            tuple(v.type for v in terminator.values) == tuple(r.type for r in self.results),
            "loop.fused: loop.fused_yield's types differ from the results'",
        )


@irdl_op_definition
class FusedYieldOp(IRDLOperation):
    """Ends a `loop.fused` with the member results that leave it."""

    name = "loop.fused_yield"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), Pure(), HasParent(FusedOp))

    assembly_format = "$values `:` type($values) attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


Loop = Dialect(
    "loop",
    [PointwiseOp, ReduceOp, LoadOp, IndexOp, YieldOp, FusedOp, FusedYieldOp],
    [],
)

__all__ = [
    "FusedOp",
    "FusedYieldOp",
    "IndexOp",
    "LoadOp",
    "Loop",
    "LoopOp",
    "PointwiseOp",
    "ReduceOp",
    "YieldOp",
    "enclosing_loop",
    "parse_ins",
    "print_ins",
    "source_shape_and_element",
]
