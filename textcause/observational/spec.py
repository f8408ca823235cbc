"""The observational study config (``configs/observational/<name>.yaml``), parsed and checked.

A study names a corpus, a treatment from a metadata field (``treatment: {field: gender, treated:
female, control: male}``), an outcome computed from each user's later posts (``outcome: {property:
url_share, threshold: median}``), the models to fit and how to evaluate them; :class:`StudyConfig`
lists every key with its default.

The YAML is the :class:`StudyConfig` dataclass (its blocks :class:`Treatment`, :class:`History`,
:class:`Outcome`, :class:`Evaluation`), parsed by :mod:`textcause.specs`; :func:`spec_from_dict`
checks the keys against each other and returns the :class:`ObservationalSpec` the study runs on.
Parsing imports neither torch nor Lightning. Every mistake is one ``ValueError`` sentence that
names the config file and the key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml

from textcause.corpus.types import SPLITS
from textcause.estimators.registry import DEFAULT_ESTIMATORS, OUTCOME_ESTIMATORS, PROPENSITY_ESTIMATORS
from textcause.observational.outcomes import OUTCOMES
from textcause.paths import model_config_path
from textcause.specs import NAME_DOC, SpecFile, holds, ints, key, one_of, read_yaml, reals, some_of
from textcause.validation import check_that

__all__ = [
    "OPTIONS_DOC",
    "PER_MODEL_DOC",
    "MODELS_DOC",
    "TUNE_DOC",
    "Search",
    "as_search",
    "options_ok",
    "per_model_ok",
    "tune_ok",
    "options",
    "Values",
    "Treatment",
    "History",
    "Outcome",
    "Evaluation",
    "StudyConfig",
    "ObservationalSpec",
    "Values",
    "canonical",
    "model_names",
    "model_configs",
    "is_oracle_config",
    "spec_from_dict",
    "load_spec",
]

_KIND = "Observational config"
_Scalar = Union[str, int, float, bool]
#: A value of a column, or a list of values (a treatment arm, a filter).
Values = Union[_Scalar, list[_Scalar]]
_VALUES_DOC = "a value or a non-empty list of values"
OPTIONS_DOC = "a mapping of train.py options (e.g. trainer.max_epochs: 10)"
PER_MODEL_DOC = "a mapping from model names of 'models' to train.py options"
MODELS_DOC = "a non-empty list of model config names"


def _nonempty(values: Any) -> bool:
    return not isinstance(values, list) or len(values) > 0


def options_ok(value: Mapping[Any, Any]) -> bool:
    """Whether ``value`` maps non-empty strings (train.py options) to values."""
    return all(isinstance(k, str) and k for k in value)


def per_model_ok(value: Mapping[Any, Any]) -> bool:
    """Whether ``value`` maps names to option mappings (or null)."""
    return all(isinstance(k, str) and k and options_ok(v or {}) for k, v in value.items())


#: What a search space looks like in a cell: ``((dotted option, (value, ...)), ...)``, sorted by option.
Search = tuple[tuple[str, tuple[Any, ...]], ...]


def as_search(space: Optional[Mapping[str, Sequence[Any]]]) -> Search:
    """A search space mapping as a hashable, ordered :data:`Search` (``{}`` / None: no search)."""
    return tuple(sorted((str(k), tuple(v)) for k, v in (space or {}).items()))


TUNE_DOC = (
    "a mapping from model names of 'models' to search spaces {train.py option: [value, ...]} "
    "(non-empty lists of distinct scalar values)"
)


def tune_ok(value: Any) -> bool:
    """Whether ``value`` maps model names to search spaces (see :data:`TUNE_DOC`)."""

    def space_ok(space: Any) -> bool:
        return (
            isinstance(space, Mapping)
            and bool(space)
            and options_ok(space)
            and all(
                isinstance(v, list)
                and v
                and all(isinstance(x, (str, int, float, bool)) for x in v)
                and len({repr(x) for x in v}) == len(v)
                for v in space.values()
            )
        )

    return isinstance(value, Mapping) and all(isinstance(k, str) and space_ok(v) for k, v in value.items())


def options(value: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """train.py options as ``(dotted key, value)`` pairs (a leading ``--`` is dropped)."""
    return tuple((k.lstrip("-"), v) for k, v in (value or {}).items())


# ------------------------------------------------------------------------------------ the YAML's blocks
@dataclass(frozen=True, kw_only=True)
class Treatment:
    """``treatment``: the meta field and its values meaning T = 1 and T = 0 (other values are dropped)."""

    field: str = key(holds(bool), doc="the name of a meta field")
    treated: Values = key(holds(_nonempty), doc=_VALUES_DOC)
    control: Values = key(holds(_nonempty), doc=_VALUES_DOC)


@dataclass(frozen=True, kw_only=True)
class History:
    """``history``: the text is a user's first ``text_posts`` posts (or ``text_fraction`` of them)."""

    text_posts: Optional[int] = key(ints(low=1), default=None)
    text_fraction: Optional[float] = key(reals(low=0.0, high=1.0, low_open=True, high_open=True), default=None)
    min_text_posts: int = key(ints(low=1), default=1)
    min_later_posts: int = key(ints(low=1), default=1)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """``outcome``: a property of the later posts (``OUTCOMES``), or a numeric meta ``field``; thresholded or not."""

    property: Optional[str] = key(one_of(lambda: sorted(OUTCOMES)), default=None)
    field: Optional[str] = key(holds(bool), default=None, doc="the name of a numeric meta field")
    threshold: Union[Literal["median"], int, float, None] = key(default="median", doc="'median', a number or null")
    terms: Optional[list[str]] = key(default=None, doc="a non-empty list of words for term_share")


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """``evaluation``: how every fitted model is evaluated (a benchmark grid's block extends it).

    ``estimators`` may name the doubly robust ``aipw`` and ``tmle``: they are run for the models that
    give outcome predictions, and skipped with a warning for the others. ``refit_reps`` (0: none, else
    at least 2) adds the refitting interval (:mod:`textcause.run.refitting`) to the models that refit
    cheaply (the L-BFGS and the tuned logistic regressions); the other models' rows keep the test-sample interval only.
    """

    n_boot: int = key(ints(low=0), default=1000)
    split: str = key(one_of(SPLITS), default="test")
    estimators: tuple[str, ...] = key(some_of(PROPENSITY_ESTIMATORS + OUTCOME_ESTIMATORS), default=DEFAULT_ESTIMATORS)
    refit_reps: int = key(
        holds(lambda v: isinstance(v, int) and not isinstance(v, bool) and (v == 0 or v >= 2)),
        default=0,
        doc="0 (no refitting interval) or an int >= 2",
    )


@dataclass(frozen=True, kw_only=True)
class StudyConfig:
    """An observational study config as written; :func:`spec_from_dict` reads it. Every key, for example:

    ```yaml
    name: twitter_gender            # default: the file's stem
    description: ...                # one line for the figure and the report (optional)
    corpus: twitter                 # a short corpus name (twitter, blogs) or any history JSONL path
    filter: {kind: human}           # keep users whose meta field has this value (or one of a list)
    treatment: {field: gender, treated: female, control: male}   # T = 1 / T = 0; other values dropped
    history:                        # each user's posts, oldest first, are cut in two:
      text_posts: 50                #   the text = the first 50 posts (or text_fraction: 0.5 of them)
      min_text_posts: 5             #   users with fewer text posts are dropped
      min_later_posts: 5            #   the later posts (every post after the text) give the outcome
    outcome:
      property: url_share           # see textcause.observational.outcomes.OUTCOMES
      threshold: median             # Y = 1 when the property is above the median (or a number; null: Y = the value)
      terms: [...]                  # for property term_share only
    n_users: null                   # a random sample of this many eligible users (seed 0); null: all
    min_per_arm: 50                 # fewer treated or control users is an error
    seed: 0                         # the train/val/test split (40/10/50) and the training seed
    models: [unadjusted, lr_unigram_binary, ...]   # configs/<model>.yaml (or paths); no oracle
    overrides: {trainer.max_epochs: 30}            # any train.py option, for every model
    model_overrides: {order_count: {trainer.max_epochs: 10}}
    tune: {sherbert_pooled: {model.init_args.lr: [0.001, 0.003]}}   # per model: its points are fitted,
                                    # the lowest validation loss is evaluated (as a grid's tune)
    evaluation: {n_boot: 1000, split: test, estimators: [ipw, stratified, matching], refit_reps: 0}
    ```
    """

    corpus: str = key(holds(bool), doc="a short corpus name or a path")
    treatment: Treatment
    outcome: Outcome
    models: Union[str, list[str]] = key(holds(lambda v: model_names(v) is not None), doc=MODELS_DOC)
    name: Optional[str] = key(default=None, doc=NAME_DOC)
    description: str = key(default="")
    filter: dict[str, Values] = key(
        holds(lambda v: options_ok(v) and all(map(_nonempty, v.values()))),
        default={},
        doc="a mapping {meta field: value or non-empty list of values}",
    )
    history: History = key(default=History())
    n_users: Optional[int] = key(ints(low=3), default=None)
    min_per_arm: int = key(ints(low=2), default=50)
    seed: int = key(ints(low=0), default=0)
    # a bare dict on purpose (hence the ignores): jsonargparse parses the values of a typed dict[str, Any]
    # as YAML again, turning the string "null" into None and "3" into 3
    overrides: dict = key(holds(options_ok), default={}, doc=OPTIONS_DOC)  # type: ignore[type-arg]
    model_overrides: dict[str, Optional[dict]] = key(  # type: ignore[type-arg]
        holds(per_model_ok), default={}, doc=PER_MODEL_DOC
    )
    tune: dict = key(holds(tune_ok), default={}, doc=TUNE_DOC)  # type: ignore[type-arg]
    evaluation: Evaluation = key(default=Evaluation())


@dataclass(frozen=True)
class ObservationalSpec:
    """A parsed observational study config (see the module docstring for the YAML).

    Attributes:
        name: the study's name (output folder, figure title).
        description: a one-line description for the figure and report.
        corpus: a short corpus name or a path.
        filter: ``(meta field, allowed values)`` pairs a user must all match.
        treatment_field: the meta field that gives the treatment.
        treated, control: its values meaning T = 1 and T = 0.
        text_posts, text_fraction: how many of the earliest posts are the text (exactly one is set).
        min_text_posts, min_later_posts: users with fewer text / later posts are dropped.
        outcome: the outcome property's name (a key of ``OUTCOMES``; empty with ``outcome_field``).
        outcome_field: a numeric meta field that is the outcome instead (its users need no later posts).
        threshold: ``"median"``, a number (Y = 1 when the property is above it) or None (Y = the value).
        terms: the words of ``term_share``.
        n_users: sample this many eligible users (None: all).
        min_per_arm: the fewest treated and control users accepted.
        seed: the split and training seed.
        models: ``(name, config path)`` per propensity model.
        overrides: train.py options for every model, as ``(dotted key, value)`` pairs.
        model_overrides: per model name, more such pairs (applied after ``overrides``).
        tune: per model name, a search space ``((option, (value, ...)), ...)``: every point is fitted
            and the one with the lowest validation loss evaluated (:func:`textcause.grid.tuning.fit_tuned`).
        n_boot, split, estimators, refit_reps: the evaluation settings.
        source: the config file (for messages).
        text: the config file's text.
        content: the parsed config as canonical JSON (part of every result's content key: editing a
            comment or reordering keys does not invalidate finished models).
    """

    name: str
    corpus: str
    treatment_field: str
    treated: tuple[Any, ...]
    control: tuple[Any, ...]
    outcome: str
    models: tuple[tuple[str, Path], ...]
    description: str = ""
    filter: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    text_posts: int | None = None
    text_fraction: float | None = 0.5
    min_text_posts: int = 1
    min_later_posts: int = 1
    threshold: Any = "median"
    outcome_field: str | None = None
    terms: tuple[str, ...] = ()
    n_users: int | None = None
    min_per_arm: int = 50
    seed: int = 0
    overrides: tuple[tuple[str, Any], ...] = ()
    model_overrides: dict[str, tuple[tuple[str, Any], ...]] = field(default_factory=dict, hash=False)
    tune: dict[str, Search] = field(default_factory=dict, hash=False)
    n_boot: int = 1000
    split: str = "test"
    estimators: tuple[str, ...] = DEFAULT_ESTIMATORS
    refit_reps: int = 0
    source: str = "<dict>"
    text: str = ""
    content: str = ""

    @property
    def model_names(self) -> list[str]:
        return [m for m, _ in self.models]

    def overrides_for(self, model: str) -> list[tuple[str, Any]]:
        """The train.py options of ``model``: the shared ones, then its own."""
        merged = dict(self.overrides)
        merged.update(dict(self.model_overrides.get(model, ())))
        return list(merged.items())


def canonical(config: Any) -> str:
    """A parsed YAML config as canonical JSON (sorted keys): the same for the same content."""
    return json.dumps(config, sort_keys=True, default=str)


def model_names(value: Any) -> list[str] | None:
    """A ``models`` entry as a list of non-empty strings (a single string is a list of one); None if malformed."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(m, str) and m for m in value):
        return None
    return value


def is_oracle_config(path: Path) -> bool:
    """Whether the model config at ``path`` is the oracle (it reads the true propensity); a malformed
    file is not (train.py reports it when the model runs)."""
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return False  # train.py reports a malformed model config when the model runs
    model = config.get("model") if isinstance(config, Mapping) else None
    class_path = model.get("class_path", "") if isinstance(model, Mapping) else ""
    return str(class_path).endswith("OracleModel")


def model_configs(
    names: Iterable[str],
    file: SpecFile,
    *,
    role: str = "model",
    where: str = "",
    study: str = "an observational study",
    distinct: str = "model names",
) -> tuple[tuple[str, Path], ...]:
    """The ``(name, path)`` of each model config ``names`` lists, for a study without true propensities.

    Args:
        names: model config names (or paths).
        file: the spec file whose ``fail`` words each mistake.
        role: how the sentences name a model (``model``).
        where: where it was listed (`` for 'candidates'``).
        study: how they name the study (``an observational study``).
        distinct: how they name the list (``model names``).

    Raises:
        ValueError: a name with no config file, the oracle, or a name given twice.
    """
    out = []
    for name in names:
        path = model_config_path(name)
        if not path.is_file():
            raise file.fail(f"no model config {name!r}{where}: expected a YAML file at {path}.")
        if is_oracle_config(path):
            raise file.fail(f"the {role} {name!r} reads the true propensity, which {study} does not have.")
        out.append((path.stem, path))
    stems = [n for n, _ in out]
    if len(set(stems)) != len(stems):
        raise file.fail(f"{distinct} must be distinct. Got {stems} instead.")
    return tuple(out)


def _history(history: History, file: SpecFile) -> dict[str, Any]:
    posts, fraction = history.text_posts, history.text_fraction
    if posts is not None and fraction is not None:
        raise file.fail("give 'history.text_posts' or 'history.text_fraction', not both.")
    fraction = None if posts is not None else (0.5 if fraction is None else float(fraction))
    return {
        "text_posts": posts,
        "text_fraction": fraction,
        "min_text_posts": history.min_text_posts,
        "min_later_posts": history.min_later_posts,
    }


def _outcome(outcome: Outcome, file: SpecFile) -> dict[str, Any]:
    if (outcome.property is None) == (outcome.field is None):
        raise file.fail("give 'outcome.property' (of the later posts) or 'outcome.field' (a meta field), one of them.")
    if outcome.field is not None:
        if outcome.terms is not None:
            raise file.fail("'outcome.terms' is only used by term_share, not by 'outcome.field'.")
        return {"outcome": "", "outcome_field": outcome.field, "threshold": outcome.threshold, "terms": ()}
    terms = outcome.terms
    if outcome.property == "term_share":
        ok = terms is not None and len(terms) > 0 and all(isinstance(t, str) and t.strip() for t in terms)
        file.check(check_that, ok, terms, "outcome.terms", None, "a non-empty list of words for term_share")
    elif terms is not None:
        raise file.fail(f"'outcome.terms' is only used by term_share, not by {outcome.property!r}.")
    return {"outcome": outcome.property, "threshold": outcome.threshold, "terms": tuple(t.strip() for t in terms or ())}


def _as_tuple(values: Any) -> tuple[Any, ...]:
    return tuple(values) if isinstance(values, list) else (values,)


def spec_from_dict(
    spec: Mapping[str, Any], *, source: str = "<dict>", default_name: str = "study", text: str = ""
) -> ObservationalSpec:
    """Build an :class:`ObservationalSpec` from a parsed config.

    Args:
        spec: the parsed YAML (see the module docstring).
        source: where it came from, for messages.
        default_name: the study's name when ``spec`` has none.
        text: the config's text (for content keys); default: the YAML dump of ``spec``.

    Raises:
        ValueError: an unknown key, a missing required key or a malformed value (one sentence).
    """
    file = SpecFile(_KIND, source)
    config = file.parse(StudyConfig, spec)
    treated, control = _as_tuple(config.treatment.treated), _as_tuple(config.treatment.control)
    both = set(treated) & set(control)
    if both:
        raise file.fail(f"a value cannot be both treated and control: {sorted(map(str, both))}.")
    models = model_configs(model_names(config.models) or (), file)
    per_model = config.model_overrides
    file.check(check_that, set(per_model) <= {m for m, _ in models}, per_model, "model_overrides", None, PER_MODEL_DOC)
    file.check(check_that, set(config.tune) <= {m for m, _ in models}, config.tune, "tune", None, TUNE_DOC)
    return ObservationalSpec(
        name=file.name_or(config.name, default_name),
        description=config.description.strip(),
        corpus=config.corpus,
        filter=tuple((k, _as_tuple(v)) for k, v in config.filter.items()),
        treatment_field=config.treatment.field,
        treated=treated,
        control=control,
        **_history(config.history, file),
        **_outcome(config.outcome, file),
        n_users=config.n_users,
        min_per_arm=config.min_per_arm,
        seed=config.seed,
        models=models,
        overrides=options(config.overrides),
        model_overrides={m: options(v) for m, v in per_model.items()},
        tune={m: as_search(space) for m, space in config.tune.items()},
        n_boot=config.evaluation.n_boot,
        split=config.evaluation.split,
        estimators=config.evaluation.estimators,
        refit_reps=config.evaluation.refit_reps,
        source=source,
        text=text or yaml.safe_dump(dict(spec), sort_keys=True),
        content=canonical(spec),
    )


def load_spec(path: str | Path) -> ObservationalSpec:
    """Read an observational study config YAML (see the module docstring).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the YAML is malformed or invalid.
    """
    spec, text = read_yaml(path, kind=_KIND, example="configs/observational/twitter_gender.yaml")
    return spec_from_dict(spec, source=str(path), default_name=Path(path).stem, text=text)
