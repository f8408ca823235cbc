"""Scoring probes with any Hugging Face masked LM: the female and male probability mass at the mask.

:func:`load_masked_lm` loads a model by name or local path, offline (nothing is downloaded unless
``allow_download=True``), and refuses a checkpoint whose masked-LM head was newly initialised (a
sentence encoder such as all-MiniLM-L6-v2 ships no trained head: its probabilities are noise)
unless ``allow_untrained=True``. :func:`score_probes` renders each probe with the tokenizer's own
mask token (``[MASK]``, ``<mask>``, ...), runs the probes in batches under
``torch.inference_mode()``, and gives, per probe, for each gender:

* ``top5``: the paper's score (section 4.3), the summed probability of the gendered tokens among
  the ``top_k`` (5) most probable tokens at the mask;
* ``softmax``: the full softmax mass of every gendered token of the gender;
* ``top5_renormalised`` and ``softmax_renormalised``: the two divided by female + male, so that
  female + male = 1 (``top5_renormalised`` is NaN where no gendered token is among the top 5).

Each token id counts once per gender (:mod:`textcause.gender.words`).

A fine-tuned masked-gender model (a ``.ckpt`` of :class:`~textcause.gender.model.GenderMaskedModel`,
loaded by :func:`load_probe_model` as a :class:`BinaryHead`) is scored through its binary head:
every variant's female score is P(female) at the mask and the male score is 1 - P(female), so
its female and male curves are mirror images (report the female one).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from textcause.gender.probes import Probe
from textcause.gender.window import model_window, one_mask_batch
from textcause.gender.words import GENDERS, GenderedIds, GenderedWords, gendered_token_ids
from textcause.validation import check_int

VARIANTS = ("top5", "softmax", "top5_renormalised", "softmax_renormalised")
#: The command's short name ``renormalised``: the softmax mass renormalised (defined for every probe).
VARIANT_ALIASES = {"renormalised": "softmax_renormalised"}
#: Probes above this many batches get a progress bar (when ``progress`` is left to decide).
PROGRESS_BATCHES = 8


def variant_name(variant: str) -> str:
    """The canonical name of a scoring variant (``renormalised`` -> ``softmax_renormalised``).

    Raises:
        ValueError: an unknown variant.
    """
    name = VARIANT_ALIASES.get(variant, variant)
    if name not in VARIANTS:
        raise ValueError(
            f"The 'variant' parameter must be one of {list(VARIANTS) + list(VARIANT_ALIASES)}. Got {variant!r} instead."
        )
    return name


def score_column(gender: str, variant: str) -> str:
    """The score table's column of one gender and variant, e.g. ``female_top5``."""
    return f"{gender}_{variant_name(variant)}"


@dataclasses.dataclass
class MaskedLM:
    """A loaded masked LM with its tokenizer.

    Attributes:
        model: the ``AutoModelForMaskedLM`` model, in eval mode.
        tokenizer: its tokenizer (``mask_token`` set).
        name: the name or path it was loaded from.
        newly_initialised: parameters the checkpoint did not hold (empty for a trained head).
    """

    model: Any
    tokenizer: Any
    name: str
    newly_initialised: tuple[str, ...] = ()


@dataclasses.dataclass
class BinaryHead:
    """A fine-tuned masked-gender model, scored through its binary head.

    Attributes:
        model: the :class:`~textcause.gender.model.GenderMaskedModel`, in eval mode.
        tokenizer: its encoder's tokenizer.
        name: the checkpoint it was loaded from.
        newly_initialised: always empty (every weight is in the checkpoint).
    """

    model: Any
    tokenizer: Any
    name: str
    newly_initialised: tuple[str, ...] = ()


def is_checkpoint(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` is a Lightning checkpoint file (``.ckpt``)."""
    path = Path(str(name_or_path)).expanduser()
    return path.suffix == ".ckpt" and path.is_file()


def load_probe_model(
    name_or_path: str | Path, *, allow_download: bool = False, allow_untrained: bool = False, device: str = "cpu"
) -> MaskedLM | BinaryHead:
    """A fine-tuned checkpoint (``.ckpt``) as a :class:`BinaryHead`, anything else as a :class:`MaskedLM`.

    Raises:
        ValueError: as :func:`load_masked_lm`, or a checkpoint that is not a fine-tuned masked-gender model.
    """
    if is_checkpoint(name_or_path):
        from textcause.gender.model import load_finetuned

        model = load_finetuned(str(Path(str(name_or_path)).expanduser()), device=device)
        return BinaryHead(model=model, tokenizer=model.tokenizer, name=str(name_or_path))
    return load_masked_lm(name_or_path, allow_download=allow_download, allow_untrained=allow_untrained, device=device)


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~", ".\\")) or name.endswith(("/", os.sep)) or name.count("/") > 1


def resolve_model(name_or_path: str | Path) -> str:
    """An existing local folder, or a Hugging Face model name (``org/name`` or ``name``).

    Raises:
        ValueError: a path that does not exist or is not a folder.
    """
    text = str(name_or_path)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ValueError(
                f"The model path {text!r} is not a folder: give a model folder, a fine-tuned checkpoint "
                "(.ckpt) or a Hugging Face name."
            )
        return str(path)
    if _looks_like_path(text) or not text.strip():
        raise ValueError(f"The model path {text!r} does not exist.")
    return text


def newly_initialised(model: Any, info: dict[str, Any]) -> tuple[str, ...]:
    """The parameters ``from_pretrained`` reported missing or mismatched, less those tied to a loaded one."""
    params = dict(model.named_parameters(remove_duplicate=False))
    reported = list(info.get("missing_keys", ())) + [
        m[0] if isinstance(m, tuple) else m for m in info.get("mismatched_keys", ())
    ]
    bad = {k for k in reported if k in params}
    loaded = [p for n, p in params.items() if n not in bad]
    return tuple(sorted(k for k in bad if not any(params[k] is p for p in loaded)))


def load_masked_lm(
    name_or_path: str | Path, *, allow_download: bool = False, allow_untrained: bool = False, device: str = "cpu"
) -> MaskedLM:
    """Load a masked LM and its tokenizer by local path or name (from the local cache only by default).

    Args:
        name_or_path: a model folder or a Hugging Face model name.
        allow_download: let transformers download a name missing from the local cache.
        allow_untrained: score a model whose checkpoint lacks some weights (they are random: warned).
        device: the torch device to run on.

    Raises:
        ValueError: a missing path, a model that cannot be loaded offline or has no mask token, or
            newly initialised weights without ``allow_untrained``.
    """
    ref = resolve_model(name_or_path)
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    where = "" if allow_download else " from local files (downloads are off)"
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # its load report and bars: the missing weights are reported below
    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(ref, local_files_only=not allow_download)
        model, info = AutoModelForMaskedLM.from_pretrained(
            ref, local_files_only=not allow_download, output_loading_info=True
        )
    except (OSError, ValueError, KeyError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"The model {ref!r} could not be loaded as a masked LM{where}: {first}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    if tokenizer.mask_token is None or tokenizer.mask_token_id is None:
        raise ValueError(f"The tokenizer of {ref!r} has no mask token: a masked LM is needed.")
    missing = newly_initialised(model, info)
    if missing:
        shown = ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
        msg = (
            f"The model {ref!r} has newly initialised weights ({shown}): its masked-LM head is not trained, "
            "so its gender probabilities are noise"
        )
        if not allow_untrained:
            raise ValueError(msg + "; pass allow_untrained=True (--allow-untrained-head) to score it anyway.")
        warnings.warn(msg + ".", UserWarning, stacklevel=2)
    model.to(device).eval()
    return MaskedLM(model=model, tokenizer=tokenizer, name=str(name_or_path), newly_initialised=missing)


def _progress(total: int, show: bool | None, n_batches: int) -> Any:
    if show is False or (show is None and n_batches <= PROGRESS_BATCHES):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="probe", desc="scoring probes")


def _score_binary(probes: Sequence[Probe], head: BinaryHead, batch_size: int) -> pd.DataFrame:
    """Every variant's female score is P(female) from the binary head; the male score is 1 - P(female)."""
    texts = [p.render(head.tokenizer.mask_token) for p in probes]
    female = head.model.female_probability(texts, batch_size=batch_size)
    frame = pd.DataFrame([dataclasses.asdict(p) for p in probes]).drop(columns="text")
    frame.insert(0, "text", texts)
    frame["top_tokens"] = ""
    for v in VARIANTS:
        frame[f"female_{v}"] = female
        frame[f"male_{v}"] = 1.0 - female
    frame.attrs.update(dropped=[], model=head.name, head="binary")
    return frame


def score_probes(
    probes: Sequence[Probe],
    lm: MaskedLM | BinaryHead,
    ids: GenderedIds | GenderedWords | None = None,
    *,
    batch_size: int = 32,
    top_k: int = 5,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Score every probe: one row per probe with its fields and the female / male scores.

    Args:
        probes: the probes (:func:`textcause.gender.probes.make_probes`).
        lm: the model (:func:`load_masked_lm`), or a fine-tuned model (:func:`load_probe_model`)
            scored through its binary head (``ids``, ``top_k`` and ``progress`` do not apply).
        ids: the gendered token ids, or a word list to map (default: table 3).
        batch_size: probes per forward pass.
        top_k: how many top predictions the ``top5`` variant looks at (the paper: 5).
        progress: a tqdm bar; None shows one when there are more than a few batches.

    Returns:
        A frame with the probe fields, ``text`` (rendered), ``top_tokens`` (the ``top_k`` tokens)
        and the columns ``{female,male}_{top5,softmax,top5_renormalised,softmax_renormalised}``;
        ``attrs["dropped"]`` lists the words left out as ``(gender, word, reason)``.

    Raises:
        ValueError: no probes, a bad batch size, or a probe that does not hold exactly one mask token
            within the model's window (:func:`~textcause.gender.window.model_window`; a longer probe is
            cut to it before it is tokenised).
    """
    import torch

    if not probes:
        raise ValueError("There are no probes to score: give at least one probe.")
    batch_size = check_int(batch_size, "batch_size", "score_probes", low=1)
    top_k = check_int(top_k, "top_k", "score_probes", low=1)
    if isinstance(lm, BinaryHead):
        return _score_binary(probes, lm, batch_size)
    tok, model = lm.tokenizer, lm.model
    if not isinstance(ids, GenderedIds):
        ids = gendered_token_ids(tok, ids)
    vocab = model.get_output_embeddings().weight.shape[0]
    if max(ids.female_ids + ids.male_ids) >= vocab:
        raise ValueError(f"The tokenizer's gendered ids exceed the model's vocabulary of {vocab} tokens.")
    device = next(model.parameters()).device
    gid = {g: torch.tensor(ids.ids(g), dtype=torch.long, device=device) for g in GENDERS}
    texts = [p.render(tok.mask_token) for p in probes]
    window = model_window(tok, getattr(model, "config", None))
    n = len(texts)
    scores = {f"{g}_{v}": np.empty(n) for g in GENDERS for v in ("top5", "softmax")}
    top_tokens: list[str] = []
    bar = _progress(n, progress, -(-n // batch_size))
    try:
        with torch.inference_mode():
            for start in range(0, n, batch_size):
                batch = texts[start : start + batch_size]
                enc, at_mask = one_mask_batch(tok, batch, window, device, "probe")
                logits = model(**enc).logits[at_mask]  # (batch, vocab): one mask per probe, in order
                probs = torch.softmax(logits.double(), dim=-1)
                top_p, top_i = torch.topk(probs, k=min(top_k, probs.shape[-1]), dim=-1)
                sl = slice(start, start + len(batch))
                for g in GENDERS:
                    scores[f"{g}_softmax"][sl] = probs[:, gid[g]].sum(dim=1).cpu().numpy()
                    scores[f"{g}_top5"][sl] = (top_p * torch.isin(top_i, gid[g])).sum(dim=1).cpu().numpy()
                top_tokens += [" ".join(tok.convert_ids_to_tokens(row)) for row in top_i.cpu().tolist()]
                if bar is not None:
                    bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    for v in ("top5", "softmax"):
        total = scores[f"female_{v}"] + scores[f"male_{v}"]
        with np.errstate(invalid="ignore", divide="ignore"):
            for g in GENDERS:
                scores[f"{g}_{v}_renormalised"] = np.where(total > 0, scores[f"{g}_{v}"] / total, np.nan)
    frame = pd.DataFrame([dataclasses.asdict(p) for p in probes]).drop(columns="text")
    frame.insert(0, "text", texts)
    frame["top_tokens"] = top_tokens
    for g in GENDERS:
        for v in VARIANTS:
            frame[f"{g}_{v}"] = scores[f"{g}_{v}"]
    frame.attrs["dropped"] = [(d.gender, d.word, d.reason) for d in ids.dropped]
    frame.attrs["model"] = lm.name
    frame.attrs["head"] = "masked_lm"
    return frame
