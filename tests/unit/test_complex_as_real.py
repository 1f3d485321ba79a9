"""
The `complex_as_real` rewrite on ATen graphs, without compiling them: the
rewritten graph has no complex value anywhere, takes and gives complex
tensors as real pairs at the positions its boundary names, and computes what
the original graph computes (run by torch on the pairs, against the original
on complex tensors) for every rule; ops without a rule, and complex32, are
refused with the ops named; the boundary's program wrapper converts
arguments and results as views.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from permalloy.complex_layout import as_complex, as_real, viewable_as_complex
from permalloy.lowering.capture import capture_aten_graphs, capture_with_inputs
from permalloy.lowering.complex_as_real import (
    ComplexBoundary,
    ComplexGraphError,
    complex_as_real,
    has_complex,
)

c64, c128 = torch.complex64, torch.complex128


def crandn(*shape: int, dtype: torch.dtype = c64, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def rrandn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _leaves(value):
    return list(value) if isinstance(value, list | tuple) else [value]


def assert_rewrite_computes_the_same(fn, *inputs, dynamic: bool = False) -> None:
    """`fn`'s ATen graph rewritten: no complex value in it, and on the pairs
    of the inputs it gives the pairs of the original graph's outputs."""
    (captured,) = capture_with_inputs(fn, *inputs, dynamic=dynamic)
    real = complex_as_real(captured.graph_module)
    assert real is not None
    for node in real.graph.graph.nodes:
        for value in _leaves(node.meta.get("val")):
            assert not (isinstance(value, torch.Tensor) and value.is_complex()), node.format_node()
    args = list(captured.inputs)
    expected = _leaves(captured.graph_module(*args))
    for position in real.boundary.inputs:
        args[position] = as_real(args[position])
    actual = _leaves(real.graph(*args))
    assert len(actual) == len(expected)
    for position, (a, e) in enumerate(zip(actual, expected, strict=True)):
        if not isinstance(e, torch.Tensor):
            assert a == e
            continue
        if e.is_complex():
            assert position in real.boundary.outputs
            e = torch.view_as_real(e.resolve_conj())
        else:
            assert position not in real.boundary.outputs
        assert a.shape == e.shape and a.dtype == e.dtype, (position, a.shape, e.shape, a.dtype, e.dtype)
        if e.dtype == torch.bool:
            assert torch.equal(a, e), position
        else:
            torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5, equal_nan=True, msg=lambda m, p=position: f"output {p}: {m}")


CASES = {
    "arithmetic": (
        lambda z, w, x: (z + w, z - 2 * w, z * w, z / w, x / z, z / x, z * 1j, 2 - z, -z, z.conj(), 1 / z),
        lambda dtype: (crandn(3, 4, dtype=dtype), crandn(4, dtype=dtype, seed=1), rrandn(3, 4, dtype=dtype.to_real(), seed=2)),
    ),
    "functions": (
        lambda z: (z.abs(), z.angle(), z.sgn(), z.exp(), z.log(), z.sqrt(), z ** 2.5, z ** 3, z ** -2, z ** 0),
        lambda dtype: (crandn(3, 4, dtype=dtype),),
    ),
    "parts": (
        lambda z, x: (z.real, z.imag, torch.view_as_real(z), torch.complex(x, 2 * x) * z, torch.polar(x.abs(), x) + z),
        lambda dtype: (crandn(3, 4, dtype=dtype), rrandn(3, 4, dtype=dtype.to_real(), seed=1)),
    ),
    "comparisons_and_selections": (
        lambda z, w, m: (z == w, z != z.conj(), torch.where(m, z, w), z.masked_fill(m, 2j), torch.isnan(z / 0)),
        lambda dtype: (crandn(3, 4, dtype=dtype), crandn(4, dtype=dtype, seed=1), torch.rand(3, 4) < 0.5),
    ),
    "casts": (
        lambda z, x: (z.to(c128), x.to(c64), z.to(torch.float32), z.bool(), z.clone()),
        lambda dtype: (crandn(3, 4), rrandn(3, 4, seed=1)),
    ),
    "views": (
        lambda z: (
            z.reshape(4, 3), z.permute(1, 0), z.t(), z.transpose(0, 1), z[1:, ::2], z.narrow(1, 1, 2), z[1],
            z.unsqueeze(-1), z[:1].squeeze(0), z[:1].squeeze(), z.expand(2, 3, 4), z.flip(-1), z.roll(1, 1),
            z.roll(2), z.as_strided((2, 2), (1, 4), 1),
        ),
        lambda dtype: (crandn(3, 4, dtype=dtype),),
    ),
    "data_movement": (
        lambda z, x, i: (
            torch.cat([z, x], 0), torch.stack([z, z * 2], -1), z[i], z.index_select(1, i), z[:, i],
            torch.nn.functional.pad(z, (1, 2)), torch.nn.functional.pad(z, (1, 0), value=1.5),
            z.index_put((i,), z[:2] * 1j, accumulate=True), z.index_put((i,), torch.tensor(2.0 + 1j, dtype=z.dtype)),
        ),
        lambda dtype: (crandn(3, 4, dtype=dtype), rrandn(2, 4, dtype=dtype.to_real()), torch.tensor([2, 0])),
    ),
    "reductions": (
        lambda z: (
            z.sum(), z.sum(0), z.sum(-1, keepdim=True), z.mean(), z.mean(-2), z.cumsum(1),
            torch.linalg.vector_norm(z), torch.linalg.vector_norm(z, 3.0, dim=0), torch.linalg.vector_norm(z, 0),
            z.norm(), torch.norm(z, dim=1), z.sum(dtype=c128),
        ),
        lambda dtype: (crandn(3, 4, dtype=dtype),),
    ),
    "statistics_and_pieces": (
        lambda z: (
            z.var(), z.var(0), z.std(1, keepdim=True), torch.var_mean(z, 1, correction=0), *z.split(2, 1),
            *z.chunk(2), *z.unbind(1), z.diagonal(), z.diagonal(1, 1, 0) * 2, *torch.split(z, [1, 3], -1),
        ),
        lambda dtype: (crandn(3, 4, dtype=dtype),),
    ),
    "products": (
        lambda a, b, p, q: (a @ b, torch.bmm(p, q), p @ b, torch.addmm(a @ b, a, b, beta=0.5, alpha=2)),
        lambda dtype: (
            crandn(3, 5, dtype=dtype), crandn(5, 3, dtype=dtype, seed=1),
            crandn(2, 3, 5, dtype=dtype, seed=2), crandn(2, 5, 3, dtype=dtype, seed=3),
        ),
    ),
    "new_tensors": (
        lambda z: (torch.zeros_like(z), torch.ones_like(z) * z, torch.full((2,), 1 + 2j), z.new_zeros(3), torch.full_like(z, 3j)),
        lambda dtype: (crandn(3, 4, dtype=dtype),),
    ),
    "ffts": (
        lambda x, z: (
            torch.fft.rfft(x), torch.fft.irfft(z, n=6), torch.fft.fft2(z), torch.fft.ifftn(z, norm="forward"),
            torch.fft.rfft2(x, norm="ortho"), torch.fft.hfft(z),
        ),
        lambda dtype: (rrandn(3, 4, dtype=dtype.to_real()), crandn(3, 4, dtype=dtype, seed=1)),
    ),
}
"""Each case: a function and its inputs for a complex dtype."""


@pytest.mark.parametrize("dtype", [c64, c128], ids=["c64", "c128"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_rewritten_graph_computes_the_same(case, dtype):
    fn, make_inputs = CASES[case]
    assert_rewrite_computes_the_same(fn, *make_inputs(dtype))


def test_slice_and_select_scatters():
    def fn(x, w):
        y = torch.fft.rfft2(x)
        out = torch.zeros_like(y)
        out[:, :2] = y[:, :2] * w
        out[:, -1] = 1j
        return out

    assert_rewrite_computes_the_same(fn, rrandn(4, 6), crandn(4, 2, seed=1))


def test_symbolic_sizes():
    assert_rewrite_computes_the_same(lambda z, w: ((z * w).abs(), z.reshape(-1), z.shape[0] * z), crandn(3, 4), crandn(4), dynamic=True)


def test_a_graph_without_complex_values_is_left_alone():
    (graph,) = capture_aten_graphs(lambda x: x * 2, rrandn(3, 2))
    assert not has_complex(graph)
    assert complex_as_real(graph) is None


def test_ops_without_a_rule_are_named():
    (graph,) = capture_aten_graphs(lambda z: torch.asinh(z) + torch.atanh(z) * z, crandn(3))
    with pytest.raises(ComplexGraphError, match=r"no rule writes these ops on real pairs: aten\.asinh\.default, aten\.atanh\.default"):
        complex_as_real(graph)


def test_arguments_a_rule_does_not_take_are_named():
    (graph,) = capture_aten_graphs(lambda z: z.clone(memory_format=torch.channels_last), crandn(1, 2, 3, 4))
    with pytest.raises(ComplexGraphError, match=r"aten\.clone\.default with memory format"):
        complex_as_real(graph)


def test_complex32_has_no_pair_layout():
    graph = make_fx(lambda z: z + z, tracing_mode="fake")(torch.zeros(3, dtype=torch.complex32))
    with pytest.raises(ComplexGraphError, match="complex32 has no real pair layout"):
        complex_as_real(graph)


def test_outputs_keep_eager_strides():
    """A product of a transposed input is transposed in eager; its pair is
    written in that layout."""
    (captured,) = capture_with_inputs(lambda z: z * 2, crandn(4, 3).t())
    real = complex_as_real(captured.graph_module)
    (output,) = real.graph(as_real(captured.inputs[0]))
    assert output.stride() == (2, 6, 1)
    assert as_complex(output).stride() == captured.graph_module(*captured.inputs)[0].stride()


def test_the_boundary_converts_arguments_and_results_as_views():
    seen = []

    def program(a, b):
        seen.extend([a, b])
        return (a * 1, b, a)

    wrapped = ComplexBoundary(inputs=(0,), outputs=(0,)).wrap(program, [0, 2])
    z = crandn(4, 3)
    first, second, third = wrapped(z.t(), 5)
    assert seen[0].shape == (3, 4, 2) and seen[0].data_ptr() == z.data_ptr() and seen[1] == 5
    assert first.is_complex() and second == 5
    assert third.data_ptr() == z.data_ptr() and third.stride() == (1, 3)
    conjugated = wrapped(z.conj(), 5)[2]
    torch.testing.assert_close(conjugated, z.conj())


def test_pairs_not_viewable_as_complex_are_copied():
    pair = torch.randn(4, 3, 2)
    assert viewable_as_complex(pair)
    for layout in (pair.transpose(1, 2).contiguous().transpose(1, 2), torch.randn(25)[1:].view(4, 3, 2), torch.randn(4, 3, 3)[..., :2]):
        assert not viewable_as_complex(layout)
        torch.testing.assert_close(torch.view_as_real(as_complex(layout)), layout)
