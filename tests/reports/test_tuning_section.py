"""The report's "Chosen hyperparameters" section counts each model's choices over cells, not rows."""

from __future__ import annotations

import pandas as pd

from textcause.reports.markup import Table, to_markdown
from textcause.reports.tuning import choice_label, chosen_table, tuning_section


def _rows():
    rows = []
    for seed, tuned in enumerate(['{"C":0.1,"penalty":"l1"}', '{"C":0.1,"penalty":"l1"}', '{"C":1.0,"penalty":"l2"}']):
        for est in ("unadjusted", "ipw", "stratified"):  # three rows a cell: counted once
            rows.append(
                {
                    "corpus": "twitter",
                    "task": "signal_intensity",
                    "level": 2,
                    "model": "lr_tuned_bigram_binary",
                    "seed": seed,
                    "estimator": est,
                    "tuned": tuned,
                }
            )
    rows.append(
        {
            "corpus": "twitter",
            "task": "signal_intensity",
            "level": 2,
            "model": "oracle",
            "seed": 0,
            "estimator": "ipw",
            "tuned": None,
        }
    )
    return pd.DataFrame(rows)


def test_choices_are_counted_per_cell_and_untuned_models_left_out():
    table = chosen_table(_rows())
    assert list(table["choice"]) == ["penalty=l1, C=0.1", "penalty=l2, C=1"]
    assert list(table["cells"]) == [2, 1]
    assert set(table["model"]) == {"lr_tuned_bigram_binary"}
    blocks = tuning_section(_rows())
    (tab,) = [b for b in blocks if isinstance(b, Table)]
    assert tab.rows[0] == ["twitter", "LR 1,2-gram", "penalty=l1, C=0.1", "2"]
    assert "Chosen hyperparameters" in to_markdown(blocks)


def test_a_grid_search_choice_is_shortened_and_nothing_tuned_gives_no_section():
    assert (
        choice_label('{"model.init_args.lr":0.03,"model.init_args.weight_decay":0.001}')
        == "lr=0.03, weight_decay=0.001"
    )
    assert tuning_section(_rows().assign(tuned=None)) == []
