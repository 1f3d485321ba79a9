"""
Image models of timm (`timm.create_model(name, pretrained=False)`): nothing is
downloaded; the transformers among them are cut to 2 layers per stage.
"""

from __future__ import annotations

from permalloy.tools.models.common import (
    ImageShape,
    convnet_shape,
    images,
    vit_shape,
    with_trained_like_statistics,
)
from permalloy.tools.models.spec import ModelSpec, model_spec, per_size


def _timm_classifier(name: str, shape: ImageShape, **options) -> tuple:
    """timm model `name` with random weights, trained-like batch norm statistics and
    `shape.classes` classes, and a batch of images."""
    import timm

    model = timm.create_model(name, pretrained=False, num_classes=shape.classes, **options)
    return with_trained_like_statistics(model), images(shape)


def resnet18(size: str) -> tuple:
    """timm resnet18: the full 18-layer ResNet with basic blocks."""
    return _timm_classifier("resnet18", convnet_shape(size))


def convnext_atto(size: str) -> tuple:
    """timm convnext_atto: the smallest full ConvNeXt (depths 2-2-6-2)."""
    return _timm_classifier("convnext_atto", convnet_shape(size))


def efficientnet_b0(size: str) -> tuple:
    """timm efficientnet_b0: the full B0 with depthwise convs, squeeze-excite and SiLU."""
    return _timm_classifier("efficientnet_b0", convnet_shape(size))


def mobilenetv3_small(size: str) -> tuple:
    """timm mobilenetv3_small_100: hard-swish, squeeze-excite with hard-sigmoid gates."""
    return _timm_classifier("mobilenetv3_small_100", convnet_shape(size))


def vit_tiny(size: str) -> tuple:
    """timm vit_tiny_patch16_224 cut to 2 layers (width 192, 3 heads), at the size's patch."""
    shape = vit_shape(size)
    options = dict(img_size=shape.image, patch_size=shape.patch, depth=2)
    return _timm_classifier("vit_tiny_patch16_224", shape, **options)


def swin_tiny(size: str) -> tuple:
    """timm swin_tiny_patch4_window7_224 cut to 2 stages of 2 blocks, windows fitting the image."""
    shape = vit_shape(size)
    image = per_size(size, quick=32, cpu=64, cuda=224)
    window = per_size(size, quick=4, cpu=8, cuda=7)
    options = dict(img_size=image, window_size=window, depths=(2, 2), num_heads=(3, 6))
    model, _ = _timm_classifier("swin_tiny_patch4_window7_224", shape, **options)
    return model, images(ImageShape(shape.batch, image, shape.width, shape.classes))


TIMM = ("timm",)

SPECS: tuple[ModelSpec, ...] = (
    model_spec("timm_resnet18", "convnet", resnet18, needs=TIMM),
    model_spec("timm_convnext_atto", "convnet", convnext_atto, needs=TIMM),
    model_spec("timm_efficientnet_b0", "convnet", efficientnet_b0, needs=TIMM),
    model_spec("timm_mobilenetv3_small", "convnet", mobilenetv3_small, needs=TIMM),
    model_spec("timm_vit_tiny", "vision-transformer", vit_tiny, needs=TIMM),
    model_spec("timm_swin_tiny", "vision-transformer", swin_tiny, needs=TIMM),
)
"""The timm models."""
