"""The on-disk cache of the sentences a masked-gender build screens (issue 46: a fine-tune re-split
the whole blog corpus in every process)."""

from __future__ import annotations

import numpy as np

import textcause.gender.candidates as candidates
from textcause.gender.build import GenderDataSettings, build_gender_data, clear_gender_data
from textcause.gender.masking import candidate_pattern, word_labels
from textcause.gender.sentences import Document
from textcause.gender.words import load_gendered_words

PATTERN = candidate_pattern(word_labels(load_gendered_words()))


def drop(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "seconds"}


def _counting_split(monkeypatch) -> list[int]:
    calls = []
    real = candidates.split_sentences

    def split(text):
        calls.append(1)
        return real(text)

    monkeypatch.setattr(candidates, "split_sentences", split)
    return calls


def test_a_second_build_in_a_fresh_process_reads_the_screen_from_the_cache(gender_corpus, tiny_encoder, monkeypatch):
    calls = _counting_split(monkeypatch)
    settings = GenderDataSettings(source=gender_corpus, encoder=tiny_encoder, n_sentences=120, prefix="age")
    clear_gender_data()
    first = build_gender_data(settings)
    n_docs = len(calls)
    assert n_docs > 0
    clear_gender_data()  # what a new process sees: no memo, the cache root on disk
    again = build_gender_data(settings)
    assert len(calls) == n_docs  # no document split again
    assert again is not first and again.sentences == first.sentences and drop(again.info) == drop(first.info)
    assert all(np.array_equal(a, b) for a, b in zip(again.input_ids, first.input_ids))
    clear_gender_data()
    plain = build_gender_data(GenderDataSettings(source=gender_corpus, encoder=tiny_encoder, n_sentences=120))
    assert len(calls) == n_docs  # another prefix, the same screen
    assert plain.sentences == first.sentences


def test_the_cache_gives_what_the_screen_gives_and_follows_the_texts(tmp_path):
    docs = [
        Document("a", "She said hello. The weather was fine. He left early!", {}),
        Document("b", "Nothing here at all.", {}),
        Document("c", "My mother called. Then my brother came.", {}),
    ]
    expected = (
        [0, 0, 2, 2],
        ["She said hello.", "He left early!", "My mother called.", "Then my brother came."],
        [3, 1, 2],
    )
    assert candidates.all_candidates(docs, PATTERN, cache=False) == expected
    assert candidates.all_candidates(docs, PATTERN) == expected  # written
    assert candidates.all_candidates(docs, PATTERN) == expected  # read back
    changed = [*docs[:2], Document("c", "My father called.", {})]
    assert candidates.candidates_file(changed, PATTERN) != candidates.candidates_file(docs, PATTERN)
    assert candidates.all_candidates(changed, PATTERN) == (
        [0, 0, 2],
        [*expected[1][:2], "My father called."],
        [3, 1, 1],
    )


def test_a_damaged_cache_file_is_a_miss(recwarn):
    docs = [Document("a", "She came. It rained.", {})]
    file = candidates.candidates_file(docs, PATTERN)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(b"0000\n{}")
    assert candidates.all_candidates(docs, PATTERN) == ([0], ["She came."], [2])
    assert any("Ignoring the candidate cache" in str(w.message) for w in recwarn)
    assert candidates.all_candidates(docs, PATTERN) == ([0], ["She came."], [2])  # rewritten, read cleanly
