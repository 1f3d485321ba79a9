"""
Encoder-decoder transformers from transformers configs: a padded source
sequence and a decoder sequence, returning the decoder's logits.
"""

from __future__ import annotations

import torch

from permalloy.tools.models.common import KeywordCall, TextShape, padded_mask, text_shape, token_ids
from permalloy.tools.models.spec import ModelSpec, model_spec

SEQ2SEQ_INPUTS = ("input_ids", "attention_mask", "decoder_input_ids")


def _seq2seq(model, shape: TextShape) -> tuple:
    """A conditional generation model wrapped to return its logits, with
    source ids, a padded source mask, and decoder ids half as long."""
    wrapped = KeywordCall(model, SEQ2SEQ_INPUTS, ("logits",), use_cache=False)
    decoder_ids = torch.randint(0, shape.vocab, (shape.batch, max(shape.seq // 2, 1)))
    return wrapped, token_ids(shape), padded_mask(shape), decoder_ids


def t5(size: str) -> tuple:
    """T5: RMS-style layer norm, relative position buckets, gated-GELU feed-forward."""
    import transformers

    shape = text_shape(size)
    config = transformers.T5Config(
        vocab_size=shape.vocab,
        d_model=shape.hidden,
        d_kv=shape.hidden // shape.heads,
        d_ff=shape.ffn,
        num_layers=shape.layers,
        num_decoder_layers=shape.layers,
        num_heads=shape.heads,
        feed_forward_proj="gated-gelu",
        dropout_rate=0.0,
        decoder_start_token_id=0,
        attn_implementation="sdpa",
    )
    return _seq2seq(transformers.T5ForConditionalGeneration(config), shape)


def bart(size: str) -> tuple:
    """BART: post-norm encoder and decoder with learned positions and cross-attention."""
    import transformers

    shape = text_shape(size)
    config = transformers.BartConfig(
        vocab_size=shape.vocab,
        d_model=shape.hidden,
        encoder_layers=shape.layers,
        decoder_layers=shape.layers,
        encoder_attention_heads=shape.heads,
        decoder_attention_heads=shape.heads,
        encoder_ffn_dim=shape.ffn,
        decoder_ffn_dim=shape.ffn,
        max_position_embeddings=max(2 * shape.seq, 64),
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        attn_implementation="sdpa",
    )
    return _seq2seq(transformers.BartForConditionalGeneration(config), shape)


SPECS: tuple[ModelSpec, ...] = (
    model_spec("t5", "encoder-decoder", t5),
    model_spec("bart", "encoder-decoder", bart),
)
"""The encoder-decoder transformers."""
