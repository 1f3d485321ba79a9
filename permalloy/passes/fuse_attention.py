"""The `fuse-attention` pass."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import sympy
from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float16Type, FloatAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from permalloy.dialects import ptensor as pt
from permalloy.passes import check_option

KERNELS = ("torch", "triton", "measured")
PRECISIONS = ("all", "half")
"""What may run a fused attention."""


def _single_use(value: SSAValue) -> bool:
    return value.uses.get_length() == 1


def _scalar_constant(value: SSAValue) -> float | None:
    """The value of a `ptensor.full` of one element, or None."""
    owner = value.owner
    if not isinstance(owner, pt.FullOp) or not isinstance(owner.value, FloatAttr):
        return None
    if any(size != 1 for size in pt.tensor_type(value).sizes):
        return None
    return float(owner.value.value.data)


def _float_cast_input(value: SSAValue) -> SSAValue | None:
    """The input of `value = cast(x)` between float types, or None."""
    owner = value.owner
    if not isinstance(owner, pt.CastOp):
        return None
    if pt.is_float(pt.tensor_type(owner.input).element_type) and pt.is_float(pt.tensor_type(value).element_type):
        return owner.input
    return None


def _last_dim_reduction(value: SSAValue, kind: pt.ReduceKind) -> SSAValue | None:
    """The input of `value = reduce kind(x) dims [last] keepdim`, or None."""
    owner = value.owner
    if not isinstance(owner, pt.ReduceOp) or owner.kind.data != kind or owner.keepdim is None:
        return None
    rank = pt.tensor_type(owner.input).rank
    if tuple(d % rank for d in owner.dims.data) != (rank - 1,):
        return None
    return owner.input


def _softmax_input(probabilities: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """`x` where `probabilities` is the softmax of `x` over its last dimension
    as decompositions write it, `exp(x - max(x)) / sum(exp(x - max(x)))`, with
    the ops that compute it from `x`; None otherwise."""
    divide = probabilities.owner
    if not isinstance(divide, pt.BinaryOp) or divide.kind.data != pt.BinaryKind.DIV:
        return None
    exponentials, total = divide.lhs, divide.rhs
    total_op = total.owner
    if _last_dim_reduction(total, pt.ReduceKind.SUM) is not exponentials or not _single_use(total):
        return None
    exp = exponentials.owner
    if not isinstance(exp, pt.UnaryOp) or exp.kind.data != pt.UnaryKind.EXP or exponentials.uses.get_length() != 2:
        return None
    shifted = exp.input
    subtract = shifted.owner
    if not isinstance(subtract, pt.BinaryOp) or subtract.kind.data != pt.BinaryKind.SUB or not _single_use(shifted):
        return None
    scores, maximum = subtract.lhs, subtract.rhs
    if _last_dim_reduction(maximum, pt.ReduceKind.MAX) is not scores or not _single_use(maximum):
        return None
    if scores.uses.get_length() != 2:
        return None
    assert isinstance(total_op, Operation) and isinstance(maximum.owner, Operation)
    return scores, [divide, total_op, exp, subtract, maximum.owner]


@dataclass
class ScoreTerms:
    """What a softmax's input adds to the product `q @ k^T`: its scale, the
    float tensors added to it, and the conditions under which it is -inf."""

    product: pt.BatchMatmulOp
    scale: float = 1.0
    biases: list[SSAValue] = field(default_factory=list)
    dropped: list[tuple[SSAValue, bool]] = field(default_factory=list)
    """(condition, whether true drops) of each `where(..., -inf, ...)`."""
    ops: list[Operation] = field(default_factory=list)
    """The ops between the softmax's input and the product, top down, each
    followed by the constant it takes (which the rewrite erases with it)."""


def _leads_to_product(value: SSAValue, depth: int = 8) -> bool:
    """Whether `value` is computed from a `bmm` through the ops a score chain
    allows (the test that picks which operand of an add continues it)."""
    owner = value.owner
    if isinstance(owner, pt.BatchMatmulOp):
        return True
    if depth == 0:
        return False
    if isinstance(owner, pt.ReshapeOp | pt.CastOp):
        return _leads_to_product(owner.input, depth - 1)
    if isinstance(owner, pt.WhereOp):
        return any(_leads_to_product(v, depth - 1) for v in (owner.on_true, owner.on_false))
    if isinstance(owner, pt.BinaryOp) and owner.kind.data in (pt.BinaryKind.ADD, pt.BinaryKind.MUL, pt.BinaryKind.DIV):
        operands = (owner.lhs,) if owner.kind.data == pt.BinaryKind.DIV else (owner.lhs, owner.rhs)
        return any(_leads_to_product(v, depth - 1) for v in operands)
    return False


def _score_terms(scores: SSAValue) -> ScoreTerms | None:
    """Peel `scores` down to a `bmm`: adds of float tensors, `where`s that
    give -inf, and (next to the product) a multiplication or division by a
    constant. None where anything else is in the way."""
    value = scores
    biases: list[SSAValue] = []
    dropped: list[tuple[SSAValue, bool]] = []
    ops: list[Operation] = []
    scale = 1.0
    reshaped = scaled = False
    while True:
        owner = value.owner
        if value is not scores and not _single_use(value):
            return None
        if isinstance(owner, pt.BatchMatmulOp):
            return ScoreTerms(owner, scale, biases, dropped, ops)
        if not isinstance(owner, Operation):
            return None
        ops.append(owner)
        if isinstance(owner, pt.ReshapeOp):
            reshaped, value = True, owner.input
            continue
        if _float_cast_input(value) is not None:
            value = owner.operands[0]
            continue
        if scaled:
            # A scale applies to the product alone: only views and casts may come between.
            return None
        if reshaped and not isinstance(owner, pt.BinaryOp):
            return None
        if isinstance(owner, pt.WhereOp):
            if _scalar_constant(owner.on_true) == -math.inf:
                dropped.append((owner.condition, True))
                value, constant_value = owner.on_false, owner.on_true
            elif _scalar_constant(owner.on_false) == -math.inf:
                dropped.append((owner.condition, False))
                value, constant_value = owner.on_true, owner.on_false
            else:
                return None
            ops.append(constant_value.owner)
            continue
        if not isinstance(owner, pt.BinaryOp):
            return None
        kind = owner.kind.data
        if kind == pt.BinaryKind.ADD:
            if reshaped:
                # Biases apply at the softmax's shape only.
                return None
            if _leads_to_product(owner.lhs):
                value, bias = owner.lhs, owner.rhs
            else:
                value, bias = owner.rhs, owner.lhs
            if not pt.is_float(pt.tensor_type(bias).element_type):
                return None
            biases.append(bias)
            continue
        constant = _scalar_constant(owner.rhs)
        if constant is None and kind == pt.BinaryKind.MUL:
            constant, value, constant_value = _scalar_constant(owner.lhs), owner.rhs, owner.lhs
        else:
            value, constant_value = owner.lhs, owner.rhs
        if constant is None or constant == 0.0 or not math.isfinite(constant):
            return None
        if kind == pt.BinaryKind.MUL:
            scale = constant
        elif kind == pt.BinaryKind.DIV:
            scale = 1.0 / constant
        else:
            return None
        scaled = True
        ops.append(constant_value.owner)


def _batch_of(value: SSAValue) -> tuple[SSAValue, list[sympy.Expr]]:
    """`value` and the sizes before its last two, looking through a reshape
    that only splits its batch dimension."""
    owner = value.owner
    sizes = list(pt.tensor_type(value).sizes)
    if isinstance(owner, pt.ReshapeOp):
        source = list(pt.tensor_type(owner.input).sizes)
        if len(source) >= 3 and pt.shapes_equal(source[-2:], sizes[-2:]):
            return owner.input, source[:-2]
    return value, sizes[:-2]


@dataclass(frozen=True)
class FuseExplicitAttention(RewritePattern):
    """`bmm(softmax(q @ k^T * scale + bias, -1), v)` becomes one
    `ptensor.attention` with `bias` (and any -inf masking) as its mask."""

    kernel: str = "torch"
    half_only: bool = False
    """Whether only float16 and bfloat16 attention is fused."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: pt.BatchMatmulOp, rewriter: PatternRewriter) -> None:
        probabilities, value = op.lhs, op.rhs
        if not _single_use(probabilities):
            return
        if self.half_only and not isinstance(pt.tensor_type(op.result).element_type, Float16Type | BFloat16Type):
            return
        softmax_of, batch = _batch_of(probabilities)
        if softmax_of is not probabilities and not _single_use(softmax_of):
            return
        # a half-precision softmax is computed in float32 between two casts
        widened = _float_cast_input(softmax_of)
        found = _softmax_input(softmax_of if widened is None else widened)
        if found is None or (widened is not None and not _single_use(widened)):
            return
        scores, softmax_ops = found
        if widened is not None:
            assert isinstance(softmax_of.owner, Operation)
            softmax_ops.insert(0, softmax_of.owner)
        terms = _score_terms(scores)
        # the product is read once, or twice (max and shift) as the softmax's input itself
        if terms is None or (terms.product.result is not scores and not _single_use(terms.product.result)):
            return
        scores_type = pt.tensor_type(softmax_of)
        if not _fits(terms, value, scores_type, batch, pt.tensor_type(op.result).element_type):
            return
        mask_shape = _mask_shape(terms, scores_type)
        if mask_shape is None:
            return
        new_ops, mask = _mask(terms, mask_shape, scores_type.element_type)
        # torch's fused kernels take 4-d tensors: a unit batch before the heads
        batch = batch if len(batch) >= 2 else [sympy.Integer(1), *batch]
        query, key, value = _split_operands(terms.product, value, batch, new_ops)
        rows, value_features = scores_type.sizes[-2], pt.tensor_type(value).sizes[-1]
        result_type = pt.TensorType([*batch, rows, value_features], scores_type.element_type)
        attention = pt.AttentionOp(query, key, value, mask, False, terms.scale, result_type)
        if self.kernel != "torch":
            attention.attributes[pt.AttentionOp.KERNEL] = StringAttr(self.kernel)
        new_ops.append(attention)
        result = _reshaped(attention.result, list(pt.tensor_type(op.result).sizes), new_ops)
        rewriter.replace(op, new_ops, [result])
        _reshape_readers_directly(result, attention.result, rewriter)
        reshape = [probabilities.owner] if softmax_of is not probabilities else []
        for dead in [*reshape, *softmax_ops, *terms.ops, terms.product]:
            assert isinstance(dead, Operation)
            if dead.parent is not None and all(r.uses.get_length() == 0 for r in dead.results):
                rewriter.erase(dead)


def _fits(
    terms: ScoreTerms, value: SSAValue, scores: pt.TensorType, batch: list[sympy.Expr], element_type: Attribute
) -> bool:
    """Whether the products, the value, the scores and the biases share one
    element type, and the scores' batch, rows and keys are the products'."""
    query, key_t = terms.product.lhs, terms.product.rhs
    values = (query, key_t, value, *terms.biases)
    if scores.element_type != element_type or any(pt.tensor_type(v).element_type != element_type for v in values):
        return False
    product_batch, rows, _ = pt.tensor_type(query).sizes
    keys = pt.tensor_type(key_t).sizes[2]
    return (
        pt.sizes_equal(sympy.Mul(*batch), product_batch)
        and pt.sizes_equal(scores.sizes[-2], rows)
        and pt.sizes_equal(scores.sizes[-1], keys)
    )


def _mask_shape(terms: ScoreTerms, scores: pt.TensorType) -> tuple[sympy.Expr, ...] | None:
    """The shape the biases and conditions broadcast to, where that
    broadcasts to the scores' shape; else None."""
    try:
        shape = pt.broadcast_shapes(
            *(pt.tensor_type(b).sizes for b in terms.biases),
            *(pt.tensor_type(c).sizes for c, _ in terms.dropped),
        )
        fits = len(shape) <= scores.rank and pt.shapes_equal(pt.broadcast_shapes(shape, scores.sizes), scores.sizes)
    except ValueError:
        return None
    return shape if fits else None


def _split_operands(
    product: pt.BatchMatmulOp, value: SSAValue, batch: list[sympy.Expr], new_ops: list[Operation]
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """The query, key and value with `batch` split out of the products'
    merged batch, the key transposed back to `[..., keys, features]`."""
    query, key_t = product.lhs, product.rhs
    _, rows, features = pt.tensor_type(query).sizes
    keys = pt.tensor_type(key_t).sizes[2]
    element_type = pt.tensor_type(query).element_type
    query_split = _reshaped(query, [*batch, rows, features], new_ops)
    key_split_t = _reshaped(key_t, [*batch, features, keys], new_ops)
    rank = len(batch) + 2
    swap = [*range(rank - 2), rank - 1, rank - 2]
    key_split = pt.PermuteOp(key_split_t, swap, pt.TensorType([*batch, keys, features], element_type))
    new_ops.append(key_split)
    value_split = _reshaped(value, [*batch, keys, pt.tensor_type(value).sizes[2]], new_ops)
    return query_split, key_split.result, value_split


def _reshape_readers_directly(merged: SSAValue, attention: SSAValue, rewriter: PatternRewriter) -> None:
    """Readers that reshape `merged` (the attention with its batch merged, as
    the product had it) reshape `attention` itself, as a 4-d `matmul`'s view
    back does: the round trip through the merged batch is not a view of the
    attention's layout, and would copy."""
    if merged is attention:
        return
    for use in list(merged.uses):
        reader = use.operation
        if not isinstance(reader, pt.ReshapeOp):
            continue
        if pt.shapes_equal(pt.tensor_type(reader.result).sizes, pt.tensor_type(attention).sizes):
            rewriter.replace(reader, [], [attention])
        else:
            rewriter.replace(reader, pt.ReshapeOp(attention, pt.tensor_type(reader.result)))
    if merged.uses.get_length() == 0 and isinstance(merged.owner, Operation):
        rewriter.erase(merged.owner)


def _reshaped(value: SSAValue, sizes: list[sympy.Expr], new_ops: list[Operation]) -> SSAValue:
    """`value` as a tensor of `sizes` (itself where it has them, the input of
    a reshape where that has them)."""
    tensor = pt.tensor_type(value)
    if pt.shapes_equal(tensor.sizes, sizes):
        return value
    if isinstance(value.owner, pt.ReshapeOp):
        return _reshaped(value.owner.input, sizes, new_ops)
    reshape = pt.ReshapeOp(value, pt.TensorType(sizes, tensor.element_type))
    new_ops.append(reshape)
    return reshape.result


def _combined(kind: pt.BinaryKind, lhs: SSAValue, rhs: SSAValue, ops: list[Operation]) -> SSAValue:
    """`lhs kind rhs`, of their broadcast shape, appended to `ops`."""
    lhs_type = pt.tensor_type(lhs)
    shape = pt.broadcast_shapes(lhs_type.sizes, pt.tensor_type(rhs).sizes)
    op = pt.BinaryOp(kind, lhs, rhs, pt.TensorType(shape, lhs_type.element_type))
    ops.append(op)
    return op.result


def _mask(
    terms: ScoreTerms, shape: tuple[sympy.Expr, ...], element_type: Attribute
) -> tuple[list[Operation], SSAValue | None]:
    """The attention's mask, of `shape`: the biases' sum, -inf where a
    condition drops a score; a boolean mask (true keeps) where there is no
    bias."""
    ops: list[Operation] = []
    keep: SSAValue | None = None
    for condition, drops in terms.dropped:
        kept = condition
        if drops:
            negation = pt.UnaryOp(pt.UnaryKind.LOGICAL_NOT, condition, pt.tensor_type(condition))
            ops.append(negation)
            kept = negation.result
        keep = kept if keep is None else _combined(pt.BinaryKind.LOGICAL_AND, keep, kept, ops)
    bias: SSAValue | None = None
    for term in terms.biases:
        bias = term if bias is None else _combined(pt.BinaryKind.ADD, bias, term, ops)
    if bias is None:
        return ops, keep
    if keep is not None:
        minus_infinity = pt.FullOp(-math.inf, pt.TensorType([], element_type))
        masked = pt.WhereOp(keep, bias, minus_infinity.result, pt.TensorType(shape, element_type))
        ops.extend([minus_infinity, masked])
        bias = masked.result
    return ops, bias


@dataclass(frozen=True)
class FuseAttentionPass(ModulePass):
    """
    Recognizes attention written as its math, a softmax between two batched
    matrix products, and makes it one `ptensor.attention`, which runs torch's
    fused attention kernels instead of writing the scores to memory and
    reading them back three times.

    The softmax's input may be the product scaled by a constant (multiplied
    or divided), plus any float tensors (a relative position bias, an additive
    padding mask), with `where(mask, -inf, ...)` masking (a causal mask
    written as math): the biases' sum becomes the attention's additive mask,
    -inf where a condition drops a score, or a boolean mask where there is no
    bias. The products' batch dimension, merged from batch and heads as
    `torch.matmul` does, is split again where a reshape shows how. Nothing
    else may read the scores or the probabilities (in a training graph the
    probabilities are saved for the backward, and the pattern stays).

    Before (`bias : [4, 8, 8]`, heads by queries by keys):
    ```
    %s = ptensor.bmm %q, %kt : ... -> !ptensor.tensor<[8, 8, 8], f32>
    %s4 = ptensor.reshape %s : ... -> !ptensor.tensor<[2, 4, 8, 8], f32>
    %x = ptensor.binary add %s4, %bias : ...
    %m = ptensor.reduce max %x dims [3] keepdim : ...
    ... exp, sum, div ...
    %p3 = ptensor.reshape %p : ... -> !ptensor.tensor<[8, 8, 8], f32>
    %o = ptensor.bmm %p3, %v : ...
    ```
    After:
    ```
    %o4 = ptensor.attention %q4, %k4, %v4 mask %bias scale 1.0 : ... -> !ptensor.tensor<[2, 4, 8, 16], f32>
    %o = ptensor.reshape %o4 : ... -> !ptensor.tensor<[8, 8, 16], f32>
    ```

    A row whose scores are all -inf gives NaN in the math and zeros in torch's
    fused kernels.
    """

    name = "fuse-attention"

    kernel: str = "torch"
    """What runs the attention: "torch" (its fused kernels), "triton"
    (permalloy's flash kernel where Triton runs, `AttentionOp.KERNEL`) or
    "measured" (the flash kernel on a GPU where it times faster than torch's
    fused kernels on the first call at each size, else torch's)."""

    precisions: str = "all"
    """Which attention is fused: "all", or "half" (float16 and bfloat16:
    float32 attention keeps its math, whose library products outrun the
    flash kernel's float32 ones)."""

    def __post_init__(self) -> None:
        check_option("kernel", self.kernel, KERNELS)
        check_option("precisions", self.precisions, PRECISIONS)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = FuseExplicitAttention(self.kernel, half_only=self.precisions == "half")
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
