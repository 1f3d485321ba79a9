"""
Matrix products over their readers' rows: a step of fusion, before grouping.

A linear layer on `[B, T, C]` inputs multiplies `[B * T, C]` rows, and its
readers (the bias and activation inlined into one pointwise op) work over
`[B, T, N]`, reading the product at `[d0 * T + d1, d2]`. Grouping takes into
a product's kernel only epilogues of its own shape, so such a product would
write its result to memory for the next kernel. When every reader of a
two-dimensional contraction (`analysis.contraction`) is a loop op reading it
only at the row-major flattening of its own leading dimensions (the same
split of the rows for all), the contraction is rebuilt over the split
domain `[B, T, N]` (its body reads at the flattened row), and its readers
read it at their own element.

    %p = loop.reduce sum ins(%x, %w) over [C] -> !ptensor.tensor<[B * T, N], f32> {..[d0, r0]..}
    %y = loop.pointwise ins(%p) -> !ptensor.tensor<[B, T, N], f32> { loop.load %p[d0 * T + d1, d2] ... }

becomes

    %p = loop.reduce sum ins(%x, %w) over [C] -> !ptensor.tensor<[B, T, N], f32> {..[d0 * T + d1, r0]..}
    %y = loop.pointwise ins(%p) -> !ptensor.tensor<[B, T, N], f32> { loop.load %p[d0, d1, d2] ... }
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import func
from xdsl.ir import Block

from permalloy.analysis.contraction import contraction
from permalloy.analysis.rows import loads_of
from permalloy.dialects import loop
from permalloy.dialects.ptensor import TensorType, sizes_equal
from permalloy.dialects.ptensor import SymListAttr
from permalloy.dialects.sym import SymExprAttr, parallel_index
from permalloy.lowering.index_algebra import domain_bounds, simplify_index


def _flattened(sizes: Sequence[sympy.Expr]) -> sympy.Expr:
    """The row-major position `d0 * s1 * ... + ... + d<k-1>` over `sizes`."""
    position: sympy.Expr = sympy.Integer(0)
    for i, size in enumerate(sizes):
        position = position * size + parallel_index(i)
    return sympy.expand(position)


def _readers_split(product: loop.ReduceOp) -> list[sympy.Expr] | None:
    """The leading sizes every reader splits the product's rows into, when all
    read it only at the flattening of their own leading dimensions."""
    rows, columns = product.parallel_sizes
    split: list[sympy.Expr] | None = None
    readers = list(dict.fromkeys(use.operation for use in product.result.uses))
    if not readers or not all(isinstance(r, loop.LoopOp) for r in readers):
        return None
    for reader in readers:
        sizes = list(reader.parallel_sizes)  # type: ignore[union-attr]
        loads = loads_of(reader, product.result)  # type: ignore[arg-type]
        if not loads or len(sizes) < 3 or not sizes_equal(sizes[-1], columns):
            return None
        leading = sizes[:-1]
        if not sizes_equal(sympy.Mul(*leading), rows):
            return None
        if split is not None and (len(split) != len(leading) or not all(map(sizes_equal, split, leading))):
            return None
        expected = [_flattened(leading), parallel_index(len(sizes) - 1)]
        for load in loads:
            if load.index_values or load.mask is not None:
                return None
            if any(sympy.expand(a - b) != 0 for a, b in zip(load.indices.data, expected, strict=True)):
                return None
        split = leading
    return split


def _reindexed(block: Block, substitution: dict[sympy.Symbol, sympy.Expr], bounds) -> None:
    """Substitute the loop variables of a body's loads and indices, simplified
    over the new domain's `bounds`."""
    for op in block.walk():
        if isinstance(op, loop.LoadOp):
            indices = [simplify_index(e.xreplace(substitution), bounds) for e in op.indices.data]
            op.properties["indices"] = SymListAttr(indices)
        elif isinstance(op, loop.IndexOp):
            op.properties["expr"] = SymExprAttr(simplify_index(op.expr.expr.xreplace(substitution), bounds))


def split_product_rows(function: func.FuncOp) -> None:
    """Rebuild each two-dimensional contraction of `function` over the split
    of its rows that all its readers share (see the module)."""
    for op in list(function.body.block.ops):
        product = contraction(op)
        if product is None or op.parallel_rank != 2:
            continue
        split = _readers_split(op)
        if split is None:
            continue
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        domain = [*split, result_type.sizes[-1]]
        body = op.body.clone()
        substitution = {parallel_index(0): _flattened(split), parallel_index(1): parallel_index(len(split))}
        _reindexed(body.block, substitution, domain_bounds(domain, op.reduction_sizes))
        rebuilt = loop.ReduceOp(op.kind.data, op.inputs, op.reduction_sizes, TensorType(domain, result_type.element_type), body)
        rebuilt.result.name_hint = op.result.name_hint
        function.body.block.insert_op_before(rebuilt, op)
        readers = list(dict.fromkeys(use.operation for use in op.result.uses))
        for reader in readers:
            for load in loads_of(reader, op.result) or []:  # type: ignore[arg-type]
                load.properties["indices"] = SymListAttr([parallel_index(i) for i in range(len(domain))])
            block = reader.body.block  # type: ignore[union-attr]
            for position, operand in enumerate(list(reader.operands)):
                if operand != op.result:
                    continue
                old = block.args[position]
                new = block.insert_arg(rebuilt.result.type, position)
                old.replace_all_uses_with(new)
                block.erase_arg(old)
                operands = list(reader.operands)
                operands[position] = rebuilt.result
                reader.operands = operands
        op.detach()
        op.erase()


__all__ = ["split_product_rows"]
