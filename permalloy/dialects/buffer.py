"""
The `buffer` dialect: the host program, over memory.

At this level a graph is a function over buffers: graph inputs and outputs are
buffer arguments and results, intermediates are allocated and freed, kernels are
launched on buffers, library and fallback ops are called, and views are
reinterpretations of a buffer with other sizes, strides and offset.

Kernels are module-level symbols whose bodies are value-semantic loop IR over
the contents of their arguments; a launch binds buffers to a kernel's arguments
and results, so a kernel says what to compute and the host program where.

    buffer.kernel @add_exp(%a: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
      %y = loop.pointwise ins(%x = %a : !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> { ... }
      buffer.yield %y : !ptensor.tensor<[4], f32>
    }
    func.func @forward(%a: !buffer.buffer<[4], f32>) -> !buffer.buffer<[4], f32> {
      %b = buffer.alloc : !buffer.buffer<[4], f32>
      buffer.launch @add_exp ins(%a : !buffer.buffer<[4], f32>) outs(%b : !buffer.buffer<[4], f32>)
      func.return %b : !buffer.buffer<[4], f32>
    }
"""

from __future__ import annotations

from typing import ClassVar

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import FunctionType, StringAttr, SymbolRefAttr
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from permalloy.dialects.loop import parse_ins, print_ins
from permalloy.dialects.ptensor import (
    SymListAttr,
    TensorType,
    is_element_type,
    shapes_equal,
)
from permalloy.dialects.ptensor.checks import require
from permalloy.dialects.sym import SymExprAttr, format_expr, parse_expr, symbol_kind


def contiguous_strides(sizes: Sequence[sympy.Expr]) -> tuple[sympy.Expr, ...]:
    """Row-major strides, in elements, of a dense tensor of `sizes`."""
    strides: list[sympy.Expr] = []
    running: sympy.Expr = sympy.Integer(1)
    for size in reversed(sizes):
        strides.append(running)
        product = running * size
        running = product if product.is_Integer else sympy.expand(product)
    return tuple(reversed(strides))


def dense_strides_in_order(sizes: Sequence[sympy.Expr], order: Sequence[int]) -> tuple[sympy.Expr, ...]:
    """Strides of a dense tensor of `sizes` whose memory holds its dimensions
    in `order`, outermost first: `(0, 2, 3, 1)` is channels-last, `(0, 2, 1, 3)`
    attention's `[batch, heads, tokens, features]` stored token by token."""
    strides: list[sympy.Expr] = [sympy.Integer(0)] * len(sizes)
    running: sympy.Expr = sympy.Integer(1)
    for d in reversed(order):
        strides[d] = running
        running = sympy.expand(running * sizes[d])
    return tuple(strides)


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """
    Memory holding a tensor: sizes, element type, and the layout that maps an
    index to a position, `offset + sum(index[i] * strides[i])` elements from the
    start of the underlying allocation.

    `!buffer.buffer<[4, 8], f32>` is dense row-major; a transposed view is
    `!buffer.buffer<[8, 4], f32, strides [1, 8]>`, and one that starts further in
    `!buffer.buffer<[4], f32, strides [8], offset 2>`.
    """

    name = "buffer.buffer"

    shape: SymListAttr
    element_type: Attribute
    strides: SymListAttr
    offset: SymExprAttr

    def __init__(
        self,
        shape: Sequence[sympy.Expr | int],
        element_type: Attribute,
        strides: Sequence[sympy.Expr | int] | None = None,
        offset: sympy.Expr | int = 0,
    ):
        sizes = [sympy.sympify(s) for s in shape]
        if strides is None:
            strides = contiguous_strides(sizes)
        super().__init__(
            SymListAttr(sizes), element_type, SymListAttr(strides), SymExprAttr(offset)
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape = SymListAttr.parse_parameter(parser)
            parser.parse_punctuation(",")
            element_type = parser.parse_type()
            strides = None
            offset: sympy.Expr = sympy.Integer(0)
            while parser.parse_optional_punctuation(",") is not None:
                keyword = parser.parse_keyword_in(("strides", "offset"))
                if keyword == "strides":
                    strides = SymListAttr.parse_parameter(parser)
                else:
                    offset = parse_expr(parser)
        if strides is None:
            strides = contiguous_strides(shape)
        return [SymListAttr(shape), element_type, SymListAttr(strides), SymExprAttr(offset)]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            self.shape.print_parameter(printer)
            printer.print_string(", ")
            printer.print_attribute(self.element_type)
            if not self.is_contiguous():
                printer.print_string(", strides ")
                self.strides.print_parameter(printer)
            if self.offset.expr != 0:
                printer.print_string(f", offset {format_expr(self.offset.expr)}")

    def verify(self) -> None:
        if not is_element_type(self.element_type):
            raise VerifyException(f"buffer element type {self.element_type} is not supported")
        if len(self.strides.data) != len(self.shape.data):
            raise VerifyException(
                f"a buffer of rank {len(self.shape.data)} needs as many strides, got "
                f"{len(self.strides.data)}"
            )
        for expr in (*self.shape.data, *self.strides.data, self.offset.expr):
            bad = [s for s in expr.free_symbols if symbol_kind(s) != "s"]
            if bad:
                raise VerifyException(
                    f"buffer layout '{format_expr(expr)}' may only use size symbols"
                )

    @property
    def sizes(self) -> tuple[sympy.Expr, ...]:
        return self.shape.data

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    def is_contiguous(self) -> bool:
        return shapes_equal(self.strides.data, contiguous_strides(self.sizes))

    def tensor_type(self) -> TensorType:
        """The type of the values this buffer holds."""
        return TensorType(self.sizes, self.element_type)


def buffer_type(value: SSAValue) -> BufferType:
    assert isinstance(value.type, BufferType)
    return value.type


def _check_holds(what: str, buffer: BufferType, tensor: Attribute) -> None:
    """Check that `buffer` can hold a value of `tensor`'s type."""
    require(
        isinstance(tensor, TensorType)
        and shapes_equal(buffer.sizes, tensor.sizes)
        and buffer.element_type == tensor.element_type,
        lambda: f"{what}: buffer {buffer} cannot hold {tensor}",
    )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A new buffer: `%b = buffer.alloc : !buffer.buffer<[s0, 8], f32>`."""

    name = "buffer.alloc"

    result = result_def(BufferType)

    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: BufferType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        require(
            buffer_type(self.result).offset.expr == 0,
            "buffer.alloc: a new buffer starts at offset 0",
        )


@irdl_op_definition
class DeallocOp(IRDLOperation):
    """Frees a buffer no longer used: `buffer.dealloc %b : !buffer.buffer<[4], f32>`."""

    name = "buffer.dealloc"

    buffer = operand_def(BufferType)

    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])


@irdl_op_definition
class ViewOp(IRDLOperation):
    """
    The memory of a buffer seen with other sizes, strides and offset; no data
    moves.

    `%t = buffer.view %b : !buffer.buffer<[4, 8], f32> -> !buffer.buffer<[8, 4], f32, strides [1, 8]>`.
    The result's offset and strides count from the start of the allocation that
    holds `%b`.
    """

    name = "buffer.view"

    source = operand_def(BufferType)
    result = result_def(BufferType)

    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: BufferType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        require(
            buffer_type(self.source).element_type
            == buffer_type(self.result).element_type,
            "buffer.view cannot change the element type",
        )


@irdl_op_definition
class CopyOp(IRDLOperation):
    """
    Copies the elements of one buffer into another of the same shape, each with
    its own layout: `buffer.copy %a, %b : !buffer.buffer<[4], f32>, !buffer.buffer<[4], f32>`.
    """

    name = "buffer.copy"

    source = operand_def(BufferType)
    target = operand_def(BufferType)

    assembly_format = (
        "$source `,` $target attr-dict `:` type($source) `,` type($target)"
    )

    def __init__(self, source: SSAValue, target: SSAValue):
        super().__init__(operands=[source, target])

    def verify_(self) -> None:
        source, target = buffer_type(self.source), buffer_type(self.target)
        require(
            shapes_equal(source.sizes, target.sizes)
            and source.element_type == target.element_type,
            f"buffer.copy: {source} and {target} differ in shape or element type",
        )


@irdl_op_definition
class KernelOp(IRDLOperation):
    """
    A kernel: a symbol whose body computes result tensors from argument tensors
    with loop ops, ending with `buffer.yield`. It is translated by a target and
    run by `buffer.launch`.

    ```
    buffer.kernel @neg(%a: !ptensor.tensor<[4], f32>) -> !ptensor.tensor<[4], f32> {
      ...
      buffer.yield %y : !ptensor.tensor<[4], f32>
    }
    ```
    """

    name = "buffer.kernel"

    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        input_types: Sequence[TensorType],
        result_types: Sequence[TensorType],
        body: Region,
    ):
        super().__init__(
            regions=[body],
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(input_types, result_types),
            },
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" @")
        printer.print_string(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(") -> (")
        printer.print_list(self.function_type.outputs.data, printer.print_attribute)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name = parser.parse_symbol_name().data
        arguments = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True)
        )
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_type
        )
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(arguments)
        input_types = [a.type for a in arguments]
        op = cls(name, input_types, result_types, body)  # type: ignore[arg-type]
        if attributes is not None:
            op.attributes.update(attributes.data)
        return op

    def verify_(self) -> None:
        block = self.body.block
        inputs = self.function_type.inputs.data
        require(
            tuple(a.type for a in block.args) == tuple(inputs),
            "buffer.kernel: the body's arguments differ from the signature",
        )
        for t in (*inputs, *self.function_type.outputs.data):
            require(
                isinstance(t, TensorType),
                lambda t=t: f"buffer.kernel arguments and results are !ptensor.tensor, got {t}",
            )
        terminator = block.last_op
        require(
            isinstance(terminator, YieldOp),
            "buffer.kernel: the body must end with buffer.yield",
        )
        assert isinstance(terminator, YieldOp)
        require(
            tuple(v.type for v in terminator.values)
            == tuple(self.function_type.outputs.data),
            "buffer.kernel: buffer.yield's types differ from the signature's results",
        )


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """
    Runs a kernel: its arguments are the contents of the `ins` buffers, its
    results are written to the `outs` buffers.

    `buffer.launch @neg ins(%a : !buffer.buffer<[4], f32>) outs(%b : !buffer.buffer<[4], f32>)`.
    An `outs` buffer may be an `ins` buffer when the kernel reads each element
    only at the position it writes.
    """

    name = "buffer.launch"

    kernel = prop_def(SymbolRefAttr)
    inputs = var_operand_def(BufferType)
    outputs = var_operand_def(BufferType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    assembly_format = (
        "$kernel `ins` `(` ($inputs^ `:` type($inputs))? `)` `outs` `(` $outputs "
        "`:` type($outputs) `)` attr-dict"
    )

    def __init__(
        self, kernel: str, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
    ):
        super().__init__(
            operands=[inputs, outputs], properties={"kernel": SymbolRefAttr(kernel)}
        )

    def verify_(self) -> None:
        kernel = SymbolTable.lookup_symbol(self, self.kernel)
        require(
            isinstance(kernel, KernelOp),
            lambda: f"buffer.launch: no buffer.kernel named {self.kernel}",
        )
        assert isinstance(kernel, KernelOp)
        signature = kernel.function_type
        require(
            len(self.inputs) == len(signature.inputs.data)
            and len(self.outputs) == len(signature.outputs.data),
            f"buffer.launch: {kernel.sym_name.data} takes "
            f"{len(signature.inputs.data)} inputs and gives "
            f"{len(signature.outputs.data)} results",
        )
        for value, tensor in zip(self.inputs, signature.inputs.data):
            _check_holds("buffer.launch", buffer_type(value), tensor)
        for value, tensor in zip(self.outputs, signature.outputs.data):
            _check_holds("buffer.launch", buffer_type(value), tensor)


@irdl_op_definition
class ExternOp(IRDLOperation):
    """
    Calls a library or a fallback op, run by torch, on the contents of buffers;
    the results come back in new buffers (or, marked `buffer.writes_first_input`,
    the one result in its first input's; marked `buffer.writes_last_input`, in
    its last input's). The body holds the ptensor op on the argument values and
    yields its results.

    ```
    %c = buffer.extern ins(%x = %a : !buffer.buffer<[4, 8], f32>, %y = %b : !buffer.buffer<[8, 2], f32>) -> (!buffer.buffer<[4, 2], f32>) {
      %z = ptensor.mm %x, %y : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8, 2], f32> -> !ptensor.tensor<[4, 2], f32>
      buffer.yield %z : !ptensor.tensor<[4, 2], f32>
    }
    ```
    """

    name = "buffer.extern"

    WRITES_FIRST_INPUT: ClassVar[str] = "buffer.writes_first_input"
    """An attribute (unit) of an extern whose op runs in its in-place form
    (`index_put_`): the call writes its one result over its first input's
    memory, which the result then is (`write-input-updates` sets it where
    that input is an argument the graph updates)."""

    WRITES_LAST_INPUT: ClassVar[str] = "buffer.writes_last_input"
    """An attribute (unit) of an extern whose op runs in its `out=` form (a
    matrix product, `analysis.out_forms`): the call writes its one result
    into its last input, a buffer the program allocates (`plan-memory` adds
    it, so that the result takes a dead buffer's memory like any
    allocation), which the result then is. The op does not read that input."""

    inputs = var_operand_def(BufferType)
    results_ = var_result_def(BufferType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[BufferType],
        body: Region,
    ):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    @property
    def writes_last_input(self) -> bool:
        return self.WRITES_LAST_INPUT in self.attributes

    @property
    def library_op(self) -> Operation:
        """The ptensor op the call runs."""
        first = self.body.block.first_op
        assert first is not None
        return first

    def library_input_positions(self) -> tuple[int, ...]:
        """The position among the inputs of each operand of the library op,
        in the op's order (an extern takes a value its op reads twice once)."""
        arguments = list(self.body.block.args)
        return tuple(arguments.index(operand) for operand in self.library_op.operands)

    def library_inputs(self) -> list[SSAValue]:
        """The input each operand of the library op reads, in the op's order."""
        return [self.inputs[position] for position in self.library_input_positions()]

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
    def parse(cls, parser: Parser) -> ExternOp:
        def tensor_of(value_type: Attribute) -> Attribute:
            if not isinstance(value_type, BufferType):
                parser.raise_error(f"buffer.extern takes buffers, got {value_type}")
            return value_type.tensor_type()

        values, arguments = parse_ins(parser, tensor_of)
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_type
        )
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(arguments)
        op = cls(values, result_types, body)  # type: ignore[arg-type]
        if attributes is not None:
            op.attributes.update(attributes.data)
        return op

    def verify_(self) -> None:
        block = self.body.block
        require(
            len(block.args) == len(self.inputs),
            "buffer.extern: one body argument per input",
        )
        for arg, value in zip(block.args, self.inputs):
            require(
                arg.type == buffer_type(value).tensor_type(),
                lambda arg=arg, value=value: f"buffer.extern: body argument {arg.type} does not match input {value.type}",
            )
        terminator = block.last_op
        require(
            isinstance(terminator, YieldOp),
            "buffer.extern: the body must end with buffer.yield",
        )
        assert isinstance(terminator, YieldOp)
        require(
            len(terminator.values) == len(self.results),
            "buffer.extern: buffer.yield gives a value per result",
        )
        for value, result in zip(terminator.values, self.results):
            _check_holds("buffer.extern", buffer_type(result), value.type)
        if self.writes_last_input:
            require(
                len(self.results) == 1 and len(self.inputs) > 1 and self.inputs[-1].type == self.results[0].type,
                "buffer.extern: buffer.writes_last_input needs one result of its last input's layout",
            )
            require(
                not block.args[-1].uses,
                "buffer.extern: buffer.writes_last_input's op must not read its last input",
            )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a `buffer.kernel` or a `buffer.extern` with its result tensors."""

    name = "buffer.yield"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(KernelOp, ExternOp))

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


Buffer = Dialect(
    "buffer",
    [AllocOp, DeallocOp, ViewOp, CopyOp, KernelOp, LaunchOp, ExternOp, YieldOp],
    [BufferType],
)
