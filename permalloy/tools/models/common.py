"""
Shapes per size and example inputs shared by the builders, and the wrapper
that turns a transformers model into a module of tensors in, tensors out.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from permalloy.tools.models.spec import per_size


@dataclass(frozen=True)
class TextShape:
    """Sizes of a text transformer and of its token inputs."""

    batch: int
    seq: int
    hidden: int
    heads: int
    vocab: int
    layers: int = 2

    @property
    def ffn(self) -> int:
        """Width of the feed-forward layer."""
        return 4 * self.hidden


def text_shape(size: str) -> TextShape:
    """Text transformer sizes: tiny, one-CPU-thread, and GPU-realistic."""
    return per_size(
        size,
        quick=TextShape(batch=2, seq=16, hidden=64, heads=4, vocab=128),
        cpu=TextShape(batch=2, seq=128, hidden=256, heads=4, vocab=1024),
        cuda=TextShape(batch=8, seq=512, hidden=768, heads=12, vocab=32000),
    )


@dataclass(frozen=True)
class ImageShape:
    """Sizes of an image batch and of the network over it.

    `width` is the channel count of a convnet's first stage, or the hidden
    size of a vision transformer; `patch` is a transformer's patch side."""

    batch: int
    image: int
    width: int
    classes: int
    heads: int = 4
    patch: int = 4


def convnet_shape(size: str) -> ImageShape:
    """Convolutional network sizes: widths double at every stage."""
    return per_size(
        size,
        quick=ImageShape(batch=2, image=32, width=8, classes=10),
        cpu=ImageShape(batch=2, image=96, width=16, classes=100),
        cuda=ImageShape(batch=32, image=224, width=64, classes=1000),
    )


def vit_shape(size: str) -> ImageShape:
    """Vision transformer sizes."""
    return per_size(
        size,
        quick=ImageShape(batch=2, image=32, width=64, classes=10, heads=4, patch=8),
        cpu=ImageShape(batch=2, image=128, width=256, classes=100, heads=4, patch=16),
        cuda=ImageShape(batch=16, image=224, width=768, classes=1000, heads=12, patch=16),
    )


def images(shape: ImageShape, channels: int = 3) -> torch.Tensor:
    """A random batch of images."""
    return torch.randn(shape.batch, channels, shape.image, shape.image)


def token_ids(shape: TextShape) -> torch.Tensor:
    """Random token ids, (batch, seq)."""
    return torch.randint(0, shape.vocab, (shape.batch, shape.seq))


def padded_mask(shape: TextShape) -> torch.Tensor:
    """An attention mask of ones whose last row pads its final quarter with zeros."""
    mask = torch.ones(shape.batch, shape.seq, dtype=torch.long)
    mask[-1, shape.seq - max(shape.seq // 4, 1) :] = 0
    return mask


def position_ids(shape: TextShape) -> torch.Tensor:
    """Positions 0..seq-1 for every row, (batch, seq)."""
    return torch.arange(shape.seq).repeat(shape.batch, 1)


def with_trained_like_statistics(model: nn.Module) -> nn.Module:
    """`model` with He-initialized convolutions, which keep activations at a
    steady scale through many layers, and batch norms whose running statistics
    and affine parameters are random, as after training, instead of an identity;
    seeded by torch's generator. Returns `model`."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Conv1d | nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d) and module.running_mean is not None:
                channels = module.num_features
                module.running_mean.copy_(0.1 * torch.randn(channels))
                module.running_var.copy_(0.5 + torch.rand(channels))
                if module.affine:
                    module.weight.copy_(0.5 + torch.rand(channels))
                    module.bias.copy_(0.1 * torch.randn(channels))
    return model


class KeywordCall(nn.Module):
    """Calls a transformers model with its positional tensors as keyword
    arguments and returns plain tensors: the one output named, or a tuple of
    the outputs named, of the model's output object."""

    def __init__(
        self, model: nn.Module, inputs: tuple[str, ...], outputs: tuple[str, ...], **options
    ):
        super().__init__()
        self.model = model
        self.input_names = inputs
        self.output_names = outputs
        self.options = options

    def forward(self, *tensors: torch.Tensor):
        keywords = dict(zip(self.input_names, tensors))
        result = self.model(**keywords, **self.options, return_dict=True)
        if len(self.output_names) == 1:
            return getattr(result, self.output_names[0])
        return tuple(getattr(result, name) for name in self.output_names)
