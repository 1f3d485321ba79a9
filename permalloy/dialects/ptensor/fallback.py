"""
`ptensor.fallback`, which carries an ATen op with no ptensor equivalent by name,
run by torch at execution, and the attributes that stand inside its arguments
for an operand (`#ptensor.operand<0>`) and for None (`#ptensor.none`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, StringAttr, i64
from xdsl.ir import Attribute, Data, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from permalloy.dialects.ptensor.checks import require
from permalloy.dialects.ptensor.types import TensorType


@irdl_attr_definition
class OperandRefAttr(Data[int]):
    """
    A placeholder, inside the `args` of `ptensor.fallback`, for the operand of
    that position: `#ptensor.operand<0>`.
    """

    name = "ptensor.operand"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> int:
        with parser.in_angle_brackets():
            return parser.parse_integer(allow_boolean=False)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")


@irdl_attr_definition
class NoneValueAttr(ParametrizedAttribute):
    """Python's None, inside the `args` of `ptensor.fallback`: `#ptensor.none`."""

    name = "ptensor.none"


@irdl_op_definition
class FallbackOp(IRDLOperation):
    """
    An ATen op with no ptensor equivalent, run by torch at execution.

    `%y = ptensor.fallback "aten.cumsum.default"(%x) [#ptensor.operand<0>, 1] : (T) -> T`.
    `args` lists the positional arguments: tensors as `#ptensor.operand<i>`,
    lists as arrays, None as `#ptensor.none`, bools as `i1` integers, sizes as
    `#sym.expr<...>`, devices as strings, numbers, strings and dtypes (as types)
    as themselves. `kwargs` names the keyword arguments the same way; the
    importer leaves out those that only restate defaults (`layout`,
    `pin_memory`, `memory_format`).

    `orders`, where present, gives per result the order, outermost first, in
    which torch's op stores the result's dimensions when it is dense in
    another order than row-major (`array<i64: 0, 2, 1, 3>` for fused
    attention's output, written token by token), or an empty array for a
    row-major result: the host program keeps a result in that layout rather
    than copying it into row-major memory.
    """

    name = "ptensor.fallback"

    target = prop_def(StringAttr)
    args = prop_def(ArrayAttr)
    kwargs = opt_prop_def(Attribute)
    orders = opt_prop_def(ArrayAttr[DenseArrayBase])
    operands_ = var_operand_def(TensorType)
    results_ = var_result_def(TensorType)

    assembly_format = (
        "$target `(` $operands_ `)` $args (`kwargs` $kwargs^)? (`orders` $orders^)? attr-dict `:` "
        "functional-type($operands_, $results_)"
    )

    def __init__(
        self,
        target: str,
        operands: Sequence[SSAValue],
        args: Sequence[Attribute],
        result_types: Sequence[TensorType],
        kwargs: Attribute | None = None,
        orders: Sequence[Sequence[int]] | None = None,
    ):
        orders_attr = ArrayAttr([DenseArrayBase.from_list(i64, list(o)) for o in orders]) if orders else None
        super().__init__(
            operands=[operands],
            result_types=[result_types],
            properties={
                "target": StringAttr(target),
                "args": ArrayAttr(args),
                "kwargs": kwargs,
                "orders": orders_attr,
            },
        )

    def result_order(self, position: int) -> tuple[int, ...] | None:
        """The memory order of result `position`, outermost first, where
        `orders` gives one other than row-major."""
        if self.orders is None:
            return None
        order = tuple(self.orders.data[position].get_values())
        return order or None

    def verify_(self) -> None:
        referenced: set[int] = set()
        _collect_operand_refs(self.args, referenced)
        if self.kwargs is not None:
            _collect_operand_refs(self.kwargs, referenced)
        count = len(self.operands_)
        for index in referenced:
            require(
                0 <= index < count,
                f"ptensor.fallback: #ptensor.operand<{index}> refers past the "
                f"{count} operands",
            )
        require(
            referenced == set(range(count)),
            "ptensor.fallback: every operand must appear in the arguments",
        )
        if self.orders is not None:
            self._verify_orders()

    def _verify_orders(self) -> None:
        assert self.orders is not None
        require(
            len(self.orders.data) == len(self.results),
            f"ptensor.fallback: orders gives {len(self.orders.data)} orders for {len(self.results)} results",
        )
        for position, (order, result) in enumerate(zip(self.orders.data, self.results)):
            values = order.get_values()
            rank = result.type.rank  # type: ignore[attr-defined]
            require(
                not values or sorted(values) == list(range(rank)),
                f"ptensor.fallback: order {list(values)} of result {position} is not a "
                f"permutation of its {rank} dimensions",
            )


def _collect_operand_refs(attr: Attribute, into: set[int]) -> None:
    if isinstance(attr, OperandRefAttr):
        into.add(attr.data)
    elif isinstance(attr, ArrayAttr):
        for item in attr.data:
            _collect_operand_refs(item, into)
    elif isinstance(attr, DictionaryAttr):
        for item in attr.data.values():
            _collect_operand_refs(item, into)
