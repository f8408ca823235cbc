"""The on-disk shards of the post-embedding cache: content keys in, memory-mapped rows out.

A store is a folder of shards. Shard ``shard-00017-1a2b3c4d`` is a set of ``.npy`` files written
one at a time, each to a temporary file renamed into place; the keys file
(``shard-00017-1a2b3c4d.keys.npy``: one 16-byte BLAKE2b digest of each post's UTF-8 text per row)
is written LAST, so a shard exists exactly when its keys file does. A process killed mid-write
leaves finished shards and at most some hidden ``.tmp`` files or keyless data files, which are
ignored (and swept once they are an hour old). The tag in the name is a hash of the shard's keys,
so two processes writing at once never clobber each other (a post written twice is harmless).

Two kinds of store share the scheme:

* ``"pooled"``: ``.vec.npy``, (n, d) post vectors;
* ``"tokens"``: ``.tok.npy``, (sum of token counts, d) token states and ``.off.npy``, (n + 1,)
  int64 offsets (post i's tokens are rows ``off[i]:off[i+1]``).

Values are float16, or bfloat16 kept as its uint16 bit pattern (numpy has no bfloat16); reads
return float32 (or float16 for float16 stores when asked). Data files are opened with
``np.load(mmap_mode="r")``, so a store costs memory only for its keys (16 bytes a post) and index.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from textcause.io import atomic_path
from textcause.validation import check_options

KIND_FILES = {"pooled": ("vec",), "tokens": ("tok", "off")}
DTYPES = ("float16", "bfloat16")
KEY_BYTES = 16
_SHARD_RE = re.compile(r"^(shard-(\d{5,})-[0-9a-f]{8})\.keys\.npy$")
_SWEEP_AGE_S = 3600.0


def post_key(text: str) -> bytes:
    """The 16-byte content key of one post: BLAKE2b of its UTF-8 text."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=KEY_BYTES).digest()


def to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 -> float16, or -> bfloat16 bits (uint16, round to nearest even)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16)
    bits = x.view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def from_storage(x: np.ndarray, dtype: str, out_dtype: type = np.float32) -> np.ndarray:
    """The inverse of :func:`to_storage`, as ``out_dtype`` (float32, or float16 for float16 stores)."""
    if dtype == "float16":
        return np.asarray(x, dtype=out_dtype)
    f32 = (np.asarray(x, dtype=np.uint32) << np.uint32(16)).view(np.float32)
    return f32.astype(out_dtype, copy=False)


def _save_npy(dest: Path, arr: np.ndarray) -> None:
    with atomic_path(dest) as tmp, open(tmp, "wb") as fh:
        np.save(fh, arr, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())


class ShardStore:
    """The shards of one folder, with an in-memory index from post key to (shard, row).

    Args:
        folder: the store's folder (created on demand).
        kind: ``"pooled"`` or ``"tokens"``.
        dtype: ``"float16"`` or ``"bfloat16"`` (how values are stored).
    """

    def __init__(self, folder: str | os.PathLike, kind: str, dtype: str = "float16") -> None:
        if kind not in KIND_FILES:
            raise ValueError(f"Unknown shard store kind {kind!r}: choose 'pooled' or 'tokens'.")
        check_options(dtype, "dtype", "ShardStore", DTYPES)
        self.folder, self.kind, self.dtype = Path(folder), kind, dtype
        self.folder.mkdir(parents=True, exist_ok=True)
        self._names: list[str] = []
        self._arrays: list[dict[str, np.ndarray] | None] = []
        self._index: dict[bytes, int] = {}  # key -> global row (shard rows laid end to end)
        self._starts: list[int] = []
        self._size = 0
        self._next_seq = 0
        self._sweep()
        self.refresh()

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: bytes) -> bool:
        return key in self._index

    @property
    def shard_names(self) -> list[str]:
        return list(self._names)

    def refresh(self) -> int:
        """Index shards finished since the last scan (by this or another process); return how many."""
        known = set(self._names)
        found = []
        for entry in os.scandir(self.folder):
            m = _SHARD_RE.match(entry.name)
            if m:
                self._next_seq = max(self._next_seq, int(m.group(2)) + 1)
                if m.group(1) not in known:
                    found.append(m.group(1))
        for name in sorted(found):
            self._add(name, np.load(self.folder / f"{name}.keys.npy"))
        return len(found)

    def _add(self, name: str, keys: np.ndarray) -> None:
        base = self._size
        self._names.append(name)
        self._arrays.append(None)
        self._starts.append(base)
        raw = np.ascontiguousarray(keys, dtype=np.uint8).tobytes()
        n = len(raw) // KEY_BYTES
        for row in range(n):
            self._index.setdefault(raw[row * KEY_BYTES : (row + 1) * KEY_BYTES], base + row)
        self._size = base + n

    def missing(self, keys: Iterable[bytes]) -> list[bytes]:
        """The keys (in order) that no finished shard holds."""
        return [k for k in keys if k not in self._index]

    def write(self, keys: Sequence[bytes], **arrays: np.ndarray) -> str:
        """Write one shard (data files first, keys file last); return its name."""
        expected = KIND_FILES[self.kind]
        if sorted(arrays) != sorted(expected):
            raise ValueError(f"A {self.kind!r} shard needs the arrays {list(expected)}. Got {sorted(arrays)} instead.")
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        tag = hashlib.blake2b(key_arr.tobytes(), digest_size=4).hexdigest()
        name = f"shard-{self._next_seq:05d}-{tag}"
        for suffix in expected:
            _save_npy(self.folder / f"{name}.{suffix}.npy", arrays[suffix])
        _save_npy(self.folder / f"{name}.keys.npy", key_arr)
        self._next_seq += 1
        self._add(name, key_arr)
        return name

    def _shard(self, shard: int) -> dict[str, np.ndarray]:
        arrays = self._arrays[shard]
        if arrays is None:
            name = self._names[shard]
            arrays = {s: np.load(self.folder / f"{name}.{s}.npy", mmap_mode="r") for s in KIND_FILES[self.kind]}
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
        values = np.empty((int(offsets[-1]), dim), dtype=out_dtype)
        for s in np.unique(shards):
            at = np.flatnonzero(shards == s)
            src = ranges(starts[at], lengths[at])
            dst = ranges(offsets[at], lengths[at])
            values[dst] = from_storage(self._shard(int(s))["tok"][src], self.dtype, out_dtype)
        return values, offsets

    def nbytes(self) -> int:
        """Bytes on disk of the finished shards."""
        total = 0
        for name in self._names:
            for suffix in ("keys",) + KIND_FILES[self.kind]:
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
