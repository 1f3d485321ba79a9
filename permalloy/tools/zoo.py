"""
A small built-in model zoo for tests and benchmarks; nothing is downloaded.

Each case builds a model in eval mode with seeded random weights, and example
inputs, at a size given by `ZooSize` (tiny by default; `ZooSize().scaled(k)`
grows the batch, sequence and width for benchmarks):

    case = make_case("gpt2_block", ZooSize().scaled(8))
    case.model(*case.inputs)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn


@dataclass(frozen=True)
class ZooSize:
    """The sizes a case is built with."""

    batch: int = 2
    seq: int = 8
    hidden: int = 32
    heads: int = 4
    layers: int = 1
    channels: int = 4
    image: int = 8
    seed: int = 0

    def scaled(self, scale: int) -> ZooSize:
        """Batch, sequence, width, channels and image side times `scale`."""
        return replace(
            self,
            batch=self.batch * scale,
            seq=self.seq * scale,
            hidden=self.hidden * scale,
            channels=self.channels * scale,
            image=self.image * scale,
        )


@dataclass
class Case:
    """A model and example inputs for it."""

    name: str
    model: nn.Module
    inputs: tuple[torch.Tensor, ...]


class PointwiseChain(nn.Module):
    """`tanh(x * 2 + 1) * sigmoid(x) - exp(-x * x)`: fusion's simplest case."""

    def forward(self, x):
        return torch.tanh(x * 2 + 1) * torch.sigmoid(x) - torch.exp(-x * x)


class MaskedSoftmax(nn.Module):
    """Softmax of scores where a boolean mask is false set to -inf."""

    def forward(self, scores, mask):
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


class RMSNormSiLU(nn.Module):
    """RMS norm of x times SiLU of a gate, as in LLaMA-style MLPs."""

    def __init__(self, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden))
        self.eps = 1e-6

    def forward(self, x, gate):
        variance = x.pow(2).mean(-1, keepdim=True)
        normed = x * torch.rsqrt(variance + self.eps) * self.weight
        return normed * nn.functional.silu(gate)


class LayerNormGELUResidual(nn.Module):
    """`x + gelu(layer_norm(x))`."""

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        return x + nn.functional.gelu(self.norm(x))


class MLP(nn.Module):
    """Linear, GELU, linear."""

    def __init__(self, hidden: int):
        super().__init__()
        self.up = nn.Linear(hidden, 4 * hidden)
        self.down = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return self.down(nn.functional.gelu(self.up(x)))


class CausalAttention(nn.Module):
    """
    Multi-head causal self-attention, with SDPA or with an explicit masked
    softmax (`explicit=True`).
    """

    def __init__(self, hidden: int, heads: int, explicit: bool = False):
        super().__init__()
        self.heads, self.explicit = heads, explicit
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x):
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).split(hidden, dim=-1)
        shape = (batch, seq, self.heads, hidden // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        if self.explicit:
            y = self._explicit(q, k, v, seq)
        else:
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(batch, seq, hidden))

    def _explicit(self, q, k, v, seq):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class ConvBNReLU(nn.Module):
    """conv 3x3, batch norm (inference), ReLU."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(2 * channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class FirstOutput(nn.Module):
    """Wraps a transformers layer that returns a tuple: its first output."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, hidden_states):
        output = self.layer(hidden_states)
        return output[0] if isinstance(output, tuple) else output


def _gpt2_block(size: ZooSize) -> nn.Module:
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block

    config = GPT2Config(
        n_layer=size.layers,
        n_embd=size.hidden,
        n_head=size.heads,
        n_positions=max(size.seq, 16),
        attn_pdrop=0.0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
    )
    config._attn_implementation = "sdpa"
    return FirstOutput(GPT2Block(config, layer_idx=0))


def _bert_block(size: ZooSize) -> nn.Module:
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer

    config = BertConfig(
        hidden_size=size.hidden,
        num_attention_heads=size.heads,
        intermediate_size=4 * size.hidden,
        num_hidden_layers=size.layers,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    config._attn_implementation = "sdpa"
    return FirstOutput(BertLayer(config))


VIT_PATCH = 4
"""Side of a ViT patch, in pixels: a `ZooSize.image` side gives `(image // 4)**2 + 1` tokens."""


def _vit_block(size: ZooSize) -> nn.Module:
    from transformers import ViTConfig
    from transformers.models.vit.modeling_vit import ViTLayer

    config = ViTConfig(
        hidden_size=size.hidden,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        intermediate_size=4 * size.hidden,
        image_size=_vit_patches(size) * VIT_PATCH,
        patch_size=VIT_PATCH,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    config._attn_implementation = "sdpa"
    return FirstOutput(ViTLayer(config))


def _vit_patches(size: ZooSize) -> int:
    """Patches along one side of the image (at least one)."""
    return max(size.image // VIT_PATCH, 1)


def _sequence(size: ZooSize) -> torch.Tensor:
    return torch.randn(size.batch, size.seq, size.hidden)


def _case(name: str, model: nn.Module, *inputs: torch.Tensor) -> Case:
    return Case(name, model.eval(), tuple(inputs))


def pointwise_chain(size: ZooSize) -> Case:
    return _case("pointwise_chain", PointwiseChain(), _sequence(size))


def layer_norm(size: ZooSize) -> Case:
    return _case("layer_norm", nn.LayerNorm(size.hidden), _sequence(size))


def masked_softmax(size: ZooSize) -> Case:
    shape = (size.batch, size.heads, size.seq, size.seq)
    mask = torch.rand(shape) > 0.3
    mask[..., 0] = True
    return _case("masked_softmax", MaskedSoftmax(), torch.randn(shape), mask)


def rms_norm_silu(size: ZooSize) -> Case:
    return _case("rms_norm_silu", RMSNormSiLU(size.hidden), _sequence(size), _sequence(size))


def layer_norm_gelu_residual(size: ZooSize) -> Case:
    return _case("layer_norm_gelu_residual", LayerNormGELUResidual(size.hidden), _sequence(size))


def mlp(size: ZooSize) -> Case:
    return _case("mlp", MLP(size.hidden), _sequence(size))


def causal_attention(size: ZooSize) -> Case:
    return _case("causal_attention", CausalAttention(size.hidden, size.heads), _sequence(size))


def causal_attention_explicit(size: ZooSize) -> Case:
    model = CausalAttention(size.hidden, size.heads, explicit=True)
    return _case("causal_attention_explicit", model, _sequence(size))


def gpt2_block(size: ZooSize) -> Case:
    return _case("gpt2_block", _gpt2_block(size), _sequence(size))


def bert_block(size: ZooSize) -> Case:
    return _case("bert_block", _bert_block(size), _sequence(size))


def conv_bn_relu(size: ZooSize) -> Case:
    image = torch.randn(size.batch, size.channels, size.image, size.image)
    return _case("conv_bn_relu", ConvBNReLU(size.channels), image)


def vit_block(size: ZooSize) -> Case:
    """One ViT encoder layer over the patch tokens of an image plus a class token."""
    tokens = _vit_patches(size) ** 2 + 1
    return _case("vit_block", _vit_block(size), torch.randn(size.batch, tokens, size.hidden))


CASES: dict[str, Callable[[ZooSize], Case]] = {
    "pointwise_chain": pointwise_chain,
    "layer_norm": layer_norm,
    "masked_softmax": masked_softmax,
    "rms_norm_silu": rms_norm_silu,
    "layer_norm_gelu_residual": layer_norm_gelu_residual,
    "mlp": mlp,
    "causal_attention": causal_attention,
    "causal_attention_explicit": causal_attention_explicit,
    "gpt2_block": gpt2_block,
    "bert_block": bert_block,
    "conv_bn_relu": conv_bn_relu,
    "vit_block": vit_block,
}
"""Every case, by name."""


def make_case(name: str, size: ZooSize | None = None, scale: int = 1) -> Case:
    """Build a case with seeded weights and inputs; `scale` multiplies sizes."""
    if name not in CASES:
        raise KeyError(f"no zoo case '{name}'; cases: {', '.join(CASES)}")
    size = (size or ZooSize()).scaled(scale) if scale != 1 else (size or ZooSize())
    torch.manual_seed(size.seed)
    return CASES[name](size)
