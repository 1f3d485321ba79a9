"""
Whole timm image models by name, as timm builds them: every layer, at each
model's own input resolution, random weights (nothing is downloaded). This is
what `permalloy-bench --suite timm` runs: the networks people take from timm
unchanged, beside the models suite's cut and resized ones.

    case = make_timm_case("resnet50", "cuda", seed=0)

Any name `timm.list_models()` knows is accepted; `TIMM_MODELS` is the default
selection, one or two models of each architecture family in common use.
"""

from __future__ import annotations

import importlib.util

import torch

from permalloy.tools.models.common import with_trained_like_statistics
from permalloy.tools.models.spec import MissingPackage, check_size, per_size
from permalloy.tools.zoo import Case

TIMM_MODELS: dict[str, str] = {
    "resnet50": "convnet",
    "resnext50_32x4d": "convnet",
    "densenet121": "convnet",
    "inception_v3": "convnet",
    "mobilenetv3_large_100": "convnet",
    "efficientnet_b2": "convnet",
    "regnety_016": "convnet",
    "ghostnet_100": "convnet",
    "convnext_tiny": "convnet",
    "dla34": "convnet",
    "vit_small_patch16_224": "vision-transformer",
    "deit_tiny_patch16_224": "vision-transformer",
    "swin_tiny_patch4_window7_224": "vision-transformer",
    "mixer_b16_224": "vision-transformer",
    "levit_128": "vision-transformer",
    "poolformer_s12": "vision-transformer",
}
"""The default cases and their families: names of timm's registry."""

TIMM_CLASSES = 1000
"""Every model keeps timm's ImageNet head."""


def timm_installed() -> bool:
    return importlib.util.find_spec("timm") is not None


def known_timm_model(name: str) -> bool:
    """Whether `name` is one of the default cases or a model timm can build."""
    if name in TIMM_MODELS:
        return True
    if not timm_installed():
        return False
    import timm

    return timm.is_model(name)


def timm_family(name: str) -> str:
    """The family of a default case; "timm" for any other model."""
    return TIMM_MODELS.get(name, "timm")


def timm_batch(size: str) -> int:
    """Images per batch: one on the CPU, 32 on a GPU."""
    return per_size(size, quick=1, cpu=1, cuda=32)


def make_timm_case(name: str, size: str, seed: int = 0) -> Case:
    """timm model `name` with random weights (convolutions He-initialized, batch
    norms with trained-like statistics, as the models suite's), in eval mode,
    and a batch of `timm_batch(size)` random images at the model's own input
    size. `MissingPackage` when timm is not installed."""
    check_size(size)
    if not timm_installed():
        raise MissingPackage("timm")
    import timm

    torch.manual_seed(seed)
    model = timm.create_model(name, pretrained=False, num_classes=TIMM_CLASSES)
    channels, height, width = model.pretrained_cfg.get("input_size", (3, 224, 224))
    images = torch.randn(timm_batch(size), channels, height, width)
    return Case(name, with_trained_like_statistics(model).eval(), (images,))
