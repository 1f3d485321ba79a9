"""
Models built from plain `torch.nn` modules, needing nothing beyond torch: a
UNet, an MLP-Mixer, a small CNN, a gated MLP (gMLP) and a transformer encoder.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from permalloy.tools.models.common import (
    convnet_shape,
    padded_mask,
    text_shape,
    vit_shape,
    with_trained_like_statistics,
)
from permalloy.tools.models.spec import ModelSpec, model_spec


def _conv_block(channels_in: int, channels_out: int) -> nn.Sequential:
    """Two 3x3 convs, each followed by batch norm and ReLU."""
    return nn.Sequential(
        nn.Conv2d(channels_in, channels_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(channels_out),
        nn.ReLU(),
        nn.Conv2d(channels_out, channels_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(channels_out),
        nn.ReLU(),
    )


class UNet(nn.Module):
    """A 3-level UNet: conv blocks and max pools down, transposed convs up,
    each level's encoder features concatenated into its decoder."""

    def __init__(self, channels: int, width: int, classes: int):
        super().__init__()
        widths = [width, 2 * width, 4 * width]
        self.down = nn.ModuleList(
            [_conv_block(channels, widths[0]), _conv_block(widths[0], widths[1])]
        )
        self.bottom = _conv_block(widths[1], widths[2])
        self.up = nn.ModuleList(
            [
                nn.ConvTranspose2d(widths[2], widths[1], kernel_size=2, stride=2),
                nn.ConvTranspose2d(widths[1], widths[0], kernel_size=2, stride=2),
            ]
        )
        self.merge = nn.ModuleList(
            [_conv_block(2 * widths[1], widths[1]), _conv_block(2 * widths[0], widths[0])]
        )
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        skips = []
        x = image
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.head(x)


class MixerLayer(nn.Module):
    """One MLP-Mixer layer: an MLP across tokens, then one across channels,
    each pre-normed and residual."""

    def __init__(self, tokens: int, hidden: int):
        super().__init__()
        self.token_norm = nn.LayerNorm(hidden)
        self.token_mlp = nn.Sequential(
            nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens)
        )
        self.channel_norm = nn.LayerNorm(hidden)
        self.channel_mlp = nn.Sequential(
            nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.token_norm(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.channel_norm(x))


class MLPMixer(nn.Module):
    """MLP-Mixer: conv patch embedding, 2 mixer layers, mean over tokens, linear classifier."""

    def __init__(self, image: int, patch: int, hidden: int, classes: int):
        super().__init__()
        tokens = (image // patch) ** 2
        self.patches = nn.Conv2d(3, hidden, patch, stride=patch)
        self.layers = nn.Sequential(MixerLayer(tokens, hidden), MixerLayer(tokens, hidden))
        self.norm = nn.LayerNorm(hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = self.patches(image).flatten(2).transpose(1, 2)
        return self.classifier(self.norm(self.layers(x)).mean(dim=1))


class SmallCNN(nn.Module):
    """Conv-ReLU-max pool twice, a conv, global average pool, and a 2-layer classifier."""

    def __init__(self, width: int, classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(3, stride=2, padding=1),
            nn.Conv2d(2 * width, 4 * width, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(4 * width, 4 * width), nn.ReLU(), nn.Linear(4 * width, classes)
        )

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(image))


class SpatialGatingLayer(nn.Module):
    """One gMLP layer: a GELU projection split in two halves, one half gated
    by a normed linear map of the other across tokens, projected back, residual."""

    def __init__(self, tokens: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.expand = nn.Linear(hidden, 4 * hidden)
        self.gate_norm = nn.LayerNorm(2 * hidden)
        self.spatial = nn.Linear(tokens, tokens)
        self.project = nn.Linear(2 * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, gate = F.gelu(self.expand(self.norm(x))).chunk(2, dim=-1)
        gate = self.spatial(self.gate_norm(gate).transpose(1, 2)).transpose(1, 2)
        return x + self.project(values * gate)


class GatedMLP(nn.Module):
    """gMLP over a sequence of vectors: 2 spatial gating layers and a final layer norm."""

    def __init__(self, tokens: int, hidden: int):
        super().__init__()
        self.layers = nn.Sequential(
            SpatialGatingLayer(tokens, hidden), SpatialGatingLayer(tokens, hidden)
        )
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.layers(x))


class TanhGELU(nn.Module):
    """GELU with the tanh approximation; as a module of its own it also keeps
    `nn.TransformerEncoderLayer` on its composite (not fused) path."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


class TransformerEncoder(nn.Module):
    """2 pre-norm `nn.TransformerEncoderLayer`s over embedded tokens with a key padding mask."""

    def __init__(self, vocab: int, hidden: int, heads: int, max_positions: int):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Parameter(0.02 * torch.randn(max_positions, hidden))
        layer = nn.TransformerEncoderLayer(
            hidden,
            heads,
            4 * hidden,
            dropout=0.0,
            activation=TanhGELU(),
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        x = self.tokens(input_ids) + self.positions[: input_ids.shape[1]]
        return self.encoder(x, src_key_padding_mask=attention_mask == 0)


def unet(size: str) -> tuple:
    """UNet (4-class segmentation): max pools down, transposed convs up, skip concatenation."""
    shape = convnet_shape(size)
    model = with_trained_like_statistics(UNet(channels=3, width=shape.width, classes=4))
    return model, torch.randn(shape.batch, 3, shape.image, shape.image)


def mlp_mixer(size: str) -> tuple:
    """MLP-Mixer: token-mixing and channel-mixing MLPs over image patches."""
    shape = vit_shape(size)
    model = MLPMixer(shape.image, shape.patch, shape.width, shape.classes)
    return model, torch.randn(shape.batch, 3, shape.image, shape.image)


def small_cnn(size: str) -> tuple:
    """A small CNN: convs, ReLU, max pools, global average pool, MLP classifier."""
    shape = convnet_shape(size)
    model = SmallCNN(2 * shape.width, shape.classes)
    return model, torch.randn(shape.batch, 3, shape.image, shape.image)


def gated_mlp(size: str) -> tuple:
    """gMLP: spatial gating units mixing tokens with a linear map, no attention."""
    shape = text_shape(size)
    return GatedMLP(shape.seq, shape.hidden), torch.randn(shape.batch, shape.seq, shape.hidden)


def transformer_encoder(size: str) -> tuple:
    """nn.TransformerEncoder: 2 pre-norm layers, token embeddings, a key padding mask."""
    shape = text_shape(size)
    model = TransformerEncoder(shape.vocab, shape.hidden, shape.heads, shape.seq)
    return model, torch.randint(0, shape.vocab, (shape.batch, shape.seq)), padded_mask(shape)


SPECS: tuple[ModelSpec, ...] = (
    model_spec("unet", "block", unet, needs=()),
    model_spec("mlp_mixer", "block", mlp_mixer, needs=()),
    model_spec("small_cnn", "block", small_cnn, needs=()),
    model_spec("gated_mlp", "block", gated_mlp, needs=()),
    model_spec("transformer_encoder", "block", transformer_encoder, needs=()),
)
"""The plain torch.nn models."""
