"""The selected training sets (select_examples) and the dose-response aggregation, on hand-made inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from textcause.corpus.types import Split
from textcause.gender.build import GenderData
from textcause.gender.dose import dose_response, mean_interval, trend, verdicts
from textcause.gender.masking import FEMALE, IGNORE, MALE
from textcause.gender.selected import example_gender, select_examples


def pool(n_authors: int = 40, per_author: int = 5) -> tuple[GenderData, dict[str, str], dict[str, bool]]:
    """Examples of ``n_authors`` authors (odd ones women), alternating female / male masks; W by author."""
    ids, labels, authors = [], [], []
    for a in range(n_authors):
        for k in range(per_author):
            ids.append(np.array([101, 7, 103, 102], dtype=np.int32))
            labels.append(np.array([IGNORE, IGNORE, FEMALE if (a + k) % 2 else MALE, IGNORE], dtype=np.int16))
            authors.append(f"a{a}")
    n = len(ids)
    data = GenderData(
        input_ids=tuple(ids),
        labels=tuple(labels),
        authors=np.array(authors, dtype=object),
        sentences=tuple("x" for _ in range(n)),
        prefixes=tuple("" for _ in range(n)),
        split=Split(np.arange(n), np.array([], dtype=int), np.array([], dtype=int)),
        pad_token_id=0,
        info={},
    )
    w = {f"a{a}": ("1990", "2010")[a % 4 // 2] for a in range(n_authors)}
    female = {f"a{a}": bool(a % 2) for a in range(n_authors)}
    return data, w, female


def test_example_gender_majority_then_first() -> None:
    assert example_gender(np.array([IGNORE, FEMALE, FEMALE, MALE]))
    assert not example_gender(np.array([MALE, FEMALE]))
    assert example_gender(np.array([FEMALE, IGNORE, MALE]))


@pytest.mark.parametrize("unit", ["example", "author"])
def test_full_strength_keeps_one_gender_at_each_end(unit: str) -> None:
    data, w, female = pool()
    sel, info = select_examples(
        data,
        w,
        ("1990", "2010"),
        strength=1.0,
        unit=unit,
        rng=np.random.default_rng(0),
        n_sentences=None,
        seed=0,
        female_of_author=female,
    )
    first = np.array([w[a] == "1990" for a in sel.authors.astype(str)])
    if unit == "example":
        g = np.array([example_gender(lab) for lab in sel.labels])
    else:
        g = np.array([female[a] for a in sel.authors.astype(str)])
    assert not g[first].any() and g[~first].all()
    assert info.units.slope == pytest.approx(100.0) and info.n_examples == len(sel)
    assert sum(sel.split.sizes()) == len(sel) and set(sel.authors) <= set(data.authors)
    # no author in two splits
    splits = [set(sel.authors[sel.split[s]]) for s in ("train", "val", "test")]
    assert not (splits[0] & splits[1] or splits[0] & splits[2] or splits[1] & splits[2])


def test_strength_zero_and_the_cut() -> None:
    data, w, female = pool(200, 10)
    sel, info = select_examples(
        data,
        w,
        ("1990", "2010"),
        strength=0.0,
        unit="example",
        rng=np.random.default_rng(1),
        n_sentences=300,
        seed=0,
    )
    assert info.n_examples == len(sel) == 300 and 0.4 < info.n_selected / info.n_units < 0.6
    assert abs(info.units.slope) < 12  # 2 values of W, ~500 examples each: sd of a share ~2.2 points


def test_select_examples_errors() -> None:
    data, w, female = pool()
    kw = dict(strength=0.5, rng=np.random.default_rng(0), n_sentences=None, seed=0)
    with pytest.raises(ValueError, match="'unit' parameter"):
        select_examples(data, w, ("1990", "2010"), unit="blog", **kw)
    with pytest.raises(ValueError, match="not in the experiment's W list"):
        select_examples(data, w, ("1990", "2000"), unit="example", **kw)
    with pytest.raises(ValueError, match="needs each author's gender"):
        select_examples(data, w, ("1990", "2010"), unit="author", **kw)
    with pytest.raises(ValueError, match="have no value of W"):
        select_examples(data, {"a0": "1990"}, ("1990", "2010"), unit="example", **kw)


def units_frame() -> pd.DataFrame:
    rows = []
    for strength, base in ((0.0, 0.0), (0.5, 1.0), (1.0, 2.0)):
        for seed, noise in enumerate((-0.1, 0.0, 0.2)):
            rows.append(
                dict(
                    probe="prefixed",
                    strength=strength,
                    seed=seed,
                    slope=base + noise,
                    r=0.5 * base,
                    unit_slope=10 * strength,
                    label_slope=4 * strength + noise,
                    expected_slope=10 * strength,
                )
            )
    return pd.DataFrame(rows)


def test_dose_response_by_hand() -> None:
    units = units_frame()
    table = dose_response(units)
    top = table[table["strength"] == 1.0].iloc[0]
    v = np.array([1.9, 2.0, 2.2])
    half = stats.t.ppf(0.975, 2) * v.std(ddof=1) / np.sqrt(3)
    assert top["slope"] == pytest.approx(v.mean()) and top["slope_lo"] == pytest.approx(v.mean() - half)
    assert top["ratio_to_label"] == pytest.approx(v.mean() / np.mean([3.9, 4.0, 4.2]))
    assert bool(table.iloc[0]["covers_zero"]) and not bool(top["covers_zero"])
    t = trend(units, "prefixed")
    ref = stats.linregress(units["strength"], units["slope"])
    assert t.per_strength == pytest.approx(ref.slope) and t.monotone and t.per_strength_ci[0] > 0
    text = " ".join(verdicts(table, [t]))
    assert "GROWS" in text and "COVERS 0" in text
    assert ref.pvalue < 1e-4 and "p < 0.0001," in text and "0.0000" not in text  # not "p 0.0000"
    assert mean_interval(np.array([1.0]))[0] == 1.0 and np.isnan(mean_interval(np.array([1.0]))[2])


def test_dose_response_errors() -> None:
    with pytest.raises(ValueError, match="lack the columns"):
        dose_response(pd.DataFrame({"probe": ["x"]}))
    with pytest.raises(ValueError, match="no finished units"):
        dose_response(units_frame().iloc[:0])
    with pytest.raises(ValueError, match="no units of the probe set"):
        trend(units_frame(), "paper")


def test_verdicts_say_only_what_the_seeds_and_strengths_support() -> None:
    # two strengths x three seeds, the labels' association not clearly above 0 (the author-level run)
    units = units_frame()
    two = units[units["strength"] != 0.5].assign(label_slope=lambda d: d["seed"] - 1.0)
    table = dose_response(two)
    text = " ".join(verdicts(table, [trend(two, "prefixed")]))
    assert "Spearman" not in text and np.isnan(trend(two, "prefixed").spearman)
    assert "the mean slope at strength 1 is higher than at 0" in text and "too few for a rank correlation" in text
    assert "is - times" not in text and " - " not in text
    assert "against the training labels' true W-G slope 0.000 (no ratio: the labels' slope's interval" in text
    assert "reaches 0, so a ratio would be noise over noise" in text
    assert "GROWS" in text  # three seeds a strength: a verdict
    # three strengths, one seed each: no verdict on growth or on 0, and why
    one = units[units["seed"] == 0]
    text = " ".join(verdicts(dose_response(one), [trend(one, "prefixed")]))
    assert "GROWS" not in text and "COVERS" not in text and "does NOT" not in text
    assert "NO VERDICT on growth" in text and "run at least 2 seeds per strength" in text
    assert "no verdict on whether it covers 0" in text and "with 1 seed the labels' slope has no interval" in text
    assert "The mean slopes are monotone in the strength (Spearman rho 1.00 over 3 strengths)" in text
