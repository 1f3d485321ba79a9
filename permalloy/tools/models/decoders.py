"""
Decoder-only language models from transformers configs: causal attention
over token ids with a padded attention mask, returning next-token logits.
"""

from __future__ import annotations

from permalloy.tools.models.common import (
    KeywordCall,
    TextShape,
    padded_mask,
    position_ids,
    text_shape,
    token_ids,
)
from permalloy.tools.models.spec import ModelSpec, model_spec

DECODER_INPUTS = ("input_ids", "attention_mask", "position_ids")


def _causal_lm(model, shape: TextShape, inputs: tuple[str, ...] = DECODER_INPUTS) -> tuple:
    """A causal LM wrapped to return its logits, with token ids, a padded mask
    and (when `inputs` names them) position ids."""
    tensors = {
        "input_ids": token_ids(shape),
        "attention_mask": padded_mask(shape),
        "position_ids": position_ids(shape),
    }
    wrapped = KeywordCall(model, inputs, ("logits",), use_cache=False)
    return (wrapped, *(tensors[name] for name in inputs))


def _llama_like_options(shape: TextShape) -> dict:
    """Config options shared by Llama-style configs (RMS norm, SiLU-gated MLP, rotary)."""
    return dict(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        max_position_embeddings=max(2 * shape.seq, 64),
        attn_implementation="sdpa",
    )


def llama(size: str) -> tuple:
    """Llama: RMS norm, rotary embeddings at explicit position ids, SiLU-gated MLP."""
    import transformers

    shape = text_shape(size)
    config = transformers.LlamaConfig(**_llama_like_options(shape), num_key_value_heads=shape.heads)
    return _causal_lm(transformers.LlamaForCausalLM(config), shape)


def mistral(size: str) -> tuple:
    """Mistral: Llama-style with grouped-query attention (half as many key/value heads)."""
    import transformers

    shape = text_shape(size)
    options = _llama_like_options(shape)
    config = transformers.MistralConfig(**options, num_key_value_heads=shape.heads // 2)
    return _causal_lm(transformers.MistralForCausalLM(config), shape)


def qwen2(size: str) -> tuple:
    """Qwen2: grouped-query attention with biased query/key/value projections."""
    import transformers

    shape = text_shape(size)
    options = _llama_like_options(shape)
    config = transformers.Qwen2Config(**options, num_key_value_heads=shape.heads // 2)
    return _causal_lm(transformers.Qwen2ForCausalLM(config), shape)


def gpt2(size: str, attention: str = "sdpa") -> tuple:
    """GPT-2: learned positions, layer norm, GELU MLP, fused QKV projection."""
    import transformers

    shape = text_shape(size)
    config = transformers.GPT2Config(
        vocab_size=shape.vocab,
        n_embd=shape.hidden,
        n_layer=shape.layers,
        n_head=shape.heads,
        n_positions=max(2 * shape.seq, 64),
        attn_pdrop=0.0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation=attention,
    )
    return _causal_lm(transformers.GPT2LMHeadModel(config), shape)


def gpt2_eager_attention(size: str) -> tuple:
    """GPT-2 with eager attention: products around a softmax under a causal and a padding mask."""
    return gpt2(size, attention="eager")


def gpt_neox(size: str) -> tuple:
    """GPT-NeoX: parallel attention and MLP residuals, rotary on a quarter of each head."""
    import transformers

    shape = text_shape(size)
    config = transformers.GPTNeoXConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        max_position_embeddings=max(2 * shape.seq, 64),
        attn_implementation="sdpa",
    )
    return _causal_lm(transformers.GPTNeoXForCausalLM(config), shape)


def opt(size: str) -> tuple:
    """OPT: learned positions derived from the attention mask by a cumulative sum."""
    import transformers

    shape = text_shape(size)
    config = transformers.OPTConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        word_embed_proj_dim=shape.hidden,
        ffn_dim=shape.ffn,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        max_position_embeddings=max(2 * shape.seq, 64),
        dropout=0.0,
        attention_dropout=0.0,
        attn_implementation="sdpa",
    )
    return _causal_lm(transformers.OPTForCausalLM(config), shape, ("input_ids", "attention_mask"))


def phi(size: str) -> tuple:
    """Phi: parallel attention and MLP from one layer norm, partial rotary, GELU MLP."""
    import transformers

    shape = text_shape(size)
    config = transformers.PhiConfig(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        max_position_embeddings=max(2 * shape.seq, 64),
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attention_dropout=0.0,
        attn_implementation="sdpa",
    )
    return _causal_lm(transformers.PhiForCausalLM(config), shape)


SPECS: tuple[ModelSpec, ...] = (
    model_spec("llama", "decoder", llama),
    model_spec("mistral", "decoder", mistral),
    model_spec("qwen2", "decoder", qwen2),
    model_spec("gpt2", "decoder", gpt2),
    model_spec("gpt2_eager_attention", "decoder", gpt2_eager_attention),
    model_spec("gpt_neox", "decoder", gpt_neox),
    model_spec("opt", "decoder", opt),
    model_spec("phi", "decoder", phi),
)
"""The decoder-only language models."""
