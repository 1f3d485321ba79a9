"""
`complex_as_real`'s rules for ops that move, gather, reduce or multiply
complex tensors: each is the same op on the packed pair with the pair's
trailing dimension kept last (a dimension of the complex tensor is the same
dimension of its pair, counted from the front), except `gather` and the
scatters, which take each part with the same index; plus the new tensors of
a complex dtype and the sizes of complex tensors.

A matrix product is one real product: `a [m, k]` packed is a `[m, 2k]`
matrix of interleaved parts, and `b` becomes the `[2k, 2n]` block matrix
whose row pair `(2j, 2j + 1)` holds `(br, bi)` and `(-bi, br)` of row `j`
interleaved, so that the product is the `[m, n, 2]` pair of
`(ar br - ai bi, ar bi + ai br)`: four real products' work in one library
call, with no copy of `a` when it is contiguous.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from permalloy.lowering.complex_pointwise import magnitude, multiply
from permalloy.lowering.complex_values import (
    Call,
    Pair,
    Result,
    make_pair,
    normalized_dim,
    normalized_dims,
    packed_of,
    parts_of,
)

aten = torch.ops.aten


def _packed(call: Call) -> torch.Tensor:
    return call["self"].to(call.result.dtype).packed()


def _with_pair(sizes: Any) -> list:
    return [*sizes, 2]


# -- views -------------------------------------------------------------------


def view(call: Call) -> Pair:
    """view, _unsafe_view, reshape: the sizes and the pair's 2. A reshape
    (which views when it can), since a pair computed from parts may be laid
    out otherwise than the complex tensor was."""
    sizes = call["size"] if "size" in call.arguments else call["shape"]
    return Pair(call["self"].packed().reshape(_with_pair(sizes)))


def permute(call: Call) -> Pair:
    value = call["self"]
    dims = [normalized_dim(d, value.rank) for d in call["dims"]]
    return Pair(value.packed().permute([*dims, value.rank]))


def transpose(call: Call) -> Pair:
    value = call["self"]
    first, second = (normalized_dim(call[name], value.rank) for name in ("dim0", "dim1"))
    return Pair(value.packed().transpose(first, second))


def matrix_transpose(call: Call) -> Pair:
    """t: the two dimensions of a matrix swapped (a vector kept)."""
    value = call["self"]
    if value.rank < 2:
        return value
    return Pair(value.packed().transpose(0, 1))


def slice_view(call: Call) -> Pair:
    value = call["self"]
    dim = normalized_dim(call["dim"], value.rank)
    return Pair(aten.slice.Tensor(value.packed(), dim, call["start"], call["end"], call["step"]))


def narrow(call: Call) -> Pair:
    value = call["self"]
    dim = normalized_dim(call["dim"], value.rank)
    return Pair(value.packed().narrow(dim, call["start"], call["length"]))


def select(call: Call) -> Pair:
    value = call["self"]
    return Pair(value.packed().select(normalized_dim(call["dim"], value.rank), call["index"]))


def unsqueeze(call: Call) -> Pair:
    value = call["self"]
    return Pair(value.packed().unsqueeze(normalized_dim(call["dim"], value.rank + 1)))


def squeeze(call: Call) -> Pair:
    """squeeze, squeeze.dim, squeeze.dims: size-1 dimensions of the complex
    tensor removed (never the pair's)."""
    value = call["self"]
    dims = call.arguments.get("dim")
    if dims is None:
        dims = list(range(value.rank))
    elif isinstance(dims, int):
        dims = [dims]
    if not dims:
        return value
    return Pair(value.packed().squeeze([normalized_dim(d, value.rank) for d in dims]))


def expand(call: Call) -> Pair:
    return Pair(call["self"].packed().expand(_with_pair(call["size"])))


def as_strided(call: Call) -> Pair:
    """The pair of the complex view: strides and offset in real elements."""
    offset = call["storage_offset"]
    return Pair(
        call["self"].packed().as_strided(
            _with_pair(call["size"]),
            [*(2 * s for s in call["stride"]), 1],
            None if offset is None else 2 * offset,
        )
    )


def diagonal(call: Call) -> Pair:
    """The diagonal, which torch puts last, moved before the pair's 2."""
    value = call["self"]
    first, second = (normalized_dim(call[name], value.rank) for name in ("dim1", "dim2"))
    return Pair(value.packed().diagonal(call["offset"], first, second).movedim(-1, -2))


def flip(call: Call) -> Pair:
    value = call["self"]
    return Pair(value.packed().flip([normalized_dim(d, value.rank) for d in call["dims"]]))


def roll(call: Call) -> Pair:
    value = call["self"]
    dims = list(call["dims"])
    packed = value.packed()
    if not dims:
        flat = packed.reshape(-1, 2).roll(list(call["shifts"]), [0])
        return Pair(flat.view(packed.shape))
    return Pair(packed.roll(list(call["shifts"]), [normalized_dim(d, value.rank) for d in dims]))


# -- data movement -----------------------------------------------------------


def cat(call: Call) -> Pair:
    result = call.result
    tensors = [packed_of(t, result) for t in call["tensors"]]
    rank = call.example.dim()
    return Pair(torch.cat(tensors, normalized_dim(call["dim"], rank)))


def stack(call: Call) -> Pair:
    result = call.result
    tensors = [packed_of(t, result) for t in call["tensors"]]
    rank = call.example.dim()
    return Pair(torch.stack(tensors, normalized_dim(call["dim"], rank)))


def split(call: Call) -> list[Pair]:
    """split, split_with_sizes: pieces of the pair along a dimension."""
    value = call["self"]
    sizes = call["split_sizes"] if "split_sizes" in call.arguments else call["split_size"]
    pieces = torch.split(value.packed(), sizes, normalized_dim(call["dim"], value.rank))
    return [Pair(piece) for piece in pieces]


def index(call: Call) -> Pair:
    """index.Tensor: the indices address the complex tensor's leading
    dimensions, so the pair's trailing one stays last."""
    return Pair(aten.index.Tensor(call["self"].packed(), call["indices"]))


def index_select(call: Call) -> Pair:
    value = call["self"]
    return Pair(value.packed().index_select(normalized_dim(call["dim"], value.rank), call["index"]))


def index_put(call: Call) -> Pair:
    """index_put(self, indices, values, accumulate): the indices address the
    leading dimensions, so each indexed position takes (or adds) a pair."""
    result = call.result
    return Pair(
        aten.index_put.default(
            packed_of(call["self"], result), call["indices"], packed_of(call["values"], result), call["accumulate"]
        )
    )


def gather(call: Call) -> Pair:
    """gather(self, dim, index): each part gathered with the same index."""
    value = call["self"]
    dim = normalized_dim(call["dim"], value.rank)
    real, imag = value.parts()
    return make_pair(torch.gather(real, dim, call["index"]), torch.gather(imag, dim, call["index"]), call.result)


def scatter(call: Call) -> Pair:
    """scatter (of a tensor or a number) and scatter_add: each part
    scattered with the same index; a number's parts are numbers."""
    result = call.result
    (real, imag), dim = parts_of(call["self"], result.dtype), call["dim"]
    source = call["src"] if "src" in call.arguments else call["value"]
    source_real, source_imag = parts_of(source, result.dtype)
    op = aten.scatter_add.default if call.node.target.overloadpacket is aten.scatter_add else aten.scatter
    real, imag = (p if isinstance(p, torch.Tensor) else torch.full(call.example.shape, p, dtype=result.dtype,
                  device=result.device) for p in (real, imag))  # fmt: skip
    dim = normalized_dim(dim, real.dim())
    return make_pair(op(real, dim, call["index"], source_real), op(imag, dim, call["index"], source_imag), result)


def slice_scatter(call: Call) -> Pair:
    """slice_scatter(self, src, dim, start, end, step): `src` written over a
    slice of `self`."""
    result = call.result
    target = packed_of(call["self"], result)
    dim = normalized_dim(call["dim"], target.dim() - 1)
    return Pair(
        aten.slice_scatter.default(
            target, packed_of(call["src"], result), dim, call["start"], call["end"], call["step"]
        )
    )


def select_scatter(call: Call) -> Pair:
    result = call.result
    target = packed_of(call["self"], result)
    dim = normalized_dim(call["dim"], target.dim() - 1)
    return Pair(aten.select_scatter.default(target, packed_of(call["src"], result), dim, call["index"]))


def constant_pad(call: Call) -> Pair:
    """constant_pad_nd: each part padded with its part of the value."""
    real, imag = call["self"].parts()
    fill_real, fill_imag = parts_of(call["value"], call.result.dtype)
    pad = list(call["pad"])
    return make_pair(
        aten.constant_pad_nd.default(real, pad, fill_real),
        aten.constant_pad_nd.default(imag, pad, fill_imag),
        call.result,
    )


# -- reductions --------------------------------------------------------------


def _reduction_dims(call: Call, name: str = "dim") -> list[int] | None:
    """A reduction's dimensions of the complex tensor; None for a 0-d
    tensor, which a reduction gives back unchanged."""
    value = call["self"]
    if value.rank == 0:
        return None
    return normalized_dims(call.arguments.get(name), value.rank)


def sum_or_mean(call: Call) -> Pair:
    """sum and mean, over dimensions or all: the pair's sums or means."""
    dims = _reduction_dims(call)
    packed = _packed(call)
    if dims is None:
        return Pair(packed)
    keepdim = call.arguments.get("keepdim", False)
    reduce = torch.mean if call.node.target.overloadpacket is aten.mean else torch.sum
    return Pair(reduce(packed, dims, keepdim=keepdim))


def cumsum(call: Call) -> Pair:
    value = call["self"]
    if value.rank == 0:
        return value.to(call.result.dtype)
    return Pair(torch.cumsum(_packed(call), normalized_dim(call["dim"], value.rank)))


def variance(call: Call) -> Any:
    """var, std, var_mean: the variance of a complex tensor is the sum of its
    parts' (the mean of `|z - mean|^2`, with the same correction)."""
    real, imag = call["self"].to(call.result.dtype).parts()
    dims, keepdim = call["dim"], call["keepdim"]
    correction = call["correction"]
    spread = torch.var(real, dims, correction=correction, keepdim=keepdim) + torch.var(
        imag, dims, correction=correction, keepdim=keepdim
    )
    packet = call.node.target.overloadpacket
    if packet is aten.std:
        return torch.sqrt(spread)
    if packet is aten.var_mean:
        packed = call["self"].to(call.result.dtype).packed()
        reduced = normalized_dims(dims, call["self"].rank)
        return spread, Pair(torch.mean(packed, reduced, keepdim=keepdim)) if reduced else call["self"]
    return spread


def vector_norm(call: Call) -> torch.Tensor:
    """linalg_vector_norm: the norm of the magnitudes."""
    dtype = call.example.dtype
    size = magnitude(*call["self"].to(dtype).parts())
    dims = call["dim"]
    return torch.linalg.vector_norm(size, call["ord"], dims, call["keepdim"], dtype=dtype)


def norm(call: Call) -> torch.Tensor:
    """norm.Scalar, norm.ScalarOpt_dim: the p-norm of the magnitudes."""
    dtype = call.example.dtype
    size = magnitude(*call["self"].to(dtype).parts())
    p = call["p"]
    dims = call.arguments.get("dim")
    return torch.linalg.vector_norm(size, 2 if p is None else p, dims, call.arguments.get("keepdim", False))


# -- products ----------------------------------------------------------------


def _block_matrix(b: Pair) -> torch.Tensor:
    """`b [..., k, n]` as the `[..., 2k, 2n]` real matrix that multiplies a
    packed `[..., m, 2k]` row of pairs into `[..., m, 2n]` pairs."""
    real, imag = b.parts()
    rows = torch.stack([torch.stack([real, imag], -1), torch.stack([-imag, real], -1)], -3)
    sizes = real.shape
    return rows.reshape(*sizes[:-2], 2 * sizes[-2], 2 * sizes[-1])


def _matrix_product(a: Pair, b: Pair, product: Callable) -> Pair:
    packed = a.packed()
    sizes = packed.shape
    lhs = packed.reshape(*sizes[:-2], 2 * sizes[-2])
    out = product(lhs, _block_matrix(b))
    return Pair(out.view(*out.shape[:-1], out.shape[-1] // 2, 2))


def mm(call: Call) -> Pair:
    dtype = call.result.dtype
    return _matrix_product(call["self"].to(dtype), call["mat2"].to(dtype), torch.mm)


def bmm(call: Call) -> Pair:
    dtype = call.result.dtype
    return _matrix_product(call["self"].to(dtype), call["mat2"].to(dtype), torch.bmm)


def addmm(call: Call) -> Pair:
    """`beta * self + alpha * (mat1 @ mat2)`."""
    result = call.result
    product = _matrix_product(call["mat1"].to(result.dtype), call["mat2"].to(result.dtype), torch.mm)
    scaled = multiply(product.parts(), parts_of(call["alpha"], result.dtype))
    bias = multiply(parts_of(call["self"], result.dtype), parts_of(call["beta"], result.dtype))
    beta = call["beta"]
    if beta == 0:
        return make_pair(*scaled, result)
    return make_pair(scaled[0] + bias[0], scaled[1] + bias[1], result)


# -- new tensors and sizes ---------------------------------------------------


def _filled(sizes: Any, value: Any, result: Result) -> Pair:
    real, imag = parts_of(value, result.dtype)
    return make_pair(
        torch.full(list(sizes), real, dtype=result.dtype, device=result.device),
        torch.full(list(sizes), imag, dtype=result.dtype, device=result.device),
        result,
    )


def full(call: Call) -> Pair:
    return _filled(call["size"], call["fill_value"], call.result)


def scalar_tensor(call: Call) -> Pair:
    return _filled([], call["s"], call.result)


def _shape_of(value: Any) -> tuple:
    return value.shape() if isinstance(value, Pair) else tuple(value.shape)


def full_like(call: Call) -> Pair:
    return _filled(_shape_of(call["self"]), call["fill_value"], call.result)


def zeros_like(call: Call) -> Pair:
    packet = call.node.target.overloadpacket
    return _filled(_shape_of(call["self"]), 1 if packet is aten.ones_like else 0, call.result)


def empty(call: Call) -> Pair:
    """empty, empty_like: a pair of the sizes, its values unset."""
    result = call.result
    sizes = call["size"] if "size" in call.arguments else _shape_of(call["self"])
    return Pair(torch.empty(_with_pair(sizes), dtype=result.dtype, device=result.device))


def empty_strided(call: Call) -> Pair:
    result = call.result
    strides = [*(2 * s for s in call["stride"]), 1]
    return Pair(
        torch.empty_strided(_with_pair(call["size"]), strides, dtype=result.dtype, device=result.device)
    )


def size(call: Call) -> Any:
    value = call["self"]
    return value.packed().size(normalized_dim(call["dim"], value.rank))


def stride(call: Call) -> Any:
    value = call["self"]
    return value.packed().stride(normalized_dim(call["dim"], value.rank)) // 2


def numel(call: Call) -> Any:
    return call["self"].packed().numel() // 2


def storage_offset(call: Call) -> Any:
    return call["self"].packed().storage_offset() // 2


STRUCTURE_RULES: dict[Any, Callable[[Call], Any]] = {
    aten.view.default: view,
    aten._unsafe_view: view,
    aten.reshape: view,
    aten.permute: permute,
    aten.transpose.int: transpose,
    aten.t: matrix_transpose,
    aten.slice.Tensor: slice_view,
    aten.narrow: narrow,
    aten.select.int: select,
    aten.unsqueeze: unsqueeze,
    aten.squeeze: squeeze,
    aten.expand: expand,
    aten.as_strided: as_strided,
    aten.diagonal: diagonal,
    aten.flip: flip,
    aten.roll: roll,
    aten.cat: cat,
    aten.stack: stack,
    aten.split.Tensor: split,
    aten.split_with_sizes: split,
    aten.index.Tensor: index,
    aten.index_select: index_select,
    aten.index_put: index_put,
    aten.gather: gather,
    aten.scatter.src: scatter,
    aten.scatter.value: scatter,
    aten.scatter_add: scatter,
    aten.slice_scatter: slice_scatter,
    aten.select_scatter: select_scatter,
    aten.constant_pad_nd: constant_pad,
    aten.sum.default: sum_or_mean,
    aten.sum.dim_IntList: sum_or_mean,
    aten.mean.default: sum_or_mean,
    aten.mean.dim: sum_or_mean,
    aten.cumsum.default: cumsum,
    aten.var.correction: variance,
    aten.std.correction: variance,
    aten.var_mean.correction: variance,
    aten.linalg_vector_norm: vector_norm,
    aten.norm.Scalar: norm,
    aten.norm.ScalarOpt_dim: norm,
    aten.mm: mm,
    aten.bmm: bmm,
    aten.addmm.default: addmm,
    aten.full.default: full,
    aten.scalar_tensor: scalar_tensor,
    aten.full_like: full_like,
    aten.zeros_like: zeros_like,
    aten.ones_like: zeros_like,
    aten.empty.memory_format: empty,
    aten.empty_like: empty,
    aten.empty_strided: empty_strided,
    aten.new_empty_strided: empty_strided,
    aten.new_empty: empty,
    aten.sym_size.int: size,
    aten.sym_stride.int: stride,
    aten.sym_numel: numel,
    aten.sym_storage_offset: storage_offset,
}
"""The rules of views, data movement, reductions, products, new tensors and
sizes, by ATen overload packet or overload."""
