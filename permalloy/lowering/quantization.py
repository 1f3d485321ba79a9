"""
Affine quantization as pointwise arithmetic.

Fake quantization (`torch.fake_quantize_per_tensor_affine` and its
per-channel form reach AOTAutograd as the `*_cachemask` ops, which also give
the mask of values inside the quantized range) and the `quantized_decomposed`
ops of PT2E quantization (quantize and dequantize, per tensor and per channel)
are written here with ATen ops that ptensor has: a multiplication by the
reciprocal of the scale, `round` (half to even, as the kernels' `nearbyint`),
the zero point added, a clamp, a cast. The reciprocal is rounded to the
input's precision first, as the kernels compute `1.0f / scale` in float.
"""

from __future__ import annotations

import struct

import torch

aten = torch.ops.aten


def _channel_view(x: torch.Tensor, parameter: torch.Tensor, axis: int) -> torch.Tensor:
    """A per-channel parameter shaped to broadcast along `axis` of `x`."""
    shape = [1] * x.dim()
    shape[axis % x.dim()] = -1
    return aten.view.default(parameter, shape)


def _fake_quantize(x, inverse_scale, scale, zero_point, quant_min, quant_max, clamps_infinities=True):
    """(fake-quantized x, mask of x inside the range), `zero_point` a number
    or a tensor of float values broadcasting with x. NaN gives the range's
    low end, as the kernels do; infinities clamp where `clamps_infinities`
    (the per-tensor kernels, which clamp in float), else they give the low
    end too (the per-channel kernel converts to int64 first, which makes
    anything it cannot represent int64's lowest value on x86)."""
    quantized = aten.add.Tensor(aten.round.default(aten.mul.Tensor(x, inverse_scale)), zero_point)
    inside = aten.logical_and.default(
        aten.ge.Scalar(quantized, quant_min), aten.le.Scalar(quantized, quant_max)
    )
    clamped = aten.clamp.default(quantized, quant_min, quant_max)
    if clamps_infinities:
        unrepresentable = aten.isnan.default(quantized)
    else:
        unrepresentable = aten.logical_not.default(aten.lt.Scalar(aten.abs.default(quantized), 2.0**63))
    clamped = torch.where(unrepresentable, quant_min, clamped)
    result = aten.mul.Tensor(aten.sub.Tensor(clamped, zero_point), scale)
    return result.to(x.dtype), inside


def _to_float32(number: float) -> float:
    """A Python number rounded to the nearest float32."""
    return struct.unpack("f", struct.pack("f", number))[0]


def fake_quantize_per_tensor_cachemask(x, scale, zero_point, quant_min, quant_max):
    """`fake_quantize_per_tensor_affine_cachemask` of a float tensor."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    scale = _to_float32(float(scale))
    return _fake_quantize(
        x, _to_float32(1.0 / scale), scale, int(zero_point), quant_min, quant_max
    )


def fake_quantize_per_tensor_cachemask_tensor_qparams(
    x, scale, zero_point, fake_quant_enabled, quant_min, quant_max
):
    """The form with scale, zero point and an enabling flag as tensors; where
    the flag is 0, x and an all-true mask."""
    if not x.dtype.is_floating_point:
        return NotImplemented
    scale32 = scale.to(torch.float32)
    inverse = aten.reciprocal.default(scale32)
    zero = aten.round.default(zero_point.to(torch.float32))
    result, inside = _fake_quantize(x, inverse, scale32, zero, quant_min, quant_max)
    enabled = aten.ne.Scalar(fake_quant_enabled.to(torch.float32), 0)
    enabled = aten.view.default(enabled, [])
    result = aten.where.self(enabled, result, x)
    inside = aten.logical_or.default(inside, aten.logical_not.default(enabled))
    return result, inside


def fake_quantize_per_channel_cachemask(x, scale, zero_point, axis, quant_min, quant_max):
    """`fake_quantize_per_channel_affine_cachemask` with integer zero points."""
    if not x.dtype.is_floating_point or zero_point.dtype.is_floating_point:
        return NotImplemented
    scale32 = _channel_view(x, scale.to(torch.float32), axis)
    inverse = aten.reciprocal.default(scale32)
    zero = _channel_view(x, zero_point.to(torch.float32), axis)
    # the kernel converts to int64 first: x86 makes what it cannot represent
    # the lowest value, a GPU saturates (infinities clamp, NaN is the lowest)
    saturates = x.device.type != "cpu"
    return _fake_quantize(x, inverse, scale32, zero, quant_min, quant_max, clamps_infinities=saturates)


def _quantize(x, inverse_scale, zero_point, quant_min, quant_max, dtype):
    source = x.to(torch.float32)
    shifted = aten.add.Tensor(aten.round.default(aten.mul.Tensor(source, inverse_scale)), zero_point)
    return aten.clamp.default(shifted, quant_min, quant_max).to(dtype)


def quantize_per_tensor(x, scale, zero_point, quant_min, quant_max, dtype):
    """`quantized_decomposed.quantize_per_tensor`: round(x / scale) + zero
    point, clamped, as `dtype`; the reciprocal taken in double precision and
    rounded to float, as the reference implementation's `1.0 / scale`."""
    return _quantize(x, 1.0 / scale, zero_point, quant_min, quant_max, dtype)


def quantize_per_tensor_tensor(x, scale, zero_point, quant_min, quant_max, dtype):
    """The form with 1-element tensors for scale and zero point (the
    reference reads them as Python numbers: a double reciprocal)."""
    scale64 = aten.view.default(scale.to(torch.float64), [])
    inverse = aten.reciprocal.default(scale64).to(torch.float32)
    zero = aten.view.default(zero_point, []).to(torch.float32)
    return _quantize(x, inverse, zero, quant_min, quant_max, dtype)


def quantize_per_channel(x, scales, zero_points, axis, quant_min, quant_max, dtype):
    """`quantized_decomposed.quantize_per_channel` (float32 reciprocals)."""
    inverse = aten.reciprocal.default(_channel_view(x, scales, axis))
    zero = _channel_view(x, zero_points, axis)
    return _quantize(x, inverse, zero, quant_min, quant_max, dtype)


def dequantize_per_tensor(x, scale, zero_point, quant_min, quant_max, dtype, *, out_dtype=None):
    """`quantized_decomposed.dequantize_per_tensor`: (q - zero point) * scale."""
    if x.dtype != dtype:
        return NotImplemented
    source = x.to(out_dtype or torch.float32)
    return aten.mul.Tensor(aten.sub.Tensor(source, zero_point), scale)


def dequantize_per_tensor_tensor(x, scale, zero_point, quant_min, quant_max, dtype, *, out_dtype=None):
    """The form with 1-element tensors for scale and zero point."""
    if x.dtype != dtype:
        return NotImplemented
    out_dtype = out_dtype or torch.float32
    zero = aten.view.default(zero_point, []).to(out_dtype)
    scale = aten.view.default(scale, []).to(out_dtype)
    return aten.mul.Tensor(aten.sub.Tensor(x.to(out_dtype), zero), scale)


def dequantize_per_channel(
    x, scales, zero_points, axis, quant_min, quant_max, dtype, *, out_dtype=None
):
    """`quantized_decomposed.dequantize_per_channel` (no zero points: 0)."""
    if x.dtype != dtype:
        return NotImplemented
    out_dtype = out_dtype or torch.float32
    source = x.to(out_dtype)
    if zero_points is not None:
        source = aten.sub.Tensor(source, _channel_view(x, zero_points, axis))
    return aten.mul.Tensor(source, _channel_view(x, scales, axis)).to(out_dtype)


def quantization_decompositions() -> dict:
    """The decompositions of this module by overload; the
    `quantized_decomposed` ops only where torch has registered them (their
    library is imported by the programs that use them)."""
    table = {
        aten.fake_quantize_per_tensor_affine_cachemask.default: fake_quantize_per_tensor_cachemask,
        aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default: (
            fake_quantize_per_tensor_cachemask_tensor_qparams
        ),
        aten.fake_quantize_per_channel_affine_cachemask.default: fake_quantize_per_channel_cachemask,
    }
    namespace = torch.ops.quantized_decomposed
    own = {
        "quantize_per_tensor": {"default": quantize_per_tensor, "tensor": quantize_per_tensor_tensor},
        "dequantize_per_tensor": {"default": dequantize_per_tensor, "tensor": dequantize_per_tensor_tensor},
        "quantize_per_channel": {"default": quantize_per_channel},
        "dequantize_per_channel": {"default": dequantize_per_channel},
    }
    for name, overloads in own.items():
        try:
            packet = getattr(namespace, name)
        except AttributeError:
            continue
        for overload, function in overloads.items():
            table[getattr(packet, overload)] = function
    return table
