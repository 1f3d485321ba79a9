"""
`loop.sort`, the loop op of the sorts: for each row of its parallel domain,
the positions of the body's values in sorted order along one dimension.

A sort's values come back through a gather of its input at the positions
(a `loop.pointwise` loading `%x[d0, v0]` at the position it reads), so the
op itself gives only the permutation, which holds everything a sort, an
argsort, a topk or a kthvalue needs. Its rows are independent: the targets
sort each row in registers, on a scratch buffer, or rows across threads and
programs.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import I64, AnyFloat, IntegerAttr, IntegerType, UnitAttr
from xdsl.ir import Region, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def
from xdsl.parser import Parser
from xdsl.printer import Printer

from permalloy.dialects.loop.computations import LoopOp, _parse_result_and_body, parse_ins
from permalloy.dialects.ptensor import SymListAttr, TensorType, format_shape
from permalloy.dialects.ptensor.checks import require
from permalloy.dialects.sym import format_expr, parallel_index, parse_expr_list, reduction_index, symbol_kind

ORDERS = ("ascending", "descending")


@irdl_op_definition
class SortOp(LoopOp):
    """
    The result element `[d0, ..., j, ...]` (`j` at `dim`) is the position
    along `dim` of the `j`-th smallest (largest, `descending`) of the body's
    values in the row `d0, ...`: the body runs over the row's positions `r0`
    (`over [n]`, the row's length) and the other dimensions of the result
    (the parallel domain `d0, ...`, in order), and yields the value to sort
    by. The order is total and stable: integers compare as signed numbers
    (a lowering widens unsigned ones first), NaN is greater than every
    number, -0.0 equals 0.0, and equal values keep their order (descending
    too). The result keeps the first `k` positions of each row, `k` its size
    at `dim` (at most `n`): a topk's.

    ```
    %p = loop.sort descending ins(%a = %x : !ptensor.tensor<[4, 8], f32>) dim 1 over [8] -> !ptensor.tensor<[4, 3], i64> {
      %v = loop.load %a[d0, r0] : f32
      loop.yield %v : f32
    }
    ```

    Like a scan's, its domain is rows of independent points and one
    dimension (`r0`) walked as a whole; the result element a position `j`
    of the sorted row lands on is `result_index` with `r0` standing for
    `j`. Fusion inlines producers into its body and never groups it with
    another loop op: its readers read whole rows, in any order.
    """

    name = "loop.sort"

    dim = prop_def(IntegerAttr[I64])
    length = prop_def(SymListAttr)
    descending = opt_prop_def(UnitAttr)

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        dim: int,
        length: sympy.Expr | int,
        descending: bool,
        result_type: TensorType,
        body: Region,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            regions=[body],
            properties={
                "dim": IntegerAttr(dim, 64),
                "length": SymListAttr([length]),
                "descending": UnitAttr() if descending else None,
            },
        )

    @property
    def sorted_dim(self) -> int:
        return self.dim.value.data

    @property
    def is_descending(self) -> bool:
        return self.descending is not None

    @property
    def row_length(self) -> sympy.Expr:
        """The number of values sorted in each row (`n`)."""
        return self.length.data[0]

    @property
    def count(self) -> sympy.Expr:
        """The number of positions kept in each row (`k`)."""
        sizes = super().parallel_sizes
        return sizes[self.sorted_dim] if self.sorted_dim < len(sizes) else self.row_length

    @property
    def parallel_sizes(self) -> tuple[sympy.Expr, ...]:
        sizes = super().parallel_sizes
        dim = self.sorted_dim
        return sizes[:dim] + sizes[dim + 1 :] if dim < len(sizes) else sizes

    @property
    def reduction_sizes(self) -> tuple[sympy.Expr, ...]:
        return (self.row_length,)

    @property
    def result_index(self) -> tuple[sympy.Expr, ...]:
        index = [parallel_index(i) for i in range(self.parallel_rank)]
        index.insert(self.sorted_dim, reduction_index(0))
        return tuple(index)

    def _print_header(self, printer: Printer) -> None:
        printer.print_string(f"{ORDERS[self.is_descending]} ")

    def _print_domain(self, printer: Printer) -> None:
        printer.print_string(f" dim {self.sorted_dim} over ")
        self.length.print_parameter(printer)

    @classmethod
    def parse(cls, parser: Parser) -> SortOp:
        order = parser.parse_keyword_in(ORDERS)
        values, arguments = parse_ins(parser)
        parser.parse_keyword("dim")
        dim = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("over")
        position = parser.pos
        sizes = parse_expr_list(parser)
        if len(sizes) != 1:
            parser.raise_error(f"loop.sort sorts rows of one length, got {len(sizes)} sizes", position, parser.pos)
        result_type, attributes, body = _parse_result_and_body(parser, arguments)
        op = cls(values, dim, sizes[0], order == "descending", result_type, body)
        op.attributes.update(attributes)
        return op

    def verify_(self) -> None:
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        require(
            0 <= self.sorted_dim < result_type.rank,
            f"loop.sort: dimension {self.sorted_dim} is out of range for a result of rank {result_type.rank}",
        )
        self._verify_body()
        require(result_type.element_type == IntegerType(64), "loop.sort gives i64 positions")
        length = self.row_length
        bad = [s for s in length.free_symbols if symbol_kind(s) != "s"]
        require(not bad, f"loop.sort: row length '{format_expr(length)}' may only use size symbols")
        excess = self.count - length
        require(
            not (excess.is_number and excess > 0),
            f"loop.sort: the result keeps {format_expr(self.count)} positions of rows of "
            f"{format_expr(length)} ({format_shape(result_type.sizes)})",
        )
        value_type = self.yielded.type
        require(
            isinstance(value_type, IntegerType | AnyFloat),
            f"loop.sort: the body yields {value_type}, which it cannot sort",
        )
