"""
Reductions whose every reader rounds what it reads store the rounded value.

A half-precision matrix product or sum accumulates in float32 and is rounded
to its type (`arith.truncf`) where it is used. Vertical fusion inlines that
rounding into the readers, so when the reduction stays a kernel of its own it
writes float32: twice the bytes of the half-precision tensor each reader
actually uses (a bf16 SiLU-gated MLP's gate product, written as float32 and
read back by the kernel that multiplies it in). `round_read_reductions`
gives such a reduction a rounding epilogue, a `loop.pointwise` of its own
that grouping then joins to it, and has its readers load the rounded tensor,
their `truncf` gone. The values are the same: rounding twice to a type gives
what rounding once does.

Before:
```
%p = loop.reduce sum ins(...) over [64] -> !ptensor.tensor<[32, 128], f32> {...}
%y = loop.pointwise ins(%a = %p : !ptensor.tensor<[32, 128], f32>) -> ... {
  %v = loop.load %a[d0, d1] : f32
  %h = arith.truncf %v : f32 to bf16
  ...
```
After:
```
%p = loop.reduce sum ins(...) over [64] -> !ptensor.tensor<[32, 128], f32> {...}
%r = loop.pointwise ins(%a = %p : !ptensor.tensor<[32, 128], f32>) -> !ptensor.tensor<[32, 128], bf16> {
  %v = loop.load %a[d0, d1] : f32
  %h = arith.truncf %v : f32 to bf16
  loop.yield %h : bf16
}
%y = loop.pointwise ins(%a = %r : !ptensor.tensor<[32, 128], bf16>) -> ... {
  %h = loop.load %a[d0, d1] : bf16
  ...
```
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.ir import Attribute, Block, BlockArgument, Region
from xdsl.rewriter import InsertPoint, Rewriter

from permalloy.dialects import loop
from permalloy.dialects.ptensor import TensorType, is_float
from permalloy.dialects.sym import parallel_index


def round_read_reductions(function: func.FuncOp) -> None:
    """Give each reduction of `function` that every reader reads rounded to one
    narrower type a rounding epilogue, and its readers the rounded tensor."""
    for op in list(function.body.block.ops):
        if not isinstance(op, loop.ReduceOp):
            continue
        arguments = _reader_arguments(op)
        rounded_type = None if not arguments else _type_every_reader_rounds_to(op, arguments)
        if rounded_type is not None:
            _round_at_the_source(op, arguments, rounded_type)


def _reader_arguments(producer: loop.ReduceOp) -> list[BlockArgument] | None:
    """The body arguments through which pointwise ops and reductions read
    `producer`; None when something else (the host program, a return, a
    scan, scatter or sort) reads it."""
    arguments = []
    for use in producer.result.uses:
        reader = use.operation
        if not isinstance(reader, loop.PointwiseOp | loop.ReduceOp) or reader.parent_op() is not producer.parent_op():
            return None
        arguments.append(reader.body.block.args[use.index])
    return arguments


def _type_every_reader_rounds_to(producer: loop.ReduceOp, arguments: list[BlockArgument]) -> Attribute | None:
    """The one type every read of the reduction's float result, through its
    readers' `arguments`, is rounded to at once (each load used only by
    `truncf`s to it), or None."""
    result_type = producer.result.type
    if not isinstance(result_type, TensorType) or not is_float(result_type.element_type):
        return None
    rounded: set[Attribute] = set()
    for argument in arguments:
        for use in argument.uses:
            load = use.operation
            if not isinstance(load, loop.LoadOp) or use.index != 0 or not load.result.uses:
                return None
            for read in load.result.uses:
                if not isinstance(read.operation, arith.TruncFOp):
                    return None
                rounded.add(read.operation.result.type)
    return rounded.pop() if len(rounded) == 1 else None


def _is_rounding(reader: loop.LoopOp, producer: loop.ReduceOp) -> bool:
    """Whether `reader` only rounds the whole of `producer`'s result: a
    `loop.pointwise` over its shape whose body loads it at its own index,
    truncates, and yields."""
    if not isinstance(reader, loop.PointwiseOp) or list(reader.inputs) != [producer.result]:
        return False
    if reader.parallel_sizes != producer.parallel_sizes:
        return False
    load, truncate, end = (list(reader.body.block.ops) + [None, None, None])[:3]
    return (
        isinstance(load, loop.LoadOp)
        and tuple(load.indices.data) == reader.result_index
        and not load.index_values
        and load.mask is None
        and isinstance(truncate, arith.TruncFOp)
        and isinstance(end, loop.YieldOp)
        and end.value is truncate.result
    )


def _rounding_of(producer: loop.ReduceOp, rounded_type: Attribute) -> loop.PointwiseOp:
    """The reader of `producer` that only rounds it (the rounding a half-
    precision product is lowered with), or a new one placed after it."""
    for use in producer.result.uses:
        if _is_rounding(use.operation, producer):
            return use.operation
    result_type = producer.result.type
    assert isinstance(result_type, TensorType)
    body = Block(arg_types=[result_type])
    index = [parallel_index(i) for i in range(len(result_type.sizes))]
    load = loop.LoadOp(body.args[0], index, result_type.element_type)
    truncate = arith.TruncFOp(load.result, rounded_type)
    body.add_ops([load, truncate, loop.YieldOp(truncate.result)])
    rounding = loop.PointwiseOp([producer.result], TensorType(result_type.sizes, rounded_type), Region(body))
    rounding.result.name_hint = producer.result.name_hint
    Rewriter.insert_op(rounding, InsertPoint.after(producer))
    return rounding


def _round_at_the_source(producer: loop.ReduceOp, arguments: list[BlockArgument], rounded_type: Attribute) -> None:
    result_type = producer.result.type
    assert isinstance(result_type, TensorType)
    narrow = TensorType(result_type.sizes, rounded_type)
    rounding = _rounding_of(producer, rounded_type)
    for argument in arguments:
        if argument.block.parent_op() is rounding:
            continue
        reader = argument.block.parent_op()
        assert isinstance(reader, loop.LoopOp)
        reader.operands[argument.index] = rounding.result
        narrow_argument = Rewriter.replace_value_with_new_type(argument, narrow)
        for use in list(narrow_argument.uses):
            _load_rounded(use.operation, rounded_type)


def _load_rounded(load: loop.LoadOp, rounded_type: Attribute) -> None:
    """`load`, whose every use rounds it to `rounded_type`, made a load of
    the rounded tensor: its roundings go."""
    rounded = Rewriter.replace_value_with_new_type(load.result, rounded_type)
    for use in list(rounded.uses):
        truncate = use.operation
        truncate.results[0].replace_all_uses_with(rounded)
        truncate.detach()
        truncate.erase()
