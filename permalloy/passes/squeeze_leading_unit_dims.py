"""The `squeeze-leading-unit-dims` pass."""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from permalloy.analysis.rows import loads_of
from permalloy.dialects import loop
from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor import SymListAttr, TensorType
from permalloy.dialects.sym import SymExprAttr, parallel_index


def leading_unit_dims(result_type: TensorType) -> int:
    """How many leading dimensions of size 1 a result can drop, keeping at
    least one dimension."""
    sizes = list(result_type.sizes)
    count = 0
    while count < len(sizes) - 1 and sizes[count] == 1:
        count += 1
    return count


def _squeezed(result_type: TensorType, count: int) -> TensorType:
    return TensorType(list(result_type.sizes)[count:], result_type.element_type)


def _read_in_body(use: Use) -> bool:
    """Whether `use` is a loop op's input, which its body reads (a loop op's
    inputs are its first operands; a scatter's `init` comes after them)."""
    user = use.operation
    return isinstance(user, loop.LoopOp) and use.index < len(user.inputs)


def _loop_readers(value: SSAValue) -> list[loop.LoopOp] | None:
    """The loop ops reading `value` as an input, each only through loads;
    None where one reads it otherwise (a loop op's body passing it on)."""
    readers = []
    for use in value.uses:
        user = use.operation
        if _read_in_body(use) and user not in readers:
            if loads_of(user, value) is None:
                return None
            readers.append(user)
    return readers


def _renumber_parallel(op: loop.LoopOp, count: int) -> None:
    """Rewrite the body of `op`, whose first `count` parallel dimensions
    (each of size 1) go: their indices become 0, the later ones move down."""
    mapping: dict[sympy.Symbol, sympy.Expr] = {parallel_index(i): sympy.Integer(0) for i in range(count)}
    mapping.update({parallel_index(i): parallel_index(i - count) for i in range(count, op.parallel_rank + count)})
    for inner in op.body.walk():
        if isinstance(inner, loop.LoadOp):
            indices = [sympy.sympify(e).xreplace(mapping) for e in inner.indices.data]
            inner.properties["indices"] = SymListAttr(indices)
        elif isinstance(inner, loop.IndexOp):
            inner.properties["expr"] = SymExprAttr(sympy.sympify(inner.expr.expr).xreplace(mapping))


def _read_squeezed(reader: loop.LoopOp, value: SSAValue, count: int, squeezed: TensorType) -> None:
    """Make the loads of `reader` that read `value` read it without its first
    `count` dimensions (of size 1, so their indices can only be 0)."""
    for argument, operand in list(zip(reader.body.block.args, reader.inputs)):
        if operand != value:
            continue
        argument = Rewriter.replace_value_with_new_type(argument, squeezed)
        for use in list(argument.uses):
            load = use.operation
            assert isinstance(load, loop.LoadOp)
            load.properties["indices"] = SymListAttr(list(load.indices.data)[count:])


def squeeze_leading_unit_dims(op: loop.PointwiseOp | loop.ReduceOp) -> bool:
    """Compute `op` over its domain without its leading dimensions of size 1,
    where every loop op reading it as an input reads it through loads; other
    users (a scatter starting from it, ops of other levels) read a reshape
    of it to its former shape. Whether it changed."""
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    count = leading_unit_dims(result_type)
    readers = _loop_readers(op.result) if count else None
    if not count or readers is None:
        return False
    others = [use for use in op.result.uses if not _read_in_body(use)]
    squeezed = _squeezed(result_type, count)
    _renumber_parallel(op, count)
    new_result = Rewriter.replace_value_with_new_type(op.result, squeezed)
    for reader in readers:
        _read_squeezed(reader, new_result, count, squeezed)
    if others:
        reshape = pt.ReshapeOp(new_result, result_type)
        Rewriter.insert_op(reshape, InsertPoint.after(op))
        for use in others:
            use.operation.operands[use.index] = reshape.results[0]
    return True


def _leading_size(op: loop.LoopOp) -> sympy.Expr | None:
    sizes = list(op.result.type.sizes)  # type: ignore[union-attr]
    return sizes[0] if sizes else None


def _neighbours(op: loop.LoopOp) -> list[loop.LoopOp]:
    """The loop ops that read `op`'s result or compute one of its inputs."""
    readers = [use.operation for use in op.result.uses if isinstance(use.operation, loop.LoopOp)]
    producers = [v.owner for v in op.inputs if isinstance(v.owner, loop.LoopOp)]
    return list(dict.fromkeys([*readers, *producers]))


def _gains_rows(op: loop.LoopOp) -> bool:
    """Whether dropping `op`'s leading unit dimensions gives it the rows of
    a loop op it reads or that reads it, which it does not share now."""
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    count = leading_unit_dims(result_type)
    if not count:
        return False
    rows = result_type.sizes[count]
    return rows != 1 and any(_leading_size(n) == rows for n in _neighbours(op))


def squeeze_where_rows_match(function: func.FuncOp) -> None:
    """Squeeze the leading unit dimensions of the pointwise and reduction
    loop ops of `function` that gain a neighbour's rows so, until none does
    (one squeezed op can give its neighbours those rows in turn)."""
    worklist = [o for o in function.body.block.ops if isinstance(o, loop.PointwiseOp | loop.ReduceOp)]
    while worklist:
        op = worklist.pop()
        if op.parent is None or not _gains_rows(op):
            continue
        if squeeze_leading_unit_dims(op):  # type: ignore[arg-type]
            worklist.extend(n for n in _neighbours(op) if isinstance(n, loop.PointwiseOp | loop.ReduceOp))


@dataclass(frozen=True)
class SqueezeLeadingUnitDimsPass(ModulePass):
    """
    Drops the leading dimensions of size 1 of pointwise and reduction loop
    ops where the loop ops they read, or that read them, are over the rows
    that follow, so that they share a leading size.

    Fusion groups loop ops row by row, by their leading dimension
    (`analysis.rows`): a keepdim reduction's `[1, C, 1, 1]` result (batch
    norm's statistics) has one row, the `[C]` running statistics computed
    from it have C, and so they were kernels apart. Over `[C, 1, 1]` they
    share rows, and so do the statistic's other `[1, C, 1, 1]` loop ops in
    turn. A `[1, 4096]` norm of one row keeps its shape: its `[1, 1]`
    statistic and it share their one row already. Loop ops reading a
    squeezed result drop its leading indices (which can only be 0); a host
    op or a return reads a `ptensor.reshape` of it back to its shape. A
    result keeps one dimension at least.

    Before:
    ```
    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8, 6, 6], f32>) over [4, 6, 6] -> !ptensor.tensor<[1, 8, 1, 1], f32> {
      %v = loop.load %a[r0, d1, r1, r2] : f32
      loop.yield %v : f32
    }
    %m = loop.pointwise ins(%b = %s : !ptensor.tensor<[1, 8, 1, 1], f32>) -> !ptensor.tensor<[8], f32> {
      %v = loop.load %b[0, d0, 0, 0] : f32
      ...
    }
    ```
    After:
    ```
    %s = loop.reduce sum ins(%a = %x : !ptensor.tensor<[4, 8, 6, 6], f32>) over [4, 6, 6] -> !ptensor.tensor<[8, 1, 1], f32> {
      %v = loop.load %a[r0, d0, r1, r2] : f32
      loop.yield %v : f32
    }
    %m = loop.pointwise ins(%b = %s : !ptensor.tensor<[8, 1, 1], f32>) -> !ptensor.tensor<[8], f32> {
      %v = loop.load %b[d0, 0, 0] : f32
      ...
    }
    ```
    """

    name = "squeeze-leading-unit-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            if function.body.blocks:
                squeeze_where_rows_match(function)
