"""Check every cell of a grid before the first fit: a wrong model, corpus or override is one sentence.

A grid whose cells cannot run (an unknown model, a corpus that is not there, ``data.n_users: -3``,
a misspelt option) used to start, record every such cell as failed, and exit 0. :func:`check_cells`
finds these mistakes first, cheaply, without fitting or reading a corpus:

* each model config exists and parses as a YAML mapping (a duplicate key refused too);
* each corpus resolves: a short name's file under the data root, or a path, exists (a name that is
  neither, such as a Hugging Face dataset, is left to the reader);
* each distinct set of train.py options (the model config's, then the grid's overrides and the
  cell's corpus, task, level and seed) has known top-level keys, known ``data.*`` keys of the
  default data module (with the closest name suggested) and data values the data module accepts.

Options of the model (``model.init_args.*``) and the trainer are checked by the fit itself.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from textcause.grid.cell import Cell
from textcause.paths import CORPORA, resolve_corpus
from textcause.run.settings import run_config

__all__ = [
    "TOP_LEVEL",
    "check_cells",
]

#: The top-level keys of a train.py config that a grid may override.
TOP_LEVEL = ("data", "model", "trainer", "seed_everything", "ckpt_path")
#: The data module every model config uses unless it names its own ``class_path``.
_DEFAULT_DATA = "textcause.data.CausalTextDataModule"
_CORPUS_FILES = (".jsonl", ".gz", ".json", ".csv", ".parquet", ".ndjson")


def check_cells(cells: Sequence[Cell], source: str) -> None:
    """Refuse, in one sentence, the first problem of any model-config cell of ``cells``.

    Args:
        cells: the grid's cells (method cells are checked when the grid loads: they are imported).
        source: the grid's file, for the message.

    Raises:
        ValueError: a missing or unreadable model config, a corpus that does not resolve, an
            unknown option key or an invalid data value; the message names the grid, the cell and
            the problem, and how many cells share it.
    """
    problems: dict[str, list[str]] = {}
    memo: dict[str, str | None] = {}
    for cell in cells:
        if cell.method is not None:
            continue
        problem = _model_problem(Path(cell.model_path), cell.model) or _corpus_problem(cell.source)
        if problem is None:
            problem = _options_problem(cell, memo)
        if problem is not None:
            problems.setdefault(problem, []).append(cell.cell_id)
    if problems:
        problem, ids = next(iter(problems.items()))
        more = len(ids) - 1 + sum(len(v) for v in list(problems.values())[1:])
        others = f" ({more} more cell{'s' if more != 1 else ''} cannot run either)" if more else ""
        raise ValueError(f"Benchmark config '{source}': cell {ids[0]} cannot run: {problem}{others}; nothing was run.")


@functools.lru_cache(maxsize=64)
def _model_problem(path: Path, model: str) -> str | None:
    from textcause.io import load_yaml

    if not path.is_file():
        return f"there is no model config '{model}' (expected a YAML file at {path})"
    try:
        config = load_yaml(path.read_text(encoding="utf-8"))
    except Exception as err:  # yaml errors, unreadable or non-UTF-8 files
        return f"the model config {path} cannot be read ({' '.join(str(err).split())[:200]})"
    if not isinstance(config, dict):
        return f"the model config {path} is not a YAML mapping of train.py options"
    return None


@functools.lru_cache(maxsize=64)
def _corpus_problem(source: str) -> str | None:
    resolved = resolve_corpus(source)
    if Path(resolved).exists():
        return None
    if source in CORPORA:
        return f"the corpus '{source}' is not at {resolved} (set TEXTCAUSE_DATA to the folder of the corpora)"
    if source.endswith(_CORPUS_FILES) or source.startswith((".", "/", "~")):
        return f"the corpus file {source!r} does not exist"
    return None  # a Hugging Face dataset name: the reader decides


def _options_problem(cell: Cell, memo: dict[str, str | None]) -> str | None:
    config = run_config(cell.run_settings(Path("<run>")))
    for key in config:
        if key not in TOP_LEVEL:
            return f"the option {key!r} is not a train.py option{_suggest(key, TOP_LEVEL)}"
    data = config.get("data")
    if not isinstance(data, Mapping) or data.get("class_path", _DEFAULT_DATA) != _DEFAULT_DATA:
        return None  # a data module of its own: its options are its own
    args = {k: v for k, v in data.get("init_args", data).items() if k != "class_path"}
    key = repr(sorted(args.items(), key=lambda kv: kv[0]))
    if key not in memo:
        memo[key] = _data_problem(args)
    return memo[key]


def _data_problem(args: Mapping[str, Any]) -> str | None:
    from textcause.data import CausalTextDataModule  # its constructor only checks values

    known = [p for p in inspect.signature(CausalTextDataModule.__init__).parameters if p != "self"]
    for name in args:
        if name not in known:
            return f"the option 'data.{name}' is not an option of the data module{_suggest(name, known, 'data.')}"
    try:
        CausalTextDataModule(**args)
    except (ValueError, TypeError) as err:
        return f"its data options are invalid ({' '.join(str(err).split())})"
    return None


def _suggest(name: str, known: Sequence[str], prefix: str = "") -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""
