"""
`plan-layouts` with measured convolutions (the targets' choice): a set of
buffers keeps NCHW memory only where its convolutions, timed both ways, run
slower in channels-last memory; the timer sees which inputs are copied;
convolutions with symbolic sizes are not measured.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import f32

from permalloy.analysis.channels import concatenates_channels, walks_channels_beside
from permalloy.cache.modules import parse_module
from permalloy.dialects import buffer as buf
from permalloy.passes import PipelineError, build_pipeline
from permalloy.passes.convolution_layouts import NOT_MEASURED, LayoutTimes, convolution_times
from permalloy.passes.plan_layouts import (
    CONCATENATING_MARGIN,
    MEASURED_FLOOR_SECONDS,
    MEASURED_MARGIN,
    TRANSPOSING_MARGIN,
    channels_last_strides,
    plan_function_layouts,
)

LIT_MODULE = Path(__file__).parents[1] / "filecheck" / "passes" / "plan_layouts.mlir"


def _function(name: str) -> func.FuncOp:
    module = parse_module(LIT_MODULE.read_text())
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name]
    return function


def _strided(function: func.FuncOp) -> list[str]:
    """The layouts of the function's values that are not row-major."""
    values = [r for op in function.body.block.ops for r in op.results]
    return [str(v.type) for v in values if isinstance(v.type, buf.BufferType) and not v.type.is_contiguous()]


def _planned_with(*times: tuple[float, float]) -> list[str]:
    """The strided layouts of `@planned` after planning with these times of
    its two convolutions (timed whatever their size)."""
    function = _function("planned")
    plan_function_layouts(function, Timer(*times), min_multiply_adds=0)
    return _strided(function)


class Timer:
    """Fixed times per convolution, in program order; records each call."""

    def __init__(self, *times: tuple[float, float]):
        self.times = [LayoutTimes(*t) for t in times]
        self.calls: list[bool] = []

    def __call__(self, op: buf.ExternOp, copies_input: bool, keeps_nchw: bool = False) -> LayoutTimes:
        self.calls.append("keeps NCHW" if keeps_nchw else copies_input)
        return self.times[len(self.calls) - 1]


def test_measured_faster_takes_channels_last():
    function = _function("planned")
    timer = Timer((2.0, 1.0), (2.0, 1.0))
    plan_function_layouts(function, timer, min_multiply_adds=0)
    # the graph input is copied for the first convolution; the second reads a kernel's result
    assert timer.calls == [True, False]
    assert "!buffer.buffer<[2, 3, 5, 5], f32, strides [75, 1, 15, 3]>" in _strided(function)
    assert "!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>" in _strided(function)


def test_measured_slower_keeps_nchw():
    assert _planned_with((1.0, 2.0), (1.0, 2.0)) == []


def test_the_set_decides_by_its_total_time():
    # the first convolution loses 2.0 in channels-last, the second gains 4.0
    assert _planned_with((1.0, 3.0), (5.0, 1.0)) != []
    assert _planned_with((1.0, 3.0), (2.5, 1.0)) == []


def test_a_loss_within_the_margin_takes_channels_last():
    assert _planned_with((1.0, 1.01), (1.0, 1.01)) != []
    assert _planned_with((1.0, 1.05), (1.0, 1.05)) == []


def test_unmeasured_convolutions_take_channels_last():
    assert _planned_with((0.0, 0.0), (0.0, 0.0)) != []


def test_convolutions_too_fast_to_tell_apart_keep_nchw():
    # 0.3 of the floor in all, channels-last measured faster: NCHW stays
    floor = MEASURED_FLOOR_SECONDS["cpu"]
    assert _planned_with((0.2 * floor, 0.1 * floor), (0.1 * floor, 0.05 * floor)) == []
    assert _planned_with((2 * floor, floor), (floor, 0.5 * floor)) != []
    # a GPU's floor is higher: there the same times keep NCHW
    function = _function("planned")
    plan_function_layouts(function, Timer((2 * floor, floor), (floor, 0.5 * floor)), min_multiply_adds=0, device="cuda")
    assert _strided(function) == []


def test_convolutions_too_small_to_time_keep_nchw_untimed():
    # @planned's two convolutions do 2*4*5*5 * 3*3*3 + 2*4*5*5 * 4 = 6,200 multiply-adds
    function = _function("planned")
    timer = Timer((2.0, 1.0), (2.0, 1.0))
    plan_function_layouts(function, timer, min_multiply_adds=6_201)
    assert timer.calls == [] and _strided(function) == []
    function = _function("planned")
    plan_function_layouts(function, timer, min_multiply_adds=6_200)
    assert timer.calls == [True, False] and _strided(function) != []


def test_a_set_of_many_small_convolutions_is_timed():
    # each call's fixed costs, not its 6,200 multiply-adds, decide: from
    # `min_convolutions` convolutions a set is timed whatever its work
    function = _function("planned")
    timer = Timer((2.0, 1.0), (2.0, 1.0))
    plan_function_layouts(function, timer, min_multiply_adds=6_201, min_convolutions=2)
    assert timer.calls == [True, False] and _strided(function) != []
    function = _function("planned")
    timer = Timer((2.0, 1.0), (2.0, 1.0))
    plan_function_layouts(function, timer, min_multiply_adds=6_201, min_convolutions=3)
    assert timer.calls == [] and _strided(function) == []


def test_a_gpu_counts_only_the_work():
    function = _function("planned")
    timer = Timer((2.0, 1.0), (2.0, 1.0))
    plan_function_layouts(function, timer, min_multiply_adds=6_201, device="cuda")
    assert timer.calls == [] and _strided(function) == []


def _given_channels_last_input() -> func.FuncOp:
    """`@planned` called with its images in channels-last memory."""
    nchw = "!buffer.buffer<[2, 3, 5, 5], f32>"
    text = LIT_MODULE.read_text().replace(nchw, "!buffer.buffer<[2, 3, 5, 5], f32, strides [75, 1, 15, 3]>")
    module = parse_module(text)
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "planned"]
    return function


def test_a_set_given_a_channels_last_input_takes_it_untimed_or_too_fast_to_tell():
    # torch's convolution answers a channels-last input in channels-last: an
    # NCHW result would be converted, so the set follows the input
    result = "!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>"
    function = _given_channels_last_input()
    timer = Timer((2.0, 1.0), (2.0, 1.0))
    plan_function_layouts(function, timer, min_multiply_adds=6_201)
    assert timer.calls == [] and result in _strided(function)
    assert "buffer.copy" not in str(function)  # the input is read as it is given
    floor = MEASURED_FLOOR_SECONDS["cuda"]
    function = _given_channels_last_input()
    plan_function_layouts(function, Timer((0.2 * floor, 0.3 * floor), (0.1 * floor, 0.1 * floor)), min_multiply_adds=0, device="cuda")
    assert result in _strided(function)
    # timed above the floor, a slower channels-last still keeps NCHW
    function = _given_channels_last_input()
    plan_function_layouts(function, Timer((1.0, 2.0), (1.0, 2.0)), min_multiply_adds=0)
    assert result not in _strided(function)


def test_convolution_times_measures_static_sizes_only():
    function = _function("planned")
    first = next(op for op in function.body.block.ops if isinstance(op, buf.ExternOp))
    times = convolution_times(first, True)
    assert times.nchw > 0 and times.channels_last > 0
    symbolic = parse_module(
        """builtin.module {
  func.func @f(%x: !buffer.buffer<[s0, 3, 5, 5], f32>, %w: !buffer.buffer<[4, 3, 3, 3], f32>) -> !buffer.buffer<[s0, 4, 5, 5], f32> {
    %y = buffer.extern ins(%a = %x : !buffer.buffer<[s0, 3, 5, 5], f32>, %b = %w : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[s0, 4, 5, 5], f32>) {
      %c = ptensor.convolution %a, %b stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[s0, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[s0, 4, 5, 5], f32>
      buffer.yield %c : !ptensor.tensor<[s0, 4, 5, 5], f32>
    }
    func.return %y : !buffer.buffer<[s0, 4, 5, 5], f32>
  }
}"""
    )
    (function,) = symbolic.ops
    extern = next(op for op in function.body.block.ops if isinstance(op, buf.ExternOp))
    assert convolution_times(extern, True) is NOT_MEASURED


def test_an_unknown_choice_lists_the_valid_ones():
    with pytest.raises(PipelineError, match="valid values: channels-last, measured"):
        build_pipeline("plan-layouts{convolutions=fastest}")


# -- kernels that transpose in NCHW memory ---------------------------------------------


def _kernel(text: str):
    from permalloy.targets.llvm.testing import parse_kernel

    return parse_kernel(text)


IMAGE = "!ptensor.tensor<[2, 4, 3, 5], f32>"


def test_a_norm_over_permuted_channels_walks_them_beside_its_result():
    # y[n, h, w, c] = x[n, c, h, w]: the result is contiguous along the channels
    permuted = "!ptensor.tensor<[2, 3, 5, 4], f32>"
    kernel = _kernel(f"""
buffer.kernel @k(%x: {IMAGE}) -> ({permuted}) {{
  %r = loop.pointwise ins(%a = %x : {IMAGE}) -> {permuted} {{
    %v = loop.load %a[d0, d3, d1, d2] : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {permuted}
}}""")
    layouts = [buf.BufferType([2, 4, 3, 5], f32), buf.BufferType([2, 3, 5, 4], f32)]
    assert walks_channels_beside(kernel, layouts, {0})
    # channels-last images walk as their result does: nothing to transpose
    cl = buf.BufferType([2, 4, 3, 5], f32, channels_last_strides([2, 4, 3, 5]))
    assert not walks_channels_beside(kernel, [cl, layouts[1]], {0})


def test_a_pool_over_height_and_width_and_a_per_channel_scale_do_not():
    pooled = "!ptensor.tensor<[2, 4], f32>"
    pool = _kernel(f"""
buffer.kernel @k(%x: {IMAGE}) -> ({pooled}) {{
  %r = loop.reduce sum ins(%a = %x : {IMAGE}) over [3, 5] -> {pooled} {{
    %v = loop.load %a[d0, d1, r0, r1] : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {pooled}
}}""")
    assert not walks_channels_beside(pool, [buf.BufferType([2, 4, 3, 5], f32), buf.BufferType([2, 4], f32)], {0})
    scale = _kernel(f"""
buffer.kernel @k(%x: {IMAGE}, %s: !ptensor.tensor<[4], f32>) -> ({IMAGE}) {{
  %r = loop.pointwise ins(%a = %x : {IMAGE}, %b = %s : !ptensor.tensor<[4], f32>) -> {IMAGE} {{
    %v = loop.load %a[d0, d1, d2, d3] : f32
    %w = loop.load %b[d1] : f32
    %y = arith.mulf %v, %w : f32
    loop.yield %y : f32
  }}
  buffer.yield %r : {IMAGE}
}}""")
    image = buf.BufferType([2, 4, 3, 5], f32)
    assert not walks_channels_beside(scale, [image, buf.BufferType([4], f32), image], {0, 2})


PERMUTED_NORM_MODULE = """builtin.module {
  buffer.kernel @permute(%0: !ptensor.tensor<[2, 4, 5, 5], f32>) -> (!ptensor.tensor<[2, 5, 5, 4], f32>) {
    %1 = loop.pointwise ins(%2 = %0 : !ptensor.tensor<[2, 4, 5, 5], f32>) -> !ptensor.tensor<[2, 5, 5, 4], f32> {
      %3 = loop.load %2[d0, d3, d1, d2] : f32
      loop.yield %3 : f32
    }
    buffer.yield %1 : !ptensor.tensor<[2, 5, 5, 4], f32>
  }
  func.func @f(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[2, 3, 5, 5], f32>) -> !buffer.buffer<[2, 5, 5, 4], f32> {
    %2 = buffer.extern ins(%3 = %1 : !buffer.buffer<[2, 3, 5, 5], f32>, %4 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {
      %5 = ptensor.convolution %3, %4 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> !ptensor.tensor<[2, 4, 5, 5], f32>
      buffer.yield %5 : !ptensor.tensor<[2, 4, 5, 5], f32>
    }
    %3 = buffer.alloc : !buffer.buffer<[2, 5, 5, 4], f32>
    buffer.launch @permute ins(%2 : !buffer.buffer<[2, 4, 5, 5], f32>) outs(%3 : !buffer.buffer<[2, 5, 5, 4], f32>)
    func.return %3 : !buffer.buffer<[2, 5, 5, 4], f32>
  }
}"""


def test_a_set_that_would_transpose_keeps_channels_last_for_a_larger_loss():
    """Channels-last convolutions 10% slower: a set whose kernel reads the
    convolution's result along its channels into a tensor contiguous along
    them keeps channels-last memory (beyond `MEASURED_MARGIN`, within
    `TRANSPOSING_MARGIN`); the plain set takes NCHW."""
    (_, function) = parse_module(PERMUTED_NORM_MODULE).ops
    plan_function_layouts(function, Timer((1.0, 1.1)), min_multiply_adds=0)
    assert "!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>" in _strided(function)
    (_, function) = parse_module(PERMUTED_NORM_MODULE).ops
    plan_function_layouts(function, Timer((1.0, 1.3)), min_multiply_adds=0)
    assert _strided(function) == []
    assert _planned_with((1.0, 1.1), (1.0, 1.1)) == []
    assert MEASURED_MARGIN < 0.1 < TRANSPOSING_MARGIN < 0.3


MEASURED_MODULE = Path(__file__).parents[1] / "filecheck" / "passes" / "plan_layouts_measured.mlir"


def _returned_convolution() -> func.FuncOp:
    """The lit test's `@returned_convolution` at a batch of 2: a convolution,
    a ReLU, and a 1x1 convolution whose result the function returns."""
    module = parse_module(MEASURED_MODULE.read_text().replace("s0", "2"))
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "returned_convolution"]
    return function


def test_a_returned_convolution_reads_an_nchw_copy_of_a_channels_last_set():
    function = _returned_convolution()
    timer = Timer((2.0, 1.0), (1.0, 1.5))
    plan_function_layouts(function, timer, min_multiply_adds=0)
    # the graph input is copied for the first convolution; the returned one is
    # timed reading an NCHW copy of the ReLU's result
    assert timer.calls == [True, "keeps NCHW"]
    ops = list(function.body.block.ops)
    kept = [op for op in ops if isinstance(op, buf.ExternOp)][-1]
    copy = kept.inputs[0].owner.next_op
    assert isinstance(copy, buf.CopyOp) and copy.target is kept.inputs[0]
    assert buf.buffer_type(copy.source) == buf.BufferType([2, 4, 5, 5], f32, channels_last_strides([2, 4, 5, 5]))
    assert buf.buffer_type(kept.inputs[0]).is_contiguous() and buf.buffer_type(kept.results[0]).is_contiguous()


def test_the_copy_for_a_returned_convolution_can_keep_the_set_nchw():
    # channels-last saves 1.0 on the first convolution; copying back costs 1.5
    function = _returned_convolution()
    plan_function_layouts(function, Timer((2.0, 1.0), (1.0, 2.5)), min_multiply_adds=0)
    assert _strided(function) == []
    assert not any(isinstance(op, buf.CopyOp) for op in function.body.block.ops)


def test_at_a_batch_of_one_a_kernel_s_image_is_not_timed_as_copied():
    """`@one_image`: the second convolution reads the ReLU kernel's squeezed
    `[4, 5, 5]` image through a unit-batch view, which is planned with the
    image; its channels-last time counts no copy (only the graph input of the
    first convolution is copied)."""
    function = _function("one_image")
    timer = Timer((2.0, 1.0), (2.0, 1.0))
    plan_function_layouts(function, timer, min_multiply_adds=0)
    assert timer.calls == [True, False]
    assert "!buffer.buffer<[4, 5, 5], f32, strides [1, 20, 4]>" in _strided(function)


CONCATENATED = "!ptensor.tensor<[2, 8, 5, 5], f32>"
CONV_RESULT = "!ptensor.tensor<[2, 4, 5, 5], f32>"
CONCATENATING_MODULE = f"""builtin.module {{
  buffer.kernel @cat(%0: {CONV_RESULT}, %1: {CONV_RESULT}) -> ({CONCATENATED}) {{
    %2 = loop.pointwise ins(%3 = %0 : {CONV_RESULT}, %4 = %1 : {CONV_RESULT}) -> {CONCATENATED} {{
      %5 = loop.index d1
      %6 = loop.index 4
      %7 = arith.cmpi slt, %5, %6 : index
      %8 = loop.load %3[d0, d1, d2, d3] if %7 : f32
      %9 = arith.cmpi sge, %5, %6 : index
      %10 = loop.load %4[d0, d1 - 4, d2, d3] if %9 : f32
      %11 = arith.select %7, %8, %10 : f32
      loop.yield %11 : f32
    }}
    buffer.yield %2 : {CONCATENATED}
  }}
  func.func @f(%0: !buffer.buffer<[4, 3, 3, 3], f32>, %1: !buffer.buffer<[2, 3, 5, 5], f32>, %2: !buffer.buffer<[2, 4, 5, 5], f32>, %3: !buffer.buffer<[4, 8, 1, 1], f32>) -> !buffer.buffer<[2, 4, 5, 5], f32> {{
    %4 = buffer.extern ins(%5 = %1 : !buffer.buffer<[2, 3, 5, 5], f32>, %6 = %0 : !buffer.buffer<[4, 3, 3, 3], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {{
      %7 = ptensor.convolution %5, %6 stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : !ptensor.tensor<[2, 3, 5, 5], f32>, !ptensor.tensor<[4, 3, 3, 3], f32> -> {CONV_RESULT}
      buffer.yield %7 : {CONV_RESULT}
    }}
    %5 = buffer.alloc : !buffer.buffer<[2, 8, 5, 5], f32>
    buffer.launch @cat ins(%4, %2 : !buffer.buffer<[2, 4, 5, 5], f32>, !buffer.buffer<[2, 4, 5, 5], f32>) outs(%5 : !buffer.buffer<[2, 8, 5, 5], f32>)
    %6 = buffer.extern ins(%7 = %5 : !buffer.buffer<[2, 8, 5, 5], f32>, %8 = %3 : !buffer.buffer<[4, 8, 1, 1], f32>) -> (!buffer.buffer<[2, 4, 5, 5], f32>) {{
      %9 = ptensor.convolution %7, %8 stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : {CONCATENATED}, !ptensor.tensor<[4, 8, 1, 1], f32> -> {CONV_RESULT}
      buffer.yield %9 : {CONV_RESULT}
    }}
    func.return %6 : !buffer.buffer<[2, 4, 5, 5], f32>
  }}
}}"""


def test_a_concatenation_along_channels_is_found_and_a_padding_is_not():
    (kernel, _) = parse_module(CONCATENATING_MODULE).ops
    assert concatenates_channels(kernel)
    padded = _kernel(f"""
buffer.kernel @k(%x: {IMAGE}) -> ({IMAGE}) {{
  %r = loop.pointwise ins(%a = %x : {IMAGE}) -> {IMAGE} {{
    %i = loop.index d2
    %one = loop.index 1
    %inside = arith.cmpi sge, %i, %one : index
    %v = loop.load %a[d0, d1, d2 - 1, d3] if %inside : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {IMAGE}
}}""")
    assert not concatenates_channels(padded)


def test_a_set_that_concatenates_channels_takes_channels_last_only_when_much_faster():
    """On the CPU, channels-last convolutions 10% faster in all keep a set
    with a concatenation along channels in NCHW memory (its kernels, which
    the times do not count, switch inputs within each pixel's channels);
    30% faster, it takes channels-last. A GPU judges it as any set."""
    assert -0.3 < CONCATENATING_MARGIN["cpu"] < -0.1
    assert CONCATENATING_MARGIN["cuda"] == MEASURED_MARGIN
    graph_inputs = ("!buffer.buffer<[2, 4, 5, 5], f32, strides [100, 1, 20, 4]>",)

    def planned(times: tuple[float, float], device: str = "cpu") -> bool:
        (_, function) = parse_module(CONCATENATING_MODULE).ops
        plan_function_layouts(function, Timer(times, times), min_multiply_adds=0, device=device)
        return any(layout in _strided(function) for layout in graph_inputs)

    assert not planned((1.0, 0.9))
    assert planned((1.0, 0.7))
    assert planned((1.0, 0.9), device="cuda")
