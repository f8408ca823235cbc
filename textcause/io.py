"""How files are written: content keys and atomic writes (where they go: :mod:`textcause.paths`).

Every cache and result is written to a temporary file in the destination folder and renamed into
place, so a killed process leaves either the old file or the new one, never half a file.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "WRITE_CHUNK",
    "write_chunks",
    "content_key",
    "load_yaml",
    "check_unique_keys",
    "atomic_path",
    "atomic_write_text",
    "atomic_write_bytes",
    "atomic_write_json",
    "write_checked",
    "read_checked",
    "refuse_pickled_code",
    "damaged_sentence",
    "is_damaged_torch_file",
    "load_torch",
    "check_out_file",
    "check_out_folder",
    "load_npy",
]

#: Bytes per ``write()`` call of :func:`write_chunks`: single writes of several MiB into a new file
#: were measured many times slower per MiB than writes of 1 MiB or less (the figures:
#: ``benchmarks/README.md``, ``bench_scale.py``).
WRITE_CHUNK = 1 << 20


def write_chunks(fh: Any, data: Any) -> int:
    """Write the bytes-like ``data`` to the binary file ``fh`` in writes of at most
    :data:`WRITE_CHUNK` bytes (the same bytes as ``fh.write(data)``); return how many were written."""
    view = memoryview(data).cast("B")
    for start in range(0, len(view), WRITE_CHUNK):
        fh.write(view[start : start + WRITE_CHUNK])
    return len(view)


def content_key(*parts: Any) -> str:
    """A stable SHA-256 hex key of ``parts`` (JSON-serialisable values, bytes or str).

    Examples:
        >>> from textcause.io import content_key
        >>> len(content_key("corpus", 3))
        64
        >>> content_key("a", 1) == content_key("a", 1) != content_key("a", 2)
        True
    """
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, bytes):
            data = part
        elif isinstance(part, str):
            data = part.encode("utf-8")
        else:
            data = json.dumps(part, sort_keys=True, default=str).encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` through libyaml's parser when PyYAML was built with it (the same
    values, faster), except that a mapping that gives one key
    twice is refused (``safe_load`` silently keeps the last value). Text libyaml refuses is parsed
    again by PyYAML's own parser, so the error raised is ``safe_load``'s, with its line and caret.

    Raises:
        yaml.YAMLError: text that is not YAML; a ``yaml.constructor.ConstructorError`` for a key
            given twice in one mapping, whose one line names the key and both lines ("found
            duplicate key 'a' on line 3, first given on line 1: give each key once"). Keys merged in with ``<<:`` may be overridden, as YAML intends.

    Examples:
        >>> from textcause.io import load_yaml
        >>> load_yaml("{a: 1, b: [x, y]}")
        {'a': 1, 'b': ['x', 'y']}
        >>> load_yaml("{a: 1, a: 2}")
        Traceback (most recent call last):
            ...
        yaml.constructor.ConstructorError: found duplicate key 'a' on line 1, first given on line 1: give each key once
    """
    import yaml

    fast, slow = _unique_key_loaders()
    if fast is not None:
        try:
            return yaml.load(text, Loader=fast)
        except yaml.YAMLError:
            pass
    return yaml.load(text, Loader=slow)


def check_unique_keys(text: str) -> None:
    """Refuse YAML ``text`` whose mappings give a key twice (for loaders this package does not own).

    Text that is not YAML passes: the loader it is checked for reports that itself.

    Raises:
        yaml.constructor.ConstructorError: a duplicate key (see :func:`load_yaml`).
    """
    import yaml

    try:
        load_yaml(text)
    except yaml.constructor.ConstructorError as err:
        if str(getattr(err, "problem", "")).startswith("found duplicate key"):
            raise
    except yaml.YAMLError:
        pass


@functools.cache
def _unique_key_loaders() -> tuple[Any, Any]:
    """Safe loaders (libyaml's, or None without it; PyYAML's) that refuse a key given twice."""
    import yaml
    from yaml.constructor import ConstructorError

    def construct_mapping(self: Any, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    earlier = first.setdefault(key, key_node)
                except TypeError:  # an unhashable key: the safe constructor refuses it itself
                    continue
                if earlier is not key_node:
                    raise ConstructorError(  # no marks: the one line says where
                        problem=f"found duplicate key {key!r} on line {key_node.start_mark.line + 1}, first given "
                        f"on line {earlier.start_mark.line + 1}: give each key once"
                    )
        return yaml.SafeLoader.construct_mapping(self, node, deep=deep)

    def loader(base: Any) -> Any:
        return type(f"Unique{base.__name__}", (base,), {"construct_mapping": construct_mapping})

    fast = getattr(yaml, "CSafeLoader", None)
    return (loader(fast) if fast is not None else None), loader(yaml.SafeLoader)


@contextmanager
def atomic_path(dest: str | os.PathLike[str], suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``dest``; on success it is renamed onto ``dest``.

    On an exception the temporary file is removed and ``dest`` is untouched.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix + ".tmp", dir=dest.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; the result gets the mode a plain open() would give
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, dest)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(dest: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``dest`` atomically.

    Examples:
        >>> import tempfile, pathlib
        >>> from textcause.io import atomic_write_text
        >>> folder = tempfile.mkdtemp()
        >>> atomic_write_text(pathlib.Path(folder) / "note.txt", "done").read_text()
        'done'
    """
    with atomic_path(dest) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(dest)


def atomic_write_bytes(dest: str | os.PathLike[str], data: Any) -> Path:
    """Write the bytes-like ``data`` to ``dest`` atomically, in writes of at most :data:`WRITE_CHUNK`
    bytes (:func:`write_chunks`)."""
    with atomic_path(dest) as tmp, open(tmp, "wb") as fh:
        write_chunks(fh, data)
    return Path(dest)


def atomic_write_json(dest: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented JSON to ``dest`` atomically."""
    return atomic_write_text(dest, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


# ------------------------------------------------------------------------------------------- safe loads
_T = TypeVar("_T")


def write_checked(dest: str | os.PathLike[str], body: bytes) -> Path:
    """``body`` after a first line holding its SHA-256 (hex), written atomically; :func:`read_checked` reads it.

    For caches whose damage must be noticed when read: a bit flipped on disk or a file cut short
    no longer matches its checksum.
    """
    return atomic_write_bytes(dest, hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def read_checked(
    path: str | os.PathLike[str], parse: Callable[[bytes], _T], *, what: str, redo: str, stacklevel: int = 2
) -> _T | None:
    """The body of a file :func:`write_checked` wrote, through ``parse``; None when it must be rebuilt.

    A missing file is a plain miss. One that cannot be read, fails its checksum, or whose body
    ``parse`` refuses (any exception) is a miss named once in a warning: "Could not read the
    ``what`` '<path>' (<error>); ``redo``." or "Ignoring the ``what`` '<path>': <why>; ``redo`` again."

    Examples:
        >>> import tempfile, json
        >>> folder = tempfile.mkdtemp()
        >>> _ = write_checked(f"{folder}/c.json", b'{"a": 1}')
        >>> read_checked(f"{folder}/c.json", json.loads, what="cache", redo="computing it")
        {'a': 1}
        >>> read_checked(f"{folder}/none.json", json.loads, what="cache", redo="computing it") is None
        True
    """
    try:
        blob = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        warnings.warn(f"Could not read the {what} '{path}' ({err}); {redo}.", stacklevel=stacklevel + 1)
        return None
    try:
        recorded, _, body = blob.partition(b"\n")
        if hashlib.sha256(body).hexdigest().encode() != recorded:
            raise ValueError("it does not match its checksum")
        return parse(body)
    except Exception as err:  # damaged: a miss, named once
        warnings.warn(f"Ignoring the {what} '{path}': {err}; {redo} again.", stacklevel=stacklevel + 1)
        return None


def _refused_sentence(path: Any, what: str = "checkpoint") -> str:
    """The one sentence for a file whose pickled objects a plain load refused (never unpickled)."""
    return (
        f"The {what} '{path}' was refused: it holds objects that a weights-only load does not allow "
        f"(it is not a plain {what} of this tool, or it was crafted); load only files you trust."
    )


@contextmanager
def refuse_pickled_code(path: Any, what: str = "checkpoint") -> Iterator[None]:
    """Run a load whose refusal of pickled code (``pickle.UnpicklingError``, as ``torch.load(...,
    weights_only=True)`` raises it) becomes one ``ValueError`` sentence naming the file."""
    import pickle

    try:
        yield
    except pickle.UnpicklingError:
        raise ValueError(_refused_sentence(path, what)) from None


def damaged_sentence(path: Any, what: str = "checkpoint") -> str:
    """The one sentence for a torch file that cannot be read whole (truncated, or not a torch file)."""
    return (
        f"The {what} '{path}' is damaged or truncated: it cannot be read as a torch file (a copy or save that "
        "did not finish?); use another one or train again."
    )


def is_damaged_torch_file(err: BaseException) -> bool:
    """Whether ``torch.load`` raised ``err`` because its file is cut short or not a torch archive."""
    if isinstance(err, EOFError):
        return True
    if isinstance(err, RuntimeError):
        return "PytorchStreamReader" in str(err) or "zip archive" in str(err)
    return isinstance(err, OSError) and err.errno == errno.EINVAL and not err.filename


def load_torch(path: str | os.PathLike[str], what: str = "checkpoint") -> Any:
    """``torch.load(path, map_location="cpu", weights_only=True)``: plain values and tensors only.

    Every file the package reads with ``torch.load`` goes through here
    (``tests/test_load_sites.py`` says so).

    Raises:
        ValueError: the file holds objects a weights-only load refuses (code would have run), or it is
            truncated or no torch file (:func:`damaged_sentence`).
    """
    import torch

    with refuse_pickled_code(path, what):
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except (EOFError, RuntimeError, OSError) as err:
            if is_damaged_torch_file(err):
                raise ValueError(damaged_sentence(path, what)) from None
            raise


def check_out_file(path: str | os.PathLike[str], option: str = "--out") -> Path:
    """Refuse, before any work, an output file path that names a folder or lies under a file.

    Raises:
        ValueError: one sentence naming the option as the user typed it.
    """
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"{option} '{out}' is a folder: give the CSV file to write.")
    _check_parents(out, option)
    return out


def check_out_folder(path: str | os.PathLike[str], option: str = "--out", purpose: str = "") -> Path:
    """Refuse, before any work, an output folder path that names an existing file or lies under one.

    Raises:
        ValueError: one sentence naming the option as the user typed it (``purpose``: what the folder is for).
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{option} '{out}' is a file: give a folder{purpose}.")
    _check_parents(out, option)
    return out


def _check_parents(out: Path, option: str) -> None:
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{option} '{out}' lies under '{parent}', a file.")
            return


def load_npy(path: Any, what: str = "array file", **kwargs: Any) -> Any:
    """``np.load(path, allow_pickle=False, **kwargs)``, whose refusal of a pickled object array is one
    ``ValueError`` sentence naming the file."""
    import numpy as np

    try:
        return np.load(path, allow_pickle=False, **kwargs)
    except ValueError as err:
        if "allow_pickle" in str(err):
            raise ValueError(_refused_sentence(path, what)) from None
        raise
