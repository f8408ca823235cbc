"""The whole probe of one masked LM: W lists -> probes -> scores -> curves -> table 2 (no files).

:func:`probe_model` is what ``textcause gender probe`` runs; the files (table, figure) are written by
:func:`textcause.reports.gender.write_probe_outputs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from textcause.gender.probes import WList, load_probe_spec, load_w_list, make_probes
from textcause.gender.scoring import BinaryHead, MaskedLM, load_probe_model, score_probes, variant_name
from textcause.gender.stats import UNITS, Curve, probe_stats
from textcause.gender.table import stats_table
from textcause.gender.words import gendered_token_ids, load_gendered_words
from textcause.validation import check_int, check_options, check_real


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """What a probe run gives.

    Attributes:
        model: the model's name or path.
        variant: the scoring variant of the curves.
        scores: one row per probe (:func:`textcause.gender.scoring.score_probes`).
        curves: every curve (:func:`textcause.gender.stats.probe_stats`).
        table: table 2 (:func:`textcause.gender.table.stats_table`).
        notes: what a reader must know (dropped words, an untrained head, a binary head).
        head: ``masked_lm`` (a masked LM's vocabulary) or ``binary`` (a fine-tuned binary head:
            the male curve is the female one mirrored).
        untrained: how many weights of the model were newly initialised (a masked-LM head scored
            under ``allow_untrained``: its numbers are noise); 0 for a trained model.
    """

    model: str
    variant: str
    scores: pd.DataFrame
    curves: list[Curve]
    table: pd.DataFrame
    notes: tuple[str, ...]
    head: str = "masked_lm"
    untrained: int = 0


def probe_model(
    model: str | Path | MaskedLM | BinaryHead,
    w_lists: Sequence[str | Path | WList] = ("years",),
    *,
    variant: str = "top5",
    templates: str | Path | None = None,
    words: str | Path | None = None,
    batch_size: int = 32,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    unit: str = "probe",
    allow_download: bool = False,
    allow_untrained: bool = False,
    progress: bool | None = None,
) -> ProbeResult:
    """Probe a masked LM on W lists: the per-probe scores, the curves and table 2.

    Args:
        model: a model folder, a Hugging Face name, a fine-tuned checkpoint (``.ckpt``, scored
            through its binary head), or a loaded :class:`MaskedLM` / :class:`BinaryHead`.
        w_lists: built-in W list names, W files, or :class:`WList` objects.
        variant: the scoring variant of the curves and table (every variant is in ``scores``; a
            binary head has one score, P(female), and the table calls it ``binary_head``).
        templates: a probe spec YAML (default: the paper's).
        words: a gendered word YAML (default: table 3).
        batch_size: probes per forward pass.
        n_boot: replicates of the probe bootstrap kept beside the fit's intervals (0: none).
        seed: the bootstrap's seed.
        level: the intervals' level.
        unit: what the probe bootstrap resamples (``probe`` or ``frame``).
        allow_download: let transformers download a model missing from the local cache.
        allow_untrained: score a model whose masked-LM head is newly initialised (warned).
        progress: a progress bar (None: when there are many probes).

    Raises:
        ValueError: a bad W list, spec, word list, model or parameter (checked before the model loads).
    """
    variant = variant_name(variant)
    check_int(batch_size, "batch_size", "probe_model", low=1)
    check_int(n_boot, "n_boot", "probe_model", low=0)
    check_real(level, "level", "probe_model", low=0, high=1, low_open=True, high_open=True)
    check_options(unit, "unit", "probe_model", UNITS)
    spec = load_probe_spec(templates)
    word_list = load_gendered_words(words)
    lists = [w if isinstance(w, WList) else load_w_list(w) for w in w_lists]
    if not lists:
        raise ValueError("No W list was given: name one of the built-in lists or a file.")
    if len({w.name for w in lists}) != len(lists):
        raise ValueError(f"The W lists {[w.name for w in lists]} repeat a name: give each list once.")
    probes = [p for w in lists for p in make_probes(w, spec)]
    lm = (
        model
        if isinstance(model, (MaskedLM, BinaryHead))
        else load_probe_model(model, allow_download=allow_download, allow_untrained=allow_untrained)
    )
    binary = isinstance(lm, BinaryHead)
    ids = None if binary else gendered_token_ids(lm.tokenizer, word_list)
    scores = score_probes(probes, lm, ids, batch_size=batch_size, progress=progress)
    curves = probe_stats(scores, variant, n_boot=n_boot, seed=seed, level=level, unit=unit)
    table = stats_table(curves, model=lm.name)
    notes = [] if ids is None else [f"{d.gender} word {d.word!r} not scored: {d.reason}." for d in ids.dropped]
    if binary:
        table = table.assign(variant="binary_head")
        notes.insert(
            0,
            "Scored through the fine-tuned model's binary head: the female score is P(female) at the mask and "
            "the male score is 1 - P(female), so the male curve mirrors the female one (its slope and r are "
            "the female ones negated): read the female curve.",
        )
    if lm.newly_initialised:
        notes.insert(
            0,
            f"WARNING: {len(lm.newly_initialised)} weights of this model were newly initialised "
            "(no trained masked-LM head): these probabilities are noise, not the model's beliefs.",
        )
    return ProbeResult(
        model=lm.name,
        variant=variant,
        scores=scores,
        curves=curves,
        table=table,
        notes=tuple(notes),
        head="binary" if binary else "masked_lm",
        untrained=len(lm.newly_initialised or ()),
    )
