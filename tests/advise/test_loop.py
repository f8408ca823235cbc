"""The whole loop on a synthetic corpus: a candidate blind to the inserted posts is ranked last and
avoided, the report is written, a rerun redoes no finished cell or model, and a changed candidate
is calibrated again."""

from __future__ import annotations

import json

import pytest
from advise.advise_corpus import advise_dict, write_study_corpus

from textcause.advise import advise
from textcause.advise._runs import connect_store, ledger
from textcause.advise.spec import advise_from_dict

pytestmark = pytest.mark.slow


def _finished(url, grid):
    return {cell: row.finished_at for cell, row in ledger(connect_store(url), grid).items() if row.status == "ok"}


def test_the_blind_candidate_ranks_last_and_a_rerun_redoes_nothing(tmp_path):
    corpus = write_study_corpus(tmp_path / "c.jsonl.gz", n_users=240, n_posts=12)
    config = advise_dict(
        corpus,
        methods=["advise.advise_blind:Blind"],
        overrides={"trainer.max_epochs": 3, "data.min_users": 3},
        evaluation={"n_boot": 50, "estimators": ["ipw", "stratified"]},
    )
    out = tmp_path / "out"
    first = advise(advise_from_dict(dict(config, candidates=["unadjusted"]), source="toy.yaml"), out)  # "interrupted"
    done = _finished(first["store"], first["grid"])
    assert len(done) == 4 * 3 * 2  # unadjusted and the blind method: 4 levels x 3 seeds

    result = advise(advise_from_dict(config, source="toy.yaml"), out)
    graded = result["graded"]
    blind = graded[graded["model"] == "blind"]["rank"]
    seeing = graded[graded["model"] == "lr_unigram_binary"]["rank"]
    assert seeing.max() < blind.min()  # every pair of the model that reads the text ranks above the blind one
    assert result["recommended"]["model"] == "lr_unigram_binary"
    again = _finished(result["store"], result["grid"])
    assert {c: again[c] for c in done} == done  # the cells finished before were not run again
    assert len(again) == 4 * 3 * 3

    before = json.loads((out / "estimate" / "models" / "lr_unigram_binary.json").read_text())["finished_at"]
    third = advise(advise_from_dict(config, source="toy.yaml"), out)
    assert _finished(third["store"], third["grid"]) == again
    assert json.loads((out / "estimate" / "models" / "lr_unigram_binary.json").read_text())["finished_at"] == before
    md = (out / "advise.md").read_text()
    found = third["robustness"]
    assert found["status"] == "ok", found.get("reason")
    placebo, common, _ = found["refuters"]
    assert placebo["new_low"] <= 0 <= placebo["new_high"]
    assert common["new_low"] <= common["expected"] <= common["new_high"]
    assert "Use **lr_unigram_binary**" in md and f"**{found['sentence']}**" in md
    assert (out / found["figure"]).is_file() and f"![Austen plot]({found['figure']})" in md
    saved = json.loads((out / "advise.json").read_text())["robustness"]
    assert saved["refuters"] == found["refuters"] and saved["sentence"] == found["sentence"]
    assert (out / "advise.html").read_text().count("data:image/png;base64") == 3

    # a candidate whose options changed is calibrated again, and only it (its old rows deleted)
    changed = dict(config, model_overrides={"lr_unigram_binary": {"model.init_args.weight_decay": 0.01}})
    fourth = advise(advise_from_dict(changed, source="toy.yaml"), out)
    rerun = _finished(fourth["store"], fourth["grid"])
    assert set(rerun) == set(again)
    assert {c for c in rerun if rerun[c] != again[c]} == {c for c in again if "/lr_unigram_binary/" in c}
