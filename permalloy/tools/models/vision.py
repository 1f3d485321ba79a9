"""
Vision transformers from transformers configs: images cut into patches,
2 transformer layers, returning class logits.
"""

from __future__ import annotations

from permalloy.tools.models.common import ImageShape, KeywordCall, images, vit_shape
from permalloy.tools.models.spec import ModelSpec, model_spec, per_size


def _classifier(model, shape: ImageShape) -> tuple:
    """An image classifier wrapped to return its logits, with a batch of images."""
    return KeywordCall(model, ("pixel_values",), ("logits",)), images(shape)


def _vit_like_options(shape: ImageShape) -> dict:
    """Config options shared by ViT-style configs, dropout off."""
    return dict(
        hidden_size=shape.width,
        num_hidden_layers=2,
        num_attention_heads=shape.heads,
        intermediate_size=4 * shape.width,
        image_size=shape.image,
        patch_size=shape.patch,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=shape.classes,
    )


def vit(size: str) -> tuple:
    """ViT: patch embedding by a strided convolution, class token, pre-norm layers."""
    import transformers

    shape = vit_shape(size)
    config = transformers.ViTConfig(**_vit_like_options(shape), attn_implementation="sdpa")
    return _classifier(transformers.ViTForImageClassification(config), shape)


def deit(size: str) -> tuple:
    """DeiT: ViT with a distillation token next to the class token."""
    import transformers

    shape = vit_shape(size)
    config = transformers.DeiTConfig(**_vit_like_options(shape), attn_implementation="sdpa")
    return _classifier(transformers.DeiTForImageClassificationWithTeacher(config), shape)


def beit(size: str) -> tuple:
    """BEiT: relative position bias per layer, layer scale, mean-pooled patch tokens."""
    import transformers

    shape = vit_shape(size)
    config = transformers.BeitConfig(
        **_vit_like_options(shape),
        use_relative_position_bias=True,
        use_mean_pooling=True,
        layer_scale_init_value=0.1,
        drop_path_rate=0.0,
    )
    return _classifier(transformers.BeitForImageClassification(config), shape)


def swin(size: str) -> tuple:
    """Swin: shifted-window attention with relative position bias, 2 stages, patch merging."""
    import transformers

    shape = vit_shape(size)
    patch = per_size(size, quick=4, cpu=8, cuda=4)
    tokens_per_side = shape.image // patch
    window = 7 if tokens_per_side % 7 == 0 else 4
    config = transformers.SwinConfig(
        image_size=shape.image,
        patch_size=patch,
        embed_dim=shape.width // 2,
        depths=[2, 2],
        num_heads=[shape.heads // 2, shape.heads],
        window_size=window,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        drop_path_rate=0.0,
        num_labels=shape.classes,
    )
    return _classifier(transformers.SwinForImageClassification(config), shape)


SPECS: tuple[ModelSpec, ...] = (
    model_spec("vit", "vision-transformer", vit),
    model_spec("deit", "vision-transformer", deit),
    model_spec("beit", "vision-transformer", beit),
    model_spec("swin", "vision-transformer", swin),
)
"""The vision transformers of transformers."""
