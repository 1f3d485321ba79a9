"""
Calls of library and fallback ops from the host program.

A `buffer.extern` holds one ptensor op run by torch. Its call is built once, at
compile time: the torch function and every argument that does not change
between calls (convolution geometry, attention flags, a fallback's constant
arguments) are bound then, so that a call costs one Python call into torch.
The library ops (matrix products, convolution and its backward, attention,
embedding gradients) and
`ptensor.fallback` are called this way. The few other ops a host program may
run with torch (elementwise ops with no scalar form, constants, random numbers,
scatters) run through their reference implementation, bound once too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sympy
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr
from xdsl.ir import Attribute, Operation

from permalloy.dialects import ptensor as pt
from permalloy.dialects.buffer import ExternOp
from permalloy.dialects.sym import SymExprAttr
from permalloy.interpreter.bindings import SizeBindings
from permalloy.interpreter.ptensor import PTensorFunctions
from permalloy.interpreter.ptensor_library import (
    ArgumentDecoder,
    FallbackError,
    resolve_aten_op,
    tensor_outputs,
)

Tensors = Sequence[torch.Tensor]
Symbols = Mapping[sympy.Symbol, int]
ExternCall = Callable[[Tensors, Symbols], tuple]


def _matmul(op: pt.MatmulOp) -> ExternCall:
    return lambda tensors, symbols: (torch.mm(*tensors),)


def _batch_matmul(op: pt.BatchMatmulOp) -> ExternCall:
    return lambda tensors, symbols: (torch.bmm(*tensors),)


def _addmm(op: pt.AddmmOp) -> ExternCall:
    beta = 1.0 if op.beta is None else op.beta.value.data
    alpha = 1.0 if op.alpha is None else op.alpha.value.data
    if beta == 1.0 and alpha == 1.0:
        return lambda tensors, symbols: (torch.addmm(*tensors),)
    return lambda tensors, symbols: (torch.addmm(*tensors, beta=beta, alpha=alpha),)


def _convolution(op: pt.ConvolutionOp) -> ExternCall:
    geometry = pt.convolution_geometry(op)
    convolution = torch.convolution

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        x, weight, *rest = tensors
        return (convolution(x, weight, rest[0] if rest else None, *geometry),)

    return call


def _convolution_backward(op: pt.ConvolutionBackwardOp) -> ExternCall:
    geometry = pt.convolution_geometry(op)
    mask = [bool(m) for m in op.output_mask.data]
    backward = torch.ops.aten.convolution_backward.default

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        grad_output, x, weight = tensors
        gradients = backward(grad_output, x, weight, None, *geometry, mask)
        return tuple(g for g, wanted in zip(gradients, mask) if wanted)

    return call


def _attention(op: pt.AttentionOp) -> ExternCall:
    keywords: dict[str, Any] = {"is_causal": op.causal is not None}
    if op.scale is not None:
        keywords["scale"] = op.scale.value.data
    attention = F.scaled_dot_product_attention

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        query, key, value, *mask = tensors
        return (attention(query, key, value, attn_mask=mask[0] if mask else None, **keywords),)

    return call


def _fallback(op: pt.FallbackOp) -> ExternCall:
    target = resolve_aten_op(op.target.data)
    positional = [_bound_argument(a) for a in op.args.data]
    keywords = {} if op.kwargs is None else _bound_keywords(op.kwargs)
    written = _written_positions(target, len(positional), keywords)
    results = len(op.results)

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        args = [a(tensors, symbols) if callable(a) else a for a in positional]
        kwargs = {k: v(tensors, symbols) if callable(v) else v for k, v in keywords.items()}
        for position in written:
            if isinstance(position, int):
                args[position] = args[position].clone()
            else:
                kwargs[position] = kwargs[position].clone()
        outputs = tensor_outputs(target(*args, **kwargs))
        if len(outputs) != results:
            raise FallbackError(
                f"{op.target.data} gave {len(outputs)} tensors, but the op declares "
                f"{results} results"
            )
        return tuple(outputs)

    return call


_Bound = Any
"""An argument bound at compile time: its value, or a function `(tensors,
symbols) -> value` for what changes between calls (operands, sizes)."""


def _bound_argument(attr: Attribute) -> _Bound:
    """A fallback argument with everything constant decoded now."""
    if isinstance(attr, pt.OperandRefAttr):
        position = attr.data
        return lambda tensors, symbols: tensors[position]
    if isinstance(attr, SymExprAttr) and attr.expr.free_symbols:
        return _size_value(attr.expr)
    if isinstance(attr, ArrayAttr):
        items = [_bound_argument(a) for a in attr.data]
        if not any(callable(i) for i in items):
            return items
        return lambda tensors, symbols: [i(tensors, symbols) if callable(i) else i for i in items]
    if isinstance(attr, DictionaryAttr):
        raise FallbackError(f"a dictionary cannot be a positional argument of a torch op: {attr}")
    return ArgumentDecoder((), SizeBindings()).decode(attr)


def _size_value(expr: sympy.Expr) -> Callable[[Tensors, Symbols], int]:
    """A size expression's value under each call's symbol values."""
    bindings = SizeBindings()

    def value(tensors: Tensors, symbols: Symbols) -> int:
        with bindings.scope():
            bindings.current.update(symbols)
            return bindings.value(expr)

    return value


def _bound_keywords(kwargs: Attribute) -> dict[str, _Bound]:
    if not isinstance(kwargs, DictionaryAttr):
        raise FallbackError(f"fallback kwargs must be a dictionary, got {kwargs}")
    return {name: _bound_argument(value) for name, value in kwargs.data.items()}


def _written_positions(
    target: torch._ops.OpOverload, count: int, keywords: dict[str, _Bound]
) -> list[int | str]:
    """The positions (or keyword names) of the tensor arguments the op's schema
    says it writes: they are cloned per call, since ptensor values are immutable."""
    written: list[int | str] = []
    for position, argument in enumerate(target._schema.arguments):  # noqa: SLF001
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        if position < count:
            written.append(position)
        elif argument.name in keywords:
            written.append(argument.name)
    return written


def _embedding_backward(op: pt.EmbeddingBackwardOp) -> ExternCall:
    rows = pt.tensor_type(op.result).sizes[0]
    padding, scale = op.padding_idx.value.data, op.scale_by_frequency is not None
    backward = torch.ops.aten.embedding_dense_backward.default

    def call(tensors: Tensors, symbols: Symbols) -> tuple:
        num_weights = int(rows) if rows.is_Integer else int(rows.subs(symbols))
        return (backward(*tensors, num_weights, padding, scale),)

    return call


_DIRECT_CALLS: dict[type[Operation], Callable[[Any], ExternCall]] = {
    pt.MatmulOp: _matmul,
    pt.BatchMatmulOp: _batch_matmul,
    pt.AddmmOp: _addmm,
    pt.ConvolutionOp: _convolution,
    pt.ConvolutionBackwardOp: _convolution_backward,
    pt.AttentionOp: _attention,
    pt.EmbeddingBackwardOp: _embedding_backward,
    pt.FallbackOp: _fallback,
}
"""The ops called straight into torch, by op class."""


class _ReferenceCall:
    """Runs one op with its reference implementation (ops with no direct call)."""

    def __init__(self, op: Operation):
        implementations = dict(PTensorFunctions._impls())  # noqa: SLF001
        self.op = op
        self.functions = PTensorFunctions(SizeBindings())
        self.implementation = implementations[type(op)]

    def __call__(self, tensors: Tensors, symbols: Symbols) -> tuple:
        bindings = self.functions.bindings
        with bindings.scope():
            bindings.current.update(symbols)
            result = self.implementation(self.functions, None, self.op, tuple(tensors))  # type: ignore[arg-type]
            return tuple(result.values)


def extern_call(extern: ExternOp) -> ExternCall:
    """The callable that runs an extern's op on the tensors of its inputs."""
    op = extern.library_op
    direct = _DIRECT_CALLS.get(type(op))
    call = direct(op) if direct is not None else _ReferenceCall(op)
    arguments = list(extern.body.block.args)
    positions = tuple(arguments.index(operand) for operand in op.operands)
    if positions == tuple(range(len(arguments))):
        return call
    return _on_operands(call, positions)


def _on_operands(call: ExternCall, positions: tuple[int, ...]) -> ExternCall:
    """`call`, which takes the op's operands, given the extern's inputs instead:
    an input the op reads twice (`mm(x, x)`) is passed to the extern once."""

    def reordered(tensors: Tensors, symbols: Symbols) -> tuple:
        return call([tensors[p] for p in positions], symbols)

    return reordered
