"""Masked-gender fine-tuning data: sentences, masking with the real MiniLM tokenizer, the build, splits."""

from __future__ import annotations

import re

import numpy as np
import pytest

from textcause.gender.build import GenderDataSettings, build_gender_data, clear_gender_data, load_tokenizer
from textcause.gender.datamodule import GenderDataModule
from textcause.gender.masking import FEMALE, IGNORE, MALE, encode_masked, mask_sentences, word_labels
from textcause.gender.sentences import read_documents, split_sentences
from textcause.gender.words import load_gendered_words

LABELS = word_labels(load_gendered_words())


@pytest.fixture(scope="module")
def tok(tiny_encoder):
    return load_tokenizer(tiny_encoder)


def settings(corpus: str, encoder: str, **kwargs) -> GenderDataSettings:
    return GenderDataSettings(**{"source": corpus, "encoder": encoder, "n_sentences": 120, **kwargs})


def word_genders(sentence: str) -> list[int]:
    """An independent labelling: the gender of each listed word of a sentence, by a plain regex."""
    return [LABELS[w] for w in re.findall(r"[a-z]+", sentence.lower()) if w in LABELS]


def test_split_sentences_keeps_abbreviations_initials_and_decimals():
    text = 'He said no. We went out!! Then "she left." Mr. Smith met J. Doe at 3.5 km, e.g. there... ok?'
    assert split_sentences(text) == [
        "He said no.",
        "We went out!!",
        'Then "she left."',
        "Mr. Smith met J. Doe at 3.5 km, e.g. there...",
        "ok?",
    ]
    assert split_sentences("no end") == ["no end"] and split_sentences("  ") == []
    assert split_sentences("One.\n\nTwo") == ["One.", "Two"]


def test_every_gendered_word_is_masked_with_the_tokenizer_and_labelled(tok):
    sentences = ["She, said HIS name was Bob.", "him/her and the actress (Shé) he's", "Shells, heroes, the mensa."]
    masked = mask_sentences(sentences, tok, LABELS)
    m = tok.mask_token
    assert masked[0].text == f"{m}, said {m} name was Bob." and masked[0].labels == (FEMALE, MALE)
    assert masked[0].words == ("She", "HIS")
    assert masked[1].text == f"{m}/{m} and the {m} ({m}) {m}'s"
    assert masked[1].labels == (MALE, FEMALE, FEMALE, FEMALE, MALE)  # "Shé" is "she" to an uncased tokenizer
    assert masked[2] is None  # no word of the list: "shells", "heroes" and "mensa" are other words
    ((ids, labels),) = encode_masked([masked[0]], ["age: 23. "], tok, max_tokens=64)
    tokens = tok.convert_ids_to_tokens(ids.tolist())
    assert tokens[:6] == ["[CLS]", "age", ":", "23", ".", "[MASK]"] and tokens[-1] == "[SEP]"
    assert [int(v) for v in labels[ids == tok.mask_token_id]] == [FEMALE, MALE]
    assert (labels[ids != tok.mask_token_id] == IGNORE).all()


def test_a_cut_sentence_keeps_the_labels_of_the_masks_it_keeps(tok):
    masked = mask_sentences(["he " + "and " * 10 + "she"], tok, LABELS)
    ((ids, labels),) = encode_masked(masked, [""], tok, max_tokens=5)
    assert len(ids) == 5 + 2 and [int(v) for v in labels[labels != IGNORE]] == [MALE]
    assert encode_masked(mask_sentences(["and " * 10 + "she"], tok, LABELS), [""], tok, max_tokens=5) == [None]
    # a literal mask token in the text would add an unlabelled mask: the sentence is left out
    assert encode_masked(mask_sentences(["[MASK] met her"], tok, LABELS), [""], tok, max_tokens=64) == [None]
    with pytest.raises(ValueError, match="The prefix 'w: \\[MASK\\]. ' holds the mask token"):
        encode_masked(mask_sentences(["she"], tok, LABELS), ["w: [MASK]. "], tok, max_tokens=64)


def test_the_build_masks_every_gendered_word_and_nothing_else(gender_corpus, tiny_encoder, tok):
    data = build_gender_data(settings(gender_corpus, tiny_encoder))
    assert len(data) == data.info["n_examples"] == 120
    gendered_ids = {tok.convert_tokens_to_ids(w) for w in LABELS}
    for ids, labels, sentence in zip(data.input_ids, data.labels, data.sentences):
        at_mask = ids == tok.mask_token_id
        assert (labels != IGNORE).tolist() == at_mask.tolist()
        assert [int(v) for v in labels[at_mask]] == word_genders(sentence)
        assert not gendered_ids & set(ids.tolist())  # no gendered token is left visible
    assert 0 < data.info["female_share"] < 1 and data.info["n_masks"] >= len(data)


def test_the_prefix_is_written_before_the_same_sentences(gender_corpus, tiny_encoder, tok):
    plain = build_gender_data(settings(gender_corpus, tiny_encoder))
    aged = build_gender_data(settings(gender_corpus, tiny_encoder, prefix="age"))
    assert plain.sentences == aged.sentences and set(plain.prefixes) == {""}
    docs = {d.author: d.meta for d in read_documents(gender_corpus)}
    for i in range(len(aged)):
        assert aged.prefixes[i] == f"age: {docs[aged.authors[i]]['age']}. "
        head = tok.convert_ids_to_tokens(aged.input_ids[i][:5].tolist())
        assert head == ["[CLS]", "age", ":", str(docs[aged.authors[i]]["age"]), "."]
        n = len(tok(aged.prefixes[i], add_special_tokens=False)["input_ids"])
        assert aged.input_ids[i][1 + n :].tolist() == plain.input_ids[i][1:].tolist()
        assert aged.labels[i][1 + n :].tolist() == plain.labels[i][1:].tolist()
    assert tok.convert_ids_to_tokens(plain.input_ids[0][:2].tolist())[1] != "age"
    industry = build_gender_data(settings(gender_corpus, tiny_encoder, prefix="industry", prefix_format="[{value}] "))
    assert set(industry.prefixes) == {"[Arts] ", "[Student] "}


def test_splits_are_author_disjoint_and_cover_every_example(gender_corpus, tiny_encoder):
    data = build_gender_data(settings(gender_corpus, tiny_encoder, fractions=(0.6, 0.2, 0.2)))
    parts = [set(data.authors[data.split[s]]) for s in ("train", "val", "test")]
    assert all(parts) and not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert sorted(np.concatenate([data.split[s] for s in ("train", "val", "test")])) == list(range(len(data)))


def test_the_draw_is_seeded(gender_corpus, tiny_encoder):
    first = build_gender_data(settings(gender_corpus, tiny_encoder, seed=3))
    clear_gender_data()
    again = build_gender_data(settings(gender_corpus, tiny_encoder, seed=3))
    other = build_gender_data(settings(gender_corpus, tiny_encoder, seed=4))
    assert again is not first and again.sentences == first.sentences
    assert list(again.authors) == list(first.authors) and again.split.val.tolist() == first.split.val.tolist()
    assert other.sentences != first.sentences
    assert build_gender_data(settings(gender_corpus, tiny_encoder, seed=3)) is again  # memoised


def test_a_table_with_metadata_columns_and_a_w_file(tmp_path, tiny_encoder):
    rows = [(f"a{i % 12}", f"In {1900 + i}, {'she' if i % 2 else 'he'} was born.", 1900 + i) for i in range(60)]
    table = tmp_path / "bios.csv"
    table.write_text("name,bio,birth_year\n" + "".join(f'{a},"{t}",{y}\n' for a, t, y in rows), encoding="utf-8")
    data = build_gender_data(
        settings(str(table), tiny_encoder, text_col="bio", author_col="name", prefix="birth_year", n_sentences=None)
    )
    assert len(data) == 60 and set(data.authors) == {f"a{i}" for i in range(12)}
    assert data.prefixes[data.sentences.index("In 1901, she was born.")] == "birth_year: 1901. "
    w = tmp_path / "w.csv"
    w.write_text("author,w\n" + "".join(f"a{i},{i % 3}\n" for i in range(12)), encoding="utf-8")
    drawn = build_gender_data(
        settings(str(table), tiny_encoder, text_col="bio", author_col="name", prefix="w", w_file=str(w))
    )
    assert {p for a, p in zip(drawn.authors, drawn.prefixes)} == {"w: 0. ", "w: 1. ", "w: 2. "}
    assert all(p == f"w: {int(a[1:]) % 3}. " for a, p in zip(drawn.authors, drawn.prefixes))
    with pytest.raises(ValueError, match="Column 'text' \\(the text_col parameter\\) is not in"):
        build_gender_data(settings(str(table), tiny_encoder))


def test_bad_settings_are_one_sentence(gender_corpus, tiny_encoder, tmp_path):
    with pytest.raises(ValueError, match="'fractions' parameter of GenderDataSettings must be three positive"):
        GenderDataSettings(fractions=(0.5, 0.5, 0.0))
    with pytest.raises(ValueError, match="'n_sentences' parameter of GenderDataSettings must be an int >= 3"):
        GenderDataSettings(n_sentences=0)
    with pytest.raises(ValueError, match="'w_file' parameter of GenderDataSettings must be None unless"):
        GenderDataSettings(w_file="w.csv")
    with pytest.raises(ValueError, match="'prefix_format' parameter of GenderDataSettings must be a format"):
        GenderDataSettings(prefix="age", prefix_format="{name}")
    with pytest.raises(ValueError, match="No document of .* has a value of 'birth_place' for the prefix"):
        build_gender_data(settings(gender_corpus, tiny_encoder, prefix="birth_place"))
    with pytest.raises(ValueError, match="The W file '.*nope.csv' does not exist"):
        build_gender_data(settings(gender_corpus, tiny_encoder, prefix="w", w_file=str(tmp_path / "nope.csv")))
    neutral = tmp_path / "neutral.csv"
    neutral.write_text("author,text\n" + "".join(f"a{i},The park is nice.\n" for i in range(9)), encoding="utf-8")
    with pytest.raises(ValueError, match="holds a gendered word of the list: nothing to learn"):
        build_gender_data(settings(str(neutral), tiny_encoder))
    with pytest.raises(ValueError, match="'batch_size' parameter of GenderDataModule must be an int >= 1"):
        GenderDataModule(batch_size=0)


def test_the_data_module_serves_padded_masked_batches(gender_corpus, tiny_encoder):
    dm = GenderDataModule(source=gender_corpus, encoder=tiny_encoder, n_sentences=50, batch_size=8)
    dm.setup("fit")
    batch = next(iter(dm.val_dataloader()))
    assert set(batch) == {"input_ids", "attention_mask", "labels", "index"}
    assert batch["input_ids"].shape == batch["labels"].shape == batch["attention_mask"].shape
    pad = batch["attention_mask"] == 0
    assert (batch["labels"][pad] == IGNORE).all() and (batch["input_ids"][pad] == dm.built.pad_token_id).all()
    served = np.concatenate([b["index"].numpy() for b in dm.val_dataloader()])
    assert sorted(served) == sorted(dm.built.split.val)  # every validation example once, sorted by length
    lengths = [len(dm.built.input_ids[i]) for i in served]
    assert lengths == sorted(lengths)
    loader = dm.train_dataloader()
    epochs = [np.concatenate([b["index"].numpy() for b in loader]) for _ in range(2)]
    assert all(sorted(e) == sorted(dm.built.split.train) for e in epochs)
    assert epochs[0].tolist() != epochs[1].tolist()  # a new order every epoch


def test_a_byte_level_bpe_tokenizer_masks_the_same_words(tiny_roberta):
    rob = load_tokenizer(tiny_roberta)
    (masked,) = mask_sentences(["She, said HIS wife was a man."], rob, LABELS)
    m = rob.mask_token
    assert masked.text == f"{m}, said {m} {m} was a {m}." and masked.labels == (FEMALE, MALE, FEMALE, MALE)
    ((ids, labels),) = encode_masked([masked], [""], rob, max_tokens=64)
    assert ids[0] == rob.bos_token_id and ids[-1] == rob.eos_token_id
    assert [int(v) for v in labels[ids == rob.mask_token_id]] == [FEMALE, MALE, FEMALE, MALE]
