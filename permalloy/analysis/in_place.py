"""
When a kernel may write a result over one of its inputs: the stage computing
that result is pointwise and reads the input only at the point it computes.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from permalloy.dialects import buffer as buf
from permalloy.dialects import loop
from permalloy.dialects.sym import parallel_index


def loads_only_at_its_point(pointwise: loop.PointwiseOp, operand: SSAValue) -> bool:
    """Whether `pointwise` reads `operand` (one of its inputs) only at the
    point it computes: unmasked loads at the identity index."""
    identity = tuple(parallel_index(i) for i in range(pointwise.parallel_rank))
    for value, inner in zip(pointwise.inputs, pointwise.body.block.args):
        if value != operand:
            continue
        for use in inner.uses:
            load = use.operation
            if not isinstance(load, loop.LoadOp) or load.mask is not None or load.index_values:
                return False
            if tuple(load.indices.data) != identity:
                return False
    return True


def writes_over_input(kernel: buf.KernelOp, input_index: int, output_index: int) -> bool:
    """Whether the kernel's result `output_index` may be written over its
    argument `input_index`: a pointwise stage computes it, which the kernel
    only yields, and which alone reads the argument, only at the point it
    writes. Each point of that stage is then read before it is written, by
    the program that writes it."""
    terminator = kernel.body.block.last_op
    assert isinstance(terminator, buf.YieldOp)
    computed = terminator.values[output_index]
    pointwise = computed.owner
    if not isinstance(pointwise, loop.PointwiseOp):
        return False
    if any(use.operation is not terminator for use in computed.uses):
        return False
    argument = kernel.body.block.args[input_index]
    if any(use.operation is not pointwise for use in argument.uses):
        return False
    return loads_only_at_its_point(pointwise, argument)
