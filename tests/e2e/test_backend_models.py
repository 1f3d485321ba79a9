"""
Models through `torch.compile(model, backend="permalloy")`, against eager.

Every case of the built-in zoo (`permalloy.tools.zoo.CASES`) compiles with no
fallback op and reproduces eager (relative error below 1e-4, elementwise
rtol 1e-4 / atol 1e-5, same shapes, dtypes and strides), for inference on the
llvm and reference targets and, for a few, for training (gradients of inputs
and parameters). A two-layer GPT-2 (transformers' GPT2Model) compiles end to
end from token ids.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import permalloy
from permalloy.tools.zoo import CASES, make_case

pytestmark = pytest.mark.usefixtures("fresh_backend")

TRAINED = ["mlp", "layer_norm_gelu_residual", "rms_norm_silu", "causal_attention_explicit"]
"""Zoo cases whose gradients are compared too."""


def _inference(model: nn.Module):
    def run(*inputs):
        with torch.no_grad():
            return model(*inputs)

    return run


@pytest.mark.parametrize("target", ["llvm", "reference"])
@pytest.mark.parametrize("name", list(CASES))
def test_zoo_model_matches_eager(name: str, target: str, backend_check) -> None:
    case = make_case(name)
    backend_check(_inference(case.model), case.inputs, target)


def _gradients(model: nn.Module, inputs: list[torch.Tensor], run) -> list[torch.Tensor]:
    """The output, and the gradients of the inputs and parameters of a
    weighted sum of it."""
    model.zero_grad(set_to_none=True)
    inputs = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    output = run(*inputs)
    weights = torch.linspace(-1.0, 1.0, output.numel()).reshape(output.shape)
    (output * weights).sum().backward()
    grads = [x.grad for x in inputs if x.requires_grad]
    grads += [p.grad for p in model.parameters()]
    return [output.detach(), *grads]


@pytest.mark.parametrize("name", TRAINED)
def test_zoo_model_gradients_match_eager(name: str, backend_check) -> None:
    """Forward and backward graphs both compile; the gradients agree."""
    case = make_case(name)
    model = case.model.train()
    expected = _gradients(model, list(case.inputs), model)
    compiled = backend_check.compile(model)
    actual = _gradients(model, list(case.inputs), compiled)
    backend_check.assert_outputs_match(actual, expected)
    backend_check.assert_stats("llvm", graphs=2)


def _gpt2(layers: int = 2):
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=layers,
        n_embd=32,
        n_head=4,
        n_positions=16,
        vocab_size=97,
        bos_token_id=0,
        eos_token_id=0,
        attn_pdrop=0.0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
    )
    return GPT2Model(config).eval()


def test_gpt2_model_end_to_end(backend_check) -> None:
    """GPT2Model (2 layers) from token ids, with a padding mask."""
    model = _gpt2()
    ids = torch.randint(0, 97, (2, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0

    def hidden_states(ids, mask):
        with torch.no_grad():
            return model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state

    backend_check(hidden_states, [ids, mask], graphs=None)


def test_gpt2_model_compiled_as_a_module(backend_check) -> None:
    """`torch.compile(model)` (the module itself), called twice."""
    model = _gpt2()
    compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise"})
    g = torch.Generator().manual_seed(2)
    for _ in range(2):
        ids = torch.randint(0, 97, (2, 8), generator=g)
        with torch.no_grad():
            expected = model(input_ids=ids).last_hidden_state
            actual = compiled(input_ids=ids).last_hidden_state
        backend_check.assert_tensor_matches(actual, expected, "last_hidden_state")
    backend_check.assert_stats("llvm", graphs=None)
    assert len(permalloy.stats()) == 1, "the second call recompiled"


def test_llama_model_end_to_end(backend_check) -> None:
    """LlamaModel (2 layers: RMS norm, rotary embeddings, grouped-query
    attention, SiLU-gated MLP) from token ids. Its position ids come from a
    cumulative sum, which runs through torch."""
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=53,
        max_position_embeddings=32,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    model = LlamaModel(config).eval()
    ids = torch.randint(0, 53, (2, 9), generator=torch.Generator().manual_seed(3))

    def hidden_states(ids):
        with torch.no_grad():
            return model(input_ids=ids, use_cache=False).last_hidden_state

    backend_check(hidden_states, [ids], fallback_ops=["aten.cumsum.default"], graphs=None)


def test_batch_norm_training_updates_running_stats(backend_check) -> None:
    """A buffer mutation (running mean, variance and batch count) compiles
    into the graph and lands in the module's buffers."""
    torch.manual_seed(0)
    eager = nn.BatchNorm2d(4).train()
    compiled_module = copy.deepcopy(eager)
    compiled = backend_check.compile(compiled_module)
    x = torch.randn(3, 4, 5, 5)
    for _ in range(2):
        with torch.no_grad():
            backend_check.assert_tensor_matches(compiled(x), eager(x), "output")
    buffers = dict(compiled_module.named_buffers())
    for name, buffer in eager.named_buffers():
        backend_check.assert_tensor_matches(buffers[name], buffer, name)
    backend_check.assert_stats("llvm")


def test_optimizer_step_updates_parameters(backend_check) -> None:
    """A whole training step (forward, backward, SGD with momentum) three times."""
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    trained = copy.deepcopy(eager)
    eager_optimizer = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.1, momentum=0.9)

    def step(model, optimizer, x):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    compiled_step = torch.compile(step, backend="permalloy", options={"fallback": "raise"})
    x = torch.randn(5, 6)
    for i in range(3):
        expected = step(eager, eager_optimizer, x)
        loss = compiled_step(trained, optimizer, x)
        backend_check.assert_tensor_matches(loss, expected, f"loss {i}")
    for (name, p), q in zip(eager.named_parameters(), trained.parameters(), strict=True):
        backend_check.assert_tensor_matches(q.detach(), p.detach(), name)
    backend_check.assert_stats("llvm", graphs=None)
