"""
Speech encoders from transformers configs: a raw waveform (Wav2Vec2) or a
log-mel spectrogram (Whisper), 2 transformer layers, returning the last
hidden state. Widths, heads and batch follow `text_shape`.
"""

from __future__ import annotations

import torch

from permalloy.tools.models.common import KeywordCall, text_shape
from permalloy.tools.models.spec import ModelSpec, model_spec, per_size


def wav2vec2(size: str) -> tuple:
    """Wav2Vec2: strided 1-d conv feature extractor with group norm, grouped conv positions."""
    import transformers

    shape = text_shape(size)
    quick_features = dict(conv_dim=(32, 32, 32), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2))
    cpu_features = dict(conv_dim=(128,) * 7)
    features = per_size(size, quick=quick_features, cpu=cpu_features, cuda={})
    samples = per_size(size, quick=800, cpu=16000, cuda=80000)
    config = transformers.Wav2Vec2Config(
        **features,
        hidden_size=shape.hidden,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        intermediate_size=shape.ffn,
        num_conv_pos_embeddings=per_size(size, quick=16, cpu=32, cuda=128),
        num_conv_pos_embedding_groups=per_size(size, quick=4, cpu=16, cuda=16),
        feat_extract_norm="group",
        hidden_dropout=0.0,
        activation_dropout=0.0,
        attention_dropout=0.0,
        feat_proj_dropout=0.0,
        layerdrop=0.0,
        mask_time_prob=0.0,
        attn_implementation="sdpa",
    )
    model = transformers.Wav2Vec2Model(config)
    # in train mode the feature encoder sets `requires_grad` on a view of its
    # input (for gradient checkpointing), which fails when the input is a leaf
    # that requires gradients, as a training step's inputs are
    model.feature_extractor._requires_grad = False  # noqa: SLF001
    model = KeywordCall(model, ("input_values",), ("last_hidden_state",))
    return model, torch.randn(shape.batch, samples)


def whisper_encoder(size: str) -> tuple:
    """Whisper's encoder: two 1-d convs over mel frames (one strided), sinusoidal positions."""
    import transformers
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    shape = text_shape(size)
    mel_bins = per_size(size, quick=16, cpu=80, cuda=80)
    frames = per_size(size, quick=32, cpu=200, cuda=3000)
    config = transformers.WhisperConfig(
        num_mel_bins=mel_bins,
        d_model=shape.hidden,
        encoder_layers=shape.layers,
        encoder_attention_heads=shape.heads,
        encoder_ffn_dim=shape.ffn,
        decoder_layers=shape.layers,
        decoder_attention_heads=shape.heads,
        decoder_ffn_dim=shape.ffn,
        max_source_positions=frames // 2,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        attn_implementation="sdpa",
    )
    model = KeywordCall(WhisperEncoder(config), ("input_features",), ("last_hidden_state",))
    return model, torch.randn(shape.batch, mel_bins, frames)


SPECS: tuple[ModelSpec, ...] = (
    model_spec("wav2vec2", "audio", wav2vec2),
    model_spec("whisper_encoder", "audio", whisper_encoder),
)
"""The speech encoders."""
