"""
The decomposition table that AOTAutograd applies before the FX importer runs.

It starts from torch's core ATen decompositions, keeps whole the ops that
ptensor runs as library calls (attention) or represents directly, and adds
decompositions of composites (normalizations, softmax, variance, GELU, ...) into
ATen ops that ptensor has. Where torch's own decomposition would produce `prims`
ops (its reference implementations do), this module gives its own, written
with ATen ops only, so that the importer sees one vocabulary.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import torch
from torch._decomp import core_aten_decompositions, get_decompositions
from torch._ops import OpOverload, OpOverloadPacket
import torch._prims_common as prims_common
from torch.fx.experimental.symbolic_shapes import statically_known_true

from permalloy.lowering.embedding_bag import embedding_bag, embedding_bag_backward, embedding_bag_forward_only
from permalloy.lowering.grid_sampling import grid_sampler_2d, grid_sampler_3d
from permalloy.lowering.masked_assignment import index_put_with_mask
from permalloy.lowering.patch_convolutions import patch_convolution, patch_convolution_backward
from permalloy.lowering.pooling import (
    adaptive_avg_pool3d,
    avg_pool,
    avg_pool_backward,
    max_pool_backward,
    max_pool_with_indices,
)
from permalloy.lowering.quantization import quantization_decompositions
from permalloy.lowering.sorted_search import bucketize, bucketize_scalar, searchsorted, searchsorted_scalar

aten = torch.ops.aten

KEPT_WHOLE: tuple[OpOverload, ...] = (
    aten.scaled_dot_product_attention.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten.reflection_pad1d.default,
    aten.reflection_pad2d.default,
    aten.reflection_pad3d.default,
    aten.replication_pad1d.default,
    aten.replication_pad2d.default,
    aten.replication_pad3d.default,
    aten.embedding_dense_backward.default,
)
"""Ops that torch's core decompositions split but ptensor keeps as one op."""

FROM_TORCH: tuple[OpOverloadPacket, ...] = (
    aten._softmax,
    aten._log_softmax,
    aten._native_batch_norm_legit,
    aten._native_batch_norm_legit_functional,
    aten.native_batch_norm,
    aten.embedding,
    aten.hardsigmoid,
    aten.hardswish,
    aten.silu,
    aten.native_dropout,
    aten.repeat,
    aten.upsample_nearest2d,
    aten._adaptive_avg_pool2d,
    aten.adaptive_max_pool2d,
    aten.unfold,
    aten.tril_indices,
    aten.triu_indices,
)
"""Composites whose torch decompositions give ATen ops that ptensor has."""

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _upcast(x: torch.Tensor) -> torch.Tensor:
    """Half-precision floats are normalized in float32, as eager does."""
    return x.to(torch.float32) if x.dtype in _LOW_PRECISION else x


def _reduced_dims(x: torch.Tensor, dims: Sequence[int] | int | None) -> list[int]:
    """The dimensions a reduction over `dims` reduces, sorted: all of them for
    None or an empty list, none for a 0-d tensor (whose dimension 0 or -1
    names the tensor itself)."""
    if x.dim() == 0:
        return []
    if dims is None or (not isinstance(dims, int) and len(dims) == 0):
        return list(range(x.dim()))
    dims = [dims] if isinstance(dims, int) else dims
    return sorted(d % x.dim() for d in dims)


def _count(x: torch.Tensor, dims: Sequence[int]):
    count = 1
    for d in dims:
        count = count * x.shape[d]
    return count


def mean(x, dim=None, keepdim=False, *, dtype=None):
    """`sum / count`, accumulated in float32 for half-precision inputs."""
    source = x if dtype is None else x.to(dtype)
    dims = _reduced_dims(source, dim)
    total = aten.sum.dim_IntList(_upcast(source), dims, keepdim)
    return aten.div.Tensor(total, _count(source, dims)).to(source.dtype)


def _degrees_of_freedom(count, correction):
    """torch's divisor of a variance, `max(count - correction, 0)`: a variance
    over fewer elements than the correction (an empty one) is 0 / 0, NaN."""
    difference = count - correction
    if not isinstance(difference, torch.SymInt | torch.SymFloat):
        return max(difference, 0)
    if statically_known_true(difference >= 0):
        return difference
    return torch.sym_max(difference, 0)


def _shifted_mean(source: torch.Tensor, dims: list[int], count):
    """The mean over `dims` (kept) as the first element of each reduced
    slice plus the mean of the differences from it: where the elements are
    equal it is exactly their value, as eager's Welford mean is, so that
    they centre to exactly 0 (a sum divided by the count can be an ulp off,
    which a layer norm then divides by `sqrt(eps)`). Where a reduced size
    may be 0 there is no first element: the sum divided by the count."""
    if not dims or not all(statically_known_true(source.shape[d] >= 1) for d in dims):
        return aten.div.Tensor(aten.sum.dim_IntList(source, dims, True), count)
    first = source
    for d in dims:
        first = aten.slice.Tensor(first, d, 0, 1)
    differences = aten.sub.Tensor(source, first)
    return aten.add.Tensor(first, aten.div.Tensor(aten.sum.dim_IntList(differences, dims, True), count))


def var_mean(x, dim=None, *, correction=None, keepdim=False):
    """Two-pass variance and mean, the mean shifted by each slice's first
    element (`_shifted_mean`), so that equal elements have a variance of
    exactly 0 and centre to exactly 0, as in eager."""
    dims = _reduced_dims(x, dim)
    source = _upcast(x)
    count = _count(x, dims)
    centre = _shifted_mean(source, dims, count)
    centred = aten.sub.Tensor(source, centre)
    squares = aten.sum.dim_IntList(aten.mul.Tensor(centred, centred), dims, keepdim)
    correction = 1 if correction is None else correction
    variance = aten.div.Tensor(squares, _degrees_of_freedom(count, correction))
    if not keepdim:
        centre = aten.squeeze.dims(centre, dims)
    return variance.to(x.dtype), centre.to(x.dtype)


def var(x, dim=None, *, correction=None, keepdim=False):
    return var_mean(x, dim, correction=correction, keepdim=keepdim)[0]


def std(x, dim=None, *, correction=None, keepdim=False):
    return aten.sqrt.default(var(x, dim, correction=correction, keepdim=keepdim))


def native_layer_norm(x, normalized_shape, weight, bias, eps):
    """Layer norm over the trailing dimensions; gives (out, mean, rstd). The
    output is contiguous whatever the input's layout, as torch's kernels
    write it (its elementwise steps alone would follow a permuted input's)."""
    dims = list(range(x.dim() - len(normalized_shape), x.dim()))
    variance, centre = var_mean(_upcast(x), dims, correction=0, keepdim=True)
    rstd = aten.rsqrt.default(aten.add.Tensor(variance, eps))
    out = aten.mul.Tensor(aten.sub.Tensor(_upcast(x), centre), rstd)
    if weight is not None:
        out = aten.mul.Tensor(out, weight)
    if bias is not None:
        out = aten.add.Tensor(out, bias)
    return out.to(x.dtype).contiguous(), centre, rstd


def batch_norm_inference(x, weight, bias, running_mean, running_var, momentum, eps):
    """Batch norm outside training, `(x - mean) * (1 / sqrt(var + eps)) *
    weight + bias` per channel in float32 for half-precision inputs; gives
    (out, save_mean, save_rstd) as torch's decomposition does (the running
    statistics on a GPU, empty on the CPU). The same operations as torch's
    decomposition, with each per-channel tensor viewed to broadcast once
    rather than unsqueezed dimension by dimension, and the running
    statistics read rather than copied: half the operations AOTAutograd
    traces, which for a convolutional network's dozens of batch norms was
    most of its trace."""
    broadcast = [1, -1] + [1] * (x.dim() - 2)
    source = _upcast(x)
    mean = _upcast(running_mean)
    invstd = aten.reciprocal.default(aten.sqrt.default(aten.add.Tensor(_upcast(running_var), eps)))
    out = aten.mul.Tensor(
        aten.sub.Tensor(source, aten.view.default(mean, broadcast)), aten.view.default(invstd, broadcast)
    )
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, broadcast))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, broadcast))
    if x.device.type == "cpu":
        return out.to(x.dtype), aten.new_zeros.default(x, [0]), aten.new_zeros.default(x, [0])
    return out.to(x.dtype), mean, invstd


def native_group_norm(x, weight, bias, batch, channels, spatial, groups, eps):
    """Group norm; gives (out, mean, rstd) with mean and rstd of shape [N, G]."""
    grouped = aten.view.default(_upcast(x), [batch, groups, -1])
    variance, centre = var_mean(grouped, [2], correction=0, keepdim=True)
    rstd = aten.rsqrt.default(aten.add.Tensor(variance, eps))
    out = aten.view.default(aten.mul.Tensor(aten.sub.Tensor(grouped, centre), rstd), x.shape)
    channel_shape = [1, channels] + [1] * (x.dim() - 2)
    if weight is not None:
        out = aten.mul.Tensor(out, aten.view.default(weight, channel_shape))
    if bias is not None:
        out = aten.add.Tensor(out, aten.view.default(bias, channel_shape))
    return out.to(x.dtype), aten.squeeze.dims(centre, [2]), aten.squeeze.dims(rstd, [2])


def gelu(x, approximate="none"):
    """GELU with erf, or its tanh approximation."""
    source = _upcast(x)
    half = aten.mul.Tensor(source, 0.5)
    if approximate == "tanh":
        cube = aten.mul.Tensor(aten.mul.Tensor(source, source), source)
        inner = aten.add.Tensor(source, aten.mul.Tensor(cube, 0.044715))
        inner = aten.mul.Tensor(inner, math.sqrt(2.0 / math.pi))
        result = aten.mul.Tensor(half, aten.add.Tensor(aten.tanh.default(inner), 1.0))
    else:
        erf = aten.erf.default(aten.mul.Tensor(source, math.sqrt(0.5)))
        result = aten.mul.Tensor(half, aten.add.Tensor(erf, 1.0))
    return result.to(x.dtype)


def addcmul(x, first, second, *, value=1):
    return aten.add.Tensor(x, aten.mul.Tensor(aten.mul.Tensor(first, second), value))


def addcdiv(x, first, second, *, value=1):
    return aten.add.Tensor(x, aten.mul.Tensor(aten.div.Tensor(first, second), value))


def elu(x, alpha=1, scale=1, input_scale=1):
    negative = aten.expm1.default(aten.mul.Tensor(x, input_scale))
    negative = aten.mul.Tensor(negative, alpha * scale)
    return aten.where.self(aten.gt.Scalar(x, 0), aten.mul.Tensor(x, scale), negative)


def leaky_relu(x, negative_slope=0.01):
    return aten.where.self(aten.gt.Scalar(x, 0), x, aten.mul.Tensor(x, negative_slope))


def rrelu_with_noise_functional(x, noise, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """rrelu outside training: a leaky relu of slope `(lower + upper) / 2`,
    the noise returned as it came; a training step's random slopes stay with
    torch."""
    if training:
        return NotImplemented
    return leaky_relu(x, (lower + upper) / 2), noise


def hardtanh(x, min_val=-1, max_val=1):
    return aten.clamp.default(x, min_val, max_val)


def softplus(x, beta=1, threshold=20):
    """`log1p(exp(beta * x)) / beta`, or x above the threshold; computed in
    float32 for half-precision inputs (whose exp overflows from about 11)."""
    source = _upcast(x)
    scaled = aten.mul.Tensor(source, beta)
    soft = aten.div.Tensor(aten.log1p.default(aten.exp.default(scaled)), beta)
    return aten.where.self(aten.gt.Scalar(scaled, threshold), source, soft).to(x.dtype)


def mish(x):
    return aten.mul.Tensor(x, aten.tanh.default(softplus(x)))


def logit(x, eps=None):
    if eps is not None:
        x = aten.clamp.default(x, eps, 1 - eps)
    return aten.log.default(aten.div.Tensor(x, aten.rsub.Scalar(x, 1)))


def glu(x, dim=-1):
    half = x.shape[dim] // 2
    first = aten.slice.Tensor(x, dim, 0, half)
    second = aten.slice.Tensor(x, dim, half, 2 * half)
    return aten.mul.Tensor(first, aten.sigmoid.default(second))


def split_with_sizes(x, split_sizes, dim=0):
    pieces, start = [], 0
    for size in split_sizes:
        pieces.append(aten.slice.Tensor(x, dim, start, start + size))
        start = start + size
    return pieces


_REAL_OF_COMPLEX = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """p-norms of |x|: max for inf, the count of non-zeros for 0, else a sum
    (of real magnitudes, so a complex input's norm is real)."""
    source = _upcast(x if dtype is None else x.to(dtype))
    dims = _reduced_dims(source, dim)
    magnitude = aten.abs.default(source)
    if ord == math.inf:
        result = aten.amax.default(magnitude, dims, keepdim)
    elif ord == -math.inf:
        result = aten.amin.default(magnitude, dims, keepdim)
    elif ord == 0:
        nonzero = aten.ne.Scalar(magnitude, 0).to(magnitude.dtype)
        result = aten.sum.dim_IntList(nonzero, dims, keepdim)
    elif ord == 1:
        result = aten.sum.dim_IntList(magnitude, dims, keepdim)
    elif ord == 2:
        squares = aten.mul.Tensor(magnitude, magnitude)
        result = aten.sqrt.default(aten.sum.dim_IntList(squares, dims, keepdim))
    else:
        powers = aten.pow.Tensor_Scalar(magnitude, ord)
        result = aten.pow.Tensor_Scalar(aten.sum.dim_IntList(powers, dims, keepdim), 1.0 / ord)
    result_dtype = x.dtype if dtype is None else dtype
    return result.to(_REAL_OF_COMPLEX.get(result_dtype, result_dtype))


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal as advanced indexing over the two dimensions moved last."""
    rank = x.dim()
    dim1, dim2 = dim1 % rank, dim2 % rank
    rows, columns = x.shape[dim1], x.shape[dim2]
    length = torch.sym_max(torch.sym_min(rows + min(offset, 0), columns - max(offset, 0)), 0)
    order = [d for d in range(rank) if d not in (dim1, dim2)] + [dim1, dim2]
    moved = aten.permute.default(x, order)
    steps = aten.arange.default(length, dtype=torch.int64, device=x.device)
    row_index = aten.add.Tensor(steps, max(-offset, 0))
    column_index = aten.add.Tensor(steps, max(offset, 0))
    return aten.index.Tensor(moved, [None] * (rank - 2) + [row_index, column_index])


def flip(x, dims):
    """Reversal of dimensions as indexing by `size - 1 - arange(size)`."""
    result = x
    for dim in sorted({d % x.dim() for d in dims}):
        size = x.shape[dim]
        steps = aten.arange.default(size, dtype=torch.int64, device=x.device)
        reversed_index = aten.add.Tensor(aten.mul.Tensor(steps, -1), size - 1)
        result = aten.index.Tensor(result, [None] * dim + [reversed_index])
    return result


SCATTER_UNROLL_LIMIT = 16
"""The most index entries along the scattered dimension that `scatter` unrolls."""


def _scatter_mask(x, dim, index):
    """Where `scatter(x, dim, index, ...)` writes, as a boolean tensor of x's
    shape, or None where index does not cover x outside `dim` or has a
    symbolic or long extent along it."""
    dim = dim % max(x.dim(), 1)
    if index.dim() != x.dim() or any(
        index.shape[d] != x.shape[d] for d in range(x.dim()) if d != dim
    ):
        return None
    count = index.shape[dim]
    if not isinstance(count, int) or count > SCATTER_UNROLL_LIMIT:
        return None
    shape = [1] * x.dim()
    shape[dim] = -1
    positions = aten.view.default(
        aten.arange.default(x.shape[dim], dtype=index.dtype, device=x.device), shape
    )
    mask = None
    for j in range(count):
        hit = aten.eq.Tensor(positions, aten.slice.Tensor(index, dim, j, j + 1))
        mask = hit if mask is None else aten.logical_or.default(mask, hit)
    return mask


def scatter_value(x, dim, index, value):
    """`scatter` of one value: a select between it and x on the positions the
    index names (one comparison per index entry along `dim`)."""
    mask = _scatter_mask(x, dim, index)
    if mask is None:
        return NotImplemented
    filler = aten.full.default([], value, dtype=x.dtype, device=x.device)
    return aten.where.self(mask, filler, x)


_non_overlapping_and_dense: Callable[[torch.Tensor], bool] = getattr(
    prims_common, "is_non_overlapping_and_dense_or_false", None
) or getattr(prims_common, "is_non_overlapping_and_dense")
"""torch's check (renamed between releases) of a tensor whose elements
fill their memory without gaps or overlaps."""


def in_memory_order_of(like: torch.Tensor, tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` (of `like`'s sizes) laid out in the memory order of `like`
    where `like` is dense and does not overlap, as `empty_like` lays out a
    result; `tensor` itself where it already is, or where `like` is not
    dense (`empty_like` then gives contiguous memory)."""
    if tensor.dim() < 2 or not _non_overlapping_and_dense(like):
        return tensor
    found = prims_common.compute_elementwise_output_logical_to_physical_perm(like)
    order = list(found[0] if isinstance(found, tuple) else found)  # later releases add whether it was ambiguous
    if order == list(range(tensor.dim())) and tensor.is_contiguous():
        return tensor
    physical = aten.clone.default(aten.permute.default(tensor, order), memory_format=torch.contiguous_format)
    return aten.permute.default(physical, _inverse_order(order))


def _inverse_order(order: Sequence[int]) -> list[int]:
    """The permutation that undoes permuting by `order`."""
    return sorted(range(len(order)), key=order.__getitem__)


def slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    """`src` written over `x[start:end:step]` along `dim`, its result laid
    out as eager's `slice_scatter` lays it out: in the memory order of a
    dense input. Functionalization writes an assignment into a view as a
    `slice_scatter` of the view's base and then replays the base's other
    views on the result, and a `view` that eager's strides admit can fail on
    others (Longformer's chunked attention assigns into a transposed view of
    its scores and views them again).

    A contiguous slice of static bounds (`x[:, :k] = y`, the common
    assignment) is `where(start <= i < end, pad(src), x)`: a padded read and
    a position test, which fuse into the kernel that reads the result.
    Other slices take torch's decomposition, which gathers `src` through a
    tensor of positions and a mask tensor."""
    contiguous = _contiguous_slice_scatter(x, src, dim, start, end, step)
    if contiguous is not None:
        return in_memory_order_of(x, contiguous)
    return in_memory_order_of(x, _torch_slice_scatter()(x, src, dim, start, end, step))


def _contiguous_slice_scatter(x, src, dim, start, end, step) -> torch.Tensor | None:
    """`slice_scatter` of a step-1 slice whose bounds and size along `dim`
    are integers, on real tensors, as a `where` over a padded `src`; None
    for any other."""
    dim = dim % max(x.dim(), 1)
    size = x.shape[dim] if x.dim() else 1
    if step != 1 or x.dim() == 0 or x.is_complex() or not all(isinstance(v, int | None) for v in (start, end, size)):
        return None
    first = 0 if start is None else (start + size if start < 0 else start)
    last = size if end is None else (end + size if end < 0 else end)
    first = min(max(first, 0), size)
    last = min(max(last, first), size)
    shape = list(x.shape)
    shape[dim] = last - first
    src = aten.expand.default(src, shape)
    if first == 0 and last == size:
        return aten.clone.default(src)
    pads = [0, 0] * (x.dim() - 1 - dim) + [first, size - last]
    padded = aten.constant_pad_nd.default(src, pads, 0)
    positions = aten.arange.start_step(0, size, 1, dtype=torch.int64, device=x.device)
    if first == 0:  # a slice from the start, or to the end: one test
        inside = aten.lt.Scalar(positions, last)
    elif last == size:
        inside = aten.ge.Scalar(positions, first)
    else:
        inside = aten.logical_and.default(aten.ge.Scalar(positions, first), aten.lt.Scalar(positions, last))
    inside = aten.view.default(inside, [size if d == dim else 1 for d in range(x.dim())])
    return aten.where.self(inside, padded, x)


@functools.cache
def _torch_slice_scatter() -> Callable:
    return get_decompositions([aten.slice_scatter])[aten.slice_scatter.default]


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=None):
    """An uninitialized tensor of `size` whose memory holds its dimensions in
    the order `physical_layout` (outermost first): an `empty` of the sizes in
    that order, permuted back to `size`."""
    order = list(physical_layout)
    memory = aten.empty.memory_format([size[d] for d in order], dtype=dtype, device=device, pin_memory=pin_memory)
    return aten.permute.default(memory, _inverse_order(order))


def scatter_src(x, dim, index, src):
    """`scatter` of a tensor with one index entry along `dim` (more than one
    may write a position twice, which torch leaves unspecified)."""
    dim = dim % max(x.dim(), 1)
    if index.dim() != x.dim() or index.shape[dim] != 1:
        return NotImplemented
    mask = _scatter_mask(x, dim, index)
    if mask is None or src.dim() != x.dim():
        return NotImplemented
    values = aten.slice.Tensor(src, dim, 0, 1)
    for d in range(x.dim()):
        if d != dim:
            values = aten.slice.Tensor(values, d, 0, x.shape[d])
    return aten.where.self(mask, values, x)


def as_strided_scatter(x, src, size, stride, storage_offset=None):
    """`src` written over the strided view of a contiguous `x`: a scatter
    into x's elements at `offset + sum(i_d * stride_d)` for each position
    `i` of the view (a view that repeats an element writes it once per
    repeat, in some order, as torch leaves unspecified)."""
    if not x.is_contiguous() or len(size) != len(stride):
        return NotImplemented
    offset = 0 if storage_offset is None else storage_offset
    positions = aten.full.default([1] * len(size), offset, dtype=torch.int64, device=x.device)
    for d, (extent, step) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = extent
        along = aten.arange.default(extent, dtype=torch.int64, device=x.device)
        positions = aten.add.Tensor(positions, aten.view.default(aten.mul.Tensor(along, step), shape))
    positions = aten.view.default(aten.expand.default(positions, list(size)), [-1])
    flat = aten.view.default(x, [-1])
    values = aten.reshape.default(aten.expand.default(src, list(size)), [-1])
    return aten.view.default(aten.scatter.src(flat, 0, positions, values), list(x.shape))


def bernoulli_of_probability(x, p=0.5, *, generator=None):
    """bernoulli.p (drop-path masks): `rand_like(x) < p` in x's dtype, with
    torch's random numbers but not eager's draws (as for dropout)."""
    if generator is not None:
        return NotImplemented
    return aten._to_copy.default(aten.lt.Scalar(aten.rand_like.default(x), p), dtype=x.dtype)


def weight_norm_interface_backward(grad_w, saved_v, saved_g, saved_norms, dim):
    """The gradients of `w = g * v / ||v||` (norms over every dimension but
    `dim`, all of them for -1), as torch's differentiable formula gives them:
    `grad_g = sum(grad_w * v) / norms`, `grad_v = (g / norms) * (grad_w - v *
    grad_g / norms)`."""
    dims = list(range(saved_v.dim())) if dim == -1 else [d for d in range(saved_v.dim()) if d != dim % saved_v.dim()]
    norms = aten.view.default(saved_norms, list(saved_g.shape))
    projected = aten.sum.dim_IntList(aten.mul.Tensor(grad_w, saved_v), dims, True)
    grad_g = aten.div.Tensor(projected, norms)
    along = aten.mul.Tensor(saved_v, aten.div.Tensor(grad_g, norms))
    grad_v = aten.mul.Tensor(aten.div.Tensor(saved_g, norms), aten.sub.Tensor(grad_w, along))
    return grad_v, aten.view.default(grad_g, list(saved_g.shape))


OWN: dict[OpOverloadPacket, Callable] = {
    aten.mean: mean,
    aten.var_mean: var_mean,
    aten.var: var,
    aten.std: std,
    aten.native_layer_norm: native_layer_norm,
    aten._native_batch_norm_legit_no_training: batch_norm_inference,
    aten.native_group_norm: native_group_norm,
    aten.gelu: gelu,
    aten.addcmul: addcmul,
    aten.addcdiv: addcdiv,
    aten.elu: elu,
    aten.leaky_relu: leaky_relu,
    aten.hardtanh: hardtanh,
    aten.softplus: softplus,
    aten.mish: mish,
    aten.logit: logit,
    aten.glu: glu,
    aten.split_with_sizes: split_with_sizes,
    aten.linalg_vector_norm: vector_norm,
    aten.diagonal: diagonal,
    aten.flip: flip,
    aten.scatter: scatter_value,
    aten.rrelu_with_noise_functional: rrelu_with_noise_functional,
    aten.searchsorted: searchsorted,
    aten.index_put: index_put_with_mask,
    aten.as_strided_scatter: as_strided_scatter,
    aten.bernoulli: bernoulli_of_probability,
    aten._weight_norm_interface_backward: weight_norm_interface_backward,
}
"""permalloy's own decompositions, written with ATen ops only."""

_OWN_OVERLOADS: dict[OpOverloadPacket, tuple[str, ...]] = {
    aten.mean: ("default", "dim"),
    aten.var_mean: ("correction",),
    aten.var: ("correction",),
    aten.std: ("correction",),
    aten.native_layer_norm: ("default",),
    aten._native_batch_norm_legit_no_training: ("default",),
    aten.native_group_norm: ("default",),
    aten.gelu: ("default",),
    aten.addcmul: ("default",),
    aten.addcdiv: ("default",),
    aten.elu: ("default",),
    aten.leaky_relu: ("default",),
    aten.hardtanh: ("default",),
    aten.softplus: ("default",),
    aten.mish: ("default",),
    aten.logit: ("default",),
    aten.glu: ("default",),
    aten.split_with_sizes: ("default",),
    aten.linalg_vector_norm: ("default",),
    aten.diagonal: ("default",),
    aten.flip: ("default",),
    aten.scatter: ("value",),
    aten.rrelu_with_noise_functional: ("default",),
    aten.searchsorted: ("Tensor",),
    aten.index_put: ("default",),
    aten.as_strided_scatter: ("default",),
    aten.bernoulli: ("p",),
    aten._weight_norm_interface_backward: ("default",),
}


POOLING: dict[OpOverload, Callable] = {
    aten.max_pool2d_with_indices.default: functools.partial(max_pool_with_indices, n_dim=2),
    aten.max_pool3d_with_indices.default: functools.partial(max_pool_with_indices, n_dim=3),
    aten.avg_pool2d.default: functools.partial(avg_pool, n_dim=2),
    aten.avg_pool3d.default: functools.partial(avg_pool, n_dim=3),
    aten._adaptive_avg_pool3d.default: adaptive_avg_pool3d,
    aten.max_pool2d_with_indices_backward.default: functools.partial(max_pool_backward, n_dim=2),
    aten.max_pool3d_with_indices_backward.default: functools.partial(max_pool_backward, n_dim=3),
    aten.avg_pool2d_backward.default: functools.partial(avg_pool_backward, n_dim=2),
    aten.avg_pool3d_backward.default: functools.partial(avg_pool_backward, n_dim=3),
}
"""Pooling as slices of the padded input, and its backward as the scatters
of them (`lowering/pooling.py`); 1-d pooling reaches the 2-d ops as a view."""


def _has_complex(values) -> bool:
    """Whether any tensor among `values` (nested in lists) is complex."""
    for value in values:
        if isinstance(value, list | tuple) and _has_complex(value):
            return True
        if isinstance(value, torch.Tensor) and value.is_complex():
            return True
    return False


def real_only(decomposition: Callable) -> Callable:
    """`decomposition` for real tensors; on complex ones the op is kept whole
    (NotImplemented), as permalloy's decompositions are written for reals."""

    @functools.wraps(decomposition)
    def decompose(*args, **kwargs):
        if _has_complex(args) or _has_complex(kwargs.values()):
            return NotImplemented
        return decomposition(*args, **kwargs)

    return decompose


def decomposition_table() -> dict[OpOverload, Callable]:
    """
    The decompositions to hand to AOTAutograd, a fresh dict on every call
    (a copy of one built once: building it takes torch 50 ms, each graph).

    Core ATen decompositions, minus `KEPT_WHOLE`, plus torch's decompositions
    of `FROM_TORCH` and permalloy's own (`OWN`, `POOLING`, the grid sampler,
    `searchsorted`, quantization, embedding_bag with its backward,
    `embedding_bag.py`, and convolutions reading or, transposed, writing
    non-overlapping patches with their gradients, `patch_convolutions.py`;
    all leave complex tensors to torch).
    """
    return dict(_built_table())


@functools.cache
def _built_table() -> dict[OpOverload, Callable]:
    table = dict(core_aten_decompositions())
    table.update(get_decompositions(list(FROM_TORCH)))
    for packet, function in OWN.items():
        for overload in _OWN_OVERLOADS[packet]:
            table[getattr(packet, overload)] = real_only(function)
    table[aten.scatter.src] = real_only(scatter_src)
    table[aten.slice_scatter.default] = slice_scatter
    table[aten.empty_permuted.default] = empty_permuted
    table[aten.searchsorted.Scalar] = real_only(searchsorted_scalar)
    table[aten.bucketize.Tensor] = real_only(bucketize)
    table[aten.bucketize.Scalar] = real_only(bucketize_scalar)
    table[aten.grid_sampler_2d.default] = real_only(grid_sampler_2d)
    table[aten.grid_sampler_3d.default] = real_only(grid_sampler_3d)
    for op, function in quantization_decompositions().items():
        table[op] = real_only(function)
    for op, function in POOLING.items():
        table[op] = real_only(function)
    table[aten._embedding_bag_forward_only.default] = real_only(embedding_bag_forward_only)
    table[aten._embedding_bag.default] = real_only(embedding_bag)
    table[aten._embedding_bag_backward.default] = real_only(embedding_bag_backward)
    table[aten.convolution.default] = real_only(patch_convolution)
    table[aten.convolution_backward.default] = real_only(patch_convolution_backward)
    for op in KEPT_WHOLE:
        table.pop(op, None)
    return table
