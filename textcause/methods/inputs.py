"""The task a method is evaluated on, and its inputs in the representation the method requests.

:func:`build_task` gives a cell's task exactly as :class:`textcause.data.CausalTextDataModule`
serves it (both come from :func:`textcause.data.build.build_data`), so a method and a built-in model
of the same cell see the same users, treatments, outcomes, split and features. :class:`TaskInputs`
gives the users' inputs as plain Python / numpy, ``X`` in the order of the indices asked for: raw
text (``representation=None``: each user a list of post strings, oldest first), a float32 CSR
matrix for the n-gram kinds, a dense array of topic proportions for ``lda``, per-user arrays of post
vectors for ``post_embeddings`` and per-post token states for ``post_tokens``. The table of
representations: docs/methods.md, "Representations".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from textcause.data.build import DataSettings, build_data, embed_texts
from textcause.features.kinds import NGRAM_KINDS

__all__ = [
    "TaskInputs",
    "build_task",
    "data_settings",
    "task_settings",
]

#: The data settings that change the task or a method's inputs (``data.<key>`` overrides of a grid);
#: the rest (batching, scaling, the encoder layer) only concern built-in models.
_DATA_KEYS = (
    "n_users",
    "min_posts",
    "max_posts",
    "outcome",
    "insertion",
    "min_users",
    "encoder",
    "max_tokens",
    "token_cap",
    "meta_filter",
    "held_out_bank",
)


def data_settings(overrides: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The ``data.<key>`` overrides of a cell that concern methods, as a dict (see :data:`_DATA_KEYS`).

    Other options (``trainer.*``, ``model.*``, data options that only change batching) do not
    concern methods and are ignored.

    Raises:
        ValueError: for ``data.observational``: methods are evaluated on semi-synthetic tasks only.
    """
    settings: dict[str, Any] = {}
    for key, value in overrides:
        name = key.lstrip("-")
        if name == "data.observational" and value:
            raise ValueError(
                "Methods are evaluated on semi-synthetic tasks only: the 'data.observational' option "
                "applies to model configs, not to methods."
            )
        if name.startswith("data.") and name[5:] in _DATA_KEYS:
            settings[name[5:]] = value
    return settings


def task_settings(
    source: str, task: str, level: int, seed: int, settings: dict[str, Any] | None = None, representation: str = "none"
) -> DataSettings:
    """The :class:`~textcause.data.build.DataSettings` of a cell for ``representation``."""
    return DataSettings(
        corpus=source, task=task, level=level, seed=seed, representation=representation, **(settings or {})
    )


def build_task(source: str, task: str, level: int, seed: int, settings: dict[str, Any] | None = None) -> Any:
    """The :class:`~textcause.simulation.SemiSyntheticTask` of a cell, exactly as the data module builds it.

    Args:
        source: a corpus short name or path.
        task: the task's name.
        level: its level.
        seed: the draw's seed.
        settings: :func:`data_settings` (default: none, i.e. :class:`~textcause.data.build.DataSettings`' defaults).
    """
    return build_data(task_settings(source, task, level, seed, settings)).task


class TaskInputs:
    """Users' inputs in one representation, built once per cell.

    Args:
        settings: the cell's data settings (corpus, task, level, seed, ...), as for its built-in models.
        representation: None (raw text) or a representation name (see the module docstring).
        options: the method's ``representation_options`` (``min_users``, ``encoder``, ``max_tokens``,
            ``token_cap``), overriding the cell's.
        needed: the users whose inputs will be asked for (embeddings are computed for these only).
    """

    def __init__(
        self,
        settings: DataSettings,
        representation: str | None,
        *,
        options: dict[str, Any] | None = None,
        needed: np.ndarray | None = None,
    ) -> None:
        self.representation = representation
        self.settings = dataclasses.replace(settings, representation=representation or "none", **(options or {}))
        self.task = build_data(dataclasses.replace(settings, representation="none")).task
        self.needed = None if needed is None else np.unique(np.asarray(needed, dtype=np.int64))
        self._rows: dict[int, Any] | None = None

    def take(self, indices: np.ndarray) -> Any:
        """The inputs of the users at ``indices`` (into the task), in that order."""
        idx = np.asarray(indices, dtype=np.int64)
        rep = self.representation
        if rep is None:
            return [list(self.task.texts[i]) for i in idx]
        if rep in NGRAM_KINDS:
            return build_data(self.settings).features[idx]
        if rep in ("post_embeddings", "post_tokens"):
            rows = self._embeddings()
            return [_copy(rows[int(i)]) for i in idx]
        raise ValueError(f"Unknown representation {rep!r}.")

    def _embeddings(self) -> dict[int, Any]:
        if self._rows is None:
            users = self.needed if self.needed is not None else np.arange(len(self.task))
            table, _ = embed_texts([self.task.texts[i] for i in users], self.settings)
            if self.representation == "post_tokens":
                off = table.token_offsets
                self._rows = {
                    int(u): [np.asarray(table.token_values[off[j] : off[j + 1]], dtype=np.float32) for j in ids]
                    for u, ids in zip(users, table.post_ids)
                }
            else:
                self._rows = {
                    int(u): np.asarray(table.vectors[ids], dtype=np.float32) for u, ids in zip(users, table.post_ids)
                }
        return self._rows


def _copy(value: Any) -> Any:
    return [a.copy() for a in value] if isinstance(value, list) else value.copy()
