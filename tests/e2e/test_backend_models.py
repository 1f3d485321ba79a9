"""
Models through `torch.compile(model, backend="permalloy")`, against eager.

Every case of the built-in zoo (`permalloy.tools.zoo.CASES`) compiles with no
fallback op and reproduces eager (relative error below 1e-4, elementwise
rtol 1e-4 / atol 1e-5, same shapes, dtypes and strides), for inference on the
llvm and reference targets and, for a few, for training (gradients of inputs
and parameters). A two-layer GPT-2 (transformers' GPT2Model) compiles end to
end from token ids.

The same tests run on the Triton target, with their models and inputs on
`PERMALLOY_TEST_DEVICE` (conftest.py), and the zoo again in bfloat16 (compared
at bfloat16's tolerance). Under Triton's CPU interpreter, which runs each
kernel as NumPy, a fixed subset runs (`TRITON_CPU_ZOO`, the first gradient
case, and the whole-model tests but the training step); on a GPU, all of them.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import permalloy
from permalloy.tools.zoo import CASES, make_case
from conftest import TEST_DEVICE, to_test_device

pytestmark = pytest.mark.usefixtures("fresh_backend")

TRAINED = ["mlp", "layer_norm_gelu_residual", "rms_norm_silu", "causal_attention_explicit"]
"""Zoo cases whose gradients are compared too."""

ON_GPU = TEST_DEVICE != "cpu"
TRITON_CPU_ZOO = ["masked_softmax", "layer_norm_gelu_residual", "rms_norm_silu", "conv_bn_relu"]
"""The zoo cases of the Triton target under the CPU interpreter."""
TRITON_ZOO = list(CASES) if ON_GPU else TRITON_CPU_ZOO
TRITON_TRAINED = TRAINED if ON_GPU else TRAINED[:1]
gpu_only = pytest.mark.skipif(not ON_GPU, reason="too slow under Triton's CPU interpreter; runs on a GPU")


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


def _on_device(model: nn.Module, inputs, dtype: torch.dtype | None = None):
    """`model` and `inputs` on the test device, floats in `dtype` if given."""
    model = model.to(TEST_DEVICE) if dtype is None else model.to(TEST_DEVICE, dtype)
    moved = []
    for x in inputs:
        x = to_test_device(x)
        moved.append(x.to(dtype) if dtype is not None and x.is_floating_point() else x)
    return model, moved


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", TRITON_ZOO)
def test_zoo_model_matches_eager_triton(name: str, dtype: torch.dtype, backend_check, triton_device) -> None:
    case = make_case(name)
    model, inputs = _on_device(case.model, case.inputs, dtype)
    backend_check(_inference(model), inputs, "triton")


def _gradients(model: nn.Module, inputs: list[torch.Tensor], run) -> list[torch.Tensor]:
    """The output, and the gradients of the inputs and parameters of a
    weighted sum of it."""
    model.zero_grad(set_to_none=True)
    inputs = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    output = run(*inputs)
    weights = torch.linspace(-1.0, 1.0, output.numel(), device=output.device).reshape(output.shape)
    (output * weights).sum().backward()
    grads = [x.grad for x in inputs if x.requires_grad]
    grads += [p.grad for p in model.parameters()]
    return [output.detach(), *grads]


@pytest.mark.parametrize("name", TRAINED)
def test_zoo_model_gradients_match_eager(name: str, backend_check) -> None:
    """Forward and backward graphs both compile; the gradients agree."""
    _check_gradients(make_case(name).model, make_case(name).inputs, "llvm", backend_check)


@pytest.mark.parametrize("name", TRITON_TRAINED)
def test_zoo_model_gradients_match_eager_triton(name: str, backend_check, triton_device) -> None:
    case = make_case(name)
    model, inputs = _on_device(case.model, case.inputs)
    _check_gradients(model, inputs, "triton", backend_check)


def _check_gradients(model: nn.Module, inputs, target: str, backend_check) -> None:
    model = model.train()
    expected = _gradients(model, list(inputs), model)
    compiled = backend_check.compile(model, target)
    actual = _gradients(model, list(inputs), compiled)
    backend_check.assert_outputs_match(actual, expected)
    backend_check.assert_stats(target, graphs=2)


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


TARGETS = ["llvm", "triton"]
"""The targets of the whole-model tests."""


def _target_device(target: str, request) -> str:
    """The device of a whole-model test on `target`: the CPU for llvm, the
    Triton tests' device (and its set-up) for triton."""
    return request.getfixturevalue("triton_device") if target == "triton" else "cpu"


@pytest.mark.parametrize("target", TARGETS)
def test_gpt2_model_end_to_end(target: str, backend_check, request) -> None:
    """GPT2Model (2 layers) from token ids, with a padding mask."""
    device = _target_device(target, request)
    model = _gpt2().to(device)
    ids = torch.randint(0, 97, (2, 8), generator=torch.Generator().manual_seed(1)).to(device)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    mask = mask.to(device)

    def hidden_states(ids, mask):
        with torch.no_grad():
            return model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state

    backend_check(hidden_states, [ids, mask], target, graphs=None)


@pytest.mark.parametrize("target", TARGETS)
def test_gpt2_model_compiled_as_a_module(target: str, backend_check, request) -> None:
    """`torch.compile(model)` (the module itself), called twice."""
    device = _target_device(target, request)
    model = _gpt2().to(device)
    compiled = torch.compile(model, backend="permalloy", options={"fallback": "raise", "target": target})
    g = torch.Generator().manual_seed(2)
    for _ in range(2):
        ids = torch.randint(0, 97, (2, 8), generator=g).to(device)
        with torch.no_grad():
            expected = model(input_ids=ids).last_hidden_state
            actual = compiled(input_ids=ids).last_hidden_state
        backend_check.assert_tensor_matches(actual, expected, "last_hidden_state")
    backend_check.assert_stats(target, graphs=None)
    assert len(permalloy.stats()) == 1, "the second call recompiled"


@pytest.mark.parametrize("target", TARGETS)
def test_llama_model_end_to_end(target: str, backend_check, request) -> None:
    """LlamaModel (2 layers: RMS norm, rotary embeddings, grouped-query
    attention, SiLU-gated MLP) from token ids. Its position ids come from a
    cumulative sum, which compiles to a scan kernel."""
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
    device = _target_device(target, request)
    model = LlamaModel(config).eval().to(device)
    ids = torch.randint(0, 53, (2, 9), generator=torch.Generator().manual_seed(3)).to(device)

    def hidden_states(ids):
        with torch.no_grad():
            return model(input_ids=ids, use_cache=False).last_hidden_state

    backend_check(hidden_states, [ids], target, graphs=None)


@pytest.mark.parametrize("target", TARGETS)
def test_batch_norm_training_updates_running_stats(target: str, backend_check, request) -> None:
    """A buffer mutation (running mean, variance and batch count) compiles
    into the graph and lands in the module's buffers."""
    device = _target_device(target, request)
    torch.manual_seed(0)
    eager = nn.BatchNorm2d(4).train().to(device)
    compiled_module = copy.deepcopy(eager)
    compiled = backend_check.compile(compiled_module, target)
    x = torch.randn(3, 4, 5, 5).to(device)
    for _ in range(2):
        with torch.no_grad():
            backend_check.assert_tensor_matches(compiled(x), eager(x), "output")
    buffers = dict(compiled_module.named_buffers())
    for name, buffer in eager.named_buffers():
        backend_check.assert_tensor_matches(buffers[name], buffer, name)
    backend_check.assert_stats(target)


@pytest.mark.parametrize("target", ["llvm", pytest.param("triton", marks=gpu_only)])
def test_optimizer_step_updates_parameters(target: str, backend_check, request) -> None:
    """A whole training step (forward, backward, SGD with momentum) three times."""
    device = _target_device(target, request)
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device)
    trained = copy.deepcopy(eager)
    # one loop over the parameters on every device (CUDA's default, foreach, is not decomposed)
    eager_optimizer = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9, foreach=False)
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.1, momentum=0.9, foreach=False)

    def step(model, optimizer, x):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss.detach()

    compiled_step = torch.compile(step, backend="permalloy", options={"fallback": "raise", "target": target})
    x = torch.randn(5, 6).to(device)
    for i in range(3):
        expected = step(eager, eager_optimizer, x)
        loss = compiled_step(trained, optimizer, x)
        backend_check.assert_tensor_matches(loss, expected, f"loss {i}")
    for (name, p), q in zip(eager.named_parameters(), trained.parameters(), strict=True):
        backend_check.assert_tensor_matches(q.detach(), p.detach(), name)
    backend_check.assert_stats(target, graphs=None)
