"""The on-disk shards of the post-embedding cache: content keys in, memory-mapped rows out.

A :class:`ShardStore` is a folder of shards. A shard (``shard-00017-1a2b3c4d``) is a set of ``.npy``
files, each written to a temporary file renamed into place, its keys file (one 16-byte BLAKE2b
digest of each post's UTF-8 text per row) LAST, so a shard exists exactly when its keys file does;
the tag is a hash of its keys, so concurrent writers never clobber each other. Two kinds share the
scheme: ``"pooled"`` (``.vec.npy``, (n, d) post vectors) and ``"tokens"`` (``.tok.npy`` token states
and ``.off.npy`` offsets). Values are float16 or bfloat16 (as uint16 bits); reads are memory-mapped
and return float32 (or float16 when asked).

Each shard has a manifest (rows, every file's size and SHA-256), checked when the shard is first used
(:mod:`textcause.features.shard_checks`; ``verify="hash"`` by default). A damaged shard is reported in
one warning, moved to ``damaged/`` and its posts are encoded again, never used;
:meth:`ShardStore.verify` checks every shard on demand. When two shards hold the same post, every
process reads the one with the smallest name.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import os
import re
import time
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from textcause.features.shard_checks import (
    HASHED,
    MANIFEST_VERSION,
    VERIFY_MODES,
    DamagedShard,
    check_arrays,
    check_hashes,
    hash_key,
    npy_bytes,
    read_manifest,
    save_bytes,
)
from textcause.io import atomic_write_json
from textcause.validation import check_options

__all__ = [
    "DTYPES",
    "ShardStore",
    "from_storage",
    "post_key",
    "ranges",
    "to_storage",
]

_KIND_FILES = {"pooled": ("vec",), "tokens": ("tok", "off")}
DTYPES = ("float16", "bfloat16")
_KEY_BYTES = 16
_SHARD_RE = re.compile(r"^(shard-(\d{5,})-[0-9a-f]{8})\.keys\.npy$")
_SWEEP_AGE_S = 3600.0


def post_key(text: str) -> bytes:
    """The 16-byte content key of one post: BLAKE2b of its UTF-8 text."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=_KEY_BYTES).digest()


def to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 -> float16, or -> bfloat16 bits (uint16, round to nearest even)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16)
    bits = x.view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    stored: np.ndarray = (rounded >> np.uint32(16)).astype(np.uint16)
    return stored


def from_storage(x: np.ndarray, dtype: str, out_dtype: type = np.float32) -> np.ndarray:
    """The inverse of :func:`to_storage`, as ``out_dtype`` (float32, or float16 for float16 stores)."""
    if dtype == "float16":
        return np.asarray(x, dtype=out_dtype)
    f32 = (np.asarray(x, dtype=np.uint32) << np.uint32(16)).view(np.float32)
    out: np.ndarray = f32.astype(out_dtype, copy=False)
    return out


class ShardStore:
    """The shards of one folder, with an in-memory index from post key to (shard, row).

    Args:
        folder: the store's folder (created on demand).
        kind: ``"pooled"`` or ``"tokens"``.
        dtype: ``"float16"`` or ``"bfloat16"`` (how values are stored).
        dim: the width every shard's rows must have (None: not checked).
        verify: ``"hash"`` or ``"fast"`` (see :data:`VERIFY_MODES`).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        kind: str,
        dtype: str = "float16",
        *,
        dim: int | None = None,
        verify: str = "hash",
    ) -> None:
        if kind not in _KIND_FILES:
            raise ValueError(f"Unknown shard store kind {kind!r}: choose 'pooled' or 'tokens'.")
        check_options(dtype, "dtype", "ShardStore", DTYPES)
        check_options(verify, "verify", "ShardStore", VERIFY_MODES)
        self.folder, self.kind, self.dtype, self.dim, self.verify_mode = Path(folder), kind, dtype, dim, verify
        self._files = ("keys", *_KIND_FILES[kind])
        self.folder.mkdir(parents=True, exist_ok=True)
        self._names: list[str] = []
        self._keys: list[bytes] = []  # each shard's keys, concatenated
        self._arrays: list[dict[str, np.ndarray] | None] = []
        self._dead: set[int] = set()  # shards found damaged or gone: never read
        self._index: dict[bytes, int] = {}  # key -> global row (shard rows laid end to end)
        self._starts: list[int] = []
        self._size = 0
        self._next_seq = 0
        self.damaged: list[str] = []  # the shards this instance set aside
        self._sweep()
        self.refresh()

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: bytes) -> bool:
        return key in self._index

    @property
    def shard_names(self) -> list[str]:
        return [n for i, n in enumerate(self._names) if i not in self._dead]

    def refresh(self) -> int:
        """Index shards finished since the last scan (by this or another process); return how many.

        A shard whose keys file is unreadable, or whose files' sizes differ from its manifest, is
        set aside (see :meth:`check`).
        """
        known = set(self._names)
        found = []
        for entry in os.scandir(self.folder):
            m = _SHARD_RE.match(entry.name)
            if m:
                self._next_seq = max(self._next_seq, int(m.group(2)) + 1)
                if m.group(1) not in known:
                    found.append(m.group(1))
        added = 0
        for name in sorted(found):
            try:
                keys = self._read_keys(name)
            except FileNotFoundError:  # set aside by another process meanwhile
                continue
            except DamagedShard as err:
                self._set_aside(name, err)
                continue
            self._add(name, keys)
            added += 1
        return added

    def _read_keys(self, name: str) -> np.ndarray:
        path = self.folder / f"{name}.keys.npy"
        manifest = read_manifest(self.folder, name, self._files)
        if manifest is not None:
            for suffix, entry in manifest["files"].items():
                size = (self.folder / f"{name}.{suffix}.npy").stat().st_size
                if size != entry["bytes"]:
                    raise DamagedShard(
                        self.folder / f"{name}.{suffix}.npy",
                        f"has {size} bytes, not the {entry['bytes']} of its manifest",
                    )
        try:
            keys: np.ndarray = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise
        except (OSError, ValueError, EOFError) as err:
            raise DamagedShard(path, f"is not a readable keys file ({err})") from None
        if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != _KEY_BYTES:
            raise DamagedShard(path, f"holds a {keys.dtype} array of shape {keys.shape}, not (n, {_KEY_BYTES}) uint8")
        if manifest is not None and keys.shape[0] != manifest["rows"]:
            raise DamagedShard(path, f"holds {keys.shape[0]} keys, not the {manifest['rows']} of its manifest")
        return keys

    def _add(self, name: str, keys: np.ndarray) -> None:
        base = self._size
        self._names.append(name)
        self._arrays.append(None)
        self._starts.append(base)
        raw = np.ascontiguousarray(keys, dtype=np.uint8).tobytes()
        self._keys.append(raw)
        n = len(raw) // _KEY_BYTES
        index = self._index
        for row in range(n):
            key = raw[row * _KEY_BYTES : (row + 1) * _KEY_BYTES]
            old = index.setdefault(key, base + row)
            if old != base + row and self._names[self._shard_of(old)] > name:
                index[key] = base + row  # the same post in two shards: every process reads the smallest name's
        self._size = base + n

    def _shard_of(self, row: int) -> int:
        return bisect.bisect_right(self._starts, row) - 1

    def _rebuild_index(self) -> None:
        self._index = {}
        for shard in sorted(range(len(self._names)), key=self._names.__getitem__):
            if shard in self._dead:
                continue
            raw, base = self._keys[shard], self._starts[shard]
            for row in range(len(raw) // _KEY_BYTES):
                self._index.setdefault(raw[row * _KEY_BYTES : (row + 1) * _KEY_BYTES], base + row)

    def check(self, keys: Iterable[bytes] | None = None) -> list[str]:
        """Open and verify every shard holding one of ``keys`` (None: every shard); return the damaged.

        A damaged shard is reported (one warning naming the file), moved to ``damaged/`` and
        dropped from the index, so its posts count as missing and are encoded again.
        """
        unopened = {i for i, a in enumerate(self._arrays) if a is None} - self._dead
        if not unopened:
            return []
        if keys is None:
            shards = unopened
        else:
            starts = self._starts
            rows = [self._index[k] for k in keys if k in self._index]
            shards = {bisect.bisect_right(starts, r) - 1 for r in rows} & unopened
        bad, dropped = [], False
        for shard in sorted(shards):
            try:
                self._arrays[shard] = self._open(shard)
                continue
            except FileNotFoundError:  # set aside by another process: its posts are missing here too
                pass
            except DamagedShard as err:
                self._set_aside(self._names[shard], err)
                bad.append(self._names[shard])
            self._dead.add(shard)
            dropped = True
        if dropped:  # a post of a dropped shard may be in another one: index (and check) that, else it is missing
            self._rebuild_index()
            bad += self.check(keys)
        return bad

    def verify(self) -> list[str]:
        """Check every shard now, hashes included (whatever ``verify`` says); return the damaged ones."""
        mode, self.verify_mode = self.verify_mode, "hash"
        try:
            self.refresh()
            for shard in range(len(self._names)):  # reopen: a check of the files as they are now
                if shard not in self._dead:
                    self._arrays[shard] = None
                    for suffix in ("keys", *_KIND_FILES[self.kind]):
                        HASHED.discard(hash_key(self.folder / f"{self._names[shard]}.{suffix}.npy"))
            return self.check(None)
        finally:
            self.verify_mode = mode

    def _open(self, shard: int) -> dict[str, np.ndarray]:
        """Memory-map one shard's data files after checking them (raises :class:`DamagedShard`)."""
        name = self._names[shard]
        n = len(self._keys[shard]) // _KEY_BYTES
        manifest = read_manifest(self.folder, name, self._files)
        arrays = {}
        for suffix in _KIND_FILES[self.kind]:
            path = self.folder / f"{name}.{suffix}.npy"
            try:
                arrays[suffix] = np.load(path, mmap_mode="r", allow_pickle=False)
            except FileNotFoundError:
                if not (self.folder / f"{name}.keys.npy").exists():
                    raise  # the whole shard was set aside by another process
                raise DamagedShard(path, "is missing") from None
            except (OSError, ValueError, EOFError) as err:  # a truncated file: "mmap length is greater than file size"
                raise DamagedShard(path, f"is truncated or unreadable ({err})") from None
        check_arrays(self.folder, name, self.kind, self.dtype, self.dim, n, arrays)
        if self.verify_mode == "hash" or manifest is None:
            header = {"kind": self.kind, "dtype": self.dtype, "rows": n}
            check_hashes(self.folder, name, self._files, manifest, header)
        return arrays

    def _set_aside(self, name: str, err: DamagedShard) -> None:
        """Report a damaged shard in one sentence and move its files to ``damaged/`` (keys file first)."""
        warnings.warn(
            f"The embedding cache file {err.path} {err.reason}: it is set aside in "
            f"{self.folder / 'damaged'} and its posts are encoded again.",
            RuntimeWarning,
            stacklevel=4,
        )
        self.damaged.append(name)
        aside = self.folder / "damaged"
        aside.mkdir(exist_ok=True)
        for suffix in ("keys", "manifest", *_KIND_FILES[self.kind]):
            ext = "json" if suffix == "manifest" else "npy"
            path = self.folder / f"{name}.{suffix}.{ext}"
            with contextlib.suppress(FileNotFoundError):  # never written, or moved by another process
                os.replace(path, aside / path.name)

    def missing(self, keys: Iterable[bytes]) -> list[bytes]:
        """The keys (in order) that no finished shard holds."""
        return [k for k in keys if k not in self._index]

    def write(self, keys: Sequence[bytes], **arrays: np.ndarray) -> str:
        """Write one shard (data files, then its manifest, then the keys file last); return its name."""
        expected = _KIND_FILES[self.kind]
        if sorted(arrays) != sorted(expected):
            raise ValueError(f"A {self.kind!r} shard needs the arrays {list(expected)}. Got {sorted(arrays)} instead.")
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), _KEY_BYTES)
        tag = hashlib.blake2b(key_arr.tobytes(), digest_size=4).hexdigest()
        name = f"shard-{self._next_seq:05d}-{tag}"
        files = {}
        for suffix in expected:
            files[suffix] = save_bytes(self.folder / f"{name}.{suffix}.npy", npy_bytes(arrays[suffix]))
        key_bytes = npy_bytes(key_arr)
        files["keys"] = {"bytes": len(key_bytes), "sha256": hashlib.sha256(key_bytes).hexdigest()}
        manifest = {
            "version": MANIFEST_VERSION,
            "kind": self.kind,
            "dtype": self.dtype,
            "rows": len(keys),
            "files": files,
        }
        atomic_write_json(self.folder / f"{name}.manifest.json", manifest)
        save_bytes(self.folder / f"{name}.keys.npy", key_bytes)
        for suffix in files:  # hashed as written: not hashed again when this process reads them
            HASHED.add(hash_key(self.folder / f"{name}.{suffix}.npy"))
        self._next_seq += 1
        self._add(name, key_arr)
        return name

    def _shard(self, shard: int) -> dict[str, np.ndarray]:
        arrays = self._arrays[shard]
        if arrays is None:
            try:
                arrays = self._open(shard)
            except DamagedShard as err:
                raise ValueError(
                    f"The embedding cache file {err.path} {err.reason}; call check() first to set it aside."
                ) from None
            self._arrays[shard] = arrays
        return arrays

    def _locate(self, keys: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        try:
            where = np.fromiter((self._index[k] for k in keys), dtype=np.int64, count=len(keys))
        except KeyError:
            n_missing = len(self.missing(keys))
            raise ValueError(
                f"{n_missing} of the requested posts are not in the embedding cache {str(self.folder)!r}."
            ) from None
        starts = np.asarray(self._starts, dtype=np.int64)
        shards = np.searchsorted(starts, where, side="right") - 1
        return shards, where - starts[shards]

    def read_vectors(self, keys: Sequence[bytes], out_dtype: type = np.float32) -> np.ndarray:
        """The (n, d) vectors of ``keys`` (all must be present), in order."""
        shards, rows = self._locate(keys)
        out: np.ndarray | None = None
        for s in np.unique(shards):
            at = np.flatnonzero(shards == s)
            vec = self._shard(int(s))["vec"]
            if out is None:
                out = np.empty((len(keys), vec.shape[1]), dtype=out_dtype)
            take = rows[at]
            order = np.argsort(take, kind="stable")  # sequential reads from the memory map
            out[at[order]] = from_storage(vec[take[order]], self.dtype, out_dtype)
        return out if out is not None else np.empty((0, 0), dtype=out_dtype)

    def read_tokens(self, keys: Sequence[bytes], out_dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
        """Ragged token states of ``keys``: (values (T, d), offsets (n + 1,)), in order."""
        shards, rows = self._locate(keys)
        lengths = np.zeros(len(keys), dtype=np.int64)
        starts = np.zeros(len(keys), dtype=np.int64)
        for s in np.unique(shards):
            at = np.flatnonzero(shards == s)
            off = np.asarray(self._shard(int(s))["off"])
            starts[at] = off[rows[at]]
            lengths[at] = off[rows[at] + 1] - off[rows[at]]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        dim = self._shard(int(shards[0]))["tok"].shape[1] if len(keys) else 0
        values: np.ndarray = np.empty((int(offsets[-1]), dim), dtype=out_dtype)
        for s in np.unique(shards):
            at = np.flatnonzero(shards == s)
            src = ranges(starts[at], lengths[at])
            dst = ranges(offsets[at], lengths[at])
            values[dst] = from_storage(self._shard(int(s))["tok"][src], self.dtype, out_dtype)
        return values, offsets

    def nbytes(self) -> int:
        """Bytes on disk of the finished shards."""
        total = 0
        for name in self.shard_names:
            for suffix in ("keys",) + _KIND_FILES[self.kind]:
                path = self.folder / f"{name}.{suffix}.npy"
                total += path.stat().st_size if path.exists() else 0
        return total

    def _sweep(self) -> None:
        """Remove hour-old leftovers of killed writes: hidden temp files and keyless data files."""
        now = time.time()
        names = {e.name for e in os.scandir(self.folder)}
        for name in names:
            stem = name.split(".")[0] if not name.startswith(".") else ""
            leftover = (name.startswith(".shard-") and name.endswith(".tmp")) or (
                name.startswith("shard-") and not name.endswith(".keys.npy") and f"{stem}.keys.npy" not in names
            )
            if leftover:
                path = self.folder / name
                try:
                    if now - path.stat().st_mtime > _SWEEP_AGE_S:
                        path.unlink()
                except OSError:
                    pass


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + l)`` for each (s, l), vectorised."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    nonzero = lengths > 0
    starts, lengths = starts[nonzero], lengths[nonzero]
    ends = np.cumsum(lengths)
    step = np.ones(total, dtype=np.int64)
    step[0] = starts[0]
    step[ends[:-1]] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(step)
