"""The featurizer a trained model carries: how NEW users' text becomes the model's input, saved safely.

:func:`featurizer_state` records, beside the features of a task's users, plain values and torch
tensors only (no pickled code), so a checkpoint holding it loads with
``torch.load(..., weights_only=True)``; :class:`~textcause.data.CausalTextDataModule` saves it in
every checkpoint and :func:`featurize` applies it to new text exactly as training did, refitting
nothing. It holds, per representation kind:

* n-gram kinds: the vocabulary (packed as two tensors by :func:`pack_terms`; a list of strings, as
  earlier versions saved it, is still read), the fitted LDA topics for ``lda``, and the training
  split's ``maxabs`` column factors or ``log1p``;
* ``post_embeddings`` / ``post_tokens``: the encoder's name and content identity, its input length,
  token cap and layer, and the embedding cache key (another encoder under the same name is refused);
* ``none``: nothing (such models read no text and cannot score new users).

A state's ``key`` is a content key of all of it: the data module refuses a checkpoint whose key
differs from that of the featurizer rebuilt from the run's data settings, so an evaluation never
silently uses other features than training did.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np
import scipy.sparse as sp

from textcause.features.kinds import EMBEDDING_KINDS, NGRAM_KINDS

__all__ = [
    "FEATURIZER_KEY",
    "apply_scale",
    "check_same",
    "check_state",
    "embed_histories",
    "featurize",
    "featurizer_state",
    "maxabs_factor",
    "pack_terms",
    "state_key",
    "unpack_terms",
]

#: Bump when the state's layout changes: a state of another version is refused ("retrain").
_FEATURIZER_VERSION = 1
#: The key of the featurizer state in the data module's ``state_dict``.
FEATURIZER_KEY = "featurizer"
_RETRAIN = "retrain the model with this version of textcause"
_DAMAGED = "the checkpoint is damaged; retrain the model or restore the file"


def _tensor(value: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.array(value, copy=True))


def _is_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def _numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if _is_tensor(value) else np.asarray(value)


def pack_terms(terms: Sequence[str]) -> dict[str, np.ndarray]:
    """The n-grams as ``{"utf8": uint8 bytes of every term end to end, "ends": int64 end offset of each}``."""
    data = [str(t).encode("utf-8", "surrogatepass") for t in terms]
    ends = np.cumsum(np.fromiter((len(d) for d in data), dtype=np.int64, count=len(data)), dtype=np.int64)
    return {"utf8": np.frombuffer(b"".join(data), dtype=np.uint8).copy(), "ends": ends}


def unpack_terms(value: Any) -> list[str]:
    """The n-grams of :func:`pack_terms`' arrays (numpy or torch), or of a plain list (earlier versions).

    Raises:
        ValueError: the arrays do not describe a list of UTF-8 strings (a damaged checkpoint).
    """
    if not isinstance(value, Mapping):
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise ValueError(f"The saved n-grams are a {type(value).__name__}, not a list: {_DAMAGED}.")
        return [str(t) for t in value]
    try:
        buf = np.ascontiguousarray(_numpy(value["utf8"]))
        ends = np.asarray(_numpy(value["ends"]))
    except KeyError as err:
        raise ValueError(f"The saved n-grams lack their {err.args[0]!r} array: {_DAMAGED}.") from None
    if buf.dtype != np.uint8 or buf.ndim != 1 or ends.ndim != 1 or not np.issubdtype(ends.dtype, np.integer):
        raise ValueError(f"The saved n-grams' arrays have the wrong type or shape: {_DAMAGED}.")
    starts = np.concatenate([[0], ends[:-1]]).astype(ends.dtype)
    if (ends[-1] if ends.size else 0) != buf.size or (ends < starts).any():
        raise ValueError(f"The saved n-grams' offsets do not fit their bytes: {_DAMAGED}.")
    raw = buf.tobytes()
    try:
        return [raw[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts.tolist(), ends.tolist())]
    except UnicodeDecodeError:
        raise ValueError(f"The saved n-grams are not UTF-8 text: {_DAMAGED}.") from None


def _logical(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """``state`` with packed n-grams as the list they stand for (what the content key is computed on)."""
    ngram = state.get("ngram")
    if isinstance(ngram, Mapping) and isinstance(ngram.get("terms"), Mapping):
        return {**state, "ngram": {**ngram, "terms": unpack_terms(ngram["terms"])}}
    return state


def maxabs_factor(x: Any, train: np.ndarray) -> np.ndarray:
    """The float32 column factors of ``maxabs`` scaling: 1 / the largest absolute training value (1 for 0)."""
    col_max = abs(x[train]).max(axis=0)
    # scipy-stubs narrow issparse() to SparseABC, which declares none of the sparse methods
    col_max = np.asarray(col_max.todense() if sp.issparse(col_max) else col_max, dtype=np.float64).ravel()  # type: ignore[attr-defined]
    return np.where(col_max > 0, 1.0 / np.where(col_max > 0, col_max, 1.0), 1.0).astype(np.float32)


def apply_scale(x: Any, how: Optional[str], factor: Optional[np.ndarray] = None) -> Any:
    """Rescale a feature matrix: ``log1p``, or ``maxabs`` with its column ``factor`` (fitted on the training users)."""
    if how is None:
        return x
    if how == "log1p":
        if sp.issparse(x):
            x = x.copy()  # type: ignore[attr-defined]  # issparse() narrows to SparseABC (scipy-stubs)
            x.data = np.log1p(x.data)
            return x
        return np.log1p(x)
    if factor is None:
        raise ValueError("The 'maxabs' scaling needs its fitted column factors.")
    if sp.issparse(x):
        scaled = (x @ sp.diags(factor)).tocsr().astype(np.float32)  # type: ignore[operator]  # as above
        # The product leaves each row's column indices unsorted; every batch of such a matrix would
        # then be sorted again on its way to torch (to_torch_sparse). Sorted once here instead: the
        # same entries, so the same batches.
        scaled.sort_indices()
        return scaled
    return (x * factor).astype(np.float32)


def embed_histories(
    texts: Sequence[Sequence[str]],
    representation: str,
    encoder: Optional[str],
    *,
    max_tokens: int,
    token_cap: int,
    encoder_layer: Optional[int],
) -> tuple[Any, dict[str, Any]]:
    """The post-embedding table of ``texts`` (frozen encoder, through the embedding cache) and its info."""
    import time

    from textcause.features.embeddings import PostEmbeddingCache

    tokens = representation == "post_tokens"
    cache = PostEmbeddingCache(
        encoder,
        max_tokens=max_tokens,
        store_tokens=tokens,
        token_cap=token_cap,
        layer=encoder_layer if tokens else None,
    )
    started = time.perf_counter()
    # float16 in memory: the token table of a 4,000-user corpus is several GB in float32.
    table = cache.embed_histories(texts, out_dtype=np.float16 if tokens else np.float32)
    info = {
        "kind": representation,
        "vocabulary_size": 0,
        "fit_seconds": time.perf_counter() - started,
        "encoder": cache.spec.name,
        "cache": str(cache.folder),
        "identity": cache.spec.identity,
        "cache_key": cache.key,
    }
    return table, info


def featurizer_state(
    settings: Any,
    *,
    ngram: Optional[Mapping[str, Any]] = None,
    scale_factor: Optional[np.ndarray] = None,
    embedding: Optional[Mapping[str, Any]] = None,
) -> dict[str, Any]:
    """The featurizer state of a build (see the module docstring).

    Args:
        settings: the build's :class:`~textcause.data.build.DataSettings`.
        ngram: the fitted n-gram featurizer's :meth:`~textcause.features.NgramFeaturizer.state_dict`.
        scale_factor: the ``maxabs`` column factors fitted on the training users.
        embedding: the embedding info of :func:`textcause.data.build.embed_texts` (encoder, identity, cache key).
    """
    state: dict[str, Any] = {
        "version": _FEATURIZER_VERSION,
        "representation": settings.representation,
        "min_posts": settings.min_posts,
        "max_posts": settings.max_posts,
        "scale": settings.scale,
        "scale_factor": None if scale_factor is None else _tensor(scale_factor),
        "ngram": None,
        "embedding": None,
    }
    if ngram is not None:
        state["ngram"] = {k: _tensor(v) if isinstance(v, np.ndarray) else v for k, v in ngram.items()}
    if embedding is not None:
        state["embedding"] = {
            "encoder": settings.encoder,
            "name": embedding.get("encoder"),
            "identity": embedding.get("identity"),
            "cache_key": embedding.get("cache_key"),
            "max_tokens": settings.max_tokens,
            "token_cap": settings.token_cap,
            "encoder_layer": settings.encoder_layer,
        }
    state["key"] = state_key(state)  # on the n-grams as a list: the key of earlier checkpoints
    if state["ngram"] is not None and "terms" in state["ngram"]:
        state["ngram"]["terms"] = {k: _tensor(v) for k, v in pack_terms(state["ngram"]["terms"]).items()}
    return state


def state_key(state: Mapping[str, Any]) -> str:
    """A SHA-256 content key of a featurizer state (its values and array bytes; ``key`` itself left
    out; packed n-grams count as the list of strings they stand for)."""
    h = hashlib.sha256()
    state = _logical(state)

    def feed(value: Any) -> None:
        if isinstance(value, np.ndarray) or _is_tensor(value):
            arr = np.ascontiguousarray(_numpy(value))
            h.update(f"array:{arr.dtype.str}:{arr.shape}".encode())
            h.update(arr.tobytes())
        elif isinstance(value, Mapping):
            for k in sorted(value):
                if k != "key":
                    h.update(f"key:{k}".encode())
                    feed(value[k])
        elif isinstance(value, (list, tuple)):
            h.update(f"list:{len(value)}".encode())
            for item in value:
                feed(item)
        else:
            h.update(json.dumps(value).encode())

    feed(state)
    return h.hexdigest()


def check_state(state: Any, source: str = "The checkpoint") -> dict[str, Any]:
    """``state`` if it is a featurizer state of this version, else a ValueError saying to retrain."""
    if not isinstance(state, Mapping):
        raise ValueError(f"{source} holds no featurizer (it was trained by an older version): {_RETRAIN}.")
    if state.get("version") != _FEATURIZER_VERSION:
        raise ValueError(
            f"{source} holds a featurizer of version {state.get('version')!r}, not {_FEATURIZER_VERSION}: {_RETRAIN}."
        )
    return dict(state)


def check_same(saved: Any, built: Mapping[str, Any]) -> None:
    """Refuse a checkpoint whose featurizer differs from the one built from the run's data settings.

    Raises:
        ValueError: in one sentence (a checkpoint of an older version, without a featurizer, passes).
    """
    if saved is None or not built:
        return
    saved = check_state(saved)
    if saved.get("key") != built.get("key"):
        raise ValueError(
            "The checkpoint's featurizer (vocabulary, topics or encoder) differs from the one rebuilt from the "
            "run's data settings: the data or the code changed since training, so its features would not be "
            "the model's; retrain, or check the corpus and the data options."
        )


def featurize(state: Mapping[str, Any], texts: Sequence[Sequence[str]]) -> Any:
    """The features of NEW users' ``texts`` (one list of posts per user), as the model was trained on.

    Returns:
        A CSR float32 matrix (n-gram kinds), a dense float32 array (``lda``) or a
        :class:`~textcause.features.embeddings.HistoryEmbeddings` table (embedding kinds), one row
        (history) per user in the order of ``texts``.

    Raises:
        ValueError: a state of another version, a model that reads no text, a missing or different encoder.
    """
    state = check_state(state)
    rep = state["representation"]
    if rep in NGRAM_KINDS:
        from textcause.features.ngrams import NgramFeaturizer

        saved = state.get("ngram")
        if not isinstance(saved, Mapping):
            raise ValueError(f"The checkpoint's featurizer has no vocabulary: {_RETRAIN}.")
        saved = {k: _numpy(v) if _is_tensor(v) else v for k, v in saved.items()}
        if "terms" in saved:
            saved["terms"] = unpack_terms(saved["terms"])
        featurizer = NgramFeaturizer.from_state_dict(saved)
        factor = state.get("scale_factor")
        return apply_scale(featurizer.transform(texts), state.get("scale"), None if factor is None else _numpy(factor))
    if rep in EMBEDDING_KINDS:
        return _embed(state, texts)
    raise ValueError(
        f"The model reads no text (representation {rep!r}: a baseline such as the oracle), so it cannot score new users."
    )


def _embed(state: Mapping[str, Any], texts: Sequence[Sequence[str]]) -> Any:
    from textcause.features.encoder_spec import resolve_encoder

    emb = state.get("embedding")
    if not isinstance(emb, Mapping):
        raise ValueError(f"The checkpoint's featurizer does not name its encoder: {_RETRAIN}.")
    spec = resolve_encoder(emb["encoder"])
    if spec.identity != emb["identity"]:
        raise ValueError(
            f"The encoder {spec.name!r} found at '{spec.path}' is not the one the model was trained with (its "
            "weights or tokenizer differ): give the model its own encoder."
        )
    table, _ = embed_histories(
        [list(u) for u in texts],
        state["representation"],
        emb["encoder"],
        max_tokens=emb["max_tokens"],
        token_cap=emb["token_cap"],
        encoder_layer=emb["encoder_layer"],
    )
    return table
