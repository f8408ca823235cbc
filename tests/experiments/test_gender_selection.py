"""The controlled selection-bias experiment end to end: a tiny model on a synthetic blog corpus.

2 strengths x 2 seeds, one fast_dev_run fine-tune each: the store's rows, resuming (finished units
are skipped), a changed configuration refused, ``textcause gender experiment`` and ``textcause
report`` on its database, and config mistakes as one ``ValueError`` sentence.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import yaml

from textcause import store
from textcause.experiments import gender as gender_experiment
from textcause.experiments.gender import read_selection, run_experiment
from textcause.gender.selection_spec import load_experiment, parse_experiment
from textcause.store.tables import gender_selection

FEMALE_LINES = ("She said it was fine.", "I met her sister today!", "My wife cooked dinner.")
MALE_LINES = ("He said no.", "His brother left.", "My husband is tall.")


@pytest.fixture(autouse=True)
def _offline(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    """60 fake bloggers (half women) with gendered sentences and a gender field."""
    path = tmp_path_factory.mktemp("blogs") / "blogs.jsonl.gz"
    rng = np.random.default_rng(0)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for u in range(60):
            gender = "female" if u % 2 else "male"
            posts = [{"text": " ".join(rng.choice(FEMALE_LINES + MALE_LINES, 3))} for _ in range(4)]
            fh.write(json.dumps({"user_id": f"u{u}", "posts": posts, "meta": {"gender": gender}}) + "\n")
    return str(path)


def spec(corpus: str, encoder: str, **extra) -> dict:
    return {
        "name": "tiny",
        "source": corpus,
        "encoder": encoder,
        "w_values": [1990, 2000, 2010],
        "strengths": [0.0, 1.0],
        "seeds": [0, 1],
        "n_sentences": 200,
        "pool_sentences": 400,
        "batch_size": 16,
        "precision": "32",
        "n_boot": 20,
        "overrides": {"trainer.fast_dev_run": True},
        **extra,
    }


def test_experiment_writes_the_store_and_resumes(corpus: str, tiny_encoder: str, tmp_path: Path) -> None:
    experiment = parse_experiment(spec(corpus, tiny_encoder), source="tiny.yaml")
    lines: list[str] = []
    first = run_experiment(experiment, tmp_path, echo=lines.append)
    assert sorted(first["ran"]) == sorted(experiment.unit_id(s, seed) for s, seed in experiment.units)
    rows = read_selection(first["url"])
    assert len(rows) == 4 * 2 and set(rows["probe"]) == {"prefixed", "paper"}
    assert rows["status"].eq("ok").all() and rows["slope"].notna().all()
    assert (rows["slope_lo"] <= rows["slope"]).all() and (rows["slope"] <= rows["slope_hi"]).all()
    from textcause.reports.gender import unit_slope_interval

    for _, r in rows.iterrows():  # the stored interval is the linear fit's through the unit's per-W points
        assert (r["slope_lo"], r["slope_hi"]) == pytest.approx(unit_slope_interval(r["curve"]), rel=1e-3, abs=1e-5)
    strong = rows[rows["strength"] == 1.0]
    # full strength, 3 values of W: only men at the first, only women at the last (closed form 50 points a step)
    assert strong["unit_slope"].to_numpy() == pytest.approx(50.0)
    assert strong["expected_slope"].to_numpy() == pytest.approx(50.0)
    assert (strong["label_slope"] > 30).all()
    assert rows["train_seconds"].gt(0).all() and rows["n_train"].gt(0).all()
    assert len(json.loads(rows["curve"].iloc[0])) == 3
    # the prefix is the author's drawn W
    w = pd.read_csv(tmp_path / "w" / "seed0.csv", dtype=str)
    assert set(w["year"]) <= {"1990", "2000", "2010"} and set(w["gender"]) == {"female", "male"}
    # a rerun skips every finished unit, and a killed run's missing unit is redone
    with mock.patch.object(gender_experiment, "run_unit", side_effect=AssertionError("must not fit")):
        again = run_experiment(experiment, tmp_path, echo=lines.append)
    assert again["ran"] == [] and len(again["skipped"]) == 4
    import sqlalchemy as sa

    engine = store.open_store(first["url"], gender_selection)
    with engine.begin() as conn:
        conn.execute(sa.delete(gender_selection).where(gender_selection.c.unit_id == experiment.unit_id(1.0, 1)))
    third = run_experiment(experiment, tmp_path, echo=lines.append)
    assert third["ran"] == [experiment.unit_id(1.0, 1)]
    assert len(read_selection(first["url"])) == 8
    # the same name under another configuration is refused, not mixed in
    changed = parse_experiment(spec(corpus, tiny_encoder, n_sentences=150), source="tiny.yaml")
    with pytest.raises(ValueError, match="another configuration"):
        run_experiment(changed, tmp_path, echo=lines.append)


def test_author_selection_and_the_commands(corpus: str, tiny_encoder: str, tmp_path: Path, capsys) -> None:
    from textcause.cli.main import main

    config = tmp_path / "sel.yaml"
    config.write_text(yaml.safe_dump(spec(corpus, tiny_encoder, unit="author", seeds=[0])), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["gender", "experiment", "--config", str(config), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| strength |" in printed and "What it shows" in printed
    rows = read_selection(f"sqlite:///{out}/results.db")
    strong = rows[rows["strength"] == 1.0].iloc[0]
    assert strong["unit"] == "author" and strong["unit_slope"] == pytest.approx(50.0)
    for suffix in ("dose_response.md", "dose_response.csv", "units.csv", "dose_response.png", "dose_response.svg"):
        assert (out / "report" / f"tiny_{suffix}").is_file()
    # textcause report on the experiment's database writes the dose-response too
    report = tmp_path / "report"
    assert main(["report", "--db", str(out / "results.db"), "--out", str(report)]) == 0
    assert (report / "tiny_dose_response.md").read_text(encoding="utf-8").startswith("# Selection-bias experiment")
    assert (report / "tiny_dose_response.png").stat().st_size > 0


@pytest.mark.parametrize(
    "change, match",
    [
        ({"strengths": [0, 1.5]}, "'strengths' must be a non-empty list of distinct numbers in \\[0, 1\\]"),
        ({"unit": "blog"}, "'unit' must be one of"),
        ({"seeds": [0, 0]}, "'seeds' must be"),
        ({"colour": 1}, "unknown key"),
        ({"w_values": [1990]}, "'w_values' must be"),
        ({"probes": ["table9"]}, "'probes' must be"),
        ({"model_config": "gender/nope"}, "'model_config' names"),
    ],
)
def test_config_mistakes_are_one_sentence(tmp_path: Path, change: dict, match: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"strengths": [0, 1], **change}), encoding="utf-8")
    with pytest.raises(ValueError, match=match) as err:
        load_experiment(path)
    assert str(err.value).startswith(f"Selection experiment config '{path}': ")
    assert "\n" not in str(err.value)


def test_the_shipped_config_parses() -> None:
    config = Path(__file__).resolve().parents[2] / "configs" / "gender" / "selection.yaml"
    experiment = load_experiment(config)
    assert len(experiment.spec.strengths) >= 4 and 0.0 in experiment.spec.strengths
    assert len(experiment.spec.seeds) >= 3
    assert experiment.units[0] == (max(experiment.spec.strengths), experiment.spec.seeds[0])  # largest first
