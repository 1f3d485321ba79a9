"""
The elementwise ops: `ptensor.unary`, `ptensor.binary` and `ptensor.compare`
(a function or predicate chosen by a kind attribute), `ptensor.where` and
`ptensor.cast`. Operands broadcast numpy-style; `binary` and `compare` take
operands of one dtype, type promotion being explicit casts.
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.pattern_rewriter import RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure

from permalloy.dialects.ptensor.checks import (
    broadcast_or_fail,
    check_same_element_type,
    check_shape,
    require,
)
from permalloy.dialects.ptensor.kinds import (
    BOOL_ONLY_BINARY,
    BOOL_RESULT_UNARY,
    FLOAT_ONLY_BINARY,
    FLOAT_ONLY_UNARY,
    INT_ONLY_BINARY,
    BinaryKind,
    BinaryKindAttr,
    ComparePredicate,
    ComparePredicateAttr,
    UnaryKind,
    UnaryKindAttr,
)
from permalloy.dialects.ptensor.types import TensorType, is_bool, is_float, tensor_type


class ElementwiseCanonicalization(HasCanonicalizationPatternsTrait):
    """The canonicalization patterns of `unary`, `binary` and `cast`: a cast
    that changes nothing disappears, size arithmetic on constants folds
    (`canonicalization.py`)."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from permalloy.dialects.ptensor.canonicalization import (
            EraseIdentityCast,
            FoldBinaryOfFulls,
            FoldCastOfFull,
            FoldNegOfFull,
        )

        return (EraseIdentityCast(), FoldCastOfFull(), FoldNegOfFull(), FoldBinaryOfFulls())


@irdl_op_definition
class UnaryOp(IRDLOperation):
    """
    An elementwise function of one tensor.

    `%y = ptensor.unary exp %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], f32>`.
    Transcendental kinds take floats; `isnan` and `isinf` give i1;
    `logical_not` takes any dtype and gives i1.
    """

    name = "ptensor.unary"

    kind = prop_def(UnaryKindAttr)
    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ElementwiseCanonicalization())

    assembly_format = "$kind $input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: UnaryKind, input: SSAValue, result_type: TensorType):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"kind": UnaryKindAttr(kind)},
        )

    def verify_(self) -> None:
        source, result = tensor_type(self.input), tensor_type(self.result)
        kind = self.kind.data
        check_shape(self.name, result, source.sizes)
        if kind in FLOAT_ONLY_UNARY:
            require(
                is_float(source.element_type),
                f"ptensor.unary {kind} takes a float tensor, got {source.element_type}",
            )
        if kind == UnaryKind.BITWISE_NOT:
            require(
                not is_float(source.element_type),
                "ptensor.unary bitwise_not takes an integer or bool tensor",
            )
        if kind in BOOL_RESULT_UNARY or kind == UnaryKind.LOGICAL_NOT:
            require(
                is_bool(result.element_type),
                f"ptensor.unary {kind} gives an i1 tensor, got {result.element_type}",
            )
        else:
            check_same_element_type(self.name, source, result)


@irdl_op_definition
class BinaryOp(IRDLOperation):
    """
    An elementwise function of two tensors of one dtype, with broadcasting.

    `%z = ptensor.binary add %x, %y : !ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[8], f32> -> !ptensor.tensor<[4, 8], f32>`.
    `div` is true division for floats and truncating division for integers;
    `floordiv` rounds down; `remainder` has the sign of the divisor (Python's %),
    `fmod` that of the dividend.
    """

    name = "ptensor.binary"

    kind = prop_def(BinaryKindAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ElementwiseCanonicalization())

    assembly_format = (
        "$kind $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` "
        "type($result)"
    )

    def __init__(
        self, kind: BinaryKind, lhs: SSAValue, rhs: SSAValue, result_type: TensorType
    ):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"kind": BinaryKindAttr(kind)},
        )

    def verify_(self) -> None:
        lhs, rhs, result = (
            tensor_type(self.lhs),
            tensor_type(self.rhs),
            tensor_type(self.result),
        )
        kind = self.kind.data
        check_same_element_type(self.name, lhs, rhs, result)
        check_shape(self.name, result, broadcast_or_fail(lhs, rhs))
        dtype = lhs.element_type
        if kind in FLOAT_ONLY_BINARY:
            require(is_float(dtype), f"ptensor.binary {kind} takes floats, got {dtype}")
        if kind in INT_ONLY_BINARY:
            require(
                not is_float(dtype),
                f"ptensor.binary {kind} takes integers or bools, got {dtype}",
            )
        if kind in BOOL_ONLY_BINARY:
            require(is_bool(dtype), f"ptensor.binary {kind} takes i1, got {dtype}")


@irdl_op_definition
class CompareOp(IRDLOperation):
    """
    An elementwise comparison of two tensors of one dtype, giving i1, with
    broadcasting.

    `%m = ptensor.compare lt %x, %y : !ptensor.tensor<[4], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[4], i1>`.
    """

    name = "ptensor.compare"

    predicate = prop_def(ComparePredicateAttr)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$predicate $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` "
        "type($result)"
    )

    def __init__(
        self,
        predicate: ComparePredicate,
        lhs: SSAValue,
        rhs: SSAValue,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"predicate": ComparePredicateAttr(predicate)},
        )

    def verify_(self) -> None:
        lhs, rhs, result = (
            tensor_type(self.lhs),
            tensor_type(self.rhs),
            tensor_type(self.result),
        )
        check_same_element_type(self.name, lhs, rhs)
        require(
            is_bool(result.element_type),
            f"ptensor.compare gives an i1 tensor, got {result.element_type}",
        )
        check_shape(self.name, result, broadcast_or_fail(lhs, rhs))


@irdl_op_definition
class WhereOp(IRDLOperation):
    """
    Elementwise choice: `condition ? on_true : on_false`, with broadcasting.

    `%r = ptensor.where %c, %a, %b : !ptensor.tensor<[4], i1>, !ptensor.tensor<[4], f32>, !ptensor.tensor<[], f32> -> !ptensor.tensor<[4], f32>`.
    """

    name = "ptensor.where"

    condition = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = (
        "$condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,` "
        "type($on_true) `,` type($on_false) `->` type($result)"
    )

    def __init__(
        self,
        condition: SSAValue,
        on_true: SSAValue,
        on_false: SSAValue,
        result_type: TensorType,
    ):
        super().__init__(
            operands=[condition, on_true, on_false], result_types=[result_type]
        )

    def verify_(self) -> None:
        condition, on_true, on_false, result = (
            tensor_type(v)
            for v in (self.condition, self.on_true, self.on_false, self.result)
        )
        require(
            is_bool(condition.element_type),
            f"ptensor.where: the condition must be i1, got {condition.element_type}",
        )
        check_same_element_type(self.name, on_true, on_false, result)
        check_shape(self.name, result, broadcast_or_fail(condition, on_true, on_false))


@irdl_op_definition
class CastOp(IRDLOperation):
    """
    Elementwise conversion to another dtype, with torch's rules (float to int
    truncates towards zero; anything to i1 is `!= 0`).

    `%y = ptensor.cast %x : !ptensor.tensor<[4], f32> -> !ptensor.tensor<[4], bf16>`.
    """

    name = "ptensor.cast"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ElementwiseCanonicalization())

    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        check_shape(self.name, tensor_type(self.result), tensor_type(self.input).sizes)


ELEMENTWISE_OPS: tuple[type[IRDLOperation], ...] = (
    UnaryOp,
    BinaryOp,
    CompareOp,
    WhereOp,
    CastOp,
)
