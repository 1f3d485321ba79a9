"""
End to end on the Triton target: the lowering's differential cases compiled
as host programs whose kernels are Triton, the model zoo and a few functions
through `torch.compile(..., options={"target": "triton"})`, against eager.

Kernels run on the CPU in Triton's interpreter: each test sets
`TRITON_INTERPRET=1` for itself only (monkeypatch), so other tests of the same
worker process are unaffected. With `PERMALLOY_TEST_DEVICE=cuda` the same
tests run compiled kernels on a GPU instead.
"""

from __future__ import annotations

import os

import pytest
import torch

from permalloy.pipeline import default_pipeline
from permalloy.targets.triton import TritonTarget

from conftest import differential_module

DEVICE = os.environ.get("PERMALLOY_TEST_DEVICE", "cpu")
INTERPRET = DEVICE == "cpu"


@pytest.fixture(autouse=True)
def triton_mode(monkeypatch, tmp_path_factory):
    """Triton's interpreter on the CPU (this test only), and a scratch cache."""
    if INTERPRET:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "permalloy-cache"))


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> TritonTarget:
    """The differential cases' target: each kernel in its first configuration
    (the torch.compile tests below autotune on a GPU)."""
    return TritonTarget(interpret=INTERPRET, autotune=False, cache=tmp_path_factory.mktemp("triton-cache"))


def on_device(value):
    return value.to(DEVICE) if isinstance(value, torch.Tensor) else value


# --------------------------------------------------------------------------
# The lowering's differential cases, run as compiled host programs
# --------------------------------------------------------------------------


DIFFERENTIAL = differential_module()
CASES = [c for c in DIFFERENTIAL.ALL_CASES if not c.known_bug]
LOWERING = next(p for p in default_pipeline(True, "triton") if p.startswith("convert-ptensor-to-loop"))
"""The Triton pipeline's conversion to loops: sorts of 64-bit values stay for torch."""


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lowered_programs_match_the_ptensor_interpreter(target, case):
    """Every differential case of the lowering, unfused and fused (memory
    planned), lowered as the Triton pipeline lowers it, its kernels compiled
    by the Triton target."""
    from permalloy.interpreter import run_function
    from permalloy.targets.host import build_host_program

    d = DIFFERENTIAL
    torch.manual_seed(0)
    levels = d.Levels(d.parse(case.ir), LOWERING)
    for level in ("buffer", "fused_planned"):
        program = build_host_program(getattr(levels, level).clone(), target)
        for sizes in case.sizes:
            args = d.make_inputs(levels.ptensor, case, sizes)
            reference = run_function(levels.ptensor, [d.clone(a) for a in args])
            results = program(*[on_device(d.clone(a)) for a in args])
            for i, (r, e) in enumerate(zip(results, reference, strict=True)):
                d.assert_same(r.cpu(), e, f"{case.name} ({level}) result {i} at {sizes}")


# --------------------------------------------------------------------------
# torch.compile with the triton target
# --------------------------------------------------------------------------


def compiled(fn, dynamic=False, **options):
    torch._dynamo.reset()
    options = {"target": "triton", "fallback": "raise", **options}
    return torch.compile(fn, backend="permalloy", dynamic=dynamic, options=options)


ZOO_SIZE = dict(batch=2, seq=4, hidden=16, heads=2, channels=3, image=5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize(
    "name",
    [
        "pointwise_chain", "layer_norm", "masked_softmax", "rms_norm_silu",
        "layer_norm_gelu_residual", "mlp", "causal_attention",
        "causal_attention_explicit", "gpt2_block", "bert_block", "conv_bn_relu",
        "vit_block",
    ],
)  # fmt: skip
def test_zoo_models_match_eager(name, dtype, backend_check):
    """Outputs, layouts and stats against eager, through the shared backend check."""
    from permalloy.tools.zoo import ZooSize, make_case

    case = make_case(name, ZooSize(**ZOO_SIZE))
    model = case.model.to(DEVICE, dtype)
    inputs = [x.to(DEVICE, dtype) if x.is_floating_point() else x.to(DEVICE) for x in case.inputs]

    def run(*inputs):
        with torch.no_grad():
            return model(*inputs)

    backend_check(run, inputs, "triton")


FUNCTIONS = {
    "exp_add": (lambda x, y: torch.exp(x) + y, 2),
    "gelu_tanh": (lambda x: torch.nn.functional.gelu(x, approximate="tanh"), 1),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), 1),
    "sum_mean": (lambda x: x.sum(0) + x.mean(1).sum(), 1),
    "max_argmax": (lambda x: x.amax(1) + x.argmax(1).float(), 1),
    "transpose_tanh": (lambda x: torch.tanh(x.t()) * 2, 1),
    "cat_relu": (lambda x, y: torch.relu(torch.cat([x, y], 1)), 2),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_compiled_functions_match_eager(name):
    fn, arity = FUNCTIONS[name]
    args = [torch.randn(16, 130, device=DEVICE) for _ in range(arity)]
    torch.testing.assert_close(compiled(fn)(*args), fn(*args), rtol=1e-5, atol=1e-5)


def _windows_to_channel_rows(x):
    """Windows `[batch * 16, 3, 49, 32]` to `[batch * 96, 16 * 49]`: a copy whose
    addresses divide both dimensions (the kernel splits them and tiles)."""
    return x.reshape(-1, 16, 3, 49, 32).permute(0, 2, 4, 1, 3).reshape(-1, 16 * 49) * 2


def _heads_to_rows(x):
    """`[4, 40, 8 * 16]` to `[4 * 8, 40, 16]` and flat: a transpose through two reshapes."""
    return x.view(4, 40, 8, 16).transpose(1, 2).reshape(32 * 40, 16).sin()


@pytest.mark.parametrize("fn,shape", [(_windows_to_channel_rows, (32, 3, 49, 32)), (_heads_to_rows, (4, 40, 128))],
                         ids=["windows", "heads"])  # fmt: skip
def test_transposes_through_reshapes_match_eager(fn, shape):
    x = torch.randn(*shape, device=DEVICE)
    torch.testing.assert_close(compiled(fn)(x), fn(x), rtol=1e-5, atol=1e-6)


def test_long_rows_reduce_in_chunks():
    """Rows longer than one block: looped softmax and layer norm, an argmax
    whose maximum and a NaN lie in later chunks, and a sum of int32."""
    x = torch.randn(3, 5000, device=DEVICE)
    x[0, 4321] = 100.0
    x[2, 3000] = float("nan")
    fn = compiled(lambda x: (torch.softmax(x, -1), x.argmax(-1), x.amax(-1), torch.nn.functional.layer_norm(x, (5000,))))
    softmax, argmax, amax, norm = fn(x)
    torch.testing.assert_close(softmax, torch.softmax(x, -1), rtol=1e-5, atol=1e-6, equal_nan=True)
    assert argmax.tolist() == [4321, x[1].argmax().item(), 3000]
    torch.testing.assert_close(amax, x.amax(-1), equal_nan=True)
    torch.testing.assert_close(norm, torch.nn.functional.layer_norm(x, (5000,)), rtol=1e-4, atol=1e-4, equal_nan=True)
    i = torch.randint(-1000, 1000, (4, 5000), dtype=torch.int32, device=DEVICE)
    assert torch.equal(compiled(lambda i: i.sum(1, dtype=torch.int32))(i), i.sum(1, dtype=torch.int32))


def test_reductions_with_few_results_split_for_parallelism():
    """A loss (a whole tensor to one value) and column sums over many rows run
    as a partial reduction over chunks, then a reduction of the partials."""
    import permalloy

    x = torch.randn(64, 1024, device=DEVICE)
    seed = torch.randn(64, 1024, device=DEVICE)
    permalloy.reset_stats()
    loss, columns = compiled(lambda x, s: ((x * s).sum(), x.exp().sum(0)))(x, seed)
    torch.testing.assert_close(loss, (x * seed).sum(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(columns, x.exp().sum(0), rtol=1e-5, atol=1e-5)
    (record,) = permalloy.stats()
    assert record["kernels"] >= 3, "the whole-tensor sum splits in two kernels"


def test_reductions_along_rows_walk_their_inner_axis_in_chunks(tmp_path):
    """Column sums and channels-last batch-norm statistics read along rows
    that are contiguous in memory: their kernels loop over the reduced axis
    in chunks (wide blocks of rows), even where it would fit in one block."""
    x = torch.randn(300, 64, device=DEVICE)
    image = torch.randn(2, 16, 5, 7, device=DEVICE).to(memory_format=torch.channels_last)

    def statistics(x, image):
        mean = image.mean((0, 2, 3))
        return x.sum(0), mean, ((image - mean[:, None, None]) ** 2).mean((0, 2, 3))

    got = compiled(statistics, dump_dir=str(tmp_path))(x, image)
    for g, expected in zip(got, statistics(x, image)):
        torch.testing.assert_close(g, expected, rtol=1e-5, atol=1e-5)
    sources = [k.read_text() for k in sorted(tmp_path.glob("graph_*/*kernel_*reduce*.py"))]
    assert sources and all("for roffset in range(" in text for text in sources)


def test_batch_norm_statistics_of_a_channels_last_batch_split_by_their_points(tmp_path):
    """256 channels over 32 x 14 x 14 elements: short of `split-reductions`'
    length, but over a million points, so each sum becomes partial sums over
    16 chunks of the batch and a sum of those; the results match eager."""
    x = torch.randn(32, 256, 14, 14, device=DEVICE).to(memory_format=torch.channels_last) + 3
    dy = torch.randn(32, 256, 14, 14, device=DEVICE).to(memory_format=torch.channels_last)

    def statistics(x, dy):
        mean = x.mean((0, 2, 3))
        return mean, (dy * (x - mean[:, None, None])).sum((0, 2, 3))

    got = compiled(statistics, dump_dir=str(tmp_path))(x, dy)
    for g, expected in zip(got, statistics(x.double(), dy.double())):
        torch.testing.assert_close(g.double(), expected, rtol=1e-5, atol=1e-4)
    (split,) = tmp_path.glob("graph_*/*after_split-reductions.mlir")
    assert "over [2, 14, 14] -> !ptensor.tensor<[16, 256], f32>" in split.read_text()


def test_dynamic_shapes_reuse_kernels():
    fn = compiled(lambda x: torch.softmax(x * 2, -1) + x.sum(0), dynamic=True)
    for rows, cols in [(3, 17), (9, 200), (2, 3000)]:
        x = torch.randn(rows, cols, device=DEVICE)
        torch.testing.assert_close(fn(x), torch.softmax(x * 2, -1) + x.sum(0), rtol=1e-5, atol=1e-5)


def test_later_calls_at_other_sizes_and_alignments():
    """One compiled graph called again and again: at the same sizes (on a GPU,
    launched directly after the first call), on views whose data is not
    16-byte aligned (another specialization of the kernels), at new sizes."""
    fn = compiled(lambda x, y: torch.softmax(x * 2, -1) + y.sum(0), dynamic=True)
    base = torch.randn(4000, device=DEVICE)
    for rows, cols, offset in [(3, 17, 0), (3, 17, 0), (3, 17, 1), (3, 17, 1), (9, 200, 0), (9, 200, 3), (3, 17, 0)]:
        x = base[offset : offset + rows * cols].view(rows, cols)
        y = torch.randn(rows, cols, device=DEVICE)
        torch.testing.assert_close(fn(x, y), torch.softmax(x * 2, -1) + y.sum(0), rtol=1e-5, atol=1e-5)


def test_integer_bool_and_half_graphs():
    x, i = torch.randn(7, 90, device=DEVICE), torch.randint(-5, 5, (7,), device=DEVICE)
    out, flags = compiled(lambda x, i: ((x > 0).sum(1) + i * 3, (x > 0.5).any(1)))(x, i)
    assert torch.equal(out, (x > 0).sum(1) + i * 3)
    assert torch.equal(flags, (x > 0.5).any(1))
    for dtype in (torch.float16, torch.bfloat16):
        h = torch.randn(8, 100, device=DEVICE).to(dtype)
        fn = lambda h: torch.exp(h) * 2 + h.sum(-1, keepdim=True)  # noqa: E731
        torch.testing.assert_close(compiled(fn)(h), fn(h), rtol=1e-2, atol=1e-2)


def test_kernel_sources_are_dumped_as_python(tmp_path):
    x = torch.randn(4, 8, device=DEVICE)
    compiled(lambda x: torch.softmax(x, -1), dump_dir=str(tmp_path))(x)
    (kernel,) = sorted(tmp_path.glob("graph_*/*kernel_*.py"))
    text = kernel.read_text()
    assert "@triton.jit" in text and "def launch(" in text and "def launcher(" in text
    compile(text, str(kernel), "exec")
