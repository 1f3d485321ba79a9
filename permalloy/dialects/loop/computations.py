"""
The loop ops and their terminators: `loop.pointwise`, `loop.reduce` and
`loop.scan` (an iteration domain and an isolated scalar body ending in
`loop.yield`), and `loop.fused` (several loop ops computed by one kernel,
ending in `loop.fused_yield`), with the `ins(%arg = %value : type, ...)` syntax that
binds a body's arguments to its op's inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import sympy
from xdsl.dialects.builtin import I64, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
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
    OpTrait,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects.ptensor import (
    SCAN_POSITION_KINDS,
    ReduceKind,
    ReduceKindAttr,
    ScanKind,
    ScanKindAttr,
    SymListAttr,
    TensorType,
    is_bool,
    is_float,
)
from permalloy.dialects.ptensor.checks import require
from permalloy.dialects.sym import (
    format_expr,
    parallel_index,
    parse_expr_list,
    reduction_index,
    symbol_kind,
)


class LoopOp(IRDLOperation):
    """
    Shared structure of `loop.pointwise`, `loop.reduce` and `loop.scan`:
    tensor inputs bound to the block arguments of an isolated body that
    yields one scalar, run over a parallel domain (indices `d0, d1, ...`) and
    a reduction domain (`r0, ...`, none for a pointwise op).
    """

    inputs = var_operand_def(Attribute)
    result = result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), Pure(), RecursiveMemoryEffect())

    ENDS_IN_YIELD: ClassVar[bool] = True
    """Whether the body ends in `loop.yield` (every loop op's but a scatter's)."""

    @property
    def parallel_sizes(self) -> tuple[sympy.Expr, ...]:
        """The parallel domain: the result's shape (a scan's without its scanned dimension)."""
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        return tuple(result_type.sizes)

    @property
    def parallel_rank(self) -> int:
        return len(self.parallel_sizes)

    @property
    def reduction_sizes(self) -> tuple[sympy.Expr, ...]:
        return ()

    @property
    def result_index(self) -> tuple[sympy.Expr, ...]:
        """The result element a point of the domain writes: `[d0, d1, ...]` (a
        scan's with `r0` at its scanned dimension)."""
        return tuple(parallel_index(i) for i in range(self.parallel_rank))

    @property
    def yielded(self) -> SSAValue:
        terminator = self.body.block.last_op
        assert isinstance(terminator, YieldOp)
        return terminator.value

    def _verify_body(self) -> None:
        block = self.body.block
        require(
            len(block.args) == len(self.inputs),
            f"{self.name}: the body has {len(block.args)} arguments for "
            f"{len(self.inputs)} inputs",
        )
        for arg, value in zip(block.args, self.inputs):
            require(
                arg.type == value.type,
                lambda arg=arg, value=value: f"{self.name}: body argument type {arg.type} differs from its input's {value.type}",
            )
        require(
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
        require(
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
        require(
            len(self.reduction_sizes) >= 1,
            "loop.reduce: the reduction domain needs at least one dimension",
        )
        for size in self.reduction_sizes:
            bad = [s for s in size.free_symbols if symbol_kind(s) != "s"]
            require(
                not bad,
                f"loop.reduce: reduction size '{format_expr(size)}' may only use "
                "size symbols",
            )
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        kind = self.kind.data
        value_type = self.yielded.type
        if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
            require(
                result_type.element_type == IntegerType(64),
                f"loop.reduce {kind} gives i64",
            )
        elif kind in (ReduceKind.ANY, ReduceKind.ALL):
            require(
                is_bool(result_type.element_type) and is_bool(value_type),
                f"loop.reduce {kind} reduces i1 values into an i1 result",
            )
        else:
            require(
                value_type == scalar_type(result_type.element_type),
                f"loop.reduce: the body yields {value_type}, but a result of "
                f"{result_type.element_type} needs {scalar_type(result_type.element_type)}",
            )


@irdl_op_definition
class ScanOp(LoopOp):
    """
    The running combination by `kind` along dimension `dim` of the result:
    the result element at a point is the combination of the body's values at
    that point and at every point before it along `dim`, the scanned
    dimension. The scanned dimension is the reduction domain (its index is
    `r0`, its size the result's at `dim`); the other dimensions of the result
    are the parallel domain, in order (`d0, ...`). The body of a scan of the
    last dimension of `[4, 8]` reads `%a[d0, r0]`, of its first one
    `%a[r0, d0]`; the result element written is the point's `[d0, r0]` or
    `[r0, d0]` (`result_index`). `argmax` and `argmin` give the i64 position
    along `dim` of the running extreme of the body's values (the last one on
    ties, a NaN counting as the extreme and a later NaN taking an earlier
    one's place, as torch's cummax and cummin).

    ```
    %c = loop.scan sum ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 -> !ptensor.tensor<[4, 8], f32> {
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }
    ```

    A scan is its own op rather than a kind of `loop.reduce`: a reduction
    removes its reduced dimensions from the result and computes one value
    per point of the parallel domain, which fusion and the targets keep in
    a register for the readers of a row, where a scan writes a whole row.
    What a scan shares with a reduction is its domain: parallel dimensions
    that rows of threads or programs take, and one reduction dimension
    walked in order. The kernel analysis collapses its dimensions and gives
    its direction (along or across the contiguous dimension) as it does a
    reduction's, and the targets run it in loop nests of the same shape
    (rows across threads or programs, the reduction dimension in a loop of
    chunks), which store each prefix instead of the total.
    """

    name = "loop.scan"

    kind = prop_def(ScanKindAttr)
    dim = prop_def(IntegerAttr[I64])

    def __init__(
        self,
        kind: ScanKind,
        inputs: Sequence[SSAValue],
        dim: int,
        result_type: TensorType,
        body: Region,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            regions=[body],
            properties={"kind": ScanKindAttr(kind), "dim": IntegerAttr(dim, 64)},
        )

    @property
    def scanned_dim(self) -> int:
        return self.dim.value.data

    @property
    def parallel_sizes(self) -> tuple[sympy.Expr, ...]:
        sizes = super().parallel_sizes
        dim = self.scanned_dim
        # a dimension out of range is the verifier's to report, after the body's
        return sizes[:dim] + sizes[dim + 1 :] if dim < len(sizes) else sizes

    @property
    def reduction_sizes(self) -> tuple[sympy.Expr, ...]:
        sizes = super().parallel_sizes
        return (sizes[self.scanned_dim],) if self.scanned_dim < len(sizes) else ()

    @property
    def result_index(self) -> tuple[sympy.Expr, ...]:
        index = [parallel_index(i) for i in range(self.parallel_rank)]
        index.insert(self.scanned_dim, reduction_index(0))
        return tuple(index)

    def _print_header(self, printer: Printer) -> None:
        printer.print_string(f"{self.kind.data.value} ")

    def _print_domain(self, printer: Printer) -> None:
        printer.print_string(f" dim {self.scanned_dim}")

    @classmethod
    def parse(cls, parser: Parser) -> ScanOp:
        kind = parser.parse_str_enum(ScanKind)
        values, arguments = parse_ins(parser)
        parser.parse_keyword("dim")
        dim = parser.parse_integer(allow_boolean=False, allow_negative=False)
        result_type, attributes, body = _parse_result_and_body(parser, arguments)
        op = cls(kind, values, dim, result_type, body)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        require(
            0 <= self.scanned_dim < result_type.rank,
            f"loop.scan: dimension {self.scanned_dim} is out of range for a result of "
            f"rank {result_type.rank}",
        )
        self._verify_body()
        kind = self.kind.data
        value_type = self.yielded.type
        if kind in SCAN_POSITION_KINDS:
            require(result_type.element_type == IntegerType(64), f"loop.scan {kind} gives i64")
            return
        if kind == ScanKind.LOGSUMEXP:
            require(is_float(result_type.element_type), "loop.scan logsumexp gives floats")
        require(
            value_type == scalar_type(result_type.element_type),
            f"loop.scan: the body yields {value_type}, but a result of "
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


class InYieldingLoop(OpTrait):
    """The parent of `loop.yield`: a loop op whose body ends in it (any but a
    `loop.scatter`, whose body ends in `loop.scatter_yield`)."""

    def verify(self, op: Operation) -> None:
        parent = op.parent_op()
        if parent is None or (isinstance(parent, LoopOp) and parent.ENDS_IN_YIELD):
            return
        names = ", ".join(f"'{t.name}'" for t in _yielding_loop_ops(LoopOp))
        raise VerifyException(f"'{op.name}' expects parent op to be one of {names}")


def _yielding_loop_ops(base: type[LoopOp]) -> list[type[LoopOp]]:
    """The loop op classes, in order of definition, whose bodies end in `loop.yield`."""
    found = []
    for subclass in base.__subclasses__():
        if subclass.ENDS_IN_YIELD and hasattr(subclass, "name"):
            found.append(subclass)
        found.extend(_yielding_loop_ops(subclass))
    return found


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a loop body with the value of the current point: `loop.yield %v : f32`."""

    name = "loop.yield"

    value = operand_def(Attribute)

    traits = traits_def(IsTerminator(), Pure(), InYieldingLoop())

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
        require(
            len(block.args) == len(self.inputs),
            "loop.fused: one body argument per input",
        )
        for op in block.ops:
            require(
                isinstance(op, LoopOp | FusedYieldOp),
                f"loop.fused holds loop ops only, not {op.name}",
            )
        terminator = block.last_op
        require(
            isinstance(terminator, FusedYieldOp),
            "loop.fused: the body must end with loop.fused_yield",
        )
        assert isinstance(terminator, FusedYieldOp)
        require(
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
