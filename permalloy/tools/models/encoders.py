"""
Encoder-only text transformers from transformers configs: bidirectional
attention over token ids with an attention mask that pads part of a row,
returning the last hidden state.
"""

from __future__ import annotations

from permalloy.tools.models.common import KeywordCall, TextShape, padded_mask, text_shape, token_ids
from permalloy.tools.models.spec import ModelSpec, model_spec


def _encoder(model, shape: TextShape) -> tuple:
    """An encoder wrapped to return its last hidden state, with token ids and a padded mask."""
    wrapped = KeywordCall(model, ("input_ids", "attention_mask"), ("last_hidden_state",))
    return wrapped, token_ids(shape), padded_mask(shape)


def _bert_like_options(shape: TextShape) -> dict:
    """Config options shared by BERT-style configs, dropout off."""
    return dict(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        max_position_embeddings=max(2 * shape.seq, 64),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        attn_implementation="sdpa",
    )


def bert(size: str) -> tuple:
    """BERT: learned positions and token types, post-norm layers, GELU MLP."""
    import transformers

    shape = text_shape(size)
    config = transformers.BertConfig(**_bert_like_options(shape))
    return _encoder(transformers.BertModel(config, add_pooling_layer=False), shape)


def bert_eager_attention(size: str) -> tuple:
    """BERT with eager attention: products around a softmax, the padding mask added as a bias."""
    import transformers

    shape = text_shape(size)
    config = transformers.BertConfig(**{**_bert_like_options(shape), "attn_implementation": "eager"})
    return _encoder(transformers.BertModel(config, add_pooling_layer=False), shape)


def roberta(size: str) -> tuple:
    """RoBERTa: BERT with positions counted from the padding index, skipping pads."""
    import transformers

    shape = text_shape(size)
    options = _bert_like_options(shape)
    config = transformers.RobertaConfig(**options, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    return _encoder(transformers.RobertaModel(config, add_pooling_layer=False), shape)


def distilbert(size: str) -> tuple:
    """DistilBERT: BERT without token types or pooler, learned positions."""
    import transformers

    shape = text_shape(size)
    config = transformers.DistilBertConfig(
        vocab_size=shape.vocab,
        dim=shape.hidden,
        hidden_dim=shape.ffn,
        n_layers=shape.layers,
        n_heads=shape.heads,
        max_position_embeddings=max(2 * shape.seq, 64),
        dropout=0.0,
        attention_dropout=0.0,
        attn_implementation="sdpa",
    )
    return _encoder(transformers.DistilBertModel(config), shape)


def albert(size: str) -> tuple:
    """ALBERT: factorized embeddings and one layer's weights shared by every layer."""
    import transformers

    shape = text_shape(size)
    config = transformers.AlbertConfig(
        **_bert_like_options(shape), embedding_size=shape.hidden // 2, classifier_dropout_prob=0.0
    )
    return _encoder(transformers.AlbertModel(config, add_pooling_layer=False), shape)


def electra(size: str) -> tuple:
    """ELECTRA discriminator: BERT-style with embeddings narrower than the hidden size."""
    import transformers

    shape = text_shape(size)
    options = _bert_like_options(shape)
    config = transformers.ElectraConfig(**options, embedding_size=shape.hidden // 2)
    return _encoder(transformers.ElectraModel(config), shape)


def deberta_v2(size: str) -> tuple:
    """DeBERTa-v2: disentangled attention over content and relative positions (log buckets)."""
    import transformers

    shape = text_shape(size)
    options = _bert_like_options(shape)
    del options["attn_implementation"]
    config = transformers.DebertaV2Config(
        **options,
        relative_attention=True,
        position_buckets=min(shape.seq, 256),
        max_relative_positions=-1,
        pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        position_biased_input=False,
    )
    return _encoder(transformers.DebertaV2Model(config), shape)


def longformer(size: str) -> tuple:
    """Longformer: sliding-window attention over chunks of the sequence (a
    window of a quarter of it), written with strided views, padding and
    assignments into views, with BERT's other layers."""
    import transformers

    shape = text_shape(size)
    options = _bert_like_options(shape)
    del options["attn_implementation"]
    config = transformers.LongformerConfig(**options, attention_window=max(2, shape.seq // 4), pad_token_id=1)
    return _encoder(transformers.LongformerModel(config, add_pooling_layer=False), shape)


SPECS: tuple[ModelSpec, ...] = (
    model_spec("bert", "encoder", bert),
    model_spec("bert_eager_attention", "encoder", bert_eager_attention),
    model_spec("roberta", "encoder", roberta),
    model_spec("distilbert", "encoder", distilbert),
    model_spec("albert", "encoder", albert),
    model_spec("electra", "encoder", electra),
    model_spec("deberta_v2", "encoder", deberta_v2),
    model_spec("longformer", "encoder", longformer),
)
"""The encoder-only text transformers."""
