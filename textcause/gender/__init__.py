"""The masked gender task: probes (pure inference) and masked-gender fine-tuning.

* :mod:`~textcause.gender.probes`: table 1's templates x tenses x life stages x W (data in ``data/``);
* :mod:`~textcause.gender.words`: table 3's gendered words and their token ids per tokenizer;
* :mod:`~textcause.gender.scoring`: the female / male mass at the mask of any Hugging Face masked LM;
* :mod:`~textcause.gender.stats` and :mod:`~textcause.gender.table`: table 2's slopes and r with the
  linear fit's intervals (figure 2's band is the same fit's);
* :mod:`~textcause.gender.run`: :func:`probe_model`, the whole probe of one model;
* fine-tuning (section 4.4): :mod:`~textcause.gender.sentences` (documents, a regex sentence
  splitter), :mod:`~textcause.gender.masking` (every gendered word masked with the model's
  tokenizer), :mod:`~textcause.gender.build` (the memoised build of examples),
  :class:`GenderDataModule`, :class:`GenderTagger` (encoder + binary head) and
  :class:`GenderMaskedModel` (the LightningModule);
* the controlled selection-bias experiment: :mod:`~textcause.gender.selection` (the sampler
  S ~ Bernoulli(f(W, G)) and the W-G association), :mod:`~textcause.gender.selected` (the selected
  training sets, :class:`SelectedGenderDataModule`), :mod:`~textcause.gender.selection_spec` (its
  YAML) and :mod:`~textcause.gender.dose` (the dose-response table); it is run by
  :mod:`textcause.experiments.gender`.

Names are imported lazily, so ``import textcause.gender`` does not import torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Probe": "probes",
    "ProbeSpec": "probes",
    "WList": "probes",
    "builtin_w_lists": "probes",
    "load_probe_spec": "probes",
    "load_w_list": "probes",
    "make_probes": "probes",
    "GenderedWords": "words",
    "GenderedIds": "words",
    "gendered_token_ids": "words",
    "load_gendered_words": "words",
    "MaskedLM": "scoring",
    "VARIANTS": "scoring",
    "load_masked_lm": "scoring",
    "BinaryHead": "scoring",
    "load_probe_model": "scoring",
    "score_probes": "scoring",
    "Curve": "stats",
    "curve_stats": "stats",
    "fit_line": "stats",
    "probe_stats": "stats",
    "stats_table": "table",
    "table_markdown": "table",
    "ProbeResult": "run",
    "probe_model": "run",
    "Document": "sentences",
    "read_documents": "sentences",
    "split_sentences": "sentences",
    "mask_sentences": "masking",
    "GenderData": "build",
    "GenderDataSettings": "build",
    "build_gender_data": "build",
    "GenderDataModule": "datamodule",
    "GenderTagger": "components",
    "GenderMaskedModel": "model",
    "load_finetuned": "model",
    "Association": "selection",
    "Selection": "selection",
    "association": "selection",
    "draw_w": "selection",
    "expected_association": "selection",
    "select_authors": "selection",
    "selection_probability": "selection",
    "SelectedGenderDataModule": "selected",
    "select_examples": "selected",
    "SelectionSpec": "selection_spec",
    "load_experiment": "selection_spec",
    "dose_response": "dose",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"textcause.gender.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'textcause.gender' has no attribute {name!r}")
