"""Fitted n-gram / LDA representations of a whole corpus, cached on disk.

:func:`build_representation` fits a :class:`textcause.features.ngrams.NgramFeaturizer` on the
training users, transforms every user and returns a :class:`Representation`; results are cached
under ``cache_root() / "features"`` by a key of the kind, its parameters, a content hash of all
texts (:func:`texts_digest`) and the training indices. Each entry's metadata records its matrix
file's size and SHA-256, checked (with finite values) on every read: a damaged entry (flipped
bytes, NaN, a truncated file) is reported in one warning naming the file and rebuilt, never used;
an entry of the old code (no checksum) is adopted once it passes the other checks.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from textcause.features.ngrams import NgramFeaturizer, check_texts, encode_users
from textcause.features.tokenize import TOKENIZER_VERSION
from textcause.io import atomic_write_bytes, content_key
from textcause.paths import cache_root

__all__ = [
    "CACHE_VERSION",
    "Representation",
    "build_representation",
    "texts_digest",
]

#: Bump when the cached files' layout or the featurizer's output changes.
CACHE_VERSION = 1


@dataclass(frozen=True, repr=False, eq=False)
class Representation:
    """A representation of every user of a corpus, fitted on its training users.

    Attributes:
        matrix: one row per user, in the order of the texts: CSR float32 for the n-gram kinds,
            a dense float32 array of topic proportions for ``"lda"``.
        kind: the representation name.
        key: its cache key (kind, parameters, content hash of all texts, training indices).
        vocabulary_size: the number of n-grams kept (for ``"lda"``, those the topics use).
        fit_seconds: the seconds taken to fit and transform (when it was built, if cached).
        terms: the n-grams, in column order for the n-gram kinds.
        from_cache: True if read from the cache instead of fitted.
        state: the fitted featurizer as plain values (:meth:`NgramFeaturizer.state_dict`), from which
            :meth:`NgramFeaturizer.from_state_dict` featurises new users exactly as these were.
    """

    matrix: sp.csr_matrix | np.ndarray
    kind: str
    key: str
    vocabulary_size: int
    fit_seconds: float
    terms: tuple[str, ...] = ()
    from_cache: bool = False
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        return int(self.matrix.shape[1])

    def __repr__(self) -> str:
        return (
            f"Representation(kind={self.kind!r}, shape={self.matrix.shape}, vocabulary_size={self.vocabulary_size}, "
            f"key={self.key[:12]!r}..., from_cache={self.from_cache})"
        )


def texts_digest(texts: Sequence[Sequence[str]]) -> str:
    """A SHA-256 hex digest of every post of every user, in order (users' boundaries included)."""
    h = hashlib.sha256()
    for posts in texts:
        h.update(b"U" + len(posts).to_bytes(8, "little"))
        for post in posts:
            data = post.encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
    return h.hexdigest()


def _check_train_idx(train_idx: Any, n_users: int) -> np.ndarray:
    idx = np.asarray(train_idx)
    if idx.dtype == bool:
        if idx.shape != (n_users,):
            raise ValueError(
                f"A boolean 'train_idx' must have one entry per user ({n_users}). Got shape {idx.shape} instead."
            )
        idx = np.flatnonzero(idx)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise ValueError(
            f"Expected 'train_idx' to be a 1-D array of user indices. Got {idx.dtype} with shape {idx.shape} instead."
        )
    if idx.size == 0:
        raise ValueError("The training set is empty: at least one training user is needed to fit a vocabulary.")
    if idx.min() < 0 or idx.max() >= n_users:
        raise ValueError(
            f"The 'train_idx' values must lie in [0, {n_users - 1}]. Got values from {idx.min()} to {idx.max()}."
        )
    unique = np.unique(idx)
    if unique.size != idx.size:
        raise ValueError("The 'train_idx' parameter contains duplicate user indices.")
    return unique.astype(np.int64)


def build_representation(
    kind: str,
    texts: Sequence[Sequence[str]],
    train_idx: Any,
    *,
    min_users: int = 10,
    seed: int = 0,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    **kw: Any,
) -> Representation:
    """Fit a representation on ``texts[train_idx]`` and transform every user, with a disk cache.

    Each post is tokenised once; the vocabulary (and LDA) sees only the training users. Results
    are cached under ``cache_dir`` (default ``cache_root() / "features"``) by a key of the kind,
    its parameters, a content hash of ALL texts and the training indices; a hit skips fitting.
    An unreadable or partial cache entry is a miss and is rewritten.

    Args:
        kind: the representation name (see :data:`textcause.features.ngrams.KINDS`).
        texts: one list of post strings per user.
        train_idx: the training users' indices into ``texts`` (or a boolean mask).
        min_users: keep grams used by at least this many training users.
        seed: LDA's random state.
        cache: read and write the cache.
        cache_dir: the cache folder.
        **kw: other :class:`NgramFeaturizer` parameters (``max_features``, ``lda_topics``, ``lda_max_iter``,
            ``progress``: progress bars for tokenising and LDA, by default only on a terminal).

    Returns:
        The :class:`Representation` of all users, in the order of ``texts``.
    """
    featurizer = NgramFeaturizer(kind=kind, min_users=min_users, seed=seed, **kw)
    texts = check_texts(texts)
    train = _check_train_idx(train_idx, len(texts))
    key = content_key(
        "textcause.features", CACHE_VERSION, TOKENIZER_VERSION, featurizer.params(), texts_digest(texts), train.tolist()
    )
    folder = Path(cache_dir) if cache_dir is not None else cache_root() / "features"
    if cache:
        hit = _load_cached(folder, key, len(texts), featurizer)
        if hit is not None:
            return hit
    start = time.perf_counter()
    matrix = featurizer._fit_transform_encoded(encode_users(texts, progress=featurizer.progress), train)
    rep = Representation(
        matrix=matrix,
        kind=kind,
        key=key,
        vocabulary_size=featurizer.vocabulary_size,
        fit_seconds=time.perf_counter() - start,
        terms=featurizer._fitted().terms,
        state=featurizer.state_dict(),
    )
    if cache:
        _save_cached(folder, rep)
    return rep


def _load_cached(folder: Path, key: str, n_users: int, featurizer: NgramFeaturizer) -> Representation | None:
    """The cached entry of ``key``, every byte checked: its metadata file (vocabulary included) against
    the checksum it holds (:func:`_meta_bytes`), the matrix file's size and SHA-256 against the
    metadata, finite values.

    A damaged entry is reported in one warning naming the file: a miss, rebuilt. An entry of the old
    code (metadata without its own checksum, so its vocabulary cannot be verified) is a silent miss.
    """
    data_path, meta_path = folder / f"{key}.npz", folder / f"{key}.json"
    if not (data_path.exists() and meta_path.exists()):
        return None
    try:
        raw = meta_path.read_bytes()
        try:
            doc = json.loads(raw)
        except ValueError:
            raise ValueError("its metadata does not match its checksum (it is not JSON)") from None
        if not (isinstance(doc, dict) and "entry" in doc and "sha256" in doc):
            return None  # the old code's entry: nothing vouches for its vocabulary
        meta = doc["entry"]
        if not isinstance(meta, dict) or _meta_bytes(meta) != raw:
            raise ValueError("its metadata does not match its checksum (the file was altered)")
        if meta["key"] != key or meta["version"] != CACHE_VERSION:
            raise ValueError("the metadata does not match the key")
        blob = data_path.read_bytes()
        recorded = meta["file"]
        if len(blob) != recorded["bytes"]:
            raise ValueError(f"it has {len(blob)} bytes, not the {recorded['bytes']} of its metadata")
        if hashlib.sha256(blob).hexdigest() != recorded["sha256"]:
            raise ValueError("it does not match the checksum in its metadata (the file was altered)")
        lda: dict[str, np.ndarray] = {}
        matrix: sp.csr_matrix | np.ndarray
        if meta["sparse"]:
            matrix = sp.csr_matrix(sp.load_npz(io.BytesIO(blob)))
            values = matrix.data
        else:
            with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
                dense: np.ndarray = npz["matrix"]
                lda = {k: npz[k] for k in npz.files if k.startswith("lda_")}
            matrix = values = dense
        if matrix.shape != (n_users, meta["n_features"]) or matrix.dtype != np.float32:
            raise ValueError(f"the matrix has shape {matrix.shape} and dtype {matrix.dtype}")
        if not np.isfinite(values).all():
            raise ValueError("the matrix holds NaN or infinite values")
        state = {**featurizer.state_params(), **meta.get("featurizer", {}), "terms": list(meta["terms"])}
        if featurizer.kind == "lda":
            if "lda_components" not in lda or "featurizer" not in meta:
                return None  # an entry of the old code: refit once, so the topics can be saved with a model
            state["lda_components"] = lda["lda_components"]
        return Representation(
            matrix=matrix,
            kind=meta["kind"],
            key=key,
            vocabulary_size=meta["vocabulary_size"],
            fit_seconds=meta["fit_seconds"],
            terms=tuple(meta["terms"]),
            from_cache=True,
            state=state,
        )
    except Exception as exc:  # any unreadable entry is a miss, never a crash
        reason = str(exc).rstrip(".") or type(exc).__name__
        warnings.warn(
            f"Ignoring the damaged feature cache entry {data_path} ({reason}); rebuilding it.",
            RuntimeWarning,
            stacklevel=3,
        )
        return None


def _file_entry(blob: bytes) -> dict[str, Any]:
    return {"bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _meta_bytes(meta: dict[str, Any]) -> bytes:
    """The exact bytes of an entry's metadata file: ``{"entry": meta, "sha256": <of meta's canonical
    JSON>}`` in canonical JSON. A reader compares the file with these bytes, so a change of any byte
    (a term of the vocabulary, a parameter, even a space) is caught."""
    digest = hashlib.sha256(_canonical(meta).encode("ascii")).hexdigest()
    return _canonical({"entry": meta, "sha256": digest}).encode("ascii")


def _save_cached(folder: Path, rep: Representation) -> None:
    """Write the matrix, then its metadata with the matrix file's size and SHA-256 and its own
    checksum (:func:`_meta_bytes`), atomically.

    The entry counts only once both exist.
    """
    try:
        buf = io.BytesIO()
        if sp.issparse(rep.matrix):
            m = rep.matrix
            _write_npz(buf, dict(indices=m.indices, indptr=m.indptr, format=b"csr", shape=m.shape, data=m.data))
        else:
            lda = {k: v for k, v in rep.state.items() if isinstance(v, np.ndarray)}
            _write_npz(buf, {"matrix": rep.matrix, **lda})
        blob = buf.getvalue()
        atomic_write_bytes(folder / f"{rep.key}.npz", blob)
        meta = {
            "version": CACHE_VERSION,
            "key": rep.key,
            "kind": rep.kind,
            "sparse": sp.issparse(rep.matrix),
            "n_features": rep.n_features,
            "vocabulary_size": rep.vocabulary_size,
            "fit_seconds": rep.fit_seconds,
            "terms": list(rep.terms),
            "featurizer": {k: v for k, v in rep.state.items() if k != "terms" and not isinstance(v, np.ndarray)},
            "file": _file_entry(blob),
        }
        atomic_write_bytes(folder / f"{rep.key}.json", _meta_bytes(meta))
    except OSError as exc:
        warnings.warn(
            f"Could not write the feature cache in {folder} ({exc}); continuing without it.",
            RuntimeWarning,
            stacklevel=3,
        )


def _write_npz(fh: Any, arrays: dict[str, Any]) -> None:
    """``np.savez_compressed`` at zlib level 1 (5x faster than its level 6 for about 8% more bytes).

    The layout is NumPy's own, so ``np.load`` and ``scipy.sparse.load_npz`` read it.
    """
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1, allowZip64=True) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.asanyarray(value), allow_pickle=False)
