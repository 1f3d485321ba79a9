"""
End to end on the LLVM target: torch functions through torch.compile (import,
lowering, kernels compiled by the llvm target, the host program) against eager,
and large kernels run on several threads.
"""

from __future__ import annotations

import pytest
import torch

from permalloy.targets.llvm import LLVMTarget
from permalloy.targets.llvm.testing import parse_kernel, pointwise_kernel, relative_error, run, tensor
from permalloy.tools.backend import permalloy_backend

from conftest import differential_module


def compiled(fn, dynamic=False):
    torch._dynamo.reset()
    return torch.compile(fn, backend=permalloy_backend, dynamic=dynamic,
                         options={"target": "llvm", "fallback": "raise"})  # fmt: skip


MODELS = {
    "exp_add": (lambda x, y: torch.exp(x) + y, 2),
    "gelu_erf": (lambda x: torch.nn.functional.gelu(x), 1),
    "gelu_tanh": (lambda x: torch.nn.functional.gelu(x, approximate="tanh"), 1),
    "sigmoid_mul": (lambda x: x * torch.sigmoid(x), 1),
    "softmax": (lambda x: torch.softmax(x, -1), 1),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), 1),
    "layer_norm": (lambda x: torch.nn.functional.layer_norm(x, (x.shape[-1],)), 1),
    "sum_mean": (lambda x: x.sum(0) + x.mean(1).sum(), 1),
    "max_argmax": (lambda x: x.amax(1) + x.argmax(1).float(), 1),
    "transpose_tanh": (lambda x: torch.tanh(x.t()) * 2, 1),
    "cat_relu": (lambda x, y: torch.relu(torch.cat([x, y], 1)), 2),
    "where_log1p": (lambda x, y: torch.where(x > y, torch.log1p(x.abs()), torch.expm1(y)), 2),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_compiled_functions_match_eager(name):
    fn, arity = MODELS[name]
    args = [torch.randn(16, 130) for _ in range(arity)]
    out = compiled(fn)(*args)
    torch.testing.assert_close(out, fn(*args), rtol=1e-5, atol=1e-5)


def test_a_window_over_a_product_of_an_expanded_input_matches_eager():
    """The product of an expanded input keeps its rows apart, so it shares a
    row loop with the max pool that reads it; the pool's window reaches into
    the rows before and after, which that loop has not all written."""

    def fn(w, x):
        return torch.nn.functional.max_pool2d(torch.tanh(x * w), 3, 1, 1)

    w, x = torch.randn(6), torch.randn(1, 3, 6).expand(16, 3, 6)
    torch.testing.assert_close(compiled(fn)(w, x), fn(w, x))


def test_dynamic_shapes_reuse_kernels():
    fn = compiled(lambda x: torch.softmax(x * 2, -1), dynamic=True)
    for rows, cols in [(3, 17), (9, 200), (2, 1025)]:
        x = torch.randn(rows, cols)
        torch.testing.assert_close(fn(x), torch.softmax(x * 2, -1), rtol=1e-5, atol=1e-6)


def test_integer_and_bool_graphs():
    fn = compiled(lambda x, i: ((x > 0).sum(1) + i * 3, (x > 0.5).any(1)))
    x, i = torch.randn(7, 90), torch.randint(-5, 5, (7,))
    out, flags = fn(x, i)
    assert torch.equal(out, (x > 0).sum(1) + i * 3)
    assert torch.equal(flags, (x > 0.5).any(1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_float_graphs(dtype):
    fn = compiled(lambda x: torch.exp(x) * 2 + x.sum(-1, keepdim=True))
    x = torch.randn(8, 100).to(dtype)
    torch.testing.assert_close(fn(x), torch.exp(x) * 2 + x.sum(-1, keepdim=True), rtol=1e-2, atol=1e-2)


@pytest.fixture(scope="module")
def target() -> LLVMTarget:
    return LLVMTarget()


def test_large_multithreaded_pointwise(target):
    torch.set_num_threads(2)
    n = (1 << 22) + 7
    x, y = torch.randn(n), torch.randn(n)
    body = """
    %e = math.tanh %a0 : f32
    %y = arith.mulf %e, %a1 : f32"""
    out = torch.empty(n)
    run(target, parse_kernel(pointwise_kernel(f"[{n}]", ["f32", "f32"], "f32", body)), [x, y], [out])
    torch.testing.assert_close(out, torch.tanh(x) * y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("index,dim,shape", [("[d0, r0]", 1, (4, 1 << 20)), ("[r0, d0]", 0, (1 << 18, 64))])
def test_million_element_sums(target, index, dim, shape):
    torch.set_num_threads(2)
    x = torch.randn(shape)
    out_shape = [shape[1 - dim]]
    text = f"""
buffer.kernel @s(%t: {tensor(str(list(shape)), "f32")}) -> ({tensor(str(out_shape), "f32")}) {{
  %r = loop.reduce sum ins(%x = %t : {tensor(str(list(shape)), "f32")}) over [{shape[dim]}] -> {tensor(str(out_shape), "f32")} {{
    %v = loop.load %x{index} : f32
    loop.yield %v : f32
  }}
  buffer.yield %r : {tensor(str(out_shape), "f32")}
}}"""
    out = torch.empty(out_shape)
    run(target, parse_kernel(text), [x], [out])
    assert relative_error(out, x.sum(dim)) < 1e-5
    assert relative_error(out, x.double().sum(dim)) < 1e-5


# --------------------------------------------------------------------------
# The lowering's differential cases, run as compiled host programs
# --------------------------------------------------------------------------


DIFFERENTIAL = differential_module()
CASES = [c for c in DIFFERENTIAL.ALL_CASES if not c.known_bug]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lowered_programs_match_the_ptensor_interpreter(target, case):
    """Every differential case of the lowering, unfused and fused, its kernels
    compiled by this target."""
    from permalloy.interpreter import run_function
    from permalloy.targets.host import build_host_program

    d = DIFFERENTIAL
    torch.manual_seed(0)
    levels = d.Levels(d.parse(case.ir))
    for level in ("buffer", "fused_buffer", "fused_planned"):
        program = build_host_program(getattr(levels, level).clone(), target)
        for sizes in case.sizes:
            args = d.make_inputs(levels.ptensor, case, sizes)
            reference = run_function(levels.ptensor, [d.clone(a) for a in args])
            results = program(*[d.clone(a) for a in args])
            for i, (r, e) in enumerate(zip(results, reference, strict=True)):
                d.assert_same(r, e, f"{case.name} ({level}) result {i} at {sizes}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("shape", [(2, 7, 7), (2, 4, 7, 7), (3, 5, 13), (2, 9, 9), (1, 2, 4, 7, 7)])
@pytest.mark.parametrize("vector_bits", [128, 256])
def test_masked_reads_of_a_padded_row_stay_masked(shape, dtype, vector_bits):
    """A padded row narrower than the vector: its masked loads are split into
    registers by the code generator, since LLVM's x86 backend loaded a split
    half whose mask was all false without the mask (the right padding read the
    next row's first element)."""
    torch._dynamo.reset()
    fn = lambda x: torch.nn.functional.pad(x, (1, 1, 1, 1), value=-3)  # noqa: E731
    compiled_fn = torch.compile(
        fn, backend=permalloy_backend,
        options={"target": "llvm", "fallback": "raise", "fusion": False, "vector_bits": vector_bits},
    )  # fmt: skip
    x = (torch.randn(shape) * 100).to(dtype)
    assert torch.equal(compiled_fn(x), fn(x))


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_masked_reads_run_only_where_a_lane_is_active(tmp_path, vector_bits):
    """A batch norm over a concatenation reads each input under a mask that is
    false for whole rows (the other inputs' channels), one of them pooled
    through stride-2 gathers: every masked load and gather is branched around
    where no lane is active, and the result matches eager."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    pooled, *rest = [torch.randn(1, 4, 14, 14)] + [torch.randn(1, 3, 7, 7) for _ in range(4)]
    scale = torch.rand(16) + 0.5

    def fn(pooled, a, b, c, d):
        joined = torch.cat([torch.nn.functional.avg_pool2d(pooled, 2), a, b, c, d], 1)
        return torch.relu(joined * scale[:, None, None])

    options = {"target": "llvm", "fallback": "raise", "vector_bits": vector_bits, "dump_dir": str(tmp_path)}
    compiled_fn = torch.compile(fn, backend=permalloy_backend, options=options)
    torch.testing.assert_close(compiled_fn(pooled, *rest), fn(pooled, *rest), rtol=1e-6, atol=1e-6)
    source = "".join(p.read_text() for p in tmp_path.glob("graph_000/*kernel*.ll"))
    assert "masked.gather" in source and "masked.load" in source
    assert source.count("load.then") >= 5, source


@pytest.mark.parametrize(
    ("fn", "make"),
    [
        (lambda x: torch.erf(x) * x, lambda: torch.randn(1, dtype=torch.float64).expand(0)),
        (lambda x: torch.exp(x) + x.sum(), lambda: torch.randn(1).expand(0)),
        (lambda x: torch.tanh(x).expand(2, -1).t(), lambda: torch.randn(1, 1, dtype=torch.float16).expand(1, 0)),
        (lambda x: x.sum(1) + 1, lambda: torch.randn(1).expand(3, 0)),
    ],
)
def test_kernels_over_empty_tensors_read_nothing(fn, make):
    """A kernel with no result element does not run: a load hoisted out of its
    (empty) loops read the data pointer of an empty tensor (NULL) and crashed."""
    x = make()
    torch.testing.assert_close(compiled(fn)(x), fn(x))
