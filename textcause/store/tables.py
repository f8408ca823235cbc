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


def _nullable(sql_type: Any, *names: str) -> list[sa.Column[Any]]:
    """A nullable column of ``sql_type`` for each name, in order."""
    return [sa.Column(name, sql_type) for name in names]


def _host_and_times() -> list[sa.Column[Any]]:
    """Where and when a row was made: ``host``, ``started_at``, ``finished_at``."""
    return [sa.Column("host", _KEY), *_nullable(sa.DateTime, "started_at", "finished_at")]


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
    *_host_and_times(),
    *_nullable(sa.Float, "train_seconds", "eval_seconds"),
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
    *_nullable(sa.Float, "slope", "slope_lo", "slope_hi", "intercept", "r", "r_lo", "r_hi", "p_value"),
    sa.Column("curve", sa.Text),
    sa.Column("n_probes", sa.Integer),
    *_nullable(sa.Float, "expected_slope", "unit_slope", "unit_r", "unit_corr", "label_slope", "label_r", "label_corr"),
    sa.Column("label_curve", sa.Text),
    *_nullable(sa.Integer, "n_pool", "n_units", "n_selected", "n_examples", "n_train", "n_masks"),
    *_nullable(sa.Float, "female_share", "val_loss", "val_acc", "train_seconds", "probe_seconds", "unit_seconds"),
    *_host_and_times(),
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
    *_nullable(sa.Float, "value", "lo", "hi"),
    *_nullable(sa.Integer, "n_units", "n_train", "n_test"),
    sa.Column("encoder", _KEY),
    *_nullable(sa.Float, "encode_seconds", "seconds"),
    *_host_and_times(),
)
