"""Your own data from the CLI: a comment table's author / text / time columns and de-duplication are
data-module options (``--data.author_col`` ...), with the same meaning as in ``load_histories``."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest
from conftest import write_history_jsonl

from textcause.data import CausalTextDataModule
from textcause.data.build import DataSettings, build_data, clear_built

OPTS = {"task": "linguistic_complexity", "level": 1, "representation": "unigram_binary", "min_users": 3}


def _table(tmp_path, *, repeat_first: int = 0):
    """The tiny history corpus as a flat CSV with non-default column names (times 0, 1, 2, ...)."""
    jsonl = write_history_jsonl(tmp_path / "tiny.jsonl.gz")
    rows = []
    with gzip.open(jsonl, "rt", encoding="utf-8") as fh:
        for line in fh:
            user = json.loads(line)
            for k, post in enumerate(user["posts"]):
                rows.append({"who": user["user_id"], "body": post["text"], "ts": 1_600_000_000 + k})
                if k == 0 and repeat_first:
                    rows += [rows[-1]] * repeat_first
    path = tmp_path / "comments.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return jsonl, str(path)


def test_a_comment_table_with_its_own_column_names(tmp_path):
    jsonl, csv = _table(tmp_path)
    clear_built()
    ref = build_data(DataSettings(corpus=jsonl, **OPTS)).task
    ours = build_data(DataSettings(corpus=csv, author_col="who", text_col="body", time_col="ts", **OPTS)).task
    assert len(ours.user_ids) == len(ref.user_ids) == 240
    assert sorted(ours.user_ids) == sorted(ref.user_ids)


def test_the_data_module_takes_them_as_options(tmp_path):
    _, csv = _table(tmp_path)
    dm = CausalTextDataModule(corpus=csv, author_col="who", text_col="body", time_col=None, **OPTS)
    assert (dm.settings.author_col, dm.settings.text_col, dm.settings.time_col) == ("who", "body", None)
    assert len(dm.built.task.user_ids) == 240


def test_a_wrong_column_is_one_sentence(tmp_path):
    _, csv = _table(tmp_path)
    with pytest.raises(ValueError, match="author_col"):
        build_data(DataSettings(corpus=csv, author_col="user", text_col="body", time_col="ts", **OPTS))


def test_drop_duplicates(tmp_path):
    _, csv = _table(tmp_path, repeat_first=3)
    cols = {"author_col": "who", "text_col": "body", "time_col": "ts", "max_posts": None, **OPTS}
    clear_built()
    kept = build_data(DataSettings(corpus=csv, **cols)).task.texts
    dropped = build_data(DataSettings(corpus=csv, drop_duplicates=True, **cols)).task.texts
    n_kept = sum(len(t) for t in kept)
    n_dropped = sum(len(t) for t in dropped)
    assert n_kept - n_dropped == 3 * 240  # each user's repeated first post, three times


def test_a_study_decides_its_corpus_columns(tmp_path):
    with pytest.raises(ValueError, match=r"the data settings \['author_col'\] do not apply"):
        DataSettings(observational="configs/observational/twitter_gender.yaml", author_col="who")
