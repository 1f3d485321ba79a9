"""
Complex tensors through `torch.compile(fn, backend="permalloy")` on both
targets, against eager: the graph is rewritten with every complex tensor as a
real pair (`lowering/complex_as_real.py`) and compiles whole. Arithmetic with
complex and real operands and numbers (broadcast), conjugation, `abs`,
`angle`, `sgn`, `exp`, `log`, `sqrt`, powers, trigonometric and hyperbolic
functions, complex exponents, `prod` and `cumprod`, the parts and their
assembly (`real`, `imag`, `view_as_real`, `view_as_complex`, `complex`,
`polar`), reductions, variances and norms, views, splits, concatenation, matrix
products, FFTs
(library calls), complex64 and complex128, non-contiguous complex inputs
(transposed, strided, offset, conjugated, broadcast), gathers and scatters, symbolic sizes, a
rotary embedding written as LLaMA's reference code writes it, a spectral
convolution block (rfft2, a complex product with weights, irfft2) and the
gradients of training through them. Outputs are compared as pairs at the
tolerance of their real dtype (conftest.py), with eager's strides. A graph
with an op no rule takes runs eagerly after a warning naming the op.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import pytest
import torch
import torch.nn.functional as F
from conftest import target_device as device_of_target
from conftest import to_test_device
from torch import nn

import permalloy

pytestmark = pytest.mark.usefixtures("fresh_backend")

TARGETS = ["llvm", "triton"]
COMPLEX = [torch.complex64, torch.complex128]


@pytest.fixture
def target_device(request) -> str:
    """The target of a test parametrized over both, with Triton's interpreter for `triton`."""
    if request.param == "triton":
        request.getfixturevalue("triton_device")
    return request.param


both_targets = pytest.mark.parametrize("target_device", TARGETS, indirect=True)
both_dtypes = pytest.mark.parametrize("dtype", COMPLEX, ids=["c64", "c128"])


def crandn(*shape: int, dtype: torch.dtype = torch.complex64, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def rrandn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def fresh(*tensors: torch.Tensor) -> Callable[[], list]:
    return lambda: [to_test_device(t.clone()) for t in tensors]


def no_externs() -> None:
    for record in permalloy.stats():
        assert record["extern_calls"] == 0, record


# -- elementwise ---------------------------------------------------------------


def arithmetic(z, w, x):
    """z [4, 6], w [6] complex; x [4, 6] real."""
    return (
        z + w, z - w, z * w, z / w,
        z + x, x - z, z * x, x / z, z / x,
        z * 2.5, z + 1.5, 3 - z, z * (1 - 2j), z / 2j, (1 + 1j) / z, x * 1j,
        -z, z.conj() * w, torch.conj_physical(z), torch.reciprocal(z), z.add(w, alpha=2), z - x * 1j,
        z == w, z != z * 1,
    )  # fmt: skip


@both_targets
@both_dtypes
def test_arithmetic(backend_check, target_device, dtype):
    real = dtype.to_real()
    inputs = fresh(crandn(4, 6, dtype=dtype), crandn(6, dtype=dtype, seed=1), rrandn(4, 6, dtype=real, seed=2))
    backend_check(arithmetic, inputs, target=target_device)
    no_externs()


def functions(z):
    return (
        z.abs(), z.angle(), torch.sgn(z), torch.exp(z), torch.log(z), torch.sqrt(z),
        z ** 2.5, z ** 2, z ** -1, z ** 0.5, z.pow(-0.75), torch.isnan(z),
    )  # fmt: skip


def transcendental(z, w):
    """Trigonometric and hyperbolic functions (`tanh` also far out, where
    it takes its limit), logarithms, complex and tensor exponents, products."""
    return (
        torch.sin(z), torch.cos(z), torch.tan(z), torch.sinh(z), torch.cosh(z), torch.tanh(z),
        torch.tanh(z * 30), torch.log2(z), torch.log10(z), torch.rsqrt(z), z ** (0.5 + 1j), z ** w,
        2 ** z, (1 + 1j) ** z, z.prod(), z.prod(1), z.prod(0, keepdim=True), z.cumprod(1), z.cumprod(0),
    )  # fmt: skip


@both_targets
@both_dtypes
def test_transcendental_functions_and_products(backend_check, target_device, dtype):
    z = crandn(5, 7, dtype=dtype)
    z[0, 0] = 0  # a zero base: 0 where the exponent's real part is positive
    z[1, 1] = 3j  # on an axis: parts that multiply sin(0) stay 0
    z[2, 2] = 2
    backend_check(transcendental, fresh(z, crandn(5, 7, dtype=dtype, seed=1)), target=target_device)
    no_externs()


@both_targets
@both_dtypes
def test_functions(backend_check, target_device, dtype):
    z = crandn(3, 5, dtype=dtype)
    z[0, 0] = 0
    z[1, 1] = -2.0  # on the branch cut of sqrt and log: the imaginary part is +0
    backend_check(functions, fresh(z), target=target_device)
    no_externs()


def parts(z, x):
    """z [4, 6] complex; x [4, 6, 2] real."""
    c = torch.view_as_complex(x)
    return (
        z.real, z.imag, torch.view_as_real(z * c), (z * c).real * 2, (z * c).imag.sum(0),
        torch.complex(x[..., 0], x[..., 1]) * z, torch.polar(x[..., 0].abs(), x[..., 1]) + z,
        torch.view_as_complex(x * 2),
    )  # fmt: skip


@both_targets
@both_dtypes
def test_parts(backend_check, target_device, dtype):
    inputs = fresh(crandn(4, 6, dtype=dtype), rrandn(4, 6, 2, dtype=dtype.to_real(), seed=1))
    backend_check(parts, inputs, target=target_device)
    no_externs()


def casts(z, x):
    constant = torch.tensor([1 + 2j, 3j, -1, 0.5j, 2, 1 - 1j], device=z.device)
    return (
        z.to(torch.complex128) * 2, x.to(torch.complex64) + z, (z * 1j).to(torch.complex64),
        torch.where(x > 0, z, 1j), z * constant, z.to(torch.float32),
    )


@both_targets
def test_casts_and_selections(backend_check, target_device):
    backend_check(casts, fresh(crandn(4, 6), rrandn(4, 6, seed=1)), target=target_device)


# -- reductions, views, data movement ----------------------------------------------


def reductions(z):
    return (
        z.sum(), z.sum(0), z.sum(-1, keepdim=True), z.mean(), z.mean(1),
        torch.linalg.vector_norm(z), torch.linalg.vector_norm(z, 1, dim=0),
        torch.linalg.vector_norm(z, float("inf"), dim=1), z.norm(), torch.norm(z, dim=1),
        torch.cumsum(z, 1), z.var(0), z.std(), *torch.var_mean(z, 1),
    )  # fmt: skip


@both_targets
@both_dtypes
def test_reductions_and_norms(backend_check, target_device, dtype):
    backend_check(reductions, fresh(crandn(5, 7, dtype=dtype)), target=target_device)
    no_externs()


def views(z, w, rows):
    """z [4, 6], w [6]: views of an input and of a computed tensor; rows [3]
    positions."""
    y = z * w
    return (
        y.reshape(2, 12), y.permute(1, 0) * 2, y[1:3, ::2] + 1, y[2] * y[:, 1].sum(),
        y.unsqueeze(1).expand(4, 3, 6) * 2, z.unsqueeze(0) + w.view(6, 1, 1)[:4, 0].unsqueeze(1),
        torch.cat([y, z], 0), torch.cat([y, z.abs()], 1), torch.stack([y, z], -1), torch.stack([y, z]),
        y.transpose(0, 1).reshape(-1) * 1j, y.flip(0) + 1, z[:, 2:4].reshape(8, 1).squeeze(1),
        y[rows], y.index_select(1, rows), F.pad(torch.view_as_real(y), (0, 0, 1, 2)), y.roll(1, 0),
        *y.chunk(2, 1), y.diagonal() * 2,
    )  # fmt: skip


def gathers_and_scatters(z, w, columns):
    """z, w [4, 6]; columns [4, 3], distinct in each row."""
    return (
        torch.gather(z * w, 1, columns), z.scatter(1, columns, w), z.scatter(0, columns % 4, 2 - 1j),
        z.scatter_add(1, columns, w * 2), torch.gather(w, 1, columns) * z[:, :3],
    )  # fmt: skip


@both_targets
@both_dtypes
def test_gathers_and_scatters(backend_check, target_device, dtype):
    columns = torch.stack([torch.randperm(6, generator=torch.Generator().manual_seed(r))[:3] for r in range(4)])
    inputs = fresh(crandn(4, 6, dtype=dtype), crandn(4, 6, dtype=dtype, seed=1), columns)
    backend_check(gathers_and_scatters, inputs, target=target_device)


@both_targets
@both_dtypes
def test_views_and_data_movement(backend_check, target_device, dtype):
    inputs = fresh(crandn(4, 6, dtype=dtype), crandn(6, dtype=dtype, seed=1), torch.tensor([2, 0, 3]))
    backend_check(views, inputs, target=target_device)
    no_externs()


def products(a, b, p, q, v):
    """a [3, 5], b [5, 4], p [2, 3, 5], q [2, 5, 4], v [5]."""
    return a @ b, torch.bmm(p, q), p @ b, a @ v, a.mT.conj() @ a, (a * 2j) @ (b + 1), torch.einsum("bij,bjk->bik", p, q)


@both_targets
@both_dtypes
def test_matrix_products(backend_check, target_device, dtype):
    inputs = fresh(*(crandn(*shape, dtype=dtype, seed=i) for i, shape in enumerate([(3, 5), (5, 4), (2, 3, 5), (2, 5, 4), (5,)])))
    backend_check(products, inputs, target=target_device)


def transforms(x, z):
    """x [4, 8] real, z [4, 8] complex."""
    return (
        torch.fft.rfft(x), torch.fft.irfft(torch.fft.rfft(x) * 2j, n=8), torch.fft.fft(z, dim=0),
        torch.fft.ifft(z, norm="ortho"), torch.fft.fft2(z), torch.fft.rfft2(x, norm="forward"),
        torch.fft.fftn(x), torch.fft.irfftn(z, s=(4, 14)), torch.fft.fft(x, dim=0).abs(),
        torch.fft.ifft(z.t()),
    )  # fmt: skip


@both_targets
@both_dtypes
def test_ffts_are_library_calls(backend_check, target_device, dtype):
    inputs = fresh(rrandn(4, 8, dtype=dtype.to_real()), crandn(4, 8, dtype=dtype, seed=1))
    backend_check(transforms, inputs, target=target_device)
    (record,) = permalloy.stats()
    assert record["extern_calls"] > 0


# -- layouts and sizes -------------------------------------------------------------


def _noncontiguous(layout: str) -> torch.Tensor:
    """A complex input [4, 6] in a layout that is not contiguous."""
    base = crandn(8, 12, seed=3)
    return {
        "transposed": base[:6, :4].t(),
        "strided": base[::2, ::2],
        "offset": base[3:7, 5:11],
        "conjugated": base[:4, :6].conj(),
        "broadcast": base[0, :6].expand(4, 6),
    }[layout]


def pointwise_and_views(z, w):
    return z * w + z.abs(), (z * 2).t(), z.sum(0), z.clone(), z[1:] @ w[:, None].expand(6, 3)


@both_targets
@pytest.mark.parametrize("layout", ["transposed", "strided", "offset", "conjugated", "broadcast"])
def test_noncontiguous_inputs(backend_check, target_device, layout):
    def inputs():
        return [to_test_device(_noncontiguous(layout)), to_test_device(crandn(6, seed=4))]

    backend_check(pointwise_and_views, inputs, target=target_device)


@both_targets
def test_symbolic_sizes(backend_check, target_device):
    def fn(z, w):
        return (z * w).abs().sum(1), torch.fft.fft(z * w, dim=1), z.reshape(-1) + 1

    compiled = torch.compile(fn, backend="permalloy", options={"target": target_device, "fallback": "raise"}, dynamic=True)
    for rows in (3, 5):
        z, w = crandn(rows, 8, seed=rows), crandn(8, seed=1)
        z, w = to_test_device(z), to_test_device(w)
        backend_check.assert_outputs_match(compiled(z, w), fn(z, w))
    assert all(record["compiled"] and record["fallback_ops"] == [] for record in permalloy.stats())


# -- blocks of models ------------------------------------------------------------


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0, device: torch.device | None = None) -> torch.Tensor:
    """LLaMA's reference code (with the device to make the table on)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, device=device)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    """LLaMA's reference code: the rotation as a product of complex numbers."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def rotary_with_table(xq, xk):
    """The table of rotations computed in the graph, as LLaMA's forward slices it."""
    freqs_cis = precompute_freqs_cis(xq.shape[-1], 16, device=xq.device)[: xq.shape[1]]
    return apply_rotary_emb(xq, xk, freqs_cis)


@both_targets
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
def test_rotary_embedding(backend_check, target_device, dtype):
    xq, xk = rrandn(2, 5, 4, 8, seed=1).to(dtype), rrandn(2, 5, 2, 8, seed=2).to(dtype)
    freqs_cis = precompute_freqs_cis(8, 5)
    backend_check(apply_rotary_emb, fresh(xq, xk, freqs_cis), target=target_device)
    no_externs()
    (record,) = permalloy.stats()
    assert record["kernels"] == 2, "one kernel per rotated tensor"
    torch._dynamo.reset()
    backend_check(rotary_with_table, fresh(xq, xk), target=target_device)
    no_externs()


class SpectralBlock(nn.Module):
    """rfft2, a complex product with weights on the lowest modes, irfft2
    (a Fourier neural operator's layer), with a 1x1 convolution beside it."""

    def __init__(self, channels: int = 3, modes: int = 3, dtype: torch.dtype = torch.complex64):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.modes = modes
        self.weights = nn.Parameter(torch.randn(channels, channels, modes, modes, dtype=dtype, generator=g) / channels)
        self.mix = nn.Conv2d(channels, channels, 1, dtype=dtype.to_real())

    def forward(self, x):
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros_like(x_ft)
        out_ft[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.weights)
        return F.gelu(torch.fft.irfft2(out_ft, s=x.shape[-2:]) + self.mix(x))


def spectral_product(x, weights):
    """rfft2 -> complex product by weights -> irfft2."""
    return torch.fft.irfft2(torch.fft.rfft2(x) * weights, s=x.shape[-2:])


@both_targets
@both_dtypes
def test_spectral_convolution(backend_check, target_device, dtype):
    real = dtype.to_real()
    inputs = fresh(rrandn(2, 3, 8, 8, dtype=real), crandn(3, 8, 5, dtype=dtype, seed=1))
    backend_check(spectral_product, inputs, target=target_device)
    torch._dynamo.reset()
    block = SpectralBlock(dtype=dtype).to(device_of_target(target_device))
    backend_check(block, fresh(rrandn(2, 3, 8, 8, dtype=real, seed=2)), target=target_device)


# -- training ------------------------------------------------------------------------


def _as_real(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t.resolve_conj()).double() if t.is_complex() else t.double()


def assert_gradients_match(actual: Sequence[torch.Tensor], expected: Sequence[torch.Tensor]) -> None:
    """float32's bound on each gradient's relative error, complex ones as pairs."""
    for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert a is not None and a.dtype == e.dtype and a.shape == e.shape, index
        a, e = _as_real(a.cpu()), _as_real(e.cpu())
        error = (a - e).norm().item() / e.norm().item()
        assert error < 1e-4, f"gradient {index}: relative error {error:.3g}"
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5 * max(e.abs().max().item(), 1.0))


def _gradients(fn: Callable, inputs: Sequence[torch.Tensor], parameters: Sequence[nn.Parameter] = ()) -> tuple:
    """`fn`'s output and the gradients of its inputs and `parameters` for a
    fixed upstream gradient."""
    for parameter in parameters:
        parameter.grad = None
    leaves = [x.detach().clone().requires_grad_(True) for x in inputs]
    output = fn(*leaves)
    weights = torch.randn(output.shape, dtype=output.dtype, generator=torch.Generator().manual_seed(7))
    output.backward(weights.to(output.device))
    return output.detach(), [x.grad for x in leaves] + [p.grad for p in parameters]


def mul_abs(z, w, r):
    """A complex product's magnitude and phase, weighted by a real tensor."""
    y = z * w
    return y.abs() * r + torch.view_as_real(y / (w + 2)).sum(-1) + y.angle()


def spectral_loss(x, weights):
    return spectral_product(x, weights).pow(2)


def trig_powers_products(z):
    """Gradients through `tanh_backward`, complex exponents, and the
    cumulative products of `prod`'s gradient."""
    y = torch.sin(z) * torch.cos(z) + torch.tanh(z) + torch.sinh(z) / 3 + torch.tan(z) / 4
    return (y + z ** (0.5 + 1j) + 2 ** z).abs().sum() + z.prod(1).abs().sum() + z.prod().real


def norms_and_indexing(z, w):
    """Norms, a gather (whose gradient accumulates at repeated positions), a
    mean, an FFT and a matrix product of complex values."""
    y = z * w
    rows = torch.tensor([0, 2, 2], device=z.device)
    return (
        torch.linalg.vector_norm(y, dim=1).sum() + y[rows].abs().sum() + (y.mean(0) * 2j).real.sum()
        + torch.fft.fft(y).imag.pow(2).sum() + (y @ w[:, None]).abs().sum()
    )


@both_targets
@pytest.mark.parametrize("case", ["mul_abs", "norms_and_indexing", "trig_powers_products", "spectral", "rotary"])
def test_training_gradients_match_eager(target_device, case):
    if case == "mul_abs":
        fn, inputs = mul_abs, [crandn(4, 6), crandn(6, seed=1), rrandn(4, 6, seed=2)]
    elif case == "norms_and_indexing":
        fn, inputs = norms_and_indexing, [crandn(4, 6), crandn(6, seed=1)]
    elif case == "trig_powers_products":
        fn, inputs = trig_powers_products, [crandn(4, 6) * 0.7]
    elif case == "spectral":
        fn, inputs = spectral_loss, [rrandn(2, 3, 8, 8), crandn(3, 8, 5, seed=1) / 4]
    else:
        fn, inputs = (lambda q, k, f: sum(apply_rotary_emb(q, k, f))), [
            rrandn(2, 5, 4, 8, seed=1), rrandn(2, 5, 4, 8, seed=2), precompute_freqs_cis(8, 5)]
    inputs = [to_test_device(t) for t in inputs]
    compiled = torch.compile(fn, backend="permalloy", options={"target": target_device, "fallback": "raise"})
    actual, actual_gradients = _gradients(compiled, inputs)
    expected, expected_gradients = _gradients(fn, inputs)
    assert_gradients_match([actual], [expected])
    assert_gradients_match(actual_gradients, expected_gradients)
    records = permalloy.stats()
    assert len(records) >= 2, records
    assert all(r["compiled"] and r["fallback_ops"] == [] and r["target"] == target_device for r in records)


def test_training_a_spectral_block_follows_eager():
    """Parameters and input of the spectral block: their gradients match eager's."""
    torch.manual_seed(0)
    block = SpectralBlock()
    x = rrandn(2, 3, 8, 8, seed=5)
    compiled = torch.compile(block, backend="permalloy", options={"target": "llvm", "fallback": "raise"})
    actual, actual_gradients = _gradients(compiled, [x], list(block.parameters()))
    expected, expected_gradients = _gradients(block, [x], list(block.parameters()))
    assert_gradients_match([actual, *actual_gradients], [expected, *expected_gradients])
    assert all(r["compiled"] and r["fallback_ops"] == [] for r in permalloy.stats())


def test_training_a_spectral_block_on_an_input_without_gradients_follows_eager():
    """Only the parameters need gradients: the convolution's backward
    computes no input gradient, whose missing item the complex rewrite
    drops."""
    torch.manual_seed(0)
    block = SpectralBlock()
    x = rrandn(2, 3, 8, 8, seed=5)
    compiled = torch.compile(block, backend="permalloy", options={"target": "llvm", "fallback": "raise"})
    actual, actual_gradients = _gradients(lambda: compiled(x), [], list(block.parameters()))
    expected, expected_gradients = _gradients(lambda: block(x), [], list(block.parameters()))
    assert_gradients_match([actual, *actual_gradients], [expected, *expected_gradients])
    assert [r["compiled"] and r["fallback_ops"] == [] for r in permalloy.stats()] == [True, True]


# -- what stays with torch ---------------------------------------------------------


def test_an_op_without_a_rule_runs_the_graph_eagerly():
    """`asinh` of a complex tensor has no rule: the whole graph runs eagerly,
    after one warning naming the op, and gives eager's result."""

    def fn(z):
        return torch.asinh(z * 2) + z.abs()

    z = crandn(5)
    compiled = torch.compile(fn, backend="permalloy", options={"target": "llvm"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compiled(z)
    messages = [str(w.message) for w in caught if "permalloy" in str(w.message)]
    assert len(messages) == 1 and "aten.asinh.default" in messages[0], messages
    torch.testing.assert_close(result, fn(z))
    (record,) = permalloy.stats()
    assert not record["compiled"] and "ComplexGraphError" in record["reason"]
