"""
Convolutional image classifiers from transformers configs: a few short
stages whose channel widths double from `ImageShape.width`, batch norm,
returning class logits.
"""

from __future__ import annotations

from permalloy.tools.models.common import (
    ImageShape,
    KeywordCall,
    convnet_shape,
    images,
    with_trained_like_statistics,
)
from permalloy.tools.models.spec import ModelSpec, model_spec, per_size


def _classifier(model, shape: ImageShape) -> tuple:
    """An image classifier with trained-like convolution and batch norm
    statistics, wrapped to return its logits, with a batch of images."""
    model = with_trained_like_statistics(model)
    return KeywordCall(model, ("pixel_values",), ("logits",)), images(shape)


def _stage_widths(shape: ImageShape, stages: int = 4) -> list[int]:
    """Channel widths of `stages` stages, doubling from the shape's width."""
    return [shape.width * 2**stage for stage in range(stages)]


def resnet(size: str) -> tuple:
    """ResNet: 7x7 stem with max pool, basic residual blocks, one per stage, 4 stages."""
    import transformers

    shape = convnet_shape(size)
    config = transformers.ResNetConfig(
        embedding_size=shape.width,
        hidden_sizes=_stage_widths(shape),
        depths=[1, 1, 1, 1],
        layer_type="basic",
        num_labels=shape.classes,
    )
    return _classifier(transformers.ResNetForImageClassification(config), shape)


def convnext(size: str) -> tuple:
    """ConvNeXt: 4x4 patch stem, 7x7 depthwise convs, channel layer norm, layer scale."""
    import transformers

    shape = convnet_shape(size)
    config = transformers.ConvNextConfig(
        hidden_sizes=_stage_widths(shape),
        depths=[1, 1, 1, 1],
        drop_path_rate=0.0,
        num_labels=shape.classes,
    )
    return _classifier(transformers.ConvNextForImageClassification(config), shape)


def mobilenet_v2(size: str) -> tuple:
    """MobileNetV2: inverted residuals with depthwise convs and ReLU6, TF-style same padding."""
    import transformers

    shape = convnet_shape(size)
    config = transformers.MobileNetV2Config(
        image_size=shape.image,
        depth_multiplier=per_size(size, quick=0.35, cpu=0.5, cuda=1.0),
        classifier_dropout_prob=0.0,
        num_labels=shape.classes,
    )
    return _classifier(transformers.MobileNetV2ForImageClassification(config), shape)


def efficientnet(size: str) -> tuple:
    """EfficientNet: the first 4 B0 stages: depthwise convs, squeeze-excite, SiLU."""
    import transformers

    shape = convnet_shape(size)
    width_coefficient = per_size(size, quick=0.25, cpu=0.5, cuda=1.0)
    config = transformers.EfficientNetConfig(
        image_size=shape.image,
        width_coefficient=width_coefficient,
        depth_coefficient=1.0,
        kernel_sizes=[3, 3, 5, 3],
        in_channels=[32, 16, 24, 40],
        out_channels=[16, 24, 40, 80],
        strides=[1, 2, 2, 2],
        num_block_repeats=[1, 2, 1, 1],
        expand_ratios=[1, 6, 6, 6],
        hidden_dim=int(1280 * width_coefficient),  # the head conv's width, as the config rounds it
        dropout_rate=0.0,
        drop_connect_rate=0.0,
        num_labels=shape.classes,
    )
    return _classifier(transformers.EfficientNetForImageClassification(config), shape)


def regnet(size: str) -> tuple:
    """RegNetY: grouped 3x3 convs in bottlenecks with squeeze-excite, 4 stages."""
    import transformers

    shape = convnet_shape(size)
    config = transformers.RegNetConfig(
        embedding_size=shape.width,
        hidden_sizes=_stage_widths(shape),
        depths=[1, 1, 1, 1],
        groups_width=shape.width,
        layer_type="y",
        num_labels=shape.classes,
    )
    return _classifier(transformers.RegNetForImageClassification(config), shape)


SPECS: tuple[ModelSpec, ...] = (
    model_spec("resnet", "convnet", resnet),
    model_spec("convnext", "convnet", convnext),
    model_spec("mobilenet_v2", "convnet", mobilenet_v2),
    model_spec("efficientnet", "convnet", efficientnet),
    model_spec("regnet", "convnet", regnet),
)
"""The convolutional networks of transformers."""
