"""Hugging Face ``datasets`` input: a ``save_to_disk`` folder or a builder on local files.

A dataset may hold history rows (a user id column and a ``posts`` list of ``{text, time}`` structs
or strings, optionally ``meta``) or flat comment rows (author / text / time columns); both become
the same records as the JSON Lines and table readers give. ``datasets`` is imported only here, and
only when a Hugging Face source is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from textcause.corpus.jsonl import IdSpellings, Record, history_record, is_integer_id, iter_json_lines, unique_users
from textcause.paths import cache_root

__all__ = [
    "DataFiles",
    "dataset_records",
    "is_saved_dataset",
    "json_data_files",
    "load_hf_dataset",
]

#: Files that mark a ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk`` folder.
_SAVED_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")

#: The builder that reads a local file of each extension.
_BUILDERS = {".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".parquet": "parquet"}

DataFiles = str | Sequence[str] | Mapping[str, str | Sequence[str]]


def is_saved_dataset(path: Path) -> bool:
    """Whether ``path`` is a folder written by ``save_to_disk``."""
    return path.is_dir() and (
        (path / "dataset_dict.json").is_file()
        or ((path / "dataset_info.json").is_file() and (path / "state.json").is_file())
    )


def _builder_for(path: str) -> str | None:
    """The packaged builder (``csv``, ``json``, ``parquet``) for a local file name, if any."""
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return _BUILDERS.get(Path(name).suffix)


def load_hf_dataset(
    source: str,
    *,
    split: str = "train",
    builder: str | None = None,
    data_files: DataFiles | None = None,
    csv_options: Mapping[str, Any] | None = None,
) -> Any:
    """Load one split of a Hugging Face dataset as a ``datasets.Dataset``.

    Args:
        source: a ``save_to_disk`` folder, a local data file (its builder is inferred from the
            extension) or, with ``builder``, a provenance label; otherwise a dataset name, which
            ``datasets.load_dataset`` resolves from its local cache (nothing is downloaded when
            ``HF_HUB_OFFLINE=1``).
        split: the split to take from a ``DatasetDict``.
        builder: a packaged builder such as ``"json"``, ``"csv"`` or ``"parquet"``.
        data_files: the files for ``builder`` (default: ``source``).
        csv_options: extra ``pandas.read_csv`` options for the ``csv`` builder.

    Raises:
        FileNotFoundError: the data files do not exist.
        ValueError: the split does not exist, or the dataset cannot be loaded.
    """
    import datasets

    path = Path(source)
    saved = builder is None and is_saved_dataset(path)
    if builder is None and not saved and path.is_file():
        builder = _builder_for(str(path))
        if builder is None:
            raise ValueError(
                f"Cannot tell which Hugging Face builder reads '{source}': pass hf_builder='json', 'csv' or 'parquet'."
            )
    try:
        if saved:
            ds = datasets.load_from_disk(str(path))
        else:
            if builder is None:
                ds = datasets.load_dataset(source, cache_dir=str(cache_root() / "hf-datasets"))
            else:
                files = data_files if data_files is not None else str(source)
                ds = datasets.load_dataset(
                    builder,
                    data_files=files,
                    cache_dir=str(cache_root() / "hf-datasets"),
                    **(dict(csv_options or {}) if builder == "csv" else {}),
                )
    except FileNotFoundError as e:
        raise FileNotFoundError(
            f"No Hugging Face dataset found at '{source}' ({e}): give a save_to_disk folder, "
            "hf_builder with existing data_files, or a dataset in the local Hugging Face cache."
        ) from None
    except ConnectionError as e:
        raise ValueError(
            f"The Hugging Face dataset '{source}' is not available offline ({type(e).__name__}): "
            "save it with save_to_disk and give that folder instead."
        ) from None
    except Exception as e:  # damaged files, a builder that cannot parse them, ...: never a raw traceback
        cause = e.__cause__ or e.__context__
        detail = type(e).__name__ + (f" caused by {type(cause).__name__}" if cause is not None else "")
        raise ValueError(
            f"The Hugging Face dataset '{source}' could not be loaded ({detail}): check that its files are "
            "complete and in the builder's format."
        ) from None
    if isinstance(ds, (datasets.DatasetDict, dict)):
        if split not in ds:
            raise ValueError(
                f"Split {split!r} is not in the Hugging Face dataset '{source}'; its splits are "
                f"{sorted(ds)}: pass hf_split=<one of them>."
            )
        ds = ds[split]
    return ds


def _check_id_type(ds: Any, key: str, where: str, json_files: Sequence[str]) -> None:
    """Apply :class:`~textcause.corpus.jsonl.IdSpellings` to an id column the ``json`` builder stored as JSON.

    ``datasets`` keeps a column of values of several types as JSON text and reads the string ``"1"``
    back as the integer ``1``: ids written both ways can no longer be told apart in the dataset, so
    the rule is checked on ``json_files`` (the local files the builder read) instead.

    Raises:
        ValueError: an id written both as an integer and as a string in those files, or such a
            column with no local files to check.
    """
    feature = ds.features.get(key) if key in ds.column_names else None
    if feature is None or type(feature).__name__ != "Json":
        return
    if not json_files:
        raise ValueError(
            f"The {key!r} column of {where} holds ids of more than one JSON type, which the Hugging Face json "
            'builder cannot keep apart (it reads the string "1" back as the integer 1): write every id one way '
            "(all integers or all strings), or read the file with format='jsonl' or 'ndjson'."
        )
    for path in json_files:
        spellings = IdSpellings(f"'{path}'")
        for n, obj in iter_json_lines(path):
            value = obj.get(key)
            if isinstance(value, str) or is_integer_id(value):
                spellings.see(str(value), is_integer_id(value), f"line {n}")


def json_data_files(source: str, builder: str | None, data_files: DataFiles | None) -> list[str]:
    """The local files a ``json`` builder reads for ``source`` (empty when unknown or not json)."""
    if builder is None and data_files is None and Path(source).is_file() and _builder_for(source) == "json":
        return [source]
    if builder != "json":
        return []
    files = [data_files] if isinstance(data_files, str) else data_files if isinstance(data_files, (list, tuple)) else []
    files = files if data_files is not None else [source]
    return [str(f) for f in files if isinstance(f, str) and Path(f).is_file()]


def dataset_records(
    ds: Any, where: str, author_col: str, text_col: str, time_col: str | None, json_files: Sequence[str] = ()
) -> list[Record]:
    """Turn a ``datasets.Dataset`` of history rows or flat comment rows into records.

    History rows are recognised by a ``posts`` column; their user id is ``user_id`` (or
    ``author_col`` when there is no ``user_id``). ``json_files`` are the local files a ``json``
    builder read (:func:`json_data_files`), to check its ids' spellings.

    Raises:
        ValueError: what the history and table readers refuse; an id column of several JSON types
            (:func:`_check_id_type`); text that is not valid UTF-8 (pyarrow's JSON reader does not
            check it) or that Arrow cannot convert. Never a raw ``UnicodeDecodeError`` or Arrow error.
    """
    import pyarrow as pa

    for key in ("user_id", author_col):
        _check_id_type(ds, key, where, json_files)
    try:
        return _records(ds, where, author_col, text_col, time_col)
    except UnicodeDecodeError:
        bad = True
    except pa.ArrowException as e:  # ArrowInvalid is also a ValueError: never passed on as one
        bad = "utf8" in str(e).lower().replace("-", "")
        if not bad:
            raise ValueError(
                f"{where} could not be read: Arrow cannot convert its values ({type(e).__name__})."
            ) from None
    raise ValueError(f"{where} could not be read: it holds text that is not valid UTF-8.")


def _records(ds: Any, where: str, author_col: str, text_col: str, time_col: str | None) -> list[Record]:
    """:func:`dataset_records` without the translation of decoding errors."""
    columns = list(ds.column_names)
    if "posts" not in columns:
        from textcause.corpus.tables import check_columns, table_records  # pandas: only for a table's rows

        needed = [c for c in (author_col, text_col, time_col) if c is not None]
        check_columns(columns, where, author_col, text_col, time_col)
        return table_records(
            ds.select_columns(list(dict.fromkeys(needed))).to_pandas(), where, author_col, text_col, time_col
        )
    id_key = "user_id" if "user_id" in columns else author_col
    if id_key not in columns:
        raise ValueError(
            f"The history rows of {where} have no 'user_id' or {author_col!r} column; its columns are "
            f"{columns}: pass author_col=<the user id column>."
        )

    def rows() -> Iterator[tuple[str, Record, bool]]:
        row = 0
        for batch in ds.iter(batch_size=1000):
            n = len(batch[id_key])
            for i in range(n):
                obj = {key: batch[key][i] for key in batch}
                record = history_record(obj, f"Row {row} of {where}", id_key=id_key)
                yield f"row {row}", record, is_integer_id(obj[id_key])
                row += 1

    return list(unique_users(rows(), where))
