"""The observational study config (``configs/observational/<name>.yaml``), parsed and checked.

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
    evaluation: {n_boot: 1000, split: test, estimators: [ipw, stratified, matching]}

Parsing imports neither torch nor Lightning. Every mistake is one ``ValueError`` sentence that
names the config file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from textcause.paths import model_config_path
from textcause.observational.outcomes import OUTCOMES

SPEC_KEYS = ("name", "description", "corpus", "filter", "treatment", "history", "outcome", "n_users",
             "min_per_arm", "seed", "models", "overrides", "model_overrides", "evaluation")
TREATMENT_KEYS = ("field", "treated", "control")
HISTORY_KEYS = ("text_posts", "text_fraction", "min_text_posts", "min_later_posts")
OUTCOME_KEYS = ("property", "threshold", "terms")
EVALUATION_KEYS = ("n_boot", "split", "estimators")
ESTIMATORS = ("ipw", "stratified", "matching")
SPLITS = ("train", "val", "test")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
Scalar = (str, int, float, bool)


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
        outcome: the outcome property's name (a key of ``OUTCOMES``).
        threshold: ``"median"``, a number (Y = 1 when the property is above it) or None (Y = the value).
        terms: the words of ``term_share``.
        n_users: sample this many eligible users (None: all).
        min_per_arm: the fewest treated and control users accepted.
        seed: the split and training seed.
        models: ``(name, config path)`` per propensity model.
        overrides: train.py options for every model, as ``(dotted key, value)`` pairs.
        model_overrides: per model name, more such pairs (applied after ``overrides``).
        n_boot, split, estimators: the evaluation settings.
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
    terms: tuple[str, ...] = ()
    n_users: int | None = None
    min_per_arm: int = 50
    seed: int = 0
    overrides: tuple[tuple[str, Any], ...] = ()
    model_overrides: dict[str, tuple[tuple[str, Any], ...]] = field(default_factory=dict, hash=False)
    n_boot: int = 1000
    split: str = "test"
    estimators: tuple[str, ...] = ESTIMATORS
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


def _fail(source: str, message: str) -> ValueError:
    return ValueError(f"Observational config '{source}': {message}")


def _is_int(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _block(spec: Mapping[str, Any], key: str, keys: tuple[str, ...], source: str, *, required: bool) -> dict[str, Any]:
    value = spec.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(source, f"'{key}' must be a mapping with some of the keys {list(keys)}. Got {value!r} instead.")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise _fail(source, f"unknown key(s) {unknown} in '{key}'; expected some of {list(keys)}.")
    return dict(value)


def _values(value: Any, what: str, source: str) -> tuple[Any, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, Scalar) for v in values):
        raise _fail(source, f"'{what}' must be a value or a non-empty list of values. Got {value!r} instead.")
    return tuple(values)


def _treatment(spec: Mapping[str, Any], source: str) -> tuple[str, tuple[Any, ...], tuple[Any, ...]]:
    block = _block(spec, "treatment", TREATMENT_KEYS, source, required=True)
    missing = [k for k in TREATMENT_KEYS if k not in block]
    if missing:
        raise _fail(source, f"'treatment' needs the keys {list(TREATMENT_KEYS)}; {missing} missing.")
    name = block["field"]
    if not isinstance(name, str) or not name:
        raise _fail(source, f"'treatment.field' must be the name of a meta field. Got {name!r} instead.")
    treated = _values(block["treated"], "treatment.treated", source)
    control = _values(block["control"], "treatment.control", source)
    if set(treated) & set(control):
        raise _fail(source, f"a value cannot be both treated and control: {sorted(map(str, set(treated) & set(control)))}.")
    return name, treated, control


def _filter(spec: Mapping[str, Any], source: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    value = spec.get("filter")
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
        raise _fail(source, f"'filter' must be a mapping {{meta field: value or list of values}}. Got {value!r} instead.")
    return tuple((k, _values(v, f"filter.{k}", source)) for k, v in value.items())


def _history(spec: Mapping[str, Any], source: str) -> dict[str, Any]:
    block = _block(spec, "history", HISTORY_KEYS, source, required=False)
    posts, fraction = block.get("text_posts"), block.get("text_fraction")
    if posts is not None and fraction is not None:
        raise _fail(source, "give 'history.text_posts' or 'history.text_fraction', not both.")
    if posts is not None and not _is_int(posts, 1):
        raise _fail(source, f"'history.text_posts' must be an int >= 1. Got {posts!r} instead.")
    if posts is None:
        fraction = 0.5 if fraction is None else fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 < fraction < 1.0:
            raise _fail(source, f"'history.text_fraction' must be a number in (0, 1). Got {fraction!r} instead.")
        fraction = float(fraction)
    out = {"text_posts": posts, "text_fraction": fraction}
    for key in ("min_text_posts", "min_later_posts"):
        v = block.get(key, 1)
        if not _is_int(v, 1):
            raise _fail(source, f"'history.{key}' must be an int >= 1. Got {v!r} instead.")
        out[key] = v
    return out


def _outcome(spec: Mapping[str, Any], source: str) -> dict[str, Any]:
    block = _block(spec, "outcome", OUTCOME_KEYS, source, required=True)
    prop = block.get("property")
    if prop not in OUTCOMES:
        raise _fail(source, f"'outcome.property' must be one of {sorted(OUTCOMES)}. Got {prop!r} instead.")
    threshold = block.get("threshold", "median")
    if not (threshold is None or threshold == "median"
            or (isinstance(threshold, (int, float)) and not isinstance(threshold, bool))):
        raise _fail(source, f"'outcome.threshold' must be 'median', a number or null. Got {threshold!r} instead.")
    terms = block.get("terms")
    if prop == "term_share":
        if not isinstance(terms, list) or not terms or not all(isinstance(t, str) and t.strip() for t in terms):
            raise _fail(source, f"'outcome.terms' must be a non-empty list of words for term_share. Got {terms!r} instead.")
    elif terms is not None:
        raise _fail(source, f"'outcome.terms' is only used by term_share, not by {prop!r}.")
    return {"outcome": prop, "threshold": threshold, "terms": tuple(t.strip() for t in terms or ())}


def _is_oracle(path: Path) -> bool:
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return False  # train.py reports a malformed model config when the model runs
    model = config.get("model") if isinstance(config, Mapping) else None
    class_path = model.get("class_path", "") if isinstance(model, Mapping) else ""
    return str(class_path).endswith("OracleModel")


def model_names(value: Any) -> list[str] | None:
    """A ``models`` entry as a list of non-empty strings (a single string is a list of one); None if malformed."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(m, str) and m for m in value):
        return None
    return value


def _models(value: Any, source: str) -> tuple[tuple[str, Path], ...]:
    names = model_names(value)
    if names is None:
        raise _fail(source, f"'models' must be a non-empty list of model config names. Got {value!r} instead.")
    out = []
    for m in names:
        path = model_config_path(m)
        if not path.is_file():
            raise _fail(source, f"no model config {m!r}: expected a YAML file at {path}.")
        if _is_oracle(path):
            raise _fail(source, f"the model {m!r} reads the true propensity, which an observational study does not have.")
        out.append((path.stem, path))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise _fail(source, f"model names must be distinct. Got {names} instead.")
    return tuple(out)


def _overrides(value: Any, what: str, source: str) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
        raise _fail(source, f"'{what}' must be a mapping of train.py options (e.g. trainer.max_epochs: 10). Got {value!r} instead.")
    return tuple((k.lstrip("-"), v) for k, v in value.items())


def _evaluation(spec: Mapping[str, Any], source: str) -> dict[str, Any]:
    block = _block(spec, "evaluation", EVALUATION_KEYS, source, required=False)
    n_boot = block.get("n_boot", 1000)
    if not _is_int(n_boot, 0):
        raise _fail(source, f"'evaluation.n_boot' must be an int >= 0. Got {n_boot!r} instead.")
    split = block.get("split", "test")
    if split not in SPLITS:
        raise _fail(source, f"'evaluation.split' must be one of {list(SPLITS)}. Got {split!r} instead.")
    estimators = block.get("estimators", list(ESTIMATORS))
    if not isinstance(estimators, list) or not estimators or not set(estimators) <= set(ESTIMATORS):
        raise _fail(source, f"'evaluation.estimators' must be a non-empty subset of {list(ESTIMATORS)}. Got {estimators!r} instead.")
    return {"n_boot": n_boot, "split": split, "estimators": tuple(dict.fromkeys(estimators))}


def spec_from_dict(spec: Mapping[str, Any], *, source: str = "<dict>", default_name: str = "study",
                   text: str = "") -> ObservationalSpec:
    """Build an :class:`ObservationalSpec` from a parsed config.

    Args:
        spec: the parsed YAML (see the module docstring).
        source: where it came from, for messages.
        default_name: the study's name when ``spec`` has none.
        text: the config's text (for content keys); default: the YAML dump of ``spec``.

    Raises:
        ValueError: an unknown key, a missing required key or a malformed value (one sentence).
    """
    if not isinstance(spec, Mapping):
        raise _fail(source, f"expected a mapping with some of the keys {list(SPEC_KEYS)}. Got {type(spec).__name__} instead.")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise _fail(source, f"unknown key(s) {unknown}; expected some of {list(SPEC_KEYS)}.")
    for key in ("corpus", "treatment", "outcome", "models"):
        if key not in spec:
            raise _fail(source, f"the key '{key}' is required.")
    name = spec.get("name", default_name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(source, f"'name' must be made of letters, digits, '_', '.', '-'. Got {name!r} instead.")
    corpus = spec["corpus"]
    if not isinstance(corpus, str) or not corpus:
        raise _fail(source, f"'corpus' must be a short corpus name or a path. Got {corpus!r} instead.")
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise _fail(source, f"'description' must be a string. Got {description!r} instead.")
    n_users = spec.get("n_users")
    if n_users is not None and not _is_int(n_users, 3):
        raise _fail(source, f"'n_users' must be an int >= 3 or null. Got {n_users!r} instead.")
    min_per_arm = spec.get("min_per_arm", 50)
    if not _is_int(min_per_arm, 2):
        raise _fail(source, f"'min_per_arm' must be an int >= 2. Got {min_per_arm!r} instead.")
    seed = spec.get("seed", 0)
    if not _is_int(seed, 0):
        raise _fail(source, f"'seed' must be an int >= 0. Got {seed!r} instead.")
    field_name, treated, control = _treatment(spec, source)
    models = _models(spec["models"], source)
    per_model = spec.get("model_overrides") or {}
    if not isinstance(per_model, Mapping) or set(per_model) - {m for m, _ in models}:
        raise _fail(source, f"'model_overrides' must map model names of 'models' to options. Got {per_model!r} instead.")
    return ObservationalSpec(
        name=name, description=description.strip(), corpus=corpus, filter=_filter(spec, source),
        treatment_field=field_name, treated=treated, control=control, **_history(spec, source),
        **_outcome(spec, source), n_users=n_users, min_per_arm=min_per_arm, seed=seed, models=models,
        overrides=_overrides(spec.get("overrides"), "overrides", source),
        model_overrides={m: _overrides(v, f"model_overrides.{m}", source) for m, v in per_model.items()},
        **_evaluation(spec, source), source=source,
        text=text or yaml.safe_dump(dict(spec), sort_keys=True), content=canonical(spec),
    )


def load_spec(path: str | Path) -> ObservationalSpec:
    """Read an observational study config YAML (see the module docstring).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the YAML is malformed or invalid.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"No observational config at '{path}': give a YAML file such as configs/observational/twitter_gender.yaml."
        )
    text = path.read_text(encoding="utf-8")
    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise _fail(str(path), f"not valid YAML ({err}).") from None
    return spec_from_dict(spec, source=str(path), default_name=path.stem, text=text)
