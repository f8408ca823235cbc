"""Hand-made SemEval-2020 Task 5 files: tiny subtask-1 and subtask-2 CSVs in the official format."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

NOUNS = ["rate", "bank", "market", "vaccine", "team", "city", "budget", "plane", "policy", "court"]
VERBS = ["fallen", "risen", "grown", "failed", "changed", "collapsed", "improved", "stopped"]
PAST = ["fell", "rose", "grew", "failed", "changed", "collapsed", "improved", "stopped"]

#: A subtask-2 sentence with an antecedent and a consequent, and one without a consequent.
S1 = "If it had rained, the crops would have grown."
S2 = "I wish the rate had been cut sooner."
S3 = "Had we known, we would have left."


def cf_sentence(rng: np.random.Generator) -> str:
    a, b = rng.choice(NOUNS, 2, replace=False)
    v, w = rng.choice(VERBS, 2)
    return rng.choice([f"If the {a} had {v}, the {b} would have {w}.", f"The {b} should have {w} if the {a} were {v}."])


def plain_sentence(rng: np.random.Generator) -> str:
    a, b = rng.choice(NOUNS, 2, replace=False)
    v, w = rng.choice(PAST, 2)
    return rng.choice([f"The {a} {v} and the {b} {w} today.", f"Yesterday the {a} {v} while the {b} {w}."])


def write_subtask1(path: Path, n: int = 200, positive: float = 0.25, seed: int = 0, start_id: int = 100000) -> Path:
    """A subtask-1 CSV of template sentences (``positive`` of them counterfactual)."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < positive).astype(int)
    labels[:2] = 1  # both classes, whatever the seed
    labels[2:4] = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["sentenceID", "gold_label", "sentence"])
        for i, y in enumerate(labels):
            w.writerow([start_id + i, int(y), cf_sentence(rng) if y else plain_sentence(rng)])
    return path


def span(sentence: str, text: str) -> tuple[int, int]:
    """END-INCLUSIVE character offsets of ``text`` in ``sentence``."""
    start = sentence.index(text)
    return start, start + len(text) - 1


def subtask2_rows() -> list[dict]:
    """Three gold rows: two with a consequent, one (sentenceID 3) without."""
    rows = []
    for sid, sentence, ante, cons in (
        (1, S1, "If it had rained", "the crops would have grown"),
        (2, S3, "Had we known", "we would have left"),
        (3, S2, "I wish the rate had been cut sooner", None),
    ):
        a = span(sentence, ante)
        c = span(sentence, cons) if cons else (-1, -1)
        rows.append(
            {
                "sentenceID": sid,
                "sentence": sentence,
                "antecedent": ante,
                "consequent": cons or "{}",
                "antecedent_startid": a[0],
                "antecedent_endid": a[1],
                "consequent_startid": c[0],
                "consequent_endid": c[1],
            }
        )
    return rows


def write_rows(path: Path, rows: list[dict], columns: list[str] | None = None) -> Path:
    columns = columns or list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.fixture
def gold2_path(tmp_path) -> Path:
    return write_rows(tmp_path / "subtask2_gold.csv", subtask2_rows())


@pytest.fixture
def toy_files(tmp_path) -> tuple[Path, Path]:
    """(train, test) subtask-1 CSVs with disjoint sentenceIDs."""
    train = write_subtask1(tmp_path / "train.csv", n=240, seed=0)
    test = write_subtask1(tmp_path / "test.csv", n=120, seed=1, start_id=300000)
    return train, test


@pytest.fixture
def rows2() -> list[dict]:
    """Fresh gold subtask-2 rows (see :func:`subtask2_rows`)."""
    return subtask2_rows()


@pytest.fixture
def write_csv():
    """The CSV writer of these tests: ``write_csv(path, rows, columns=None)``."""
    return write_rows


@pytest.fixture
def make_subtask1():
    """``make_subtask1(path, n=200, positive=0.25, seed=0, start_id=100000)``: a subtask-1 CSV."""
    return write_subtask1
