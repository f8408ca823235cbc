"""The YAML of a CFR evaluation (``configs/cfr/blogs.yaml``, ``configs/cfr/templates.yaml``).

    name: blogs                  # the run's name (default: the file's stem); rows are keyed by it
    data: blogs                  # blogs (a history corpus, swapped by rule), templates, or pairs (a CSV)
    corpus: blogs                # data: blogs -- a short corpus name or a history JSONL path
    pairs_file: null             # data: pairs -- a CSV with original, counterfactual, concept, label
    templates_file: null         # data: templates -- null: configs/cfr/eeec_templates.yaml
    swap_map: null               # data: blogs -- null: configs/cfr/gender_swap.yaml
    n_documents: 2000            # units (null: all)
    concept_field: gender        # data: blogs -- the authors' concept field
    concept_source: author       # data: blogs -- author (the field) or words (the text's gendered words)
    concept_values: [female, male]
    label_field: age             # data: blogs -- the label's metadata field
    label_bins: [20, 30]         # cut a numeric label into bins (null: the value itself)
    max_words: 64                # data: blogs -- a post's first words kept (the encoder sees them all)
    min_swaps: 1                 # data: blogs -- gendered words a post needs among them
    bias: 0.0                    # data: templates -- how strongly gender and the label are tied
    bias_mode: selection         # data: templates -- selection (gender follows the class) or label (label follows gender)
    test_fraction: 0.3
    seed: 0
    C: 1.0                       # the classifier's inverse regularisation
    probe_C: 1.0                 # the concept probe's
    n_samples: 20                # draws of the stochastic CFRs
    cfr_alpha: 0.05              # the CFR's per-class regressions' penalty, on the scale of the authors' MLPRegressor
    cfr_batch: 200               # ... whose minibatch sets it: class z's ridge penalty is cfr_alpha * n_z / min(200, n_z)
    svd_tol: 0.01                # the erasers' singular-value threshold
    n_boot: 200                  # bootstrap replicates of the intervals
    methods: [identity, erasure, cfr, cfr_stochastic, leace_erasure, leace_mean_cfr, leace_mean_cfr_stochastic,
              oracle_erasure, oracle_cfr]
    encoder: null                # null: the packaged all-MiniLM-L6-v2
    max_tokens: 128
    batch_size: 64
    threads: 1                   # torch threads while encoding, BLAS threads while evaluating (null: the libraries' own)

Parsed by :mod:`textcause.specs` (one ``ValueError`` sentence naming the file and the key).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

from textcause.counterfactual.cfr.evaluate import METHODS, CFRSettings
from textcause.counterfactual.cfr.regression import DEFAULT_ALPHA, MLP_BATCH
from textcause.io import content_key
from textcause.specs import NAME_DOC, SpecFile, holds, ints, key, one_of, read_yaml, reals, some_of

KIND = "CFR config"
EXAMPLE = "configs/cfr/blogs.yaml"
DATA = ("blogs", "templates", "pairs")


@dataclasses.dataclass(frozen=True)
class CFRSpec:
    """A CFR evaluation as written (see the module docstring)."""

    name: Optional[str] = key(default=None, doc=NAME_DOC)
    data: str = key(one_of(DATA), default="blogs")
    corpus: str = key(default="blogs")
    pairs_file: Optional[str] = key(default=None)
    templates_file: Optional[str] = key(default=None)
    swap_map: Optional[str] = key(default=None)
    n_documents: Optional[int] = key(ints(low=10), default=2000)
    concept_field: str = key(default="gender")
    concept_source: str = key(one_of(("author", "words")), default="author")
    concept_values: list[str] = key(
        holds(lambda v: len(v) == 2 and v[0] != v[1]), default=["female", "male"], doc="a list of 2 distinct values"
    )
    label_field: str = key(default="age")
    label_bins: Optional[list[float]] = key(
        holds(lambda v: len(v) >= 1 and list(v) == sorted(set(v))),
        default=[20, 30],
        doc="an increasing list of numbers",
    )
    max_words: int = key(ints(low=1), default=64)
    min_swaps: int = key(ints(low=1), default=1)
    bias: float = key(reals(low=0, high=1), default=0.0)
    bias_mode: str = key(one_of(("selection", "label")), default="selection")
    test_fraction: float = key(reals(low=0, high=1, low_open=True, high_open=True), default=0.3)
    seed: int = key(ints(low=0), default=0)
    C: float = key(reals(low=0, low_open=True), default=1.0)
    probe_C: float = key(reals(low=0, low_open=True), default=1.0)
    n_samples: int = key(ints(low=1), default=20)
    cfr_alpha: float = key(reals(low=0), default=DEFAULT_ALPHA)
    cfr_batch: Optional[int] = key(ints(low=1), default=MLP_BATCH)
    svd_tol: float = key(reals(low=0, low_open=True), default=0.01)
    n_boot: int = key(ints(low=0), default=200)
    methods: list[str] = key(some_of(METHODS), default=list(METHODS))
    encoder: Optional[str] = key(default=None)
    max_tokens: int = key(ints(low=8), default=128)
    batch_size: int = key(ints(low=1), default=64)
    threads: Optional[int] = key(ints(low=1), default=1)


@dataclasses.dataclass(frozen=True)
class CFRExperiment:
    """A parsed config: its spec, name and file."""

    spec: CFRSpec
    name: str
    source: str = ""

    @property
    def settings(self) -> CFRSettings:
        """The evaluation's settings: the spec's values of :class:`CFRSettings`' fields."""
        same = {f.name: getattr(self.spec, f.name) for f in dataclasses.fields(CFRSettings)}
        return CFRSettings(**{**same, "methods": tuple(self.spec.methods)})

    @property
    def config_hash(self) -> str:
        """A key of everything that decides the numbers (not the name, not the threads)."""
        fields = dataclasses.asdict(self.spec)
        for name in ("name", "threads", "batch_size"):
            fields.pop(name)
        return content_key(fields)[:16]

    @property
    def run_id(self) -> str:
        return f"{self.name}:seed{self.spec.seed}"


def parse_cfr(data: Any, *, source: str = "<dict>") -> CFRExperiment:
    """The experiment of a parsed YAML mapping.

    Raises:
        ValueError: "CFR config '<source>': ..." naming the key.
    """
    file = SpecFile(KIND, source)
    spec = file.parse(CFRSpec, {} if data is None else data)
    stem = Path(source).stem if source and not source.startswith("<") else "cfr"
    name = file.name_or(spec.name, stem)
    if spec.data == "pairs" and not spec.pairs_file:
        raise file.fail(
            "'data: pairs' needs 'pairs_file': a CSV with the columns original, counterfactual, concept, label."
        )
    return CFRExperiment(spec=spec, name=name, source=source)


def load_cfr(path: str | Path) -> CFRExperiment:
    """The experiment of a YAML file (see :func:`parse_cfr`)."""
    data, _ = read_yaml(path, kind=KIND, example=EXAMPLE)
    return parse_cfr(data, source=str(path))
