"""Converters of elementwise ATen ops: unary, binary, compare, where, cast."""

from __future__ import annotations

import math

import torch
from torch import fx
from xdsl.ir import BlockArgument, SSAValue

from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import (
    BinaryKind,
    ComparePredicate,
    UnaryKind,
)
from permalloy.lowering.import_fx.common import (
    Converter,
    argument,
    promoted_dtype,
)
from permalloy.lowering.import_fx.context import ImportContext

aten = torch.ops.aten
_ROUNDING = (UnaryKind.FLOOR, UnaryKind.CEIL, UnaryKind.ROUND, UnaryKind.TRUNC)


def unary(kind: UnaryKind) -> Converter:
    """An op that applies `kind` to its one tensor argument."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        source = ctx.tensor(node.args[0])
        result = ctx.result_type(node)
        if kind in _ROUNDING and not ptensor.is_float(result.element_type):
            return ctx.cast(source, result.element_type)
        if kind in ptensor.FLOAT_ONLY_UNARY:
            source = ctx.cast(source, result.element_type)
        return ctx.emit(ptensor.UnaryOp(kind, source, result))

    return convert


def binary_values(
    ctx: ImportContext, node: fx.Node, kind: BinaryKind, lhs, rhs, alpha=1
) -> SSAValue:
    """
    `kind(lhs, alpha * rhs)` of two arguments (tensors or numbers), computed
    in the node's result dtype (in i1 for the logical kinds).
    """
    result = ctx.result_type(node)
    if _number_in_float32(ctx, kind, rhs, result):
        wide = result.with_element_type(ctx.element_type(torch.float32))
        value = _binary_in(ctx, kind, lhs, rhs, alpha, wide)
        return ctx.cast(value, result.element_type)
    return _binary_in(ctx, kind, lhs, rhs, alpha, result)


_FLOAT32_NUMBER_KINDS = (BinaryKind.MUL, BinaryKind.DIV)


def _number_in_float32(ctx: ImportContext, kind: BinaryKind, rhs, result) -> bool:
    """
    Whether torch multiplies or divides a float16/bfloat16 tensor by a Python
    number `rhs` in float32, reading the number in float32: its CPU kernels of
    `mul` and `div` do, where every other binary op rounds the number to the
    tensor's dtype first (`x + 0.1` adds float16's 0.0999755859375).
    """
    return (
        kind in _FLOAT32_NUMBER_KINDS
        and not _is_tensor(ctx, rhs)
        and result.element_type in (ctx.element_type(torch.float16), ctx.element_type(torch.bfloat16))
    )


def _is_tensor(ctx: ImportContext, arg) -> bool:
    return isinstance(arg, fx.Node) and isinstance(ctx.values.get(arg), SSAValue)


def _binary_in(ctx: ImportContext, kind: BinaryKind, lhs, rhs, alpha, result) -> SSAValue:
    """`kind(lhs, alpha * rhs)` computed in `result`'s element type."""
    operand_type = result.element_type
    if kind in ptensor.BOOL_ONLY_BINARY:
        operand_type = ctx.element_type(torch.bool)
    lhs_value = ctx.operand(lhs, operand_type)
    rhs_value = ctx.operand(rhs, operand_type)
    if alpha != 1:
        scale = ctx.full(ctx.scalar(alpha), operand_type)
        rhs_type = ptensor.tensor_type(rhs_value)
        rhs_value = ctx.emit(
            ptensor.BinaryOp(BinaryKind.MUL, rhs_value, scale, rhs_type)
        )
    lhs_value = ctx.conform(lhs_value, result.sizes)
    rhs_value = ctx.conform(rhs_value, result.sizes)
    return ctx.emit(ptensor.BinaryOp(kind, lhs_value, rhs_value, result))


def binary(kind: BinaryKind) -> Converter:
    """An op `kind(self, other)`; `alpha` scales `other` (add, sub)."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
        result = ctx.result_type(node)
        if kind in ptensor.FLOAT_ONLY_BINARY and not ptensor.is_float(
            result.element_type
        ):
            return ctx.decline(f"unsupported dtype {result.element_type}: {kind.value} takes floats")
        alpha = node.kwargs.get("alpha", 1)
        return binary_values(ctx, node, kind, node.args[0], node.args[1], alpha)

    return convert


def compare(predicate: ComparePredicate) -> Converter:
    """A comparison, in torch's promoted dtype of its operands, giving i1."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        lhs, rhs = node.args[0], node.args[1]
        element_type = ctx.element_type(promoted_dtype(ctx, lhs, rhs))
        result = ctx.result_type(node)
        return ctx.emit(
            ptensor.CompareOp(
                predicate,
                ctx.operand(lhs, element_type),
                ctx.operand(rhs, element_type),
                result.with_element_type(ctx.element_type(torch.bool)),
            )
        )

    return convert


def where(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """`where(condition, self, other)`, with numbers as 0-d tensors."""
    condition, on_true, on_false = node.args[:3]
    return _select(ctx, node, condition, on_true, on_false)


def masked_fill(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """`masked_fill(self, mask, value)` is `where(mask, value, self)`."""
    source, mask, value = node.args[:3]
    return _select(ctx, node, mask, value, source)


def _select(ctx: ImportContext, node: fx.Node, condition, on_true, on_false):
    result = ctx.result_type(node)
    return ctx.emit(
        ptensor.WhereOp(
            ctx.operand(condition, ctx.element_type(torch.bool)),
            ctx.operand(on_true, result.element_type),
            ctx.operand(on_false, result.element_type),
            result,
        )
    )


def relu(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """`relu(x)` is `maximum(x, 0)`."""
    return binary_values(ctx, node, BinaryKind.MAXIMUM, node.args[0], 0)


def clamp(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """`clamp(x, min, max)` is `minimum(maximum(x, min), max)`."""
    result = ctx.result_type(node)
    value = ctx.operand(node.args[0], result.element_type)
    for kind, name, index in ((BinaryKind.MAXIMUM, "min", 1), (BinaryKind.MINIMUM, "max", 2)):
        bound = argument(node, index, name)
        if bound is not None:
            bound_value = ctx.operand(bound, result.element_type)
            value = ctx.emit(ptensor.BinaryOp(kind, value, bound_value, result))
    return value


def clamp_one_side(kind: BinaryKind) -> Converter:
    """clamp_min / clamp_max: one `maximum` or `minimum`."""

    def convert(ctx: ImportContext, node: fx.Node) -> SSAValue:
        return binary_values(ctx, node, kind, node.args[0], node.args[1])

    return convert


def cast(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """Type conversions (`_to_copy`, `convert_element_type`) to the result
    dtype. A copy to another device is a cast too when its source is computed
    from constants alone (`torch.tensor(2.0).to(x.device)`), and the
    destination is where the graph's inputs are: the compiled program
    computes it there; any other copy between devices falls back."""
    device = node.kwargs.get("device")
    source_value = ctx.meta(node.args[0])
    source = ctx.tensor(node.args[0])
    if device is not None and torch.device(device) != source_value.device:
        if not (_on_input_device(node, torch.device(device)) and _computed_from_constants(source)):
            return ctx.decline(f"a copy from {source_value.device} to {device}")
    return ctx.cast(source, ctx.result_type(node).element_type)


def _on_input_device(node: fx.Node, device: torch.device) -> bool:
    """Whether `device` is the device of a tensor input of `node`'s graph."""
    for placeholder in node.graph.find_nodes(op="placeholder"):
        example = placeholder.meta.get("val")
        if isinstance(example, torch.Tensor):
            return example.device == device or (
                example.device.type == device.type and device.index is None
            )
    return False


def _computed_from_constants(value: SSAValue) -> bool:
    """Whether no function argument flows into `value`."""
    pending, seen = [value], set()
    while pending:
        current = pending.pop()
        if isinstance(current, BlockArgument):
            return False
        if current in seen:
            continue
        seen.add(current)
        pending.extend(current.owner.operands)
    return True


def identity(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """Ops that only copy or alias their input (clone, alias, detach)."""
    return ctx.tensor(node.args[0])


def copy(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """`copy(self, src)`: `src` broadcast to `self`'s shape, in `self`'s dtype."""
    result = ctx.result_type(node)
    source = ctx.cast(ctx.tensor(node.args[1]), result.element_type)
    if ptensor.shapes_equal(ptensor.tensor_type(source).sizes, result.sizes):
        return source
    return ctx.emit(ptensor.ExpandOp(source, result))


def divide_with_mode(ctx: ImportContext, node: fx.Node) -> SSAValue:
    """div with `rounding_mode` None (true), 'trunc' or 'floor'."""
    mode = node.kwargs.get("rounding_mode", argument(node, 2, "rounding_mode"))
    lhs, rhs = node.args[0], node.args[1]
    if mode is None:
        return binary_values(ctx, node, BinaryKind.DIV, lhs, rhs)
    if mode == "floor":
        return binary_values(ctx, node, BinaryKind.FLOORDIV, lhs, rhs)
    quotient = binary_values(ctx, node, BinaryKind.DIV, lhs, rhs)
    result = ctx.result_type(node)
    if not ptensor.is_float(result.element_type):
        return quotient
    return ctx.emit(ptensor.UnaryOp(UnaryKind.TRUNC, quotient, result))


_ROOT_EXPONENTS = {0.5: UnaryKind.SQRT, -0.5: UnaryKind.RSQRT}
"""Exponents eager computes as a root (which differs from `pow` at -0 and -inf)."""


def power(ctx: ImportContext, node: fx.Node) -> SSAValue | None:
    """pow: `x * x` for exponent 2, sqrt for 0.5, rsqrt for -0.5, repeated products for ints
    (as eager's kernel special-cases them); other exponents, infinite and NaN
    ones included, are `pow` itself."""
    base, exponent = node.args[0], node.args[1]
    result = ctx.result_type(node)
    if isinstance(exponent, int | float) and not isinstance(exponent, bool):
        if exponent == 1:
            return ctx.operand(base, result.element_type)
        root = _ROOT_EXPONENTS.get(exponent)
        if root is not None and ptensor.is_float(result.element_type):
            value = ctx.operand(base, result.element_type)
            return ctx.emit(ptensor.UnaryOp(root, value, result))
        if math.isfinite(exponent) and exponent == int(exponent) and 2 <= exponent <= 8:
            return _repeated_product(ctx, node, base, int(exponent))
    if not ptensor.is_float(result.element_type):
        return ctx.decline(f"unsupported dtype {result.element_type}: this power takes floats")
    return binary_values(ctx, node, BinaryKind.POW, base, exponent)


def _repeated_product(ctx, node, base, exponent: int) -> SSAValue:
    result = ctx.result_type(node)
    factor = ctx.operand(base, result.element_type)
    value = factor
    for _ in range(exponent - 1):
        value = ctx.emit(ptensor.BinaryOp(BinaryKind.MUL, value, factor, result))
    return value


def _unary_table() -> dict:
    names = {kind: kind.value for kind in UnaryKind}
    return {getattr(aten, name).default: unary(kind) for kind, name in names.items()}


_BINARY_NAMES = {
    BinaryKind.ADD: ("add",),
    BinaryKind.SUB: ("sub",),
    BinaryKind.MUL: ("mul",),
    BinaryKind.DIV: ("div", "true_divide"),
    BinaryKind.REMAINDER: ("remainder",),
    BinaryKind.FMOD: ("fmod",),
    BinaryKind.MAXIMUM: ("maximum",),
    BinaryKind.MINIMUM: ("minimum",),
    BinaryKind.ATAN2: ("atan2",),
    BinaryKind.COPYSIGN: ("copysign",),
    BinaryKind.LOGICAL_AND: ("logical_and",),
    BinaryKind.LOGICAL_OR: ("logical_or",),
    BinaryKind.LOGICAL_XOR: ("logical_xor",),
    BinaryKind.BITWISE_AND: ("bitwise_and", "__and__"),
    BinaryKind.BITWISE_OR: ("bitwise_or", "__or__"),
    BinaryKind.BITWISE_XOR: ("bitwise_xor", "__xor__"),
    BinaryKind.SHIFT_LEFT: ("bitwise_left_shift", "__lshift__"),
    BinaryKind.SHIFT_RIGHT: ("bitwise_right_shift", "__rshift__"),
}


def _binary_table() -> dict:
    return {
        getattr(aten, name): binary(kind)
        for kind, names in _BINARY_NAMES.items()
        for name in names
    }


def _compare_table() -> dict:
    return {getattr(aten, p.value): compare(p) for p in ComparePredicate}


CONVERTERS: dict = {
    **_unary_table(),
    **_binary_table(),
    **_compare_table(),
    aten.div.Tensor_mode: divide_with_mode,
    aten.div.Scalar_mode: divide_with_mode,
    aten.pow: power,
    aten.where.self: where,
    aten.where.ScalarSelf: where,
    aten.where.ScalarOther: where,
    aten.where.Scalar: where,
    aten.masked_fill: masked_fill,
    aten.relu: relu,
    aten.clamp: clamp,
    aten.clamp_min: clamp_one_side(BinaryKind.MAXIMUM),
    aten.clamp_max: clamp_one_side(BinaryKind.MINIMUM),
    aten._to_copy: cast,
    aten.to.dtype: cast,
    torch.ops.prims.convert_element_type: cast,
    aten.clone: identity,
    aten.alias: identity,
    aten.detach: identity,
    aten.lift_fresh_copy: identity,
    aten.copy: copy,
}
"""Converters by ATen overload packet (all overloads) or overload."""
