"""The LLVM target on strided, broadcast, gathered and masked reads, symbolic sizes, threads."""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import f32

from permalloy.dialects.buffer import BufferType
from permalloy.dialects.sym import symbol
from permalloy.targets.llvm import LLVMTarget
from permalloy.targets.llvm.plan import plan_kernel
from permalloy.targets.llvm.testing import layout, parse_kernel, pointwise_kernel, run, tensor

AXPY = """
    %c = arith.constant 2.0 : f32
    %p = arith.mulf %a0, %c : f32
    %y = arith.addf %p, %a1 : f32"""


@pytest.fixture(scope="module")
def target() -> LLVMTarget:
    return LLVMTarget()


def axpy(target, x, y, out=None, layouts=None, symbols=None, shape=None):
    shape = shape or str(list(out.shape if out is not None else x.shape))
    out = out if out is not None else torch.empty(x.shape)
    run(target, parse_kernel(pointwise_kernel(shape, ["f32", "f32"], "f32", AXPY)), [x, y], [out], symbols, layouts)
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000])
def test_tails(target, n):
    x, y = torch.randn(3, n), torch.randn(3, n)
    assert torch.equal(axpy(target, x, y), x * 2 + y)


def test_transposed_and_sliced_inputs(target):
    base = torch.randn(70, 40)
    x = base.t()  # strides [1, 40]
    y = torch.randn(80, 150)[5:45, 3::2][:, :70]  # strides [150, 2], shifted start
    assert torch.equal(axpy(target, x, y), x * 2 + y)


def test_transposed_output(target):
    x, y = torch.randn(33, 21), torch.randn(33, 21)
    out = torch.empty(21, 33).t()
    axpy(target, x, y, out)
    assert torch.equal(out, x * 2 + y)


def test_broadcast_inputs(target):
    row = torch.randn(1, 45).expand(7, 45)  # stride 0 along d0
    column = torch.randn(7, 1).expand(7, 45)  # stride 0 along d1: one load per row
    assert torch.equal(axpy(target, row, column), row * 2 + column)
    scalar = torch.randn(()).expand(7, 45)
    assert torch.equal(axpy(target, scalar, column), scalar * 2 + column)


def test_channels_last_pointwise_walks_memory_in_order(target):
    """A pointwise stage writing a channels-last result iterates channels
    innermost: with channels-last inputs its domain is one contiguous run."""
    x, y = (torch.randn(2, 8, 5, 7).to(memory_format=torch.channels_last) for _ in range(2))
    out = torch.empty(2, 8, 5, 7).to(memory_format=torch.channels_last)
    kernel = parse_kernel(pointwise_kernel("[2, 8, 5, 7]", ["f32", "f32"], "f32", AXPY))
    layouts = [layout(t) for t in (x, y, out)]
    (stage,) = plan_kernel(kernel, layouts, 8).stages
    assert stage.parallel == (560,)
    axpy(target, x, y, out)
    assert torch.equal(out, x * 2 + y)
    # NCHW inputs into a channels-last result: iterated [N, H, W, C], correct
    nchw = torch.randn(2, 8, 5, 7)
    (stage,) = plan_kernel(kernel, [layout(nchw), layout(y), layout(out)], 8).stages
    assert stage.parallel == (2, 35, 8)
    axpy(target, nchw, y, out)
    assert torch.equal(out, nchw * 2 + y)


def test_channels_last_pointwise_reading_its_channel_index(target):
    """A body that reads the channel index (a dimension that never merges)
    keeps its value when the dimensions are reordered."""
    body = """
    %c = loop.index d1
    %i = arith.index_cast %c : index to i64
    %f = arith.sitofp %i : i64 to f32
    %y = arith.addf %a0, %f : f32"""
    kernel = parse_kernel(pointwise_kernel("[2, 8, 5, 7]", ["f32"], "f32", body))
    x = torch.randn(2, 8, 5, 7).to(memory_format=torch.channels_last)
    out = torch.empty_like(x)
    run(target, kernel, [x], [out])
    assert torch.equal(out, x + torch.arange(8.0).view(1, 8, 1, 1))


def test_in_place(target):
    x, y = torch.randn(9, 77), torch.randn(9, 77)
    expected = x * 2 + y
    axpy(target, x, y, out=x)
    assert torch.equal(x, expected)


def test_scalar_pointwise(target):
    x, y = torch.randn(()), torch.randn(())
    out = axpy(target, x, y, torch.empty(()), shape="[]")
    assert torch.equal(out, x * 2 + y)


def test_symbolic_sizes_one_kernel_two_sizes(target):
    s0, s1 = symbol("s0"), symbol("s1")
    layouts = [BufferType([s0, s1], f32)] * 3
    kernel = parse_kernel(pointwise_kernel("[s0, s1]", ["f32", "f32"], "f32", AXPY))
    compiled = []
    for rows, cols in [(5, 3), (17, 100)]:
        x, y, out = torch.randn(rows, cols), torch.randn(rows, cols), torch.empty(rows, cols)
        compiled.append(run(target, kernel, [x, y], [out], {"s0": rows, "s1": cols}, layouts))
        assert torch.equal(out, x * 2 + y)
    assert compiled[0] is compiled[1]


def test_symbolic_strides(target):
    s0, s1 = symbol("s0"), symbol("s1")
    layouts = [BufferType([s0, s1], f32, [1, s0]), BufferType([s0, s1], f32), BufferType([s0, s1], f32)]
    kernel = parse_kernel(pointwise_kernel("[s0, s1]", ["f32", "f32"], "f32", AXPY))
    x, y, out = torch.randn(50, 20).t(), torch.randn(20, 50), torch.empty(20, 50)
    run(target, kernel, [x, y], [out], {"s0": 20, "s1": 50}, layouts)
    assert torch.equal(out, x * 2 + y)


def test_embedding_gather(target):
    table, ids = torch.randn(100, 37), torch.randint(0, 100, (13,))
    text = f"""
buffer.kernel @embed(%w: {tensor("[100, 37]", "f32")}, %i: {tensor("[13]", "i64")}) -> ({tensor("[13, 37]", "f32")}) {{
  %r = loop.pointwise ins(%x = %w : {tensor("[100, 37]", "f32")}, %j = %i : {tensor("[13]", "i64")}) -> {tensor("[13, 37]", "f32")} {{
    %k = loop.load %j[d0] : i64
    %n = arith.index_cast %k : i64 to index
    %v = loop.load %x[v0, d1] (%n) : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {tensor("[13, 37]", "f32")}
}}"""
    out = torch.empty(13, 37)
    run(target, parse_kernel(text), [table, ids], [out])
    assert torch.equal(out, table[ids])


def test_gather_along_the_vectorized_dimension(target):
    x, index = torch.randn(6, 50), torch.randint(0, 50, (6, 70))
    text = f"""
buffer.kernel @gather(%a: {tensor("[6, 50]", "f32")}, %i: {tensor("[6, 70]", "i64")}) -> ({tensor("[6, 70]", "f32")}) {{
  %r = loop.pointwise ins(%x = %a : {tensor("[6, 50]", "f32")}, %j = %i : {tensor("[6, 70]", "i64")}) -> {tensor("[6, 70]", "f32")} {{
    %k = loop.load %j[d0, d1] : i64
    %n = arith.index_cast %k : i64 to index
    %v = loop.load %x[d0, v0] (%n) : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {tensor("[6, 70]", "f32")}
}}"""
    out = torch.empty(6, 70)
    run(target, parse_kernel(text), [x, index], [out])
    assert torch.equal(out, torch.gather(x, 1, index))


def test_cat_as_masked_loads(target):
    a, b = torch.randn(5, 4), torch.randn(5, 39)
    t_a, t_b, t_out = tensor("[5, 4]", "f32"), tensor("[5, 39]", "f32"), tensor("[5, 43]", "f32")
    text = f"""
buffer.kernel @cat(%p: {t_a}, %q: {t_b}) -> ({t_out}) {{
  %r = loop.pointwise ins(%x = %p : {t_a}, %z = %q : {t_b}) -> {t_out} {{
    %i = loop.index d1
    %four = arith.constant 4 : index
    %first = arith.cmpi slt, %i, %four : index
    %second = arith.cmpi sge, %i, %four : index
    %u = loop.load %x[d0, d1] if %first : f32
    %w = loop.load %z[d0, d1 - 4] if %second : f32
    %v = arith.select %first, %u, %w : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {t_out}
}}"""
    out = torch.empty(5, 43)
    run(target, parse_kernel(text), [a, b], [out])
    assert torch.equal(out, torch.cat([a, b], 1))


def test_masked_load_gives_zero(target):
    x = torch.randn(4, 40) + 10
    text = f"""
buffer.kernel @pad(%p: {tensor("[4, 40]", "f32")}) -> ({tensor("[4, 44]", "f32")}) {{
  %r = loop.pointwise ins(%x = %p : {tensor("[4, 40]", "f32")}) -> {tensor("[4, 44]", "f32")} {{
    %i = loop.index d1
    %j = loop.index d0
    %two = arith.constant 2 : index
    %forty = arith.constant 42 : index
    %lo = arith.cmpi sge, %i, %two : index
    %hi = arith.cmpi slt, %i, %forty : index
    %in = arith.andi %lo, %hi : i1
    %one = arith.constant 1 : index
    %row = arith.cmpi sge, %j, %one : index
    %m = arith.andi %in, %row : i1
    %v = loop.load %x[d0, d1 - 2] if %m : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {tensor("[4, 44]", "f32")}
}}"""
    out = torch.empty(4, 44)
    run(target, parse_kernel(text), [x], [out])
    expected = torch.nn.functional.pad(x, (2, 2))
    expected[0] = 0
    assert torch.equal(out, expected)


def test_iota_from_loop_index(target):
    text = pointwise_kernel("[7, 33]", [], "f32", """
    %i = loop.index d0 * 33 + d1
    %n = arith.index_cast %i : index to i64
    %y = arith.sitofp %n : i64 to f32""")
    out = torch.empty(7, 33)
    run(target, parse_kernel(text), [], [out])
    assert torch.equal(out, torch.arange(7 * 33, dtype=torch.float32).reshape(7, 33))


def test_index_expressions_with_floordiv_and_mod(target):
    x = torch.randn(6, 10)
    text = pointwise_kernel("[60]", ["f32"], "f32", "", result="%a0", indices="[d0 floordiv 10, d0 mod 10]",
                            input_shapes=["[6, 10]"])  # fmt: skip
    out = torch.empty(60)
    run(target, parse_kernel(text), [x], [out])
    assert torch.equal(out, x.reshape(-1))


@pytest.mark.parametrize("shape", [(1, 1 << 20), (3, 100003), (1000, 37), (100000, 3)])
def test_multithreaded_pointwise(target, shape):
    torch.set_num_threads(2)
    x, y = torch.randn(shape), torch.randn(shape)
    assert torch.equal(axpy(target, x, y), x * 2 + y)


def test_every_thread_split_is_correct():
    torch.set_num_threads(2)
    eager = LLVMTarget(parallel_threshold=1)  # threads even for tiny kernels
    kernel = parse_kernel(pointwise_kernel("[s0, s1]", ["f32", "f32"], "f32", AXPY))
    s0, s1 = symbol("s0"), symbol("s1")
    layouts = [BufferType([s0, s1], f32)] * 3
    for rows in (1, 2, 3):
        for cols in (1, 5, 31, 32, 33, 64, 97):
            x, y, out = torch.randn(rows, cols), torch.randn(rows, cols), torch.empty(rows, cols)
            run(eager, kernel, [x, y], [out], {"s0": rows, "s1": cols}, layouts)
            assert torch.equal(out, x * 2 + y), (rows, cols)


@pytest.mark.parametrize("index,dim,shape", [("[d0, r0]", 1, (4001, 300)), ("[r0, d0]", 0, (300, 4001))])
def test_multithreaded_reductions(target, index, dim, shape):
    torch.set_num_threads(2)
    x = torch.randn(shape)
    out_shape = [shape[1 - dim]]
    text = f"""
buffer.kernel @r(%t: {tensor(str(list(shape)), "f32")}) -> ({tensor(str(out_shape), "f32")}) {{
  %r = loop.reduce max ins(%x = %t : {tensor(str(list(shape)), "f32")}) over [{shape[dim]}] -> {tensor(str(out_shape), "f32")} {{
    %v = loop.load %x{index} : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {tensor(str(out_shape), "f32")}
}}"""
    out = torch.empty(out_shape)
    run(target, parse_kernel(text), [x], [out])
    assert torch.equal(out, x.amax(dim))


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min", "argmax", "argmin", "any"])
@pytest.mark.parametrize("transposed", [False, True])
def test_single_value_reductions_split_across_threads(kind, transposed):
    """A reduction to one value runs on every thread, each on a range of r0."""
    torch.set_num_threads(2)
    eager = LLVMTarget(parallel_threshold=1)
    base = torch.randn(77, 203) if kind != "any" else torch.rand(77, 203) > 0.999
    if kind == "prod":
        base = 1 + 0.01 * base
    if kind.startswith("arg"):
        base = torch.round(base)  # ties between the two threads' halves
    x = base.t() if transposed else base  # a transposed input keeps two reduction loops
    rows, cols = x.shape
    dtype = "i64" if kind.startswith("arg") else ("i1" if kind == "any" else "f32")
    text = f"""
buffer.kernel @r(%t: {tensor(f"[{rows}, {cols}]", "i1" if kind == "any" else "f32")}) -> ({tensor("[]", dtype)}) {{
  %r = loop.reduce {kind} ins(%x = %t : {tensor(f"[{rows}, {cols}]", "i1" if kind == "any" else "f32")}) over [{rows}, {cols}] -> {tensor("[]", dtype)} {{
    %v = loop.load %x[r0, r1] : {"i1" if kind == "any" else "f32"}
    loop.yield %v : {"i1" if kind == "any" else "f32"}
  }}
  buffer.yield %r : {tensor("[]", dtype)}
}}"""
    out = torch.empty((), dtype={"i64": torch.int64, "i1": torch.bool, "f32": torch.float32}[dtype])
    run(eager, parse_kernel(text), [x], [out])
    flat = x.reshape(-1)
    reference = {"sum": torch.sum, "prod": torch.prod, "max": torch.max, "min": torch.min,
                 "argmax": torch.argmax, "argmin": torch.argmin, "any": torch.any}  # fmt: skip
    expected = reference[kind](flat)
    if kind == "sum":  # rounding errors scale with the magnitudes summed, not the (small) sum
        assert abs(float(out) - float(flat.double().sum())) < 1e-6 * float(flat.abs().sum())
    elif kind == "prod":
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    else:
        assert torch.equal(out, expected)
