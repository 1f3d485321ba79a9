"""
Import of ATen ops that ptensor has no op for, as `ptensor.fallback`.

Arguments are encoded as `FallbackOp` documents: tensors as
`#ptensor.operand<i>`, lists as arrays, None as `#ptensor.none`, dtypes as
their element types, bools as i1 integers, ints as i64, floats as f64,
strings (and devices, by name) as strings, size expressions (SymInts) as
`#sym.expr<...>`. Keyword arguments go in a dictionary the same way; those
that only restate defaults of value semantics (layout=strided, memory_format,
pin_memory=False) are left out.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch
from torch import fx
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.ir import Attribute, SSAValue

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor
from permalloy.dialects.sym import SymExprAttr
from permalloy.lowering.import_fx.context import ImportContext

_DEFAULT_KWARGS = {"layout": torch.strided, "pin_memory": False}
_IGNORED_KWARGS = {"memory_format"}


class FallbackOperands:
    """The tensor operands of one fallback op, each listed once."""

    def __init__(self) -> None:
        self.values: list[SSAValue] = []

    def reference(self, value: SSAValue) -> ptensor.OperandRefAttr:
        if value not in self.values:
            self.values.append(value)
        return ptensor.OperandRefAttr(self.values.index(value))


def encode(ctx: ImportContext, arg: Any, operands: FallbackOperands) -> Attribute:
    """One argument as an attribute of the fallback encoding."""
    if isinstance(arg, fx.Node):
        value = ctx.values[arg]
        if isinstance(value, SSAValue):
            return operands.reference(value)
        arg = ctx.scalar(arg)
    if isinstance(arg, list | tuple):
        return ArrayAttr([encode(ctx, a, operands) for a in arg])
    if arg is None:
        return ptensor.NoneValueAttr()
    if isinstance(arg, bool):
        return IntegerAttr(int(arg), IntegerType(1))
    if isinstance(arg, int):
        return IntegerAttr(arg, IntegerType(64))
    if isinstance(arg, float):
        return FloatAttr(arg, Float64Type())
    if isinstance(arg, sympy.Basic):
        return SymExprAttr(arg)
    if isinstance(arg, torch.dtype):
        return ctx.element_type(arg)
    if isinstance(arg, str | torch.device):
        return StringAttr(str(arg))
    if isinstance(arg, torch.layout | torch.memory_format):
        return StringAttr(str(arg).removeprefix("torch."))
    raise ctx.error(f"cannot pass an argument of type {type(arg).__name__} to torch")


def _kept_kwargs(node: fx.Node) -> dict[str, Any]:
    return {
        name: value
        for name, value in node.kwargs.items()
        if name not in _IGNORED_KWARGS
        and not (name in _DEFAULT_KWARGS and value == _DEFAULT_KWARGS[name])
    }


def _result_types(ctx: ImportContext, node: fx.Node) -> tuple[list, list[int | None], list[tuple[int, ...]]]:
    """
    The types of the tensor results, for each FX result its position among
    them (None for a result that is not a tensor: None, or a number that
    readers take from the graph's example values), and each tensor result's
    memory order (`memory_order`, empty for row-major).
    """
    value = node.meta.get("val")
    examples = list(value) if isinstance(value, list | tuple) else [value]
    types, positions, orders = [], [], []
    for example in examples:
        if isinstance(example, torch.Tensor):
            positions.append(len(types))
            types.append(ctx.type_of(example))
            orders.append(memory_order(example) or ())
        else:
            positions.append(None)
    return types, positions, orders


def _hint(value: Any) -> int | None:
    """An int, or a SymInt's example value (None where it has none)."""
    if isinstance(value, torch.SymInt):
        hint = value.node.hint
        return None if hint is None else int(hint)
    return int(value)


def memory_order(example: torch.Tensor) -> tuple[int, ...] | None:
    """
    The order, outermost first, in which `example` (a traced result, its
    sizes and strides as torch's op gives them) holds its dimensions, where
    it is dense in an order other than row-major; None where it is row-major
    or not dense. Symbolic sizes and strides are read at their example
    values: a result the op lays out otherwise at run time is copied into
    this order by the host program, so a wrong guess costs a copy, never a
    wrong value.
    """
    sizes = [_hint(s) for s in example.shape]
    strides = [_hint(s) for s in example.stride()]
    if None in sizes or None in strides or example.dim() < 2:
        return None
    # Outermost first; a size-1 dimension sharing its stride with another
    # goes inside it, where a dense layout gives it that stride.
    order = tuple(sorted(range(example.dim()), key=lambda d: (-strides[d], sizes[d] == 1, d)))  # type: ignore[operator]
    if order == tuple(range(example.dim())):
        return None
    dense = buf.dense_strides_in_order([sympy.Integer(s) for s in sizes], order)  # type: ignore[arg-type]
    return order if [int(s) for s in dense] == strides else None


NO_CONVERTER = "no converter for this op"
"""The reason of a fallback whose op no converter takes."""
DECLINED = "its converter does not take these arguments"
"""The reason of a fallback whose converter declined without saying why."""


def import_fallback(ctx: ImportContext, node: fx.Node, reason: str = NO_CONVERTER) -> Any:
    """Import a node as `ptensor.fallback`, recording `reason`, why it falls
    back; its value as a converter gives it."""
    value = torch_call(ctx, node)
    ctx.fallback_ops.append(str(node.target))
    ctx.fallback_reasons.append(reason)
    return value


def torch_call(ctx: ImportContext, node: fx.Node) -> Any:
    """A node as `ptensor.fallback`, its ATen op run by torch as the graph
    calls it, recorded as nothing else: a converter's choice for a library
    op best called whole (fused attention's training variants, whose extra
    results only the same library's backward reads). Its value as a
    converter gives it."""
    operands = FallbackOperands()
    args = [encode(ctx, a, operands) for a in node.args]
    kwargs = _kept_kwargs(node)
    kwargs_attr = (
        DictionaryAttr({k: encode(ctx, v, operands) for k, v in kwargs.items()})
        if kwargs
        else None
    )
    types, positions, orders = _result_types(ctx, node)
    kept_orders = orders if any(orders) else None
    op = ptensor.FallbackOp(str(node.target), operands.values, args, types, kwargs_attr, kept_orders)
    ctx.block.add_op(op)
    results = [None if p is None else op.results[p] for p in positions]
    if isinstance(node.meta.get("val"), list | tuple):
        return tuple(results)
    return results[0]
