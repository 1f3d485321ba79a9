"""
How long a convolution takes in NCHW and in channels-last memory, measured
on the device that will run it.

Convolution libraries differ by shape: on the CPU, oneDNN runs a
convolution of few input channels (an image's stem) several times faster on
a channels-last input than torch's NCHW path, while a large depthwise window
can run faster on NCHW; on a GPU, cuDNN's grouped and depthwise kernels want
channels-last, while its float32 dense ones can be faster on NCHW.
`convolution_times` times one convolution of a buffer-level program both
ways, on random tensors of its sizes, counting the copy of an input that
arrives in NCHW, or for a convolution whose result keeps NCHW memory (a
graph output) the copy of its channels-last input back to NCHW.
A pointwise convolution (a window of one element) counts, in each layout,
the faster of the library's convolution and the matrix product it is
(`analysis.convolution_products`), which `convolutions-as-products` then
runs where it measures faster (`product_is_faster`).
Measurements are kept per convolution geometry for the process, as the same
layers repeat through a network and through its graphs.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from xdsl.ir import SSAValue

from permalloy.analysis.convolution_products import Layout, is_pointwise_geometry, product_views
from permalloy.dialects import buffer as buf
from permalloy.dialects import ptensor as pt
from permalloy.dtypes import torch_dtype

MEASURED_DEVICES = ("cpu", "cuda")
"""Where convolutions are timed: the values of the `device` options of
`plan-layouts` and `convolutions-as-products`."""

TIMED_CALLS = 5
"""Calls timed in each layout, after one untimed call; the fastest counts."""

TIME_BUDGET_SECONDS = 0.05
"""Timing stops early once one layout's calls have taken this long."""

Signature = tuple
"""A convolution as far as its speed goes: sizes, strides, dtype, geometry."""


def convolution_signature(
    op: buf.ExternOp, copies_input: bool, device: str = "cpu", keeps_nchw: bool = False, trains: bool = False
) -> Signature | None:
    """The measured facts of the convolution `op` holds on `device`
    (`copies_input`: its input arrives in NCHW and is copied to
    channels-last for it; `keeps_nchw`: it runs in NCHW memory, on an NCHW
    copy of its input where that is channels-last; `trains`: a training
    step's backward graph computes its gradients in the same layouts), or
    None where a size or stride is symbolic or the device is a GPU that
    torch does not see."""
    if device == "cuda" and not torch.cuda.is_available():
        return None
    convolution = op.library_op
    assert isinstance(convolution, pt.ConvolutionOp)
    source, weight = buf.buffer_type(op.inputs[0]), buf.buffer_type(op.inputs[1])
    channels = buf.buffer_type(op.results[0]).sizes[1]
    facts = [source.sizes, weight.sizes, weight.strides.data, (channels,)]
    if not all(e.is_Integer for part in facts for e in part):
        return None
    sizes, weight_sizes, weight_strides, (channels,) = (tuple(int(e) for e in part) for part in facts)
    return (
        sizes,
        weight_sizes,
        weight_strides,
        torch_dtype(source.element_type),
        channels if convolution.bias is not None else None,
        _geometry(convolution),
        copies_input,
        keeps_nchw,
        _gradient_mask(copies_input, convolution.bias is not None) if trains else None,
        device,
        device_identity(device),
    )


def _gradient_mask(copies_input: bool, biased: bool) -> tuple[bool, bool, bool]:
    """The gradients a training step's backward graph asks of a convolution:
    the weight's, the bias's where it has one, and the input's unless the
    input arrives from outside the set (copied: a graph input, an image)."""
    return (not copies_input, True, biased)


def _geometry(op: pt.ConvolutionOp | pt.ConvolutionBackwardOp) -> tuple:
    """The convolution geometry of `op` (`pt.convolution_geometry`) as a key."""
    return tuple(tuple(x) if isinstance(x, list) else x for x in pt.convolution_geometry(op))


def device_identity(device: str) -> int:
    """What else a measurement on `device` depends on: the current GPU, or
    torch's thread count on the CPU."""
    return torch.cuda.current_device() if device == "cuda" else torch.get_num_threads()


def _aten_arguments(geometry: tuple) -> tuple:
    """aten's stride, padding, dilation, transposed, output_padding and groups
    arguments of a convolution from its `_geometry`."""
    stride, padding, dilation, transposed, output_padding, groups = geometry
    return (list(stride), list(padding), list(dilation), transposed, list(output_padding), groups)


def _synchronizer(device: str) -> Callable[[], None]:
    """What waits for `device`'s queued work."""
    return torch.cuda.synchronize if device == "cuda" else _nothing


@dataclass(frozen=True)
class LayoutTimes:
    """The seconds one call of a convolution takes in each layout."""

    nchw: float
    channels_last: float


NOT_MEASURED = LayoutTimes(0.0, 0.0)
"""The times of a convolution with symbolic sizes, which is not measured."""


def convolution_times(
    op: buf.ExternOp, copies_input: bool, device: str = "cpu", keeps_nchw: bool = False, trains: bool = False
) -> LayoutTimes:
    """How long a call of the convolution `op` holds takes with NCHW input
    and result, and with channels-last ones (counting the copy of its input
    where `copies_input`), on `device` (the CPU with torch's current threads,
    or the current GPU); `NOT_MEASURED` where its sizes are symbolic. With
    `keeps_nchw` the convolution runs in NCHW memory both ways, and the
    channels-last time counts the copy of a channels-last input to NCHW.
    With `trains` each time adds the library's gradients of the convolution
    (`torch.ops.aten.convolution_backward`) in the same layouts: a training
    step's backward graph runs them on the saved activations as the forward
    lays them out, and cuDNN's float32 grouped gradients, for one, run
    slower channels-last (converting to NCHW inside) where the forward ran
    faster so."""
    signature = convolution_signature(op, copies_input, device, keeps_nchw, trains)
    return NOT_MEASURED if signature is None else _measured_times(signature)


@functools.cache
def _measured_times(signature: Signature) -> LayoutTimes:
    sizes, weight_sizes, weight_strides, dtype, bias_size, geometry, copies_input, keeps_nchw, mask, device, _ = signature
    generator = torch.Generator(device).manual_seed(0)
    x = random_tensor(sizes, dtype, device, generator)
    weight = random_strided(weight_sizes, weight_strides, dtype, device, generator)
    bias = None if bias_size is None else random_tensor((bias_size,), dtype, device, generator)
    arguments = _aten_arguments(geometry)
    planned = x.contiguous(memory_format=torch.channels_last)

    def channels_last() -> torch.Tensor:
        if keeps_nchw:
            return torch.convolution(planned.contiguous(), weight, bias, *arguments)
        source = x.contiguous(memory_format=torch.channels_last) if copies_input else planned
        return torch.convolution(source, weight, bias, *arguments)

    synchronize = _synchronizer(device)
    with torch.no_grad():
        times = LayoutTimes(
            _fastest(lambda: torch.convolution(x, weight, bias, *arguments), synchronize),
            _fastest(channels_last, synchronize),
        )
        if mask is not None:
            times = _with_gradients(times, x, planned, weight, bias_size, arguments, mask, keeps_nchw, synchronize)
        if not is_pointwise_geometry(geometry, weight_sizes):
            return times
        result_sizes = (sizes[0], weight_sizes[0], *sizes[2:])
        nchw_result = torch.empty(result_sizes, dtype=dtype, device=device)
        planned_result = nchw_result if keeps_nchw else torch.empty_like(nchw_result, memory_format=torch.channels_last)
        nchw = _product_call(x, weight, bias, nchw_result)
        channels_last_product = _product_call(planned, weight, bias, planned_result)
        if copies_input and not keeps_nchw and channels_last_product is not None:
            channels_last_product = _then(lambda: x.contiguous(memory_format=torch.channels_last), channels_last_product)
        return LayoutTimes(
            times.nchw if nchw is None else min(times.nchw, _fastest(nchw, synchronize)),
            times.channels_last
            if channels_last_product is None
            else min(times.channels_last, _fastest(channels_last_product, synchronize)),
        )


def _with_gradients(
    times: LayoutTimes,
    x: torch.Tensor,
    planned: torch.Tensor,
    weight: torch.Tensor,
    bias_size: int | None,
    arguments: tuple,
    mask: tuple[bool, bool, bool],
    keeps_nchw: bool,
    synchronize: Callable[[], None],
) -> LayoutTimes:
    """`times` plus the convolution's gradients (`mask`: input, weight,
    bias) computed in each layout: on NCHW tensors, and on the planned
    channels-last input with a channels-last result gradient (NCHW both ways
    where the convolution `keeps_nchw`)."""
    gradient = torch.ops.aten.convolution_backward.default
    result = torch.convolution(x, weight, None, *arguments)
    bias_sizes = None if bias_size is None else [bias_size]
    nchw_grad = torch.randn_like(result)
    planned_grad = nchw_grad if keeps_nchw else nchw_grad.contiguous(memory_format=torch.channels_last)
    planned_input = x if keeps_nchw else planned
    backward = LayoutTimes(
        _fastest(lambda: gradient(nchw_grad, x, weight, bias_sizes, *arguments, list(mask)), synchronize),
        _fastest(lambda: gradient(planned_grad, planned_input, weight, bias_sizes, *arguments, list(mask)), synchronize),
    )
    return LayoutTimes(times.nchw + backward.nchw, times.channels_last + backward.channels_last)


def product_is_faster(op: buf.ExternOp, device: str = "cpu") -> bool:
    """Whether the pointwise convolution `op` holds runs faster as its
    matrix product than as the library's convolution, in the layouts its
    input and result have, on `device`; True where its sizes or strides are
    symbolic or the device is a GPU that torch does not see (the product
    measured faster on every model of the suite, `convolutions-as-products`)."""
    convolution = op.library_op
    assert isinstance(convolution, pt.ConvolutionOp)
    source, weight = op.inputs[0], op.inputs[1]
    return _timed_choice(convolution, source, weight, op.results[0], convolution.bias is not None, False, device)


def backward_product_is_faster(op: buf.ExternOp, device: str = "cpu") -> bool:
    """Whether the input gradient of the pointwise convolution whose
    gradients `op` holds runs faster as a matrix product (the result's
    gradient by the transposed weight) than as the library's gradient, in
    the layouts of the result's gradient and the input's; True where sizes
    or strides are symbolic or there is no GPU to time on."""
    backward = op.library_op
    assert isinstance(backward, pt.ConvolutionBackwardOp)
    grad_output, _, weight = op.inputs
    return _timed_choice(backward, grad_output, weight, op.results[0], False, True, device)


def _timed_choice(
    library_op: pt.ConvolutionOp | pt.ConvolutionBackwardOp,
    source: SSAValue,
    weight: SSAValue,
    result: SSAValue,
    biased: bool,
    backward: bool,
    device: str,
) -> bool:
    """`_product_faster` for the buffers `source`, `weight` and `result` of
    `library_op`; True where a size or stride is symbolic or the device is a
    GPU that torch does not see."""
    if device == "cuda" and not torch.cuda.is_available():
        return True
    layouts = [buf.buffer_type(v) for v in (source, weight, result)]
    facts = [part for layout in layouts for part in (layout.sizes, layout.strides.data)]
    if not all(e.is_Integer for part in facts for e in part):
        return True
    ints = tuple(tuple(int(e) for e in part) for part in facts)
    dtype = torch_dtype(layouts[0].element_type)
    return _product_faster(ints, dtype, biased, backward, _geometry(library_op), device, device_identity(device))


@functools.cache
def _product_faster(
    layouts: tuple, dtype: torch.dtype, biased: bool, backward: bool, geometry: tuple, device: str, _: int
) -> bool:
    """Whether the product form measures faster than the library: of the
    convolution of a `source` by a `weight` into a `result` or, `backward`,
    of the input gradient `result` from the result's gradient `source`."""
    source_sizes, source_strides, weight_sizes, weight_strides, result_sizes, result_strides = layouts
    generator = torch.Generator(device).manual_seed(0)
    source = random_strided(source_sizes, source_strides, dtype, device, generator)
    weight = random_strided(weight_sizes, weight_strides, dtype, device, generator)
    bias = random_tensor((weight_sizes[0],), dtype, device, generator) if biased else None
    result = torch.empty_strided(result_sizes, result_strides, dtype=dtype, device=device)
    factor = weight.transpose(0, 1) if backward else weight
    product = _product_call(source, factor, bias, result)
    if product is None:
        return False
    arguments = _aten_arguments(geometry)
    if backward:
        gradient = torch.ops.aten.convolution_backward.default

        def library() -> object:
            return gradient(source, result, weight, None, *arguments, [True, False, False])

    else:

        def library() -> object:
            return torch.convolution(source, weight, bias, *arguments)

    synchronize = _synchronizer(device)
    with torch.no_grad():
        return _fastest(product, synchronize) < _fastest(library, synchronize)


def _product_call(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, result: torch.Tensor
) -> Callable[[], object] | None:
    """A call computing the pointwise convolution of `x` by `weight` (plus
    `bias`) into `result` as the matrix product on views of their memory that
    `convolutions-as-products` makes, or None where their layouts have none."""
    views = product_views(
        Layout(tuple(x.shape), x.stride()),
        Layout(tuple(weight.shape), weight.stride()),
        Layout(tuple(result.shape), result.stride()),
        biased=bias is not None,
    )
    if views is None:
        return None

    def view(tensor: torch.Tensor, layout: Layout) -> torch.Tensor:
        return tensor.as_strided(layout.sizes, layout.strides, tensor.storage_offset())

    source, factor, out = view(x, views.input), view(weight, views.weight), view(result, views.result)
    if views.kind == "batched":
        return lambda: torch.bmm(factor, source, out=out)
    if bias is not None:
        return lambda: torch.addmm(bias, source, factor, out=out)
    return lambda: torch.mm(source, factor, out=out)


def _then(first: Callable[[], object], second: Callable[[], object]) -> Callable[[], object]:
    """A call of `first`, then `second`."""

    def both() -> object:
        first()
        return second()

    return both


def random_tensor(sizes: tuple, dtype: torch.dtype, device: str, generator: torch.Generator) -> torch.Tensor:
    """Normal samples made where they are used: drawn on the CPU and moved, an
    image batch of a GPU model took a tenth of a second each, a second of an
    EfficientNet's compile."""
    return torch.empty(sizes, dtype=dtype, device=device).normal_(generator=generator)


def random_strided(
    sizes: tuple, strides: tuple, dtype: torch.dtype, device: str, generator: torch.Generator
) -> torch.Tensor:
    """`_random` samples in memory of the given strides."""
    tensor = torch.empty_strided(sizes, strides, dtype=dtype, device=device)
    return tensor.copy_(random_tensor(sizes, dtype, device, generator))


def _nothing() -> None:
    """No device to wait for: CPU calls return when they are done."""


def _fastest(call: Callable[[], object], synchronize: Callable[[], None]) -> float:
    """The shortest of a few timed calls of `call`, in seconds, each waited
    for with `synchronize`."""
    call()
    synchronize()
    best = float("inf")
    spent = 0.0
    for _ in range(TIMED_CALLS):
        started = time.perf_counter()
        call()
        synchronize()
        elapsed = time.perf_counter() - started
        best = min(best, elapsed)
        spent += elapsed
        if spent > TIME_BUDGET_SECONDS:
            break
    return best
