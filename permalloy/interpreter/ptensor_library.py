"""
Reference semantics of the library ops of ptensor and of `ptensor.fallback`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
)
from xdsl.interpreter import Interpreter, PythonValues
from xdsl.ir import Attribute
from xdsl.utils.exceptions import InterpretationError

from permalloy.complex_layout import fft_c2c_as_real, fft_c2r_as_real, fft_r2c_as_real
from permalloy.dialects import ptensor
from permalloy.dialects.ptensor import (
    NoneValueAttr,
    OperandRefAttr,
    is_bool,
    is_element_type,
)
from permalloy.dialects.sym import SymExprAttr
from permalloy.dtypes import torch_dtype
from permalloy.interpreter.bindings import SizeBindings
from permalloy.interpreter.ptensor_common import PTensorFunctionsBase, tensor_impl


class FallbackError(InterpretationError):
    """A `ptensor.fallback` that names no ATen op, or has arguments torch cannot take."""


def resolve_aten_op(target: str) -> torch._ops.OpOverload:
    """The torch op overload named `namespace.name.overload` (`aten.cumsum.default`)."""
    parts = target.split(".")
    if len(parts) != 3:
        raise FallbackError(
            f"fallback target '{target}' should be 'namespace.name.overload', "
            "such as 'aten.cumsum.default'"
        )
    namespace, name, overload = parts
    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), overload)
    except (AttributeError, RuntimeError):
        raise FallbackError(f"torch has no op '{target}'") from None


class ArgumentDecoder:
    """Turns the attributes of a fallback's `args` and `kwargs` into Python values."""

    def __init__(self, operands: Sequence[torch.Tensor], bindings: SizeBindings):
        self.operands = operands
        self.bindings = bindings

    def decode(self, attr: Attribute) -> Any:
        """The Python value an argument attribute stands for."""
        if isinstance(attr, OperandRefAttr):
            return self.operands[attr.data]
        if isinstance(attr, ArrayAttr):
            return [self.decode(a) for a in attr.data]
        if isinstance(attr, DictionaryAttr):
            return {k: self.decode(v) for k, v in attr.data.items()}
        if isinstance(attr, NoneValueAttr):
            return None
        if isinstance(attr, IntegerAttr):
            number = attr.value.data
            return bool(number) if is_bool(attr.type) else int(number)
        if isinstance(attr, FloatAttr):
            return float(attr.value.data)
        if isinstance(attr, StringAttr):
            return attr.data
        if isinstance(attr, SymExprAttr):
            return self.bindings.value(attr.expr)
        if is_element_type(attr):
            return torch_dtype(attr)
        raise FallbackError(f"cannot pass attribute {attr} to a torch op")


def tensor_outputs(output: Any) -> list[torch.Tensor]:
    """The tensors of an op's output, in order, through tuples and lists."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, tuple | list):
        return [t for item in output for t in tensor_outputs(item)]
    return []


def clone_mutated_arguments(
    op: torch._ops.OpOverload, args: list[Any], kwargs: dict[str, Any]
) -> None:
    """
    Replace, in place in `args` and `kwargs`, each tensor the op's schema says
    it writes by a copy: ptensor values are immutable.
    """
    for position, argument in enumerate(op._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        if position < len(args) and isinstance(args[position], torch.Tensor):
            args[position] = args[position].clone()
        elif isinstance(kwargs.get(argument.name), torch.Tensor):
            kwargs[argument.name] = kwargs[argument.name].clone()


class LibraryFunctions(PTensorFunctionsBase):
    """Library ops (matrix products, convolution, attention, embedding gradients) and the fallback."""

    @tensor_impl(ptensor.MatmulOp)
    def run_mm(
        self, interpreter: Interpreter, op: ptensor.MatmulOp, args: PythonValues
    ) -> PythonValues:
        return (torch.mm(*args),)

    @tensor_impl(ptensor.BatchMatmulOp)
    def run_bmm(
        self, interpreter: Interpreter, op: ptensor.BatchMatmulOp, args: PythonValues
    ) -> PythonValues:
        return (torch.bmm(*args),)

    @tensor_impl(ptensor.AddmmOp)
    def run_addmm(
        self, interpreter: Interpreter, op: ptensor.AddmmOp, args: PythonValues
    ) -> PythonValues:
        beta = 1.0 if op.beta is None else op.beta.value.data
        alpha = 1.0 if op.alpha is None else op.alpha.value.data
        return (torch.addmm(*args, beta=beta, alpha=alpha),)

    @tensor_impl(ptensor.ConvolutionOp)
    def run_convolution(
        self, interpreter: Interpreter, op: ptensor.ConvolutionOp, args: PythonValues
    ) -> PythonValues:
        x, weight, *rest = args
        bias = rest[0] if rest else None
        geometry = ptensor.convolution_geometry(op)
        return (torch.ops.aten.convolution.default(x, weight, bias, *geometry),)

    @tensor_impl(ptensor.ConvolutionBackwardOp)
    def run_convolution_backward(
        self, interpreter: Interpreter, op: ptensor.ConvolutionBackwardOp, args: PythonValues
    ) -> PythonValues:
        grad_output, x, weight = args
        geometry = ptensor.convolution_geometry(op)
        mask = [bool(m) for m in op.output_mask.data]
        gradients = torch.ops.aten.convolution_backward.default(
            grad_output, x, weight, None, *geometry, mask
        )
        return tuple(g for g, wanted in zip(gradients, mask) if wanted)

    @tensor_impl(ptensor.EmbeddingBackwardOp)
    def run_embedding_backward(
        self, interpreter: Interpreter, op: ptensor.EmbeddingBackwardOp, args: PythonValues
    ) -> PythonValues:
        grad_output, indices = args
        num_weights = self.bindings.value(ptensor.tensor_type(op.result).sizes[0])
        return (
            torch.ops.aten.embedding_dense_backward.default(
                grad_output, indices, num_weights, op.padding_idx.value.data, op.scale_by_frequency is not None
            ),
        )

    @tensor_impl(ptensor.FftOp)
    def run_fft(self, interpreter: Interpreter, op: ptensor.FftOp, args: PythonValues) -> PythonValues:
        (source,) = args
        dims = list(op.dims.data)
        normalization = op.normalization.value.data
        kind = op.kind.data
        if kind == ptensor.FftKind.R2C:
            return (fft_r2c_as_real(source, dims, normalization, op.onesided is not None),)
        if kind == ptensor.FftKind.C2C:
            return (fft_c2c_as_real(source, dims, normalization, op.forward is not None),)
        last_dim_size = self.bindings.value(ptensor.tensor_type(op.result).sizes[dims[-1]])
        return (fft_c2r_as_real(source, dims, normalization, last_dim_size),)

    @tensor_impl(ptensor.AttentionOp)
    def run_attention(
        self, interpreter: Interpreter, op: ptensor.AttentionOp, args: PythonValues
    ) -> PythonValues:
        query, key, value, *rest = args
        result = F.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=rest[0] if rest else None,
            is_causal=op.causal is not None,
            scale=None if op.scale is None else op.scale.value.data,
        )
        return (result,)

    @tensor_impl(ptensor.FallbackOp)
    def run_fallback(
        self, interpreter: Interpreter, op: ptensor.FallbackOp, args: PythonValues
    ) -> PythonValues:
        target = resolve_aten_op(op.target.data)
        decoder = ArgumentDecoder(args, self.bindings)
        positional = [decoder.decode(a) for a in op.args.data]
        keywords = {} if op.kwargs is None else decoder.decode(op.kwargs)
        if not isinstance(keywords, dict):
            raise FallbackError(f"fallback kwargs must be a dictionary, got {op.kwargs}")
        clone_mutated_arguments(target, positional, keywords)
        outputs = tensor_outputs(target(*positional, **keywords))
        if len(outputs) != len(op.results):
            raise FallbackError(
                f"{op.target.data} gave {len(outputs)} tensors, but the op declares "
                f"{len(op.results)} results"
            )
        return tuple(outputs)
