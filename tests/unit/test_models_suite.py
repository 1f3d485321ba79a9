"""
The model suite of `permalloy-bench --suite models`: every model builds at the
"quick" size and runs eagerly with the expected output shapes, building is
seeded, names, sizes and packages are checked, and two of the fastest models
compile with permalloy and agree with eager.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

import permalloy
from permalloy.tools.models import FAMILIES, MODELS, SIZES, MissingPackage, make_model

QUICK_OUTPUT_SHAPES: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(
        ["llama", "mistral", "qwen2", "gpt2", "gpt2_eager_attention", "gpt_neox", "opt", "phi"], (2, 16, 128)
    ),
    **dict.fromkeys(
        ["bert", "bert_eager_attention", "roberta", "distilbert", "albert", "electra", "deberta_v2", "longformer"],
        (2, 16, 64),
    ),
    **dict.fromkeys(["t5", "bart"], (2, 8, 128)),
    **dict.fromkeys(["vit", "deit", "beit", "swin", "timm_vit_tiny", "timm_swin_tiny"], (2, 10)),
    **dict.fromkeys(["resnet", "convnext", "mobilenet_v2", "efficientnet", "regnet"], (2, 10)),
    **dict.fromkeys(
        ["timm_resnet18", "timm_convnext_atto", "timm_efficientnet_b0", "timm_mobilenetv3_small"],
        (2, 10),
    ),
    "wav2vec2": (2, 39, 64),
    "whisper_encoder": (2, 16, 64),
    "unet": (2, 4, 32, 32),
    "mlp_mixer": (2, 10),
    "small_cnn": (2, 10),
    "gated_mlp": (2, 16, 64),
    "transformer_encoder": (2, 16, 64),
}
"""The shape of every model's output at the "quick" size."""


def installed(name: str) -> bool:
    """Whether every package model `name` needs can be imported."""
    return all(importlib.util.find_spec(package) is not None for package in MODELS[name].needs)


def outputs_of(name: str, seed: int = 0) -> tuple[tuple[torch.Tensor, ...], ...]:
    """The inputs of model `name` at "quick" size and its eager outputs, as tuples."""
    case = make_model(name, "quick", seed)
    with torch.no_grad():
        result = case.model(*case.inputs)
    return case.inputs, result if isinstance(result, tuple) else (result,)


def test_suite_covers_every_family_in_order():
    assert len(MODELS) >= 32
    families = [spec.family for spec in MODELS.values()]
    assert set(families) == set(FAMILIES)
    assert families == sorted(families, key=FAMILIES.index)
    assert set(QUICK_OUTPUT_SHAPES) == set(MODELS)
    for name, spec in MODELS.items():
        assert spec.name == name and spec.description
        assert set(spec.needs) <= {"transformers", "timm"}
    timm_models = {name for name, spec in MODELS.items() if "timm" in spec.needs}
    assert timm_models >= {"timm_resnet18", "timm_vit_tiny"}


@pytest.mark.parametrize("name", list(MODELS))
def test_model_builds_and_runs_at_quick_size(name):
    if not installed(name):
        pytest.skip(f"{name} needs {', '.join(MODELS[name].needs)}")
    case = make_model(name, "quick")
    assert case.name == name and not case.model.training
    assert all(isinstance(value, torch.Tensor) for value in case.inputs)
    inputs, outputs = outputs_of(name)
    assert tuple(outputs[0].shape) == QUICK_OUTPUT_SHAPES[name]
    for output in outputs:
        assert output.dtype == torch.float32
        assert torch.isfinite(output).all()


SEEDED_MODELS = ["llama", "bert", "t5", "swin", "efficientnet", "whisper_encoder", "unet"]
"""One model of each family, whose weights and inputs the seed must fix."""


@pytest.mark.parametrize("name", SEEDED_MODELS)
def test_seed_fixes_weights_and_inputs(name):
    inputs, outputs = outputs_of(name, seed=0)
    same_inputs, same_outputs = outputs_of(name, seed=0)
    other_inputs, other_outputs = outputs_of(name, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(inputs, same_inputs))
    assert all(torch.equal(a, b) for a, b in zip(outputs, same_outputs))
    assert any(not torch.equal(a, b) for a, b in zip(inputs, other_inputs))
    assert not torch.equal(outputs[0], other_outputs[0])


def test_encoder_masks_pad_some_positions():
    inputs, _ = outputs_of("bert")
    mask = inputs[1]
    assert mask.shape == inputs[0].shape
    assert (mask == 0).any() and (mask == 1).any()


def test_sizes_grow_the_model():
    quick, cpu = make_model("gpt2", "quick"), make_model("gpt2", "cpu")
    assert quick.inputs[0].numel() < cpu.inputs[0].numel()
    parameters = [sum(p.numel() for p in case.model.parameters()) for case in (quick, cpu)]
    assert parameters[0] < parameters[1]


def test_unknown_name_lists_the_models():
    with pytest.raises(KeyError, match="llama"):
        make_model("no_such_model", "quick")


def test_unknown_size_lists_the_sizes():
    with pytest.raises(ValueError, match=", ".join(SIZES)):
        make_model("llama", "huge")


def test_missing_package_is_named(monkeypatch):
    find_spec = importlib.util.find_spec
    def find_all_but_timm(name, *args):
        """`importlib.util.find_spec` as if timm were not installed."""
        return None if name == "timm" else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_all_but_timm)
    with pytest.raises(MissingPackage, match="timm is not installed"):
        make_model("timm_resnet18", "quick")


@pytest.mark.parametrize("name", ["transformer_encoder", "resnet"])
def test_model_compiles_with_permalloy_like_eager(name):
    case = make_model(name, "quick")
    torch._dynamo.reset()
    permalloy.reset_stats()
    options = {"fallback": "raise", "target": "llvm"}
    compiled = torch.compile(case.model, backend="permalloy", options=options)
    with torch.no_grad():
        expected = case.model(*case.inputs)
        result = compiled(*case.inputs)
    assert result.shape == expected.shape
    assert ((result - expected).norm() / expected.norm()).item() < 1e-4
    records = permalloy.stats()
    assert records and all(record["compiled"] and record["kernels"] > 0 for record in records)
