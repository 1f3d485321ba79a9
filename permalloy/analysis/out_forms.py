"""
Library ops that can write their result into a tensor the program gives them
(torch's `out=` forms), and the layouts they write that way as they are.

The matrix products have such forms: the program then allocates their results
itself (`plan-memory` places them in the memory of dead buffers like any
allocation), where a call without one gets a new tensor from the library on
every call, an allocation the operating system may have to map afresh.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from permalloy.dialects import ptensor as pt
from permalloy.dialects.buffer import BufferType, ExternOp, contiguous_strides
from permalloy.dialects.ptensor import shapes_equal

OUT_FORM_OPS: tuple[type[Operation], ...] = (pt.MatmulOp, pt.BatchMatmulOp, pt.AddmmOp)
"""The library ops with an `out=` form."""

MATRIX_PRODUCTS: tuple[type[Operation], ...] = (pt.MatmulOp, pt.AddmmOp)
"""The products of two matrices, which the library also writes column-major."""


def writes_into_layout(op: Operation, sizes: Sequence, strides: Sequence) -> bool:
    """Whether the `out=` form of library op `op` writes a result of these
    sizes and strides as it is, with no copy: a dense row-major one, or for
    a product of two matrices a dense column-major one (BLAS then multiplies
    the transposed factors in swapped order: the product `[S, C] @ [C, O]`
    of one NCHW image lands in NCHW memory), and for a batch of products
    dense batches of column-major matrices (`[B, M, N]` with strides `[M * N,
    1, M]`: the products `[C, K] @ [K, S]` of a batch of images land in
    channels-last memory). A result of any other layout would be computed
    aside and copied."""
    if not isinstance(op, OUT_FORM_OPS):
        return False
    if shapes_equal(strides, contiguous_strides(sizes)):
        return True
    if isinstance(op, pt.BatchMatmulOp) and len(sizes) == 3:
        rows, columns = sizes[1], sizes[2]
        return shapes_equal(strides, (rows * columns, 1, rows))
    return isinstance(op, MATRIX_PRODUCTS) and len(sizes) == 2 and shapes_equal(strides, (1, sizes[0]))


def writes_into(extern: ExternOp) -> bool:
    """Whether `extern` can run its op's `out=` form into a tensor of its one
    result's layout."""
    if len(extern.results) != 1 or not extern.inputs:
        return False
    layout = extern.results[0].type
    assert isinstance(layout, BufferType)
    return writes_into_layout(extern.library_op, layout.sizes, layout.strides.data)
