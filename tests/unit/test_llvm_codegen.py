"""The code the LLVM target generates: vector registers, threads, polynomials, caching."""

from __future__ import annotations

import pathlib
import re
import subprocess
import time

import llvmlite.binding as llvm
import pytest
import torch

from permalloy.dialects.buffer import BufferType
from permalloy.targets.llvm import LLVMTarget, UnsupportedKernelError, emit_module_llvm
from permalloy.targets.llvm.testing import layout, parse_kernel, parse_module, pointwise_kernel, run

LIT_DIR = pathlib.Path(__file__).parents[1] / "filecheck" / "targets"
EXP = pointwise_kernel("[64, 1000]", ["f32", "f32"], "f32", """
    %e = math.exp %a0 : f32
    %y = arith.addf %e, %a1 : f32""")

SOFTMAX = """
buffer.kernel @softmax(%t: !ptensor.tensor<[5, 77], f32>) -> (!ptensor.tensor<[5, 77], f32>) {
  %m = loop.reduce max ins(%x = %t : !ptensor.tensor<[5, 77], f32>) over [77] -> !ptensor.tensor<[5], f32> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  %s = loop.reduce sum ins(%x = %t : !ptensor.tensor<[5, 77], f32>, %mx = %m : !ptensor.tensor<[5], f32>) over [77] -> !ptensor.tensor<[5], f32> {
    %v = loop.load %x[d0, r0] : f32
    %w = loop.load %mx[d0] : f32
    %d = arith.subf %v, %w : f32
    %e = math.exp %d : f32
    loop.yield %e : f32
  }
  %y = loop.pointwise ins(%x = %t : !ptensor.tensor<[5, 77], f32>, %mx = %m : !ptensor.tensor<[5], f32>, %sx = %s : !ptensor.tensor<[5], f32>) -> !ptensor.tensor<[5, 77], f32> {
    %v = loop.load %x[d0, d1] : f32
    %w = loop.load %mx[d0] : f32
    %z = loop.load %sx[d0] : f32
    %d = arith.subf %v, %w : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %z : f32
    loop.yield %q : f32
  }
  buffer.yield %y : !ptensor.tensor<[5, 77], f32>
}"""


@pytest.fixture(scope="module")
def target() -> LLVMTarget:
    return LLVMTarget()


def layouts_of(*shapes) -> list[BufferType]:
    return [layout(torch.empty(s)) for s in shapes]


def test_vector_width_follows_the_host(target):
    host = target.host
    assert host.vector_bits in (128, 256, 512)
    if host.has("avx512f"):
        assert host.f32_lanes == 16
    elif host.has("avx2"):
        assert host.f32_lanes == 8


def test_assembly_uses_wide_vector_registers(target):
    if not target.host.has("avx2"):
        pytest.skip("the host has no AVX2, so no ymm/zmm registers to look for")
    kernel = parse_kernel(EXP)
    assembly = target.assembly(kernel, layouts_of((64, 1000), (64, 1000), (64, 1000)))
    register = "zmm" if target.host.has("avx512f") else "ymm"
    assert re.search(rf"\bv\w+ps\b.*%{register}\d+", assembly), "no packed f32 instruction on wide registers"
    assert "expf" not in assembly


def test_source_is_vectorized_threaded_and_has_no_libm_exp(target):
    source = target.emit_source(parse_kernel(EXP), layouts_of((64, 1000), (64, 1000), (64, 1000)))
    lanes = 2 * target.host.f32_lanes
    assert f"<{lanes} x float>" in source
    assert 'call void @"GOMP_parallel"' in source
    assert "expf" not in source and "llvm.exp." not in source
    llvm.parse_assembly(source).verify()


def test_inner_loop_is_a_pointer_increment(target):
    source = target.emit_source(parse_kernel(EXP), layouts_of((64, 1000), (64, 1000), (64, 1000)))
    body = source.split("\nx.body:\n", 1)[1].split("\n\n")[0].split("\nx.end:")[0]
    assert "mul i64" not in body and "sdiv" not in body
    assert body.count("getelementptr float") == 3  # two loads and a store, each base + x


def test_reductions_keep_vector_accumulators(target):
    text = """
buffer.kernel @r(%t: !ptensor.tensor<[64, 1000], f32>) -> (!ptensor.tensor<[64], f32>) {
  %r = loop.reduce sum ins(%x = %t : !ptensor.tensor<[64, 1000], f32>) over [1000] -> !ptensor.tensor<[64], f32> {
    %v = loop.load %x[d0, r0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[64], f32>
}"""
    source = target.emit_source(parse_kernel(text), layouts_of((64, 1000), (64,)))
    lanes = 4 * target.host.f32_lanes
    assert re.search(rf"fadd <{lanes} x float>", source)
    assert f"llvm.vector.reduce.fadd.v{lanes}f32" in source


def test_compiled_kernels_are_cached_per_text_and_layouts():
    target = LLVMTarget()
    kernel = parse_kernel(EXP)
    contiguous = layouts_of((64, 1000), (64, 1000), (64, 1000))
    start = time.perf_counter()
    first = target.compile_kernel(kernel, contiguous)
    assert time.perf_counter() - start < 5  # typically ~0.1 s; generous for loaded machines
    assert target.compile_kernel(parse_kernel(EXP), contiguous) is first
    transposed = [layout(torch.empty(1000, 64).t())] + contiguous[1:]
    assert target.compile_kernel(kernel, transposed) is not first
    assert LLVMTarget().compile_kernel(kernel, contiguous) is not first


def test_kernels_outlive_their_target():
    kernel = parse_kernel(EXP)
    compiled = LLVMTarget().compile_kernel(kernel, layouts_of((64, 1000), (64, 1000), (64, 1000)))
    x, y, out = torch.randn(64, 1000), torch.randn(64, 1000), torch.empty(64, 1000)
    compiled([x, y, out], [])
    torch.testing.assert_close(out, torch.exp(x) + y, rtol=1e-5, atol=1e-6)


def test_wrong_arguments_are_rejected(target):
    compiled = target.compile_kernel(parse_kernel(EXP), layouts_of((64, 1000), (64, 1000), (64, 1000)))
    with pytest.raises(ValueError, match="takes 3 tensors and 0 symbols"):
        compiled([torch.empty(1)], [])


def test_unsupported_ops_say_what_they_are(target):
    text = pointwise_kernel("[4]", ["i32"], "i32", "    %y = math.ctpop %a0 : i32")
    with pytest.raises(UnsupportedKernelError, match="math.ctpop"):
        target.emit_source(parse_kernel(text), layouts_of((4,), (4,)))


def test_emit_module_takes_layouts_from_launches():
    module = parse_module((LIT_DIR / "llvm_layouts.mlir").read_text())
    source = emit_module_llvm(module)
    add = source.split("kernel @add", 1)[1].split("kernel @cat", 1)[0]
    assert "llvm.masked.gather" in add  # the launch passes a transposed input
    without_launch = parse_module(EXP)
    assert "llvm.masked.gather" not in emit_module_llvm(without_launch)


@pytest.mark.parametrize("name", sorted(p.name for p in LIT_DIR.glob("llvm_*.mlir")))
def test_lit_files_check_the_emitted_source(name):
    path = LIT_DIR / name
    source = emit_module_llvm(parse_module(path.read_text()))
    result = subprocess.run(["filecheck", str(path)], input=source, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


def test_several_loop_ops_in_one_kernel(target):
    """A softmax as three loop ops: two reductions feeding a pointwise through temporaries."""

    kernel = parse_kernel(SOFTMAX)
    assert "aligned_alloc" in target.emit_source(kernel, layouts_of((5, 77), (5, 77)))
    x, out = torch.randn(5, 77), torch.empty(5, 77)
    run(target, kernel, [x], [out])
    torch.testing.assert_close(out, torch.softmax(x, 1), rtol=1e-5, atol=1e-6)


def test_a_result_returned_twice(target):
    text = """
buffer.kernel @twice(%t: !ptensor.tensor<[40], f32>) -> (!ptensor.tensor<[40], f32>, !ptensor.tensor<[40], f32>) {
  %y = loop.pointwise ins(%x = %t : !ptensor.tensor<[40], f32>) -> !ptensor.tensor<[40], f32> {
    %v = loop.load %x[d0] : f32
    %e = math.tanh %v : f32
    loop.yield %e : f32
  }
  buffer.yield %y, %y : !ptensor.tensor<[40], f32>, !ptensor.tensor<[40], f32>
}"""
    x, a, b = torch.randn(40), torch.empty(40), torch.empty(40)
    run(target, parse_kernel(text), [x], [a, b])
    torch.testing.assert_close(a, torch.tanh(x), rtol=1e-5, atol=1e-6)
    assert torch.equal(a, b)


def _plan(text, *tensors):
    from permalloy.targets.llvm.plan import plan_kernel

    return plan_kernel(parse_kernel(text), [layout(t) for t in tensors], 16)


def test_contiguous_dimensions_collapse():
    text = pointwise_kernel("[64, 3]", ["f32", "f32"], "f32", "    %y = arith.addf %a0, %a1 : f32")
    x = torch.empty(64, 3)
    assert _plan(text, x, x, x).stages[0].parallel == (192,)
    transposed = torch.empty(3, 64).t()
    assert _plan(text, transposed, x, x).stages[0].parallel == (64, 3)
    broadcast = torch.empty(64, 1).expand(64, 3)
    assert _plan(text, broadcast, x, x).stages[0].parallel == (64, 3)


def test_short_rows_after_collapsing(target):
    text = pointwise_kernel("[1000, 3]", ["f32", "f32"], "f32", "    %y = arith.mulf %a0, %a1 : f32")
    x, y, out = torch.randn(1000, 3), torch.randn(1000, 3), torch.empty(1000, 3)
    run(target, parse_kernel(text), [x, y], [out])
    assert torch.equal(out, x * y)
    text = pointwise_kernel("[7, 1, 5]", ["f32"], "f32", "    %y = math.exp %a0 : f32")
    x, out = torch.randn(7, 1, 5), torch.empty(7, 1, 5)
    run(target, parse_kernel(text), [x], [out])
    torch.testing.assert_close(out, torch.exp(x), rtol=1e-5, atol=1e-6)


def test_index_dimensions_do_not_collapse():
    text = pointwise_kernel("[4, 6]", [], "i64", """
    %i = loop.index d0 * 10 + d1
    %y = arith.index_cast %i : index to i64""")
    plan = _plan(text, torch.empty(4, 6, dtype=torch.int64))
    assert plan.stages[0].parallel == (4, 6)


def test_softmax_stages_share_one_row_loop():
    plan = _plan(SOFTMAX, torch.empty(5, 77), torch.empty(5, 77))
    assert [[s.mode for s in g] for g in plan.groups] == [["inner", "inner", "pointwise"]]


@pytest.mark.parametrize("bits", [128, 256])
def test_narrower_vectors(bits):
    """The code is width-generic: AVX2-wide (and SSE-wide) vectors give the same results."""
    narrow = LLVMTarget(vector_bits=bits)
    assert f"<{2 * bits // 32} x float>" in narrow.emit_source(parse_kernel(EXP), layouts_of((64, 1000), (64, 1000), (64, 1000)))
    x, y, out = torch.randn(64, 1000), torch.randn(64, 1000), torch.empty(64, 1000)
    run(narrow, parse_kernel(EXP), [x, y], [out])
    torch.testing.assert_close(out, torch.exp(x) + y, rtol=1e-5, atol=1e-6)
    x, out = torch.randn(37, 53), torch.empty(53)
    column_max = """
buffer.kernel @m(%t: !ptensor.tensor<[37, 53], f32>) -> (!ptensor.tensor<[53], i64>) {
  %r = loop.reduce argmax ins(%x = %t : !ptensor.tensor<[37, 53], f32>) over [37] -> !ptensor.tensor<[53], i64> {
    %v = loop.load %x[r0, d0] : f32
    loop.yield %v : f32
  }
  buffer.yield %r : !ptensor.tensor<[53], i64>
}"""
    positions = torch.empty(53, dtype=torch.int64)
    run(narrow, parse_kernel(column_max), [x], [positions])
    assert torch.equal(positions, x.argmax(0))


def test_vector_bits_are_checked():
    with pytest.raises(ValueError, match="128, 256 or 512"):
        LLVMTarget(vector_bits=100)
