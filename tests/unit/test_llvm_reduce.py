"""The LLVM target against torch: every reduction kind, over inner, outer and several dims."""

from __future__ import annotations

import pytest
import torch

from permalloy.targets.llvm import LLVMTarget
from permalloy.targets.llvm.testing import parse_kernel, relative_error, run, tensor

IR = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
      torch.int8: "i8", torch.uint8: "ui8", torch.int32: "i32", torch.int64: "i64", torch.bool: "i1"}  # fmt: skip


@pytest.fixture(scope="module")
def target() -> LLVMTarget:
    return LLVMTarget()


def reduce_kernel(kind, in_shape, in_type, over, out_shape, out_type, index, body="", value="%v") -> str:
    value_type = in_type.lstrip("u")
    yield_type = {"f16": "f16", "bf16": "bf16"}.get(in_type, value_type)
    if body:
        yield_type = "f32"
    return f"""
buffer.kernel @r(%t: {tensor(in_shape, in_type)}) -> ({tensor(out_shape, out_type)}) {{
  %r = loop.reduce {kind} ins(%x = %t : {tensor(in_shape, in_type)}) over {over} -> {tensor(out_shape, out_type)} {{
    %v = loop.load %x{index} : {value_type}
{body}
    loop.yield {value} : {yield_type}
  }}
  buffer.yield %r : {tensor(out_shape, out_type)}
}}"""


def reduce(target, kind, x, dims, out_shape, index, body="", value="%v", out_dtype=None):
    """Run `kind` over `dims` of x; the output has `out_shape` and loads x at `index`."""
    over = "[" + ", ".join(str(x.shape[d]) for d in dims) + "]"
    if out_dtype is None:
        out_dtype = torch.int64 if kind.startswith("arg") else x.dtype
    text = reduce_kernel(kind, str(list(x.shape)), IR[x.dtype], over, str(list(out_shape)), IR[out_dtype], index, body, value)
    out = torch.empty(out_shape, dtype=out_dtype)
    run(target, parse_kernel(text), [x], [out])
    return out


REFERENCE = {
    "sum": lambda x, d: x.sum(d),
    "prod": lambda x, d: x.prod(d),
    "max": lambda x, d: x.amax(d),
    "min": lambda x, d: x.amin(d),
    "argmax": lambda x, d: x.argmax(d),
    "argmin": lambda x, d: x.argmin(d),
}
SIZES = [(3, 1), (4, 17), (5, 64), (2, 65), (7, 300), (1, 4099)]


def sample(kind: str, shape) -> torch.Tensor:
    if kind == "prod":
        return 1 + 0.05 * torch.randn(shape)
    x = torch.randn(shape)
    if kind.startswith("arg"):
        x = torch.round(x * 2) / 2  # ties, so that the first position matters
    return x


def assert_matches(kind: str, out: torch.Tensor, ref: torch.Tensor) -> None:
    if kind in ("sum", "prod"):
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    else:
        assert torch.equal(out, ref), (out, ref)


@pytest.mark.parametrize("kind", sorted(REFERENCE))
@pytest.mark.parametrize("rows,cols", SIZES)
def test_inner_reduction(target, kind, rows, cols):
    x = sample(kind, (rows, cols))
    out = reduce(target, kind, x, [1], [rows], "[d0, r0]")
    assert_matches(kind, out, REFERENCE[kind](x, 1))


@pytest.mark.parametrize("kind", sorted(REFERENCE))
@pytest.mark.parametrize("rows,cols", SIZES)
def test_outer_reduction(target, kind, rows, cols):
    x = sample(kind, (rows, cols))
    out = reduce(target, kind, x, [0], [cols], "[r0, d0]")
    assert_matches(kind, out, REFERENCE[kind](x, 0))


@pytest.mark.parametrize("kind", ["sum", "max", "argmin"])
def test_reduction_over_several_dims(target, kind):
    x = sample(kind, (3, 5, 37))
    inner = reduce(target, kind, x.reshape(3, 5, 37), [1, 2], [3], "[d0, r0, r1]")
    flat = x.reshape(3, -1)
    assert_matches(kind, inner, REFERENCE[kind](flat, 1))
    outer = reduce(target, kind, x, [0, 2], [5], "[r0, d0, r1]")
    moved = x.permute(1, 0, 2).reshape(5, -1)
    assert_matches(kind, outer, REFERENCE[kind](moved, 1))


@pytest.mark.parametrize("kind", ["sum", "max", "argmax"])
def test_full_reduction_to_a_scalar(target, kind):
    x = sample(kind, (33, 70))
    out = reduce(target, kind, x, [0, 1], [], "[r0, r1]")
    assert_matches(kind, out, REFERENCE[kind](x.reshape(-1), 0))


def test_keepdim_shape(target):
    x = torch.randn(6, 45)
    out = reduce(target, "max", x, [1], [6, 1], "[d0, r0]")
    assert torch.equal(out, x.amax(1, keepdim=True))
    out = reduce(target, "sum", x, [0], [1, 45], "[r0, d1]")
    torch.testing.assert_close(out, x.sum(0, keepdim=True))


@pytest.mark.parametrize("kind", ["max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("index,dim", [("[d0, r0]", 1), ("[r0, d0]", 0)])
def test_nan_propagates_like_torch(target, kind, index, dim):
    x = torch.randn(40, 40)
    x[3, 5] = x[3, 30] = x[25, 7] = float("nan")
    x[10, 10] = float("inf")
    out = reduce(target, kind, x, [dim], [40], index)
    ref = REFERENCE[kind](x, dim)
    assert torch.equal(out.nan_to_num(7.0), ref.nan_to_num(7.0))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "argmax"])
def test_integer_reductions(target, dtype, kind):
    x = torch.randint(-100, 100, (9, 70), dtype=dtype)
    if kind == "sum":
        x = x // 4
    for index, dim, shape in (("[d0, r0]", 1, [9]), ("[r0, d0]", 0, [70])):
        out = reduce(target, kind, x, [dim], shape, index)
        ref = REFERENCE[kind](x, dim)
        assert torch.equal(out, ref if kind == "argmax" else ref.to(dtype))  # sums wrap in their type


@pytest.mark.parametrize("kind", ["max", "min", "argmax"])
def test_unsigned_bytes_compare_unsigned(target, kind):
    x = torch.randint(0, 256, (5, 70), dtype=torch.uint8)
    out = reduce(target, kind, x, [1], [5], "[d0, r0]")
    assert torch.equal(out, REFERENCE[kind](x, 1))


@pytest.mark.parametrize("kind", ["any", "all"])
@pytest.mark.parametrize("index,dim", [("[d0, r0]", 1), ("[r0, d0]", 0)])
def test_any_all(target, kind, index, dim):
    x = torch.rand(37, 37) > 0.97 if kind == "any" else torch.rand(37, 37) > 0.03
    out = reduce(target, kind, x, [dim], [37], index)
    assert torch.equal(out, getattr(x, kind)(dim))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_float_sums_accumulate_in_f32(target, dtype):
    x = torch.rand(4, 5000).to(dtype)
    out = reduce(target, "sum", x, [1], [4], "[d0, r0]")
    assert torch.equal(out, x.sum(1))
    out = reduce(target, "max", x, [0], [5000], "[r0, d0]")
    assert torch.equal(out, x.amax(0))


def test_long_f32_sums_stay_accurate(target):
    x = torch.randn(1 << 20) + 0.1
    out = reduce(target, "sum", x.reshape(1, -1), [1], [1], "[d0, r0]")
    assert relative_error(out, x.double().sum().reshape(1)) < 1e-6
    assert relative_error(out, x.sum().reshape(1)) < 1e-5
    columns = torch.randn(1 << 18, 4) + 0.1
    out = reduce(target, "sum", columns, [0], [4], "[r0, d0]")
    assert relative_error(out, columns.double().sum(0)) < 1e-6


def test_reduction_of_a_computed_value(target):
    x = torch.randn(8, 100)
    body = """
    %one = arith.constant 1.0 : f32
    %d = arith.subf %v, %one : f32
    %e = math.exp %d : f32"""
    out = reduce(target, "sum", x, [1], [8], "[d0, r0]", body=body, value="%e")
    torch.testing.assert_close(out, torch.exp(x - 1).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind,expected", [("sum", 0.0), ("prod", 1.0), ("max", float("-inf"))])
def test_empty_reduction_domain_gives_the_identity(target, kind, expected):
    x = torch.empty(4, 0)
    out = reduce(target, kind, x, [1], [4], "[d0, r0]")
    assert torch.equal(out, torch.full((4,), expected))
    out = reduce(target, kind, torch.empty(0, 5), [0], [5], "[r0, d0]")
    assert torch.equal(out, torch.full((5,), expected))


def test_empty_any_all(target):
    assert not reduce(target, "any", torch.empty(3, 0, dtype=torch.bool), [1], [3], "[d0, r0]").any()
    assert reduce(target, "all", torch.empty(3, 0, dtype=torch.bool), [1], [3], "[d0, r0]").all()


@pytest.mark.parametrize("index,dim", [("[d0, r0]", 1), ("[r0, d0]", 0)])
def test_symbolic_reduction_sizes_including_zero(target, index, dim):
    from xdsl.dialects.builtin import f32

    from permalloy.dialects.buffer import BufferType
    from permalloy.dialects.sym import symbol

    s0, s1 = symbol("s0"), symbol("s1")
    shape, over, result = ("[s0, s1]", "[s1]", "[s0]") if dim == 1 else ("[s0, s1]", "[s0]", "[s1]")
    kernel = parse_kernel(reduce_kernel("sum", shape, "f32", over, result, "f32", index))
    layouts = [BufferType([s0, s1], f32), BufferType([s0] if dim == 1 else [s1], f32)]
    for rows, cols in [(3, 70), (3, 0), (0, 5), (9, 1)]:
        x = torch.randn(rows, cols)
        out = torch.empty(rows if dim == 1 else cols)
        run(target, kernel, [x], [out], {"s0": rows, "s1": cols}, layouts)
        torch.testing.assert_close(out, x.sum(dim), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind,reference", [("sum", torch.any), ("prod", torch.all), ("max", torch.any), ("min", torch.all)])
def test_bool_values_into_a_bool_result(target, kind, reference):
    x = torch.rand(6, 45) > 0.6
    x[0], x[1] = True, False
    out = reduce(target, kind, x, [1], [6], "[d0, r0]")
    assert torch.equal(out, reference(x, 1))
