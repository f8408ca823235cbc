"""The report's "Chosen hyperparameters" section: what each tuned model chose on validation, cell by cell.

A benchmark cell records its choice in the ``tuned`` column (JSON: a grid search's options, or what a
model such as :class:`~textcause.models.TunedLogisticRegression` chose inside its own fit). The
section counts, per corpus and model, how many cells chose each setting, so a reader sees whether a
baseline was tuned and where its choices fell (a choice at the edge of its grid says the grid was
too narrow).
"""

from __future__ import annotations

import json

import pandas as pd

from textcause.analysis.names import model_labels, model_order
from textcause.reports.markup import Block, Heading, Para, Table

__all__ = [
    "choice_label",
    "chosen_table",
    "tuning_section",
]


def _short(key: str) -> str:
    """``model.init_args.weight_decay`` -> ``weight_decay``; other keys as they are."""
    return key.rsplit(".", 1)[-1]


def choice_label(tuned: str) -> str:
    """A ``tuned`` JSON as ``penalty=l1, C=0.1`` (keys in their JSON order; dotted options shortened).

    >>> choice_label('{"C":0.1,"penalty":"l1"}')
    'penalty=l1, C=0.1'
    """
    values = json.loads(tuned)
    order = sorted(values, key=lambda k: (k != "penalty", k))  # the kind first, then its strength
    return ", ".join(
        f"{_short(k)}={values[k]:g}" if isinstance(values[k], float) else f"{_short(k)}={values[k]}" for k in order
    )


def chosen_table(data: pd.DataFrame) -> pd.DataFrame:
    """One row per corpus, model and choice: the number of cells (task level x seed) that chose it."""
    if "tuned" not in data:
        return pd.DataFrame(columns=["corpus", "model", "choice", "cells"])
    rows = data[data["tuned"].notna() & (data["tuned"].astype(str) != "")]
    cells = rows.drop_duplicates(["corpus", "task", "level", "model", "seed"])
    if cells.empty:
        return pd.DataFrame(columns=["corpus", "model", "choice", "cells"])
    cells = cells.assign(choice=cells["tuned"].astype(str).map(choice_label))
    out = cells.groupby(["corpus", "model", "choice"]).size().rename("cells").reset_index()
    return out.sort_values(["corpus", "model", "cells", "choice"], ascending=[True, True, False, True])


def tuning_section(data: pd.DataFrame) -> list[Block]:
    """The section's blocks (nothing when no cell was tuned)."""
    table = chosen_table(data)
    if table.empty:
        return []
    labels = model_labels(set(table["model"]))
    order = {m: i for i, m in enumerate(model_order(set(table["model"])))}
    table = table.assign(rank=table["model"].map(order)).sort_values(
        ["corpus", "rank", "cells"], ascending=[True, True, False]
    )
    rows = [[r.corpus, labels[r.model], r.choice, str(r.cells)] for r in table.itertuples()]
    return [
        Heading(2, "Chosen hyperparameters"),
        Para(
            "What each tuned model chose on its cell's validation users (lowest validation log-loss; the test "
            "users are never seen during selection), counted over cells (task levels x seeds)."
        ),
        Table(["Corpus", "Model", "Chosen on validation", "Cells"], rows, ["l", "l", "l", "r"]),
    ]
