"""
The `generate-depthwise-convolutions` pass: depthwise convolutions become a
sum over the window of the padded input's strided view times the weight,
with the library's results (the interpreter runs `ptensor.convolution` with
torch), lowered and fused into one loop op with its epilogue; convolutions it
does not cover stay library calls.
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from permalloy.dialects import loop, make_context
from permalloy.dialects import ptensor as pt
from permalloy.interpreter.levels import run_module_function
from permalloy.passes import PipelineError, build_pipeline


def _tensor(shape: list[int], dtype: str) -> str:
    return f"!ptensor.tensor<[{', '.join(map(str, shape))}], {dtype}>"


def _convolution(
    source: list[int], window: list[int], stride: int = 1, padding: int = 0, dilation: int = 1,
    bias: bool = False, dtype: str = "f32", groups: int | None = None, multiplier: int = 1,
    activation: bool = False,
) -> str:
    """A function of one convolution with `source`'s channels as groups (or
    `groups`), optionally followed by a sigmoid."""
    channels, spatial = source[1], len(window)
    groups = channels if groups is None else groups
    weight = [channels * multiplier, channels // groups, *window]
    outputs = [(size + 2 * padding - dilation * (k - 1) - 1) // stride + 1 for size, k in zip(source[2:], window)]
    result = _tensor([source[0], channels * multiplier, *outputs], dtype)
    types = [_tensor(source, dtype), _tensor(weight, dtype)]
    arguments = "%x, %w"
    if bias:
        types.append(_tensor([channels * multiplier], dtype))
        arguments += ", %b"
    names = ["%x", "%w", "%b"][: len(types)]
    signature = ", ".join(f"{n}: {t}" for n, t in zip(names, types))
    lists = lambda v: "[" + ", ".join([str(v)] * spatial) + "]"  # noqa: E731
    body = (
        f"  %y = ptensor.convolution {arguments} stride {lists(stride)} padding {lists(padding)} "
        f"dilation {lists(dilation)} groups {groups} : {', '.join(types)} -> {result}\n"
    )
    returned = "%y"
    if activation:
        body += f"  %z = ptensor.unary sigmoid %y : {result} -> {result}\n"
        returned = "%z"
    return f"func.func @main({signature}) -> {result} {{\n{body}  func.return {returned} : {result}\n}}"


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def _inputs(module: ModuleOp, dtype: torch.dtype) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    function = next(op for op in module.walk() if op.name == "func.func")
    shapes = [[int(s) for s in arg.type.sizes] for arg in function.body.block.args]
    return [torch.randn(shape, generator=generator).to(dtype) for shape in shapes]


def _generated(text: str, pipeline: str = "generate-depthwise-convolutions") -> tuple[ModuleOp, ModuleOp]:
    before = _parse(text)
    after = before.clone()
    build_pipeline(pipeline).apply(make_context(), after)
    after.verify()
    return before, after


GENERATED = {
    "3x3": dict(source=[2, 8, 10, 10], window=[3, 3], padding=1),
    "3x3-strided": dict(source=[2, 8, 11, 11], window=[3, 3], stride=2, padding=1),
    "7x7-bias": dict(source=[2, 6, 9, 9], window=[7, 7], padding=3, bias=True),
    "5x5-dilated": dict(source=[1, 4, 13, 13], window=[5, 5], stride=2, padding=4, dilation=2),
    "unpadded": dict(source=[2, 5, 8, 8], window=[3, 3]),
    "1d": dict(source=[2, 6, 20], window=[5], padding=2, bias=True),
    "3d": dict(source=[1, 4, 6, 6, 6], window=[3, 3, 3], padding=1),
    "float16": dict(source=[2, 8, 10, 10], window=[3, 3], padding=1, bias=True, dtype="f16"),
}


@pytest.mark.parametrize("name", list(GENERATED))
def test_generated_convolution_matches_the_library(name: str) -> None:
    case = GENERATED[name]
    before, after = _generated(_convolution(**case))
    assert not [op for op in after.walk() if isinstance(op, pt.ConvolutionOp)], str(after)
    dtype = torch.float16 if case.get("dtype") == "f16" else torch.float32
    inputs = _inputs(before, dtype)
    (expected,) = run_module_function(before, inputs)
    (actual,) = run_module_function(after, inputs)
    assert actual.dtype == expected.dtype
    tolerance = 1e-3 if dtype == torch.float16 else 1e-5
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance)


def test_convolution_and_epilogue_fuse_into_one_loop_op() -> None:
    text = _convolution([2, 8, 10, 10], [3, 3], padding=1, bias=True, activation=True)
    before, after = _generated(
        text, "generate-depthwise-convolutions,convert-ptensor-to-loop,fuse-loops,cse,dce"
    )
    kernels = [op for op in after.walk() if isinstance(op, loop.FusedOp | loop.ReduceOp | loop.PointwiseOp)]
    top_level = [op for op in kernels if not isinstance(op.parent_op(), loop.FusedOp)]
    assert len(top_level) == 1, str(after)
    inputs = _inputs(before, torch.float32)
    (expected,) = run_module_function(before, inputs)
    (actual,) = run_module_function(after, inputs)
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


LIBRARY = {
    "two-channels-per-group": dict(source=[2, 8, 10, 10], window=[3, 3], padding=1, groups=4),
    "channel-multiplier": dict(source=[2, 8, 10, 10], window=[3, 3], padding=1, multiplier=2),
    "dense": dict(source=[2, 8, 10, 10], window=[3, 3], padding=1, groups=1),
    "window-above-max": dict(source=[1, 4, 12, 12], window=[9, 9], padding=4),
}


@pytest.mark.parametrize("name", list(LIBRARY))
def test_other_convolutions_stay_library_calls(name: str) -> None:
    _, after = _generated(_convolution(**LIBRARY[name]))
    assert [op for op in after.walk() if isinstance(op, pt.ConvolutionOp)], str(after)


def test_max_window_option_admits_larger_windows() -> None:
    text = _convolution([1, 4, 12, 12], [9, 9], padding=4)
    _, after = _generated(text, "generate-depthwise-convolutions{max-window=81}")
    assert not [op for op in after.walk() if isinstance(op, pt.ConvolutionOp)]


def test_symbolic_spatial_sizes_stay_library_calls() -> None:
    text = (
        "func.func @main(%x: !ptensor.tensor<[2, 8, s0, s0], f32>, %w: !ptensor.tensor<[8, 1, 3, 3], f32>)"
        " -> !ptensor.tensor<[2, 8, s0, s0], f32> {\n"
        "  %y = ptensor.convolution %x, %w stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 : "
        "!ptensor.tensor<[2, 8, s0, s0], f32>, !ptensor.tensor<[8, 1, 3, 3], f32> -> !ptensor.tensor<[2, 8, s0, s0], f32>\n"
        "  func.return %y : !ptensor.tensor<[2, 8, s0, s0], f32>\n}"
    )
    _, after = _generated(text)
    assert [op for op in after.walk() if isinstance(op, pt.ConvolutionOp)]


def test_bad_max_window_is_refused_with_the_options_listed() -> None:
    with pytest.raises(PipelineError, match="max-window must be at least 1.*max-window"):
        build_pipeline("generate-depthwise-convolutions{max-window=0}")
