"""Tiny real models the tests train: built in code, nothing downloaded."""

from __future__ import annotations

from typing import Any


def tiny_bert() -> Any:
    """A BERT for sequence classification of one layer of width 16, seeded: a
    transformers model as the Trainer trains it, in a few milliseconds a step."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=2,
    )
    return BertForSequenceClassification(config)
