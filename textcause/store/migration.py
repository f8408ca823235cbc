"""Renamed result columns in an existing results store: :func:`rename_old_columns`.

A ``results`` table written before a column of :data:`textcause.metrics.schema.RENAMED_COLUMNS` got
its name now is migrated when the store is opened (:func:`textcause.store.open_store`): the old
column is renamed (``ALTER TABLE ... RENAME COLUMN``, SQLite 3.25+ and PostgreSQL), or, where a table
somehow holds both names, copied into the new one where that is empty and then dropped. The rows of
estimators outside :data:`~textcause.metrics.schema.AD_ESTIMATORS` lose the Arbour-Dimmery columns'
values in the same step: older code copied the IPW-centred interval onto every estimator's row, and
the IPW row keeps it. Everything happens in one transaction (DDL is transactional on both
databases), so a store is either migrated whole or left exactly as it was.
"""

from __future__ import annotations

import sqlalchemy as sa

from textcause.metrics.schema import AD_COLUMNS, AD_ESTIMATORS, RENAMED_COLUMNS

__all__ = [
    "rename_old_columns",
]


def rename_old_columns(engine: sa.Engine, table: str = "results") -> list[str]:
    """Give the columns of :data:`~textcause.metrics.schema.RENAMED_COLUMNS` their new names in ``table``.

    Call it under :func:`textcause.store.schema_lock` (``connect`` does). A table without any
    old column is left alone, so a second call changes nothing.

    Returns:
        The old names that were migrated (empty when none was there, or the table does not exist).
    """
    q = engine.dialect.identifier_preparer.quote
    with engine.begin() as conn:
        inspector = sa.inspect(conn)
        if not inspector.has_table(table):
            return []
        have = {c["name"] for c in inspector.get_columns(table)}
        old = [name for name in RENAMED_COLUMNS if name in have]
        for name in old:
            new = RENAMED_COLUMNS[name]
            if new in have:
                conn.exec_driver_sql(f"UPDATE {q(table)} SET {q(new)} = {q(name)} WHERE {q(new)} IS NULL")
                conn.exec_driver_sql(f"ALTER TABLE {q(table)} DROP COLUMN {q(name)}")
            else:
                conn.exec_driver_sql(f"ALTER TABLE {q(table)} RENAME COLUMN {q(name)} TO {q(new)}")
        now = (have - set(old)) | {RENAMED_COLUMNS[name] for name in old}
        blank = [c for c in AD_COLUMNS if c in now]
        if old and blank:
            clear = ", ".join(f"{q(c)} = NULL" for c in blank)
            conn.execute(
                sa.text(f"UPDATE {q(table)} SET {clear} WHERE estimator IS NULL OR estimator NOT IN :keep").bindparams(
                    sa.bindparam("keep", expanding=True)
                ),
                {"keep": list(AD_ESTIMATORS)},
            )
    return old
