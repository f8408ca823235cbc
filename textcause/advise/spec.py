"""The advise config (``configs/advise/<name>.yaml``), parsed and checked.

Either an observational study config gives the users, the treatment and the outcome exactly as
``textcause observe`` takes them::

    study: observational/twitter_gender.yaml    # under configs/, or any path

or a corpus through any reader and its column flags, with a per-user treatment and outcome taken
from the table's columns (or from the users' meta fields for a history JSONL)::

    corpus: reddit-drunk                        # a short name, a path (JSONL, CSV, Parquet, NDJSON, HF)
    columns: {author_col: author, text_col: text, time_col: time, drop_duplicates: true}
    treatment: {column: authorkarma, aggregate: last, threshold: median}   # T = 1 above the threshold
    #   or {column: gender, treated: female, control: male}
    outcome: {column: ups, aggregate: mean, threshold: median}             # null threshold: continuous Y

and then, for both::

    name: reddit_drunk                # default: the file's stem
    candidates: [lr_bigram_binary, nn_lda]   # model configs; default: every one with no true propensity
    methods: [mypkg.mod:Method]       # textcause.methods methods, graded on the calibration only
    seeds: 3                          # calibration seeds per task level (>= 3: see MIN_SEEDS)
    budget_minutes: 30                # refused at once when the estimated cost is larger
    e_value: false                    # ask for an E-value (a binary outcome only)
    min_per_arm: 50
    calibration: {tasks: {...}, overrides: {...}}   # task levels (default CALIBRATION_TASKS)
    overrides: {trainer.max_epochs: 10}             # train.py options for every model, both stages
    model_overrides: {nn_lda: {trainer.max_epochs: 5}}
    tune: {nn_lda: {model.init_args.lr: [0.01, 0.03]}}   # searched in every calibration cell and the real fit
    evaluation: {n_boot: 300, estimators: [ipw, stratified, matching]}

Parsing imports neither torch nor Lightning; every mistake is one ``ValueError`` sentence naming
the file and the key (:mod:`textcause.specs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union

from textcause.estimators.registry import PROPENSITY_ESTIMATORS
from textcause.observational.spec import (
    TUNE_DOC,
    Search,
    Values,
    as_search,
    is_oracle_config,
    model_configs,
    options,
    options_ok,
    per_model_ok,
    tune_ok,
)
from textcause.paths import config_dir, model_config_names, model_config_path
from textcause.specs import NAME_DOC, SpecFile, holds, ints, key, one_of, read_yaml, reals, some_of

__all__ = [
    "AGGREGATES",
    "AdviseSpec",
    "CALIBRATION_TASKS",
    "MIN_SEEDS",
    "default_candidates",
    "load_advise",
    "advise_from_dict",
]

KIND = "Advise config"
#: The calibration suite: one level per challenge the verdict grades (Weld et al., section 5.2), the
#: placebo task (true ATE 0) and where the signal sits in the history (order of text).
CALIBRATION_TASKS: dict[str, list[int]] = {
    "linguistic_complexity": [3],
    "signal_intensity": [2],
    "order_of_text": [2],
    "placebo": [1],
}
#: The fewest seeds per task level the verdict is given with: with 3 seeds and 4 levels a pair of
#: methods is compared on 12 paired cells, enough to separate a bias gap of about two of its
#: standard errors (the gross failures of the paper: 0.1-0.4), not 0.95 from 0.90 coverage.
MIN_SEEDS = 3
#: How a user's rows of a table column become one value.
AGGREGATES = ("mean", "max", "min", "first", "last")


def _values_ok(v: Any) -> bool:
    return not isinstance(v, list) or len(v) > 0


@dataclass(frozen=True, kw_only=True)
class Columns:
    """``columns``: the comment-table reader's flags (as ``--data.author_col`` etc.)."""

    author_col: str = key(holds(bool), default="author")
    text_col: str = key(holds(bool), default="text")
    time_col: Optional[str] = key(default="time")
    drop_duplicates: bool = key(default=False)


@dataclass(frozen=True, kw_only=True)
class Variable:
    """``treatment`` / ``outcome``: a table column (or meta field) per user, made binary or not."""

    column: str = key(holds(bool), doc="a column of the table (or a meta field of a history JSONL)")
    aggregate: str = key(one_of(AGGREGATES), default="last")
    threshold: Union[Literal["median"], int, float, None] = key(default="median", doc="'median', a number or null")
    treated: Optional[Values] = key(holds(_values_ok), default=None, doc="a value or a non-empty list of values")
    control: Optional[Values] = key(holds(_values_ok), default=None, doc="a value or a non-empty list of values")


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """``calibration``: the semi-synthetic task levels and train.py options for those cells only."""

    tasks: dict[str, list[int]] = key(default=CALIBRATION_TASKS, doc="a mapping {task: [levels]}")
    overrides: dict = key(holds(options_ok), default={}, doc="a mapping of train.py options")


@dataclass(frozen=True, kw_only=True)
class AdviseEvaluation:
    """``evaluation``: bootstrap replicates and the propensity estimators graded."""

    n_boot: int = key(ints(low=0), default=300)
    estimators: tuple[str, ...] = key(some_of(PROPENSITY_ESTIMATORS), default=("ipw", "stratified", "matching"))


@dataclass(frozen=True, kw_only=True)
class AdviseConfig:
    """The YAML as written (see the module docstring)."""

    name: Optional[str] = key(default=None, doc=NAME_DOC)
    description: str = key(default="")
    study: Optional[str] = key(holds(bool), default=None, doc="an observational study config")
    corpus: Optional[str] = key(holds(bool), default=None, doc="a short corpus name or a path")
    columns: Columns = key(default=Columns())
    treatment: Variable = key(default=Variable(column=""))  # column "": not given
    outcome: Variable = key(default=Variable(column=""))
    min_per_arm: int = key(ints(low=2), default=50)
    candidates: Optional[list[str]] = key(holds(lambda v: all(isinstance(m, str) and m for m in v)), default=None)
    methods: list[str] = key(default=[])
    seeds: int = key(ints(low=1), default=MIN_SEEDS)
    budget_minutes: float = key(reals(low=0.0, low_open=True), default=60.0)
    e_value: bool = key(default=False)
    split_seed: int = key(ints(low=0), default=0)
    calibration: Calibration = key(default=Calibration())
    overrides: dict = key(holds(options_ok), default={}, doc="a mapping of train.py options")
    model_overrides: dict[str, Optional[dict]] = key(holds(per_model_ok), default={})
    tune: dict = key(holds(tune_ok), default={}, doc=TUNE_DOC.replace("'models'", "'candidates'"))  # type: ignore[type-arg]
    evaluation: AdviseEvaluation = key(default=AdviseEvaluation())


@dataclass(frozen=True)
class AdviseSpec:
    """A parsed advise config.

    Attributes:
        name: the run's name (output folder, grid and study names).
        study: the observational study config (None: ``corpus`` with ``treatment`` / ``outcome``).
        corpus, columns: the corpus and its reader flags (``author_col``, ``text_col``, ``time_col``,
            ``drop_duplicates``).
        treatment, outcome: the per-user variables of the table form (``Variable``), else None.
        candidates: ``(name, config path)`` per candidate model config.
        methods: ``package.module:Name`` methods graded on the calibration.
        seeds: calibration seeds per task level; budget_minutes: the time budget.
        e_value: whether an E-value is asked for.
        tasks: the calibration task levels; calibration_overrides: options for calibration cells.
        overrides, model_overrides: train.py options for every / one model.
        tune: per candidate name, a search space ``((option, (value, ...)), ...)``, searched in every
            calibration cell and in the real fit alike (the lowest validation loss is evaluated).
        n_boot, estimators: the evaluation settings.
        source: the config file (for messages).
    """

    name: str
    candidates: tuple[tuple[str, Path], ...]
    study: Optional[Path] = None
    corpus: Optional[str] = None
    columns: dict[str, Any] = field(default_factory=dict, hash=False)
    treatment: Optional[Variable] = None
    outcome: Optional[Variable] = None
    description: str = ""
    min_per_arm: int = 50
    methods: tuple[str, ...] = ()
    seeds: int = MIN_SEEDS
    budget_minutes: float = 60.0
    e_value: bool = False
    split_seed: int = 0
    tasks: dict[str, list[int]] = field(default_factory=lambda: dict(CALIBRATION_TASKS), hash=False)
    calibration_overrides: tuple[tuple[str, Any], ...] = ()
    overrides: tuple[tuple[str, Any], ...] = ()
    model_overrides: dict[str, tuple[tuple[str, Any], ...]] = field(default_factory=dict, hash=False)
    tune: dict[str, Search] = field(default_factory=dict, hash=False)
    n_boot: int = 300
    estimators: tuple[str, ...] = ("ipw", "stratified", "matching")
    source: str = "<dict>"

    @property
    def model_names(self) -> list[str]:
        return [m for m, _ in self.candidates]


def default_candidates() -> list[str]:
    """Every model config of ``configs/model/`` that needs no true propensity (the oracle is left out)."""
    return [name for name in model_config_names() if not is_oracle_config(model_config_path(name))]


def _candidates(names: Optional[list[str]], file: SpecFile) -> tuple[tuple[str, Path], ...]:
    return model_configs(
        names if names is not None else default_candidates(),
        file,
        role="candidate",
        where=" for 'candidates'",
        study="the real study",
        distinct="'candidates'",
    )


def _study_path(value: str, file: SpecFile) -> Path:
    for path in (Path(value), config_dir() / value):
        if path.is_file():
            return path.resolve()
    raise file.fail(f"no observational study config at {value!r} (nor under {config_dir()}).")


def _variables(config: AdviseConfig, file: SpecFile) -> None:
    if (config.study is None) == (config.corpus is None):
        raise file.fail("give 'study' (an observational study config) or 'corpus' with 'treatment' and 'outcome'.")
    if config.study is not None:
        extra = [k for k in ("treatment", "outcome") if getattr(config, k).column]
        if extra:
            raise file.fail(f"{extra} come from the 'study' config; remove them or give 'corpus' instead.")
        return
    for name in ("treatment", "outcome"):
        var = getattr(config, name)
        if not var.column:
            raise file.fail(f"the key {name!r} is required with 'corpus'.")
        if (var.treated is None) != (var.control is None):
            raise file.fail(f"give both '{name}.treated' and '{name}.control', or neither.")
    if config.outcome.treated is not None:
        raise file.fail("'outcome' is a number per user: give 'outcome.threshold', not treated / control values.")


def advise_from_dict(spec: dict[str, Any], *, source: str = "<dict>", default_name: str = "advise") -> AdviseSpec:
    """Build an :class:`AdviseSpec` from a parsed config.

    Raises:
        ValueError: an unknown key, a missing key or a malformed value (one sentence).
    """
    file = SpecFile(KIND, source)
    config = file.parse(AdviseConfig, spec)
    _variables(config, file)
    candidates = _candidates(config.candidates, file)
    if not candidates and not config.methods:
        raise file.fail("'candidates' and 'methods' are both empty: give at least two methods to compare.")
    unknown = set(config.model_overrides) - {n for n, _ in candidates}
    if unknown:
        raise file.fail(f"'model_overrides' names models that are not candidates: {sorted(unknown)}.")
    unknown = set(config.tune) - {n for n, _ in candidates}
    if unknown:
        raise file.fail(f"'tune' names models that are not candidates: {sorted(unknown)}.")
    return AdviseSpec(
        name=file.name_or(config.name, default_name),
        description=config.description.strip(),
        study=_study_path(config.study, file) if config.study else None,
        corpus=config.corpus,
        columns=vars(config.columns).copy(),
        treatment=config.treatment if config.treatment.column else None,
        outcome=config.outcome if config.outcome.column else None,
        min_per_arm=config.min_per_arm,
        candidates=candidates,
        methods=tuple(config.methods),
        seeds=config.seeds,
        budget_minutes=float(config.budget_minutes),
        e_value=config.e_value,
        split_seed=config.split_seed,
        tasks={t: list(v) for t, v in config.calibration.tasks.items()},
        calibration_overrides=options(config.calibration.overrides),
        overrides=options(config.overrides),
        model_overrides={m: options(v) for m, v in config.model_overrides.items()},
        tune={m: as_search(space) for m, space in config.tune.items()},
        n_boot=config.evaluation.n_boot,
        estimators=tuple(config.evaluation.estimators),
        source=source,
    )


def load_advise(path: str | Path) -> AdviseSpec:
    """Read an advise config YAML (see the module docstring).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the YAML is malformed or invalid (one sentence).
    """
    spec, _ = read_yaml(path, kind=KIND, example="configs/advise/reddit_drunk.yaml")
    return advise_from_dict(spec, source=str(path), default_name=Path(path).stem)
