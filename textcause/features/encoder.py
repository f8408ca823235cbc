"""A frozen Hugging Face encoder and a fast direct encode of posts on CPU.

:class:`Encoder` tokenises once (fast tokenizer, no padding, truncated to ``max_tokens``; only the
start of a long post that the window can use reaches the tokenizer:
:func:`~textcause.features.encoder_inputs.cut_post`), sorts by length, pads each batch to its
longest post, runs the model under ``torch.inference_mode`` in the fastest precision that matches
fp32 on a probe batch, with :func:`~textcause.features.attention.short_attention` (a CPU attention
for short posts) where the model takes one, then pools: ``"mean"`` over the attention mask (special
tokens included, as sentence-transformers does) or ``"cls"``, optionally L2-normalised. A large
encode runs in worker processes of one thread each (:mod:`textcause.features.encoder_workers`).

Where an encoder is and what it is (its content key) is :mod:`textcause.features.encoder_spec`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from textcause.features.attention import set_attention
from textcause.features.encoder_inputs import (
    CHARS_PER_TOKEN,
    MAX_CHARS_PER_TOKEN,
    cut_post,
    length_batches,
    pad_batch,
    torch_threads,
    without_lone_surrogates,
)
from textcause.features.encoder_spec import EncoderSpec, resolve_encoder
from textcause.features.encoder_workers import EncodePlan, WorkerPool, encode_plan
from textcause.validation import check_int, check_options, check_that

__all__ = ["BF16_MIN_COSINE", "POOLINGS", "PRECISIONS", "EncodedPosts", "Encoder"]

POOLINGS = ("mean", "cls")
PRECISIONS = ("auto", "bf16", "bf16-full", "fp32")
#: Minimum cosine between bf16-autocast and fp32 vectors for ``precision="auto"`` to use bf16.
BF16_MIN_COSINE = 0.999


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
        num_threads: torch threads while encoding in this process (restored after); None: chosen by
            :func:`~textcause.features.encoder_workers.encode_plan` from the CPUs available (affinity,
            cgroup quota, load and ``OMP_WAIT_POLICY``), not from ``os.cpu_count()``.
        layer: the token states returned by ``encode(token_cap=...)``: None for the last layer, k for
            the hidden state after transformer layer k (0 = the embedding output; k = the number
            of layers is the last layer and becomes None). Pooled vectors always use the last layer.
        processes: encode in this many worker processes of one torch thread each (1: in this
            process). None: :func:`~textcause.features.encoder_workers.encode_plan` decides: on
            Linux, one single-threaded worker per available CPU (affinity and cgroup quota, within
            this process's torch threads) for a call of at least ``PARALLEL_MIN_POSTS`` posts when
            ``num_threads`` is not set; else in this process on the CPUs the load leaves free. The
            environment variable ``TEXTCAUSE_ENCODER_PLAN="PxT"`` (e.g. ``"1x2"``) fixes both where
            neither argument is given. Never from a daemonic process. The workers start on the
            first such call and stay until :meth:`close` (or until the encoder is garbage-collected).
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
        encoder: str | os.PathLike[str] | EncoderSpec | None = None,
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
        self._workers = WorkerPool()
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
        self.last_plan: EncodePlan | None = None  # how the last encode call ran

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
            self.attention_used = set_attention(model, self.attention)
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
        ids: list[list[int]] = self.tokenizer(
            [without_lone_surrogates(p) for p in posts],
            truncation=True,
            max_length=self.max_tokens,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        return ids

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
        kept: np.ndarray | None = None
        offsets: np.ndarray | None = None
        values: np.ndarray | None = None
        if token_cap:
            kept = np.minimum(lengths, token_cap)
            offsets = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
            values = np.empty((int(offsets[-1]), self.dim), dtype=np.float32)
        order = np.argsort(lengths, kind="stable")
        pad_id = self.tokenizer.pad_token_id or 0
        plan = self.last_plan = self._plan(n)  # before the thread count is set for the encode below
        workers = plan.processes
        # with workers, this process waits on one thread: no OpenMP team of its own to spin meanwhile
        with torch_threads(1 if workers > 1 else plan.threads), torch.inference_mode():
            if self.precision_used is None and n:
                probe = order[n // 2 : n // 2 + 16]  # typical lengths, not the shortest posts
                self.precision_used = self._choose_precision(*pad_batch(ids, lengths, probe, pad_id))
            if progress is not None:
                progress(0)  # the weights are loaded and the probe run: a bar can show its clock now
            if workers > 1:
                batches = list(length_batches(order, lengths, self.batch_size, self.batch_tokens))
                if len(batches) > 1:
                    self._workers.encode(
                        self, ids, batches, workers, token_cap, vectors, values, offsets, progress, meanwhile
                    )
                    return EncodedPosts(vectors, values, offsets)
            if meanwhile is not None:
                meanwhile()
            bf16 = self._set_precision(self.precision_used)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                for idx in length_batches(order, lengths, self.batch_size, self.batch_tokens):
                    input_ids, mask = pad_batch(ids, lengths, idx, pad_id)
                    states, layer_states = self._forward_states(input_ids, mask, bool(token_cap))
                    vectors[idx] = self._pool(states, mask).numpy()
                    if token_cap:
                        if kept is None or offsets is None or values is None:  # set with token_cap
                            raise RuntimeError("Internal error: token states asked for without their buffers.")
                        states_np = layer_states.numpy()
                        for row, i in enumerate(idx):
                            values[offsets[i] : offsets[i + 1]] = states_np[row, : kept[i]]
                    if progress is not None:
                        progress(len(idx))
        return EncodedPosts(vectors, values, offsets)

    def _plan(self, n: int) -> EncodePlan:
        """Processes and threads of a call with ``n`` posts (see :func:`encode_plan`)."""
        return encode_plan(n, self.processes, self.num_threads)

    def _workers_for(self, n: int) -> int:
        """How many worker processes a call with ``n`` posts uses (1: none; see :func:`encode_plan`)."""
        return self._plan(n).processes

    def close(self) -> None:
        """Stop the worker processes, if any (they also stop when the encoder is garbage-collected)."""
        self._workers.close()

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

    def _set_precision(self, precision: str | None) -> bool:
        """Cast the model's weights for ``precision`` (once; None, not chosen yet, leaves them fp32);
        return whether to enable autocast."""
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
