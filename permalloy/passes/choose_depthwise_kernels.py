"""The `choose-depthwise-kernels` pass."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import ClassVar, NamedTuple

import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.dialects.ptensor.types import IntListAttr
from permalloy.dtypes import torch_dtype
from permalloy.passes import check_option
from permalloy.passes.convolution_layouts import device_identity, random_strided, random_tensor

CHOICES = ("always", "measured")
"""The values of the `choose` option."""
DEVICES = ("cuda",)
"""Where the kernel is timed against the library: the values of `device`."""

Layouts = tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
"""Sizes and strides of buffers: a convolution's input, weight and result."""


def static_layouts(values: Sequence[SSAValue]) -> Layouts | None:
    """The sizes and strides of the buffers `values`; None where one is
    symbolic."""
    layouts = []
    for value in values:
        layout = buf.buffer_type(value)
        parts = (layout.sizes, layout.strides.data)
        if not all(e.is_Integer for part in parts for e in part):
            return None
        layouts.append(tuple(tuple(int(e) for e in part) for part in parts))
    return tuple(layouts)


class Candidate(NamedTuple):
    """A convolution permalloy's depthwise kernel can compute."""

    convolution: pt.ConvolutionOp
    layouts: Layouts
    input: torch.Tensor
    """A meta tensor of its input's sizes, strides and type."""


def kernel_candidate(op: buf.ExternOp) -> Candidate | None:
    """The convolution `op` holds, where permalloy's depthwise kernel can
    compute it: a 2-d depthwise convolution of static sizes and strides in a
    type the kernel takes, whose planned result has the layout the kernel
    writes for its input (`result_strides`, torch's own)."""
    convolution = op.library_op
    if not isinstance(convolution, pt.ConvolutionOp) or not convolution.is_depthwise_2d():
        return None
    source, weight = op.library_inputs()[:2]
    layouts = static_layouts([source, weight, op.results[0]])
    if layouts is None:
        return None
    from permalloy.targets.triton import depthwise_convolution as kernel

    (sizes, strides), (weight_sizes, weight_strides), (result_sizes, result_strides) = layouts
    x = torch.empty_strided(sizes, strides, dtype=torch_dtype(buf.buffer_type(source).element_type), device="meta")
    weight = torch.empty_strided(weight_sizes, weight_strides, dtype=x.dtype, device="meta")
    bias = torch.empty(sizes[1], dtype=x.dtype, device="meta") if convolution.bias is not None else None
    if not kernel.supported(x, weight, bias, kernel.Geometry(*pt.convolution_geometry(convolution)[:3])):
        return None
    if kernel.result_strides(x, result_sizes) != result_strides:
        return None
    return Candidate(convolution, layouts, x)


def measured_tile(op: buf.ExternOp, device: str) -> tuple[int, ...] | None:
    """The tile of permalloy's depthwise kernel that runs the convolution `op`
    holds fastest on `device`, where it beats the library's convolution in
    the program's layouts; None where the library is as fast, or there is no
    GPU to time on."""
    candidate = kernel_candidate(op)
    if candidate is None or not torch.cuda.is_available():
        return None
    geometry = tuple(tuple(g) for g in pt.convolution_geometry(candidate.convolution)[:3])
    biased = candidate.convolution.bias is not None
    dtype = candidate.input.dtype
    return _fastest_tile(candidate.layouts[:2], dtype, biased, geometry, device, device_identity(device))


@functools.cache
def _fastest_tile(
    layouts: Layouts, dtype: torch.dtype, biased: bool, geometry: tuple, device: str, _: int
) -> tuple[int, ...] | None:
    """Timed once per process for each convolution of these layouts: the
    same layers repeat through a network and through its graphs."""
    from permalloy.targets.triton.autotune import gpu_timer
    from permalloy.targets.triton.depthwise_convolution import Geometry, fastest_config

    (sizes, strides), (weight_sizes, weight_strides) = layouts
    generator = torch.Generator(device).manual_seed(0)
    x = random_strided(sizes, strides, dtype, device, generator)
    weight = random_strided(weight_sizes, weight_strides, dtype, device, generator)
    bias = random_tensor((sizes[1],), dtype, device, generator) if biased else None
    with torch.no_grad():
        config = fastest_config(x, weight, bias, Geometry(*geometry), gpu_timer())
    return None if config is None else astuple(config)


def first_tile(op: buf.ExternOp) -> tuple[int, ...] | None:
    """The first candidate tile of permalloy's depthwise kernel for the
    convolution `op` holds, where the kernel can compute it."""
    candidate = kernel_candidate(op)
    if candidate is None:
        return None
    from permalloy.targets.triton.depthwise_convolution import candidate_configs

    return astuple(candidate_configs(candidate.input)[0])


@dataclass(frozen=True)
class KernelChoicePass(ModulePass):
    """The options and the walk of a pass that marks library ops that one of
    permalloy's kernels computes instead: `choose` (`always`, or `measured`
    on `device`) and, for each library op of the module's functions, the
    choice a subclass makes (`chosen`), set as its attribute `ATTRIBUTE`,
    after the subclass has seen them all (`prepare`)."""

    ATTRIBUTE: ClassVar[str]

    choose: str = "always"
    device: str = "cuda"

    def __post_init__(self) -> None:
        check_option("choose", self.choose, CHOICES)
        check_option("device", self.device, DEVICES)

    def chosen(self, extern: buf.ExternOp) -> tuple[int, ...] | None:
        """The kernel's parameters for the library op `extern` holds; None
        where the library keeps it."""
        raise NotImplementedError

    def prepare(self, externs: list[buf.ExternOp]) -> None:
        """Work before the choices, given every library op of the module
        (a subclass may have its kernels compiled in parallel); nothing by
        default."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        externs = [
            o
            for f in op.ops
            if isinstance(f, func.FuncOp) and f.body.blocks
            for o in f.body.block.ops
            if isinstance(o, buf.ExternOp)
        ]
        self.prepare(externs)
        for extern in externs:
            chosen = self.chosen(extern)
            if chosen is not None:
                extern.library_op.attributes[self.ATTRIBUTE] = IntListAttr(chosen)


@dataclass(frozen=True)
class ChooseDepthwiseKernelsPass(KernelChoicePass):
    """
    Runs 2-d depthwise convolutions (one filter per channel) with permalloy's
    depthwise Triton kernel (`targets/triton/depthwise_convolution.py`)
    where it is faster than the library: it marks each such convolution with
    the kernel's tile (`ptensor.convolution`'s `depthwise_tile`), which the
    host program's call then runs.

    It runs after `plan-layouts`, on the layouts the program has. With
    `choose=measured` (the GPU target's choice) the kernel's candidate tiles
    are timed against the library's convolution on `device` (the current
    GPU), on random tensors of the program's layouts, once per process for
    each convolution, and the fastest tile is taken where it beats the
    library; a convolution of symbolic sizes or strides, or with no GPU to
    time on, stays the library's. `always` (the default) marks every
    convolution the kernel takes, with the first tile for its layout.

    Before:
    ```
    %y = buffer.extern ins(%a = %x : !buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>, %b = %w : !buffer.buffer<[8, 1, 3, 3], f32>) -> (!buffer.buffer<[2, 8, 5, 5], f32, strides [200, 1, 40, 8]>) {
      %c = ptensor.convolution %a, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 : ...
      buffer.yield %c : !ptensor.tensor<[2, 8, 5, 5], f32>
    }
    ```
    After:
    ```
      %c = ptensor.convolution %a, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 {depthwise_tile = #ptensor.ints[4, 8, 32, 4]} : ...
    ```
    """

    name = "choose-depthwise-kernels"

    ATTRIBUTE: ClassVar[str] = pt.ConvolutionOp.TILE

    def chosen(self, extern: buf.ExternOp) -> tuple[int, ...] | None:
        return first_tile(extern) if self.choose == "always" else measured_tile(extern, self.device)
