"""The table registry of the results store: every table any experiment writes, on one ``MetaData``.

``cells``
    one row per benchmark cell (``cell_id`` is the primary key): the claim ledger
    (:mod:`textcause.store.ledger`); ``status`` is one of :data:`STATUSES`.
``results``
    one row per cell x estimator (``UNIQUE(cell_id, estimator)``): every column of
    :data:`textcause.metrics.schema.RESULT_COLUMNS` plus the cell's :data:`EXTRA_COLUMNS`.
``gender_selection``
    the masked gender task's selection experiment (:mod:`textcause.experiments.gender`): one row per
    unit (strength x seed) and probe.
``cfr_results``
    counterfactual-representation runs (:mod:`textcause.experiments.cfr`): one row per run, section,
    method, metric and class.

:func:`textcause.store.db.open_store` creates ``cells`` and ``results`` and the experiment tables a
caller names; nothing else defines a table.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from textcause.metrics.schema import RESULT_COLUMNS, RESULT_SCHEMA

__all__ = [
    "EXTRA_COLUMNS",
    "STATUSES",
    "cells",
    "cfr_results",
    "gender_selection",
    "metadata",
    "results",
]

#: The states of a ``cells`` row.
STATUSES = ("running", "ok", "failed")

_KEY = sa.String(255)
_SQL_TYPES = {int: sa.Integer, bool: sa.Boolean, float: sa.Float}


def _result_type(name: str) -> Any:
    if name in ("error", "run"):
        return sa.Text
    return _SQL_TYPES.get(RESULT_SCHEMA[name], _KEY)


metadata = sa.MetaData()

cells = sa.Table(
    "cells",
    metadata,
    sa.Column("cell_id", _KEY, primary_key=True),
    sa.Column("grid", _KEY, nullable=False, index=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("config_hash", sa.String(64)),
    sa.Column("token", sa.String(64), nullable=False),
    sa.Column("host", _KEY),
    sa.Column("pid", sa.Integer),
    sa.Column("trial_id", sa.Integer),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("started_at", sa.DateTime),
    sa.Column("finished_at", sa.DateTime),
    sa.Column("error", sa.Text),
)

EXTRA_COLUMNS = (
    "cell_id",
    "grid",
    "model_class",
    "config_hash",
    "code_version",
    "n_boot",
    "status",
    "attempt",
    "host",
    "started_at",
    "finished_at",
    "train_seconds",
    "eval_seconds",
)

results = sa.Table(
    "results",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("cell_id", _KEY, nullable=False),
    sa.Column("grid", _KEY, nullable=False, index=True),
    sa.Column("model_class", _KEY),
    sa.Column("config_hash", sa.String(64)),
    sa.Column("code_version", _KEY),
    sa.Column("n_boot", sa.Integer),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempt", sa.Integer),
    sa.Column("host", _KEY),
    sa.Column("started_at", sa.DateTime),
    sa.Column("finished_at", sa.DateTime),
    sa.Column("train_seconds", sa.Float),
    sa.Column("eval_seconds", sa.Float),
    *[sa.Column(name, _result_type(name), nullable=name != "estimator") for name in RESULT_COLUMNS],
    sa.UniqueConstraint("cell_id", "estimator", name="uq_results_cell_estimator"),
)


gender_selection = sa.Table(
    "gender_selection",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("unit_id", _KEY, nullable=False),
    sa.Column("experiment", _KEY, nullable=False, index=True),
    sa.Column("probe", sa.String(32), nullable=False),
    sa.Column("strength", sa.Float, nullable=False),
    sa.Column("seed", sa.Integer, nullable=False),
    sa.Column("config_hash", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("unit", sa.String(16)),
    sa.Column("w_name", _KEY),
    sa.Column("w_values", sa.Text),
    sa.Column("slope", sa.Float),
    sa.Column("slope_lo", sa.Float),
    sa.Column("slope_hi", sa.Float),
    sa.Column("intercept", sa.Float),
    sa.Column("r", sa.Float),
    sa.Column("r_lo", sa.Float),
    sa.Column("r_hi", sa.Float),
    sa.Column("p_value", sa.Float),
    sa.Column("curve", sa.Text),
    sa.Column("n_probes", sa.Integer),
    sa.Column("expected_slope", sa.Float),
    sa.Column("unit_slope", sa.Float),
    sa.Column("unit_r", sa.Float),
    sa.Column("unit_corr", sa.Float),
    sa.Column("label_slope", sa.Float),
    sa.Column("label_r", sa.Float),
    sa.Column("label_corr", sa.Float),
    sa.Column("label_curve", sa.Text),
    sa.Column("n_pool", sa.Integer),
    sa.Column("n_units", sa.Integer),
    sa.Column("n_selected", sa.Integer),
    sa.Column("n_examples", sa.Integer),
    sa.Column("n_train", sa.Integer),
    sa.Column("n_masks", sa.Integer),
    sa.Column("female_share", sa.Float),
    sa.Column("val_loss", sa.Float),
    sa.Column("val_acc", sa.Float),
    sa.Column("train_seconds", sa.Float),
    sa.Column("probe_seconds", sa.Float),
    sa.Column("unit_seconds", sa.Float),
    sa.Column("host", _KEY),
    sa.Column("started_at", sa.DateTime),
    sa.Column("finished_at", sa.DateTime),
    sa.UniqueConstraint("unit_id", "probe", name="uq_gender_selection_unit_probe"),
)


cfr_results = sa.Table(
    "cfr_results",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", _KEY, nullable=False, index=True),
    sa.Column("experiment", _KEY, nullable=False),
    sa.Column("data", sa.String(32), nullable=False),
    sa.Column("seed", sa.Integer, nullable=False),
    sa.Column("config_hash", sa.String(64), nullable=False),
    sa.Column("section", sa.String(32), nullable=False),
    sa.Column("method", sa.String(64), nullable=False),
    sa.Column("metric", sa.String(64), nullable=False),
    sa.Column("klass", _KEY),
    sa.Column("value", sa.Float),
    sa.Column("lo", sa.Float),
    sa.Column("hi", sa.Float),
    sa.Column("n_units", sa.Integer),
    sa.Column("n_train", sa.Integer),
    sa.Column("n_test", sa.Integer),
    sa.Column("encoder", _KEY),
    sa.Column("encode_seconds", sa.Float),
    sa.Column("seconds", sa.Float),
    sa.Column("host", _KEY),
    sa.Column("started_at", sa.DateTime),
    sa.Column("finished_at", sa.DateTime),
)
