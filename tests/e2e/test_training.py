"""
Training through `torch.compile(..., backend="permalloy")`: forward and backward
graphs from AOTAutograd, split by the min-cut partitioner, both compiled.

- Single ops: the gradients of each input of a small function, against eager,
  and both graphs compiled with no fallback op (the ATen ops of backward
  graphs are decomposed or lowered, library ops run as extern calls).
- Every model of the zoo in train mode, with fusion on: the gradients of its
  parameters and inputs.
- A few steps of a training loop with an optimizer: the losses and the final
  weights follow eager's.
- The partitioner: cheap pointwise work is recomputed in the backward graph
  instead of being saved.

Gradients are compared by `assert_gradients_match`: relative error of the
whole tensor below 1e-4 and elementwise closeness at rtol 1e-4, where both
bounds have a floor tied to the largest gradient of the same model. Some
gradients are zero in exact arithmetic (a convolution's bias before batch
norm in training, the key's bias in attention) and are rounding noise in
eager and compiled code alike; the floor keeps that noise from counting as
error without loosening the bound on any gradient of real size.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import permalloy
from permalloy.tools.zoo import CASES, make_case

pytestmark = pytest.mark.usefixtures("fresh_backend")

RTOL = 1e-4
"""float32 bound on the relative error of every gradient."""

SCALE_FLOOR = 1e-3
"""A gradient's error is measured against at least this fraction of the
largest gradient of the same model."""


def assert_gradients_match(actual: Sequence[torch.Tensor], expected: Sequence[torch.Tensor], names: Sequence[str]) -> None:
    """Each gradient against eager's, at the float32 bound with the model's floor."""
    assert len(actual) == len(expected) == len(names)
    scale = max(e.double().norm().item() for e in expected)
    magnitude = max(e.double().abs().max().item() for e in expected)
    for a, e, name in zip(actual, expected, names, strict=True):
        assert a is not None, f"{name}: no gradient"
        assert a.shape == e.shape and a.dtype == e.dtype, f"{name}: {a.shape} {a.dtype} != {e.shape} {e.dtype}"
        difference = (a.double() - e.double()).norm().item()
        denominator = max(e.double().norm().item(), SCALE_FLOOR * scale)
        error = difference / denominator if denominator else difference
        assert error < RTOL, f"{name}: relative error {error:.3g} >= {RTOL}"
        torch.testing.assert_close(
            a, e, rtol=RTOL, atol=1e-5 * max(magnitude, 1.0),
            msg=lambda m, name=name: f"{name}: {m}",
        )


def assert_compiled_without_fallbacks(target: str, graphs: int = 2) -> None:
    """The stats log holds `graphs` compiled graphs (forward and backward), none with a fallback op."""
    records = permalloy.stats()
    assert len(records) == graphs, records
    for record in records:
        assert record["compiled"], record["reason"]
        assert record["target"] == target
        assert record["fallback_ops"] == [], record["fallback_ops"]


def compile_for_training(fn: Callable, target: str = "llvm", **options) -> Callable:
    options = {"target": target, "fallback": "raise", **options}
    return torch.compile(fn, backend="permalloy", options=options)


def _output_weights(output: torch.Tensor) -> torch.Tensor:
    """A fixed, non-uniform upstream gradient for an output."""
    generator = torch.Generator().manual_seed(1234)
    return torch.randn(output.shape, generator=generator, dtype=output.dtype).to(output.device)


def run_and_differentiate(fn: Callable, inputs: Sequence[torch.Tensor], parameters: Sequence[nn.Parameter] = ()):
    """`fn(*inputs)` and the gradients of its floating inputs and of
    `parameters` for a fixed upstream gradient."""
    for parameter in parameters:
        parameter.grad = None
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    output = fn(*leaves)
    if isinstance(output, tuple):
        output = output[0]
    output.backward(_output_weights(output))
    gradients = [x.grad for x in leaves if x.requires_grad] + [p.grad for p in parameters]
    return output.detach(), gradients


# --------------------------------------------------------------------------
# Single ops
# --------------------------------------------------------------------------


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _positive(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) + 0.5


@dataclass
class GradCase:
    """A function of floating tensors whose gradients are compared with eager's."""

    name: str
    fn: Callable
    inputs: Callable[[], list[torch.Tensor]]
    extra: list = field(default_factory=list)


def _ln(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def _rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _bn_train(x, w, b):
    return F.batch_norm(x, None, None, w, b, training=True)


def _cross_entropy(logits, _unused):
    targets = torch.tensor([1, 0, 3, 2, 4, 1])
    return F.cross_entropy(logits, targets) + 0 * _unused.sum()


def _embedding(weight):
    ids = torch.tensor([[0, 3, 3, 5], [7, 1, 0, 2]])
    return F.embedding(ids, weight)


def _embedding_padded_by_frequency(weight, scale):
    """Repeated indices (a bucket table read many times), a padding row and
    gradients scaled by each index's frequency."""
    ids = torch.tensor([[0, 3, 3, 5, 3], [7, 1, 0, 2, 3]])
    return F.embedding(ids, weight, padding_idx=0, scale_grad_by_freq=True) * scale + F.embedding(ids % 4, weight[:4])


def _attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _attention_float_mask(q, k, v):
    mask = torch.linspace(-1.0, 0.0, q.shape[-2] * k.shape[-2]).reshape(q.shape[-2], k.shape[-2])
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _attention_bool_mask(q, k, v):
    mask = torch.rand(q.shape[-2], k.shape[-2], generator=torch.Generator().manual_seed(3)) > 0.3
    mask[:, 0] = True
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)


GRAD_CASES = [
    GradCase("relu", torch.relu, lambda: [_randn(4, 8)]),
    GradCase("gelu", F.gelu, lambda: [_randn(4, 8)]),
    GradCase("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda: [_randn(4, 8)]),
    GradCase("silu", F.silu, lambda: [_randn(4, 8)]),
    GradCase("sigmoid_tanh", lambda x: torch.sigmoid(x) * torch.tanh(x), lambda: [_randn(4, 8)]),
    GradCase("exp_log_sqrt", lambda x: torch.exp(-x) + torch.log(x) * torch.sqrt(x), lambda: [_positive(4, 8)]),
    GradCase("leaky_relu_elu", lambda x: F.leaky_relu(x, 0.1) + F.elu(x), lambda: [_randn(4, 8)]),
    GradCase("hardtanh_softplus", lambda x: F.hardtanh(x, -0.5, 0.5) + F.softplus(x), lambda: [_randn(4, 8)]),
    GradCase("clamp_abs", lambda x: torch.clamp(x, -0.7, 0.9) * x.abs(), lambda: [_randn(4, 8)]),
    GradCase("mul_div_pow", lambda x, y: x * y / (y * y + 1) + x.pow(3), lambda: [_randn(4, 8), _randn(4, 8, seed=1)]),
    GradCase("broadcast_add", lambda x, b: torch.tanh(x + b), lambda: [_randn(4, 8), _randn(8, seed=1)]),
    GradCase("where", lambda x, y: torch.where(x > 0, x * y, y.exp()), lambda: [_randn(4, 8), _randn(4, 8, seed=1)]),
    GradCase("sum_mean", lambda x: x.sum(0) * x.mean(0), lambda: [_randn(6, 5)]),
    GradCase("amax", lambda x: x.amax(-1, keepdim=True) * x, lambda: [_randn(6, 5)]),
    GradCase("var", lambda x: x.var(-1), lambda: [_randn(6, 5)]),
    GradCase("softmax", lambda x: torch.softmax(x, -1), lambda: [_randn(4, 8)]),
    GradCase("log_softmax", lambda x: torch.log_softmax(x, 0), lambda: [_randn(4, 8)]),
    GradCase("layer_norm", _ln, lambda: [_randn(3, 4, 16), _randn(16, seed=1), _randn(16, seed=2)]),
    GradCase("rms_norm", _rms, lambda: [_randn(3, 16), _randn(16, seed=1)]),
    GradCase("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), lambda: [_randn(2, 4, 5), _randn(4, seed=1), _randn(4, seed=2)]),
    GradCase("batch_norm_training", _bn_train, lambda: [_randn(4, 3, 5), _randn(3, seed=1), _randn(3, seed=2)]),
    GradCase("linear", lambda x, w, b: F.linear(x, w, b), lambda: [_randn(4, 8), _randn(6, 8, seed=1), _randn(6, seed=2)]),
    GradCase("bmm", torch.bmm, lambda: [_randn(2, 3, 4), _randn(2, 4, 5, seed=1)]),
    GradCase("conv2d", lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda: [_randn(2, 3, 6, 6), _randn(4, 3, 3, 3, seed=1), _randn(4, seed=2)]),
    GradCase("conv2d_strided_grouped", lambda x, w: F.conv2d(x, w, stride=2, groups=2), lambda: [_randn(1, 4, 7, 7), _randn(6, 2, 3, 3, seed=1)]),
    GradCase("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1), lambda: [_randn(1, 3, 4, 4), _randn(3, 2, 3, 3, seed=1), _randn(2, seed=2)]),
    GradCase("permute_reshape", lambda x: (x.permute(1, 0, 2).reshape(4, -1) * 2).tanh(), lambda: [_randn(2, 4, 3)]),
    GradCase("slice_cat", lambda x: torch.cat([x[:, :3].exp(), x[:, 3:] * 2], 1), lambda: [_randn(4, 8)]),
    GradCase("expand_index_select", lambda x: x.index_select(0, torch.tensor([2, 0, 2])).expand(2, 3, 5) * 1.5, lambda: [_randn(4, 5)]),
    GradCase("gather", lambda x: x.gather(1, torch.tensor([[0, 2], [1, 1], [3, 0]])), lambda: [_randn(3, 4)]),
    GradCase("embedding", _embedding, lambda: [_randn(8, 6)]),
    GradCase("embedding_padded_by_frequency", _embedding_padded_by_frequency, lambda: [_randn(8, 6), _randn(6, seed=1)]),
    GradCase("cross_entropy", _cross_entropy, lambda: [_randn(6, 5), _randn(1)]),
    GradCase("mse_loss", lambda x, y: F.mse_loss(x, y), lambda: [_randn(4, 8), _randn(4, 8, seed=1)]),
    GradCase("attention_causal", _attention, lambda: [_randn(2, 2, 5, 8), _randn(2, 2, 5, 8, seed=1), _randn(2, 2, 5, 8, seed=2)]),
    GradCase("attention_float_mask", _attention_float_mask, lambda: [_randn(1, 2, 4, 8), _randn(1, 2, 6, 8, seed=1), _randn(1, 2, 6, 8, seed=2)]),
    GradCase("weight_norm_dim0", lambda v, g, x: F.linear(x, torch._weight_norm(v, g, 0)), lambda: [_randn(6, 4), _randn(6, 1, seed=1), _randn(3, 4, seed=2)]),
    GradCase("weight_norm_last_dim", lambda v, g, x: F.linear(x, torch._weight_norm(v, g, 1)), lambda: [_randn(6, 4), _randn(1, 4, seed=1), _randn(3, 4, seed=2)]),
    GradCase("attention_bool_mask", _attention_bool_mask, lambda: [_randn(1, 2, 4, 8), _randn(1, 2, 6, 8, seed=1), _randn(1, 2, 6, 8, seed=2)]),
]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.name for c in GRAD_CASES])
def test_op_gradients_match_eager(case: GradCase) -> None:
    inputs = case.inputs()
    expected_output, expected = run_and_differentiate(case.fn, inputs)
    actual_output, actual = run_and_differentiate(compile_for_training(case.fn), inputs)
    assert_gradients_match([actual_output], [expected_output], ["output"])
    assert_gradients_match(actual, expected, [f"input {i}" for i in range(len(expected))])
    assert_compiled_without_fallbacks("llvm")


def _drop_path(x):
    keep = x.new_empty(x.shape[0], 1).bernoulli_(0.7)
    return x * keep / 0.7


def test_drop_path_masks_keep_rows_with_their_probability() -> None:
    """A drop-path mask (`bernoulli_` of a probability) compiles with the
    graph: each row is kept (scaled by 1 / 0.7) or dropped whole, about 70%
    kept, and the gradient is the same mask."""
    x = torch.ones(4000, 3)
    output, (gradient,) = run_and_differentiate(compile_for_training(_drop_path), [x])
    kept = output[:, 0] > 0
    torch.testing.assert_close(output, kept[:, None].float().expand(4000, 3) / 0.7)
    assert abs(kept.float().mean().item() - 0.7) < 0.03
    torch.testing.assert_close(gradient, _output_weights(output) * output)
    assert_compiled_without_fallbacks("llvm")


# --------------------------------------------------------------------------
# The zoo
# --------------------------------------------------------------------------


def _model_gradients(name: str, target: str, fusion: bool = True, device: str = "cpu"):
    case = make_case(name)
    model = case.model.train().to(device)
    inputs = [x.to(device) for x in case.inputs]
    reference = copy.deepcopy(model)
    names = [f"input {i}" for i, x in enumerate(inputs) if x.is_floating_point()]
    names += [n for n, _ in model.named_parameters()]
    expected_output, expected = run_and_differentiate(reference, inputs, list(reference.parameters()))
    compiled = compile_for_training(model, target, fusion=fusion)
    actual_output, actual = run_and_differentiate(compiled, inputs, list(model.parameters()))
    return (actual_output, expected_output), (actual, expected), names


@pytest.mark.parametrize("name", list(CASES))
def test_zoo_model_gradients_match_eager(name: str) -> None:
    """Forward and backward graphs compile with fusion on and no fallback op;
    outputs and all gradients agree with eager."""
    (actual_output, expected_output), (actual, expected), names = _model_gradients(name, "llvm")
    assert_gradients_match([actual_output], [expected_output], ["output"])
    assert_gradients_match(actual, expected, names)
    assert_compiled_without_fallbacks("llvm")


@pytest.mark.parametrize("name", ["layer_norm_gelu_residual", "gpt2_block"])
def test_zoo_model_gradients_without_fusion(name: str) -> None:
    (_, _), (actual, expected), names = _model_gradients(name, "llvm", fusion=False)
    assert_gradients_match(actual, expected, names)
    assert_compiled_without_fallbacks("llvm")


DEVICE = os.environ.get("PERMALLOY_TEST_DEVICE", "cpu")
"""`cuda` runs the Triton target's training tests on a GPU, for every zoo model."""

TRITON_CASES = list(CASES) if DEVICE == "cuda" else ["mlp", "causal_attention", "conv_bn_relu"]
"""Zoo models trained on the Triton target: a few under Triton's CPU
interpreter (slow), all of them on a GPU."""


@pytest.mark.parametrize("name", TRITON_CASES)
def test_zoo_model_gradients_on_the_triton_target(name: str, monkeypatch, tmp_path) -> None:
    """The same forward and backward graphs as Triton kernels, on a GPU with
    `PERMALLOY_TEST_DEVICE=cuda`, else in Triton's CPU interpreter."""
    if DEVICE == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path))
    (actual_output, expected_output), (actual, expected), names = _model_gradients(
        name, "triton", device=DEVICE
    )
    assert_gradients_match([actual_output], [expected_output], ["output"])
    assert_gradients_match(actual, expected, names)
    assert_compiled_without_fallbacks("triton")


# --------------------------------------------------------------------------
# A training loop
# --------------------------------------------------------------------------


class TinyClassifier(nn.Module):
    """Linear, layer norm, GELU, linear, then cross entropy against labels."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 5))

    def forward(self, x, labels):
        return F.cross_entropy(self.body(x), labels)


def _train(model: nn.Module, step: Callable, batches, optimizer_class) -> list[float]:
    optimizer = optimizer_class(model.parameters(), lr=0.05)
    losses = []
    for x, labels in batches:
        optimizer.zero_grad(set_to_none=True)
        loss = step(x, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.AdamW], ids=["sgd", "adamw"])
def test_training_loop_losses_match_eager(optimizer_class) -> None:
    torch.manual_seed(0)
    model = TinyClassifier()
    reference = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(7)
    batch = (torch.randn(16, 12, generator=generator), torch.randint(0, 5, (16,), generator=generator))
    batches = [batch] * 6
    expected = _train(reference, reference, batches, optimizer_class)
    actual = _train(model, compile_for_training(model), batches, optimizer_class)
    for step, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert abs(a - e) <= RTOL * abs(e), f"step {step}: loss {a} != eager's {e}"
    assert expected[-1] < expected[0], "the loop does not train"
    assert_gradients_match(
        [p.detach() for p in model.parameters()],
        [p.detach() for p in reference.parameters()],
        [n for n, _ in model.named_parameters()],
    )
    # One forward and one backward graph serve every step.
    assert_compiled_without_fallbacks("llvm")


# --------------------------------------------------------------------------
# The partitioner
# --------------------------------------------------------------------------


def test_cheap_pointwise_work_is_recomputed_not_saved(tmp_path) -> None:
    """A chain of pointwise ops saves only its input for the backward graph:
    the min-cut partitioner recomputes the chain there."""

    def chain(x):
        return torch.tanh(x * 2 + 1) * torch.sigmoid(x) - torch.exp(-x * x)

    x = _randn(64, 64)
    compiled = compile_for_training(chain, dump_dir=str(tmp_path))
    _, actual = run_and_differentiate(compiled, [x])
    _, expected = run_and_differentiate(chain, [x])
    assert_gradients_match(actual, expected, ["x"])
    forward = _imported_signature(tmp_path, 0)
    backward = _imported_signature(tmp_path, 1)
    # forward(x) -> (output, x); backward(x, grad_output) -> grad_x
    assert forward == (1, 2), forward
    assert backward == (2, 1), backward


def _imported_signature(dump_dir, index: int) -> tuple[int, int]:
    """(arguments, results) of the `index`-th compiled graph's imported function."""
    text = (dump_dir / f"graph_{index:03d}" / "00_imported.mlir").read_text()
    signature = next(line for line in text.splitlines() if "func.func" in line)
    arguments = signature.split("(", 1)[1].split(") ->")[0].count("!ptensor.tensor")
    results = signature.split(") ->", 1)[1].count("!ptensor.tensor") if ") ->" in signature else 0
    return arguments, results


# --------------------------------------------------------------------------
# Attention in training graphs
# --------------------------------------------------------------------------


def _masked_attention(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@pytest.mark.parametrize("keys", [16, 12], ids=["aligned", "unaligned"])
def test_training_attention_keeps_the_fused_kernels(keys) -> None:
    """A training step calls torch's fused attention and its fused backward,
    both library ops, whatever the mask's key length (a length that is not a
    multiple of 16 is padded where torch's kernel needs it); the gradients
    are eager's."""
    from permalloy.lowering.capture import capture_training_graphs


    generator = torch.Generator().manual_seed(3)
    q = torch.randn(2, 3, 8, 16, generator=generator)
    k, v = (torch.randn(2, 3, keys, 16, generator=generator) for _ in range(2))
    mask = torch.rand(2, 1, 8, keys, generator=generator) > 0.2  # boolean: no gradient of its own
    mask[..., 0] = True
    _forward, backward = capture_training_graphs(_masked_attention, q, k, v, mask)
    targets = {str(n.target) for n in backward.graph_module.graph.nodes if n.op == "call_function"}
    assert "aten._scaled_dot_product_flash_attention_for_cpu_backward.default" in targets
    torch._dynamo.reset()
    permalloy.reset_stats()
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    compiled = torch.compile(_masked_attention, backend="permalloy", options={"target": "llvm", "fallback": "raise"})
    compiled(*leaves, mask).sum().backward()
    expected = [t.clone().requires_grad_(True) for t in (q, k, v)]
    _masked_attention(*expected, mask).sum().backward()
    for actual, reference in zip(leaves, expected, strict=True):
        torch.testing.assert_close(actual.grad, reference.grad, rtol=1e-4, atol=1e-5)
    assert all(not record["fallback_ops"] for record in permalloy.stats())
    torch._dynamo.reset()


class _SelfAttention(nn.Module):
    """One projection to query, key and value, fused attention over heads,
    the heads joined and projected: a transformer layer's attention."""

    def __init__(self, channels: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.qkv = nn.Linear(channels, 3 * channels)
        self.out = nn.Linear(channels, channels)
        self.heads = heads

    def forward(self, x):
        batch, tokens, channels = x.shape
        q, k, v = (
            t.view(batch, tokens, self.heads, -1).transpose(1, 2) for t in self.qkv(x).split(channels, dim=-1)
        )
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(batch, tokens, channels))


@pytest.mark.parametrize("host", ["native", "python"])
def test_training_attention_copies_nothing_around_the_fused_kernels(tmp_path, host) -> None:
    """Fused attention's results are kept in the layout torch writes them
    (joining the heads is a view), and the query, key and value saved for
    the backward are the projection's slices: neither graph copies a buffer,
    and the gradients are eager's."""
    torch._dynamo.reset()
    permalloy.reset_stats()
    model = _SelfAttention()
    reference = copy.deepcopy(model)
    x = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(5))
    options = {"target": "llvm", "fallback": "raise", "cache": False, "dump_dir": str(tmp_path), "host": host}
    compiled = torch.compile(model, backend="permalloy", options=options)
    inputs = x.clone().requires_grad_(True)
    expected_inputs = x.clone().requires_grad_(True)
    torch.testing.assert_close(compiled(inputs), reference(expected_inputs), rtol=1e-4, atol=1e-5)
    compiled(inputs).sum().backward()
    reference(expected_inputs).sum().backward()
    torch.testing.assert_close(inputs.grad, expected_inputs.grad, rtol=1e-4, atol=1e-5)
    for actual, wanted in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(actual.grad, wanted.grad, rtol=1e-4, atol=1e-5)
    planned = sorted(tmp_path.glob("*/*after_plan-memory.mlir"))
    assert len(planned) == 2, "a forward and a backward graph"
    for program in planned:
        assert "buffer.copy" not in program.read_text(), program.name
    assert all(not record["fallback_ops"] for record in permalloy.stats())
    torch._dynamo.reset()


def _word_type_and_bucket_embeddings(words, types, buckets):
    """A word table looked up about once per row, with a padding row; a
    two-row type table looked up forty times per row; a twelve-row bucket
    table looked up twenty times per row."""
    ids = torch.tensor([[0, 3, 3, 5], [7, 1, 0, 2]], device=words.device)
    type_ids = torch.zeros(2, 40, dtype=torch.long, device=words.device)
    type_ids[:, 30:] = 1
    bucket_ids = torch.arange(240, device=words.device).reshape(2, 120) % 12
    return (
        F.embedding(ids, words, padding_idx=0).sum(1)
        + F.embedding(type_ids, types).sum(1)
        + F.embedding(bucket_ids, buckets).sum(1)
    )


def test_embedding_gradients_on_the_triton_target_scatter_or_sum_where_rows_are_read_few_times(
    monkeypatch, tmp_path
) -> None:
    """On the Triton target the word table's gradient is a scatter of its
    lookups' rows (none into the padding row), the two-row type table's a
    masked sum, and only the bucket table, larger and read many times per
    row, keeps the library's sort; all three are eager's gradients."""
    if DEVICE == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PERMALLOY_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    permalloy.reset_stats()
    inputs = [_randn(8, 6).to(DEVICE), _randn(2, 6, seed=1).to(DEVICE), _randn(12, 6, seed=2).to(DEVICE)]
    expected_output, expected = run_and_differentiate(_word_type_and_bucket_embeddings, inputs)
    compiled = compile_for_training(_word_type_and_bucket_embeddings, "triton", dump_dir=str(tmp_path / "dump"))
    actual_output, actual = run_and_differentiate(compiled, inputs)
    assert_gradients_match([actual_output], [expected_output], ["output"])
    assert_gradients_match(actual, expected, ["words", "types", "buckets"])
    assert actual[0][0].abs().max().item() == 0.0, "the padding row gets no gradient"
    assert_compiled_without_fallbacks("triton")
    (backward,) = [p for p in tmp_path.glob("dump/*/*after_plan-memory.mlir") if "embedding_backward" in p.read_text()]
    assert backward.read_text().count("ptensor.embedding_backward") == 1, "the bucket table's"
    assert "buffer.kernel @scatter_sum" in backward.read_text(), "the word table's"
    torch._dynamo.reset()
