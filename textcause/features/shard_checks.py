"""How a shard of the post-embedding cache is checked: its manifest, its files' sizes and hashes, finite values.

A shard's manifest (``<shard>.manifest.json``) records its rows and, for every file (``keys`` and
the data files), its size and SHA-256. :func:`read_manifest` reads it (None for a shard of the old
code, which has none), :func:`check_arrays` checks the memory-mapped arrays (dtype, shape, offsets,
every value finite) and :func:`check_hashes` the files' bytes, once per process (:data:`HASHED`),
adopting an old shard by writing its manifest. Every failure is a :class:`DamagedShard` naming the
file; :class:`textcause.features.embed_cache.ShardStore` reports it and sets the shard aside.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from textcause.io import atomic_path, atomic_write_json, write_chunks

__all__ = [
    "DamagedShard",
    "HASHED",
    "MANIFEST_VERSION",
    "VERIFY_MODES",
    "all_finite",
    "check_arrays",
    "check_hashes",
    "file_sha256",
    "hash_key",
    "npy_bytes",
    "read_manifest",
    "save_bytes",
]

MANIFEST_VERSION = 1
#: How shards are checked when first used: ``"hash"`` (sizes, shapes, finite values and SHA-256,
#: once per process) or ``"fast"`` (all but the hashes).
VERIFY_MODES = ("hash", "fast")
#: Files whose hash matched in this process: (path, size, mtime_ns).
HASHED: set[tuple[str, int, int]] = set()
_CHUNK = 1 << 23


class DamagedShard(Exception):
    """A shard failed a check; ``str(err)`` says which file and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} {reason}")
        self.path, self.reason = path, reason


def npy_bytes(arr: np.ndarray) -> bytes:
    """The ``.npy`` file of ``arr``, in memory."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def save_bytes(dest: Path, data: bytes) -> dict[str, Any]:
    """Write ``data`` to ``dest`` atomically (fsynced); return its manifest entry."""
    with atomic_path(dest) as tmp, open(tmp, "wb") as fh:
        write_chunks(fh, data)
        fh.flush()
        os.fsync(fh.fileno())
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 hex digest of a file, read in 8 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def all_finite(arr: np.ndarray, dtype: str) -> bool:
    """Whether every stored value is finite (bfloat16 bits: exponent not all ones), in chunks."""
    flat = arr.reshape(-1)
    for lo in range(0, flat.shape[0], _CHUNK):
        block = np.asarray(flat[lo : lo + _CHUNK])
        if dtype == "bfloat16":
            if np.any((block & np.uint16(0x7F80)) == np.uint16(0x7F80)):
                return False
        elif not np.isfinite(block).all():
            return False
    return True


def hash_key(path: Path) -> tuple[str, int, int]:
    """What :data:`HASHED` remembers of a file: its path, size and modification time."""
    st = path.stat() if path.exists() else None
    return (str(path), st.st_size, st.st_mtime_ns) if st else (str(path), -1, -1)


def read_manifest(folder: Path, name: str, files: tuple[str, ...]) -> dict[str, Any] | None:
    """The manifest of shard ``name`` (None: an old shard without one); ``files``: its file suffixes."""
    path = folder / f"{name}.manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None  # a shard of the old code: adopted once it passes the checks
    except (OSError, ValueError) as err:
        raise DamagedShard(path, f"is not a readable manifest ({err})") from None
    entries = manifest.get("files") if isinstance(manifest, dict) else None
    if (
        not isinstance(manifest, dict)
        or not isinstance(entries, dict)
        or set(entries) != set(files)
        or not all(isinstance(e, dict) and {"bytes", "sha256"} <= set(e) for e in entries.values())
        or not isinstance(manifest.get("rows"), int)
    ):
        raise DamagedShard(path, "is not a manifest of this store's shards")
    return manifest


def check_arrays(
    folder: Path, name: str, kind: str, dtype: str, dim: int | None, n: int, arrays: dict[str, np.ndarray]
) -> None:
    """Check a shard's memory-mapped arrays: dtype, shape, width, offsets, every value finite."""
    stored = np.float16 if dtype == "float16" else np.uint16
    suffix = "vec" if kind == "pooled" else "tok"
    values, vpath = arrays[suffix], folder / f"{name}.{suffix}.npy"
    if values.dtype != stored or values.ndim != 2:
        raise DamagedShard(vpath, f"holds a {values.dtype} array of shape {values.shape}, not 2-D {dtype}")
    if dim is not None and values.shape[1] != dim:
        raise DamagedShard(vpath, f"has rows of width {values.shape[1]}, not {dim}")
    if kind == "pooled" and values.shape[0] != n:
        raise DamagedShard(vpath, f"has {values.shape[0]} rows for {n} keys")
    if kind == "tokens":
        off, opath = np.asarray(arrays["off"]), folder / f"{name}.off.npy"
        if off.dtype != np.int64 or off.shape != (n + 1,):
            raise DamagedShard(opath, f"holds a {off.dtype} array of shape {off.shape}, not ({n + 1},) int64")
        if off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] != values.shape[0]:
            raise DamagedShard(opath, f"has offsets that do not index the {values.shape[0]} token rows")
    if not all_finite(values, dtype):
        raise DamagedShard(vpath, "holds NaN or infinite values")


def check_hashes(
    folder: Path, name: str, files: tuple[str, ...], manifest: dict[str, Any] | None, header: dict[str, Any]
) -> None:
    """Check a shard's files against its manifest's hashes (once per process); adopt an old shard.

    An old shard (``manifest`` None) that passed the other checks gets a manifest of its files as
    they are (``header`` holds its other fields), so a later change is caught.
    """
    paths = {s: folder / f"{name}.{s}.npy" for s in files}
    if manifest is None:
        entries = {s: {"bytes": p.stat().st_size, "sha256": file_sha256(p)} for s, p in paths.items()}
        with contextlib.suppress(OSError):  # a read-only cache: verified, just not recorded
            atomic_write_json(
                folder / f"{name}.manifest.json",
                {"version": MANIFEST_VERSION, **header, "files": entries, "adopted": True},
            )
        HASHED.update(hash_key(p) for p in paths.values())
        return
    for suffix, path in paths.items():
        key = hash_key(path)
        if key in HASHED:
            continue
        entry = manifest["files"][suffix]
        if key[1] != entry["bytes"]:
            raise DamagedShard(path, f"has {key[1]} bytes, not the {entry['bytes']} of its manifest")
        if file_sha256(path) != entry["sha256"]:
            raise DamagedShard(path, "does not match the checksum in its manifest (the file was altered)")
        HASHED.add(key)
