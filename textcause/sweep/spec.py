"""A hyperparameter sweep in wandb's sweep format (``configs/sweeps/*.yaml``), parsed and checked.

The YAML is the :class:`SweepConfig` dataclass (its docstring shows an example), parsed by
:mod:`textcause.specs`: every mistake is one ``ValueError`` sentence naming the file and the key.
The program's config is read from ``command``, the line ``wandb agent`` runs: its ``--config``
files and ``--key=value`` options are each trial's :class:`~textcause.run.fit.RunSettings` configs
and overrides, and ``${args}`` is where the trial's parameters go, so one file means the same thing
offline (``textcause sweep``) and on a W&B server. Parsing imports neither torch, Lightning nor
Optuna. The format: docs/sweeps.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from textcause.estimators.registry import PROPENSITY_ESTIMATORS
from textcause.io import content_key
from textcause.metrics.evaluation import PROPENSITY_METRICS, TRUTH_METRICS
from textcause.paths import config_dir, default_configs
from textcause.specs import NAME_DOC, SpecFile, holds, ints, key, one_of, read_yaml
from textcause.sweep.command import COMMAND_DOC, OPTION, parse_command

__all__ = [
    "KIND",
    "METHODS",
    "OBJECTIVES",
    "Hyperband",
    "Metric",
    "Objective",
    "Param",
    "Parameter",
    "Sweep",
    "load_sweep",
    "sweep_from_dict",
]

KIND = "Sweep config"
HASH_VERSION = "textcause-sweep/v1"
METHODS = ("grid", "random", "bayes")
GOALS = ("minimize", "maximize")
#: wandb distributions that map onto an Optuna distribution (the others are refused by name).
DISTRIBUTIONS = ("constant", "categorical", "int_uniform", "uniform", "q_uniform", "log_uniform", "log_uniform_values")
#: wandb distributions that have no Optuna equivalent (refused with a sentence that says so).
NO_OPTUNA = (
    "q_log_uniform q_log_uniform_values inv_log_uniform inv_log_uniform_values normal q_normal log_normal q_log_normal "
    "beta q_beta"
)
_WANDB_ONLY = ("controller", "scheduler", "metrics", "job", "image_uri", "apiVersion", "kind")
NUMBER_DOC = "a number (write 1.0e-4 or 0.0001: YAML reads 1e-4 as a string)"
Choice = Union[str, int, float, bool, None]
_FINITE = holds(math.isfinite)


# ------------------------------------------------------------------------------------ objectives
@dataclass(frozen=True)
class Objective:
    """What a sweep selects on: a validation quantity of each trial's kept model.

    Attributes:
        name: the metric's name, as the metrics callback logs it (``val_loss``, ``val/bias_ipw``).
        goal: the direction in which it improves (the only goal accepted for it).
        column: the column of the trial's validation-split evaluation row (None: the checkpoint's
            best monitored value, which is the best ``val_loss`` of the run).
        estimator: the evaluation row read (propensity metrics are the same in every row).
        oracle: it needs the truth (the true ATE or propensities), known only in simulation.
        absolute: select on the absolute value (a bias is good when it is near zero).
    """

    name: str
    goal: str
    column: Optional[str] = None
    estimator: str = "unadjusted"
    oracle: bool = False
    absolute: bool = False

    @property
    def label(self) -> str:
        """The name as printed: ``|val/bias_ipw| (oracle)``."""
        name = f"|{self.name}|" if self.absolute else self.name
        return f"{name} (oracle)" if self.oracle else name


def _objectives() -> dict[str, Objective]:
    out = {"val_loss": Objective("val_loss", "minimize")}
    goals = {"treatment_accuracy": "maximize", "spearman": "maximize", "rank_agreement": "maximize"}
    for metric in (*PROPENSITY_METRICS, *TRUTH_METRICS):
        out[f"val/{metric}"] = Objective(
            f"val/{metric}", goals.get(metric, "minimize"), metric, oracle=metric in TRUTH_METRICS
        )
    for estimator in ("unadjusted", *PROPENSITY_ESTIMATORS):
        out[f"val/bias_{estimator}"] = Objective(
            f"val/bias_{estimator}", "minimize", "bias", estimator, oracle=True, absolute=True
        )
    return out


#: The metrics a sweep may select on, by name (``val_loss`` is the default).
OBJECTIVES = _objectives()


# ------------------------------------------------------------------------------------ the YAML's blocks
@dataclass(frozen=True, kw_only=True)
class Parameter:
    """One entry of ``parameters`` (wandb's keys; see :data:`DISTRIBUTIONS`), but ``values``: jsonargparse
    keeps that name for its Namespace's own method, so :func:`_param` checks ``values`` itself."""

    value: Any = key(default=None)
    min: Union[int, float, None] = key(_FINITE, default=None, doc=NUMBER_DOC)
    max: Union[int, float, None] = key(_FINITE, default=None, doc=NUMBER_DOC)
    distribution: Optional[str] = key(one_of(DISTRIBUTIONS), default=None)
    q: Union[int, float, None] = key(holds(lambda v: math.isfinite(v) and v > 0), default=None, doc="a number > 0")
    probabilities: Optional[list[float]] = key(default=None, doc="a list of numbers")
    parameters: Optional[dict] = key(default=None, doc="a mapping")


@dataclass(frozen=True, kw_only=True)
class Metric:
    """``metric``: what the sweep selects on and in which direction."""

    name: str = key(one_of(lambda: list(OBJECTIVES)), default="val_loss")
    goal: str = key(one_of(GOALS), default="minimize")
    target: Optional[float] = key(_FINITE, default=None, doc=NUMBER_DOC)
    impute: Optional[str] = key(one_of(("latest", "best", "worst")), default=None)  # W&B bayes only
    impute_while_running: Optional[str] = key(one_of(("latest", "best", "worst", "false")), default=None)


@dataclass(frozen=True, kw_only=True)
class EarlyTerminate:
    """``early_terminate``: Hyperband on the metric, one iteration per epoch."""

    type: Optional[str] = key(one_of(("hyperband",)), default=None)
    min_iter: Optional[int] = key(ints(low=1), default=None)
    max_iter: Optional[int] = key(ints(low=1), default=None)
    eta: Union[int, float] = key(
        holds(lambda v: int(v) == v >= 2), default=3, doc="an int >= 2 (Optuna's Hyperband halves by an integer factor)"
    )
    s: Optional[float] = key(default=None, doc=NUMBER_DOC)
    strict: Optional[bool] = key(default=None)


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """A sweep config as written; :func:`sweep_from_dict` reads it. An example::

    name: sherbert_smoke                      # default: the file's stem
    method: grid                              # grid | random | bayes
    metric: {name: val_loss, goal: minimize}  # see OBJECTIVES (default: val_loss)
    parameters:                               # flat dotted train.py options
      model.init_args.lr: {values: [0.0003, 0.001, 0.003]}
      model.init_args.weight_decay: {distribution: log_uniform_values, min: 0.00001, max: 0.01}
    early_terminate: {type: hyperband, min_iter: 1, eta: 3}   # optional
    run_cap: 9                                # trials when --trials is not given
    program: train.py
    command:                                  # a block list (in a flow list, quote each ${...})
      - ${env}
      - ${interpreter}
      - ${program}
      - fit
      - --config
      - configs/model/sherbert_pooled.yaml
      - --data.n_users=300
      - ${args}
    """

    method: str = key(one_of(METHODS))
    parameters: dict = key(
        holds(lambda v: bool(v) and all(isinstance(k, str) for k in v)),
        doc="a non-empty mapping {dotted train.py option: parameter}",
    )
    command: Optional[list[str]] = key(holds(bool), default=None, doc=COMMAND_DOC)
    metric: Metric = key(default=Metric())
    early_terminate: EarlyTerminate = key(default=EarlyTerminate())
    program: Optional[str] = key(holds(bool), default=None, doc="a program such as train.py")
    name: Optional[str] = key(default=None, doc=NAME_DOC)
    description: str = key(default="")
    project: Optional[str] = key(holds(bool), default=None, doc="a W&B project name")
    entity: Optional[str] = key(default=None)
    run_cap: Optional[int] = key(ints(low=1), default=None)


# ------------------------------------------------------------------------------------ the parsed sweep
@dataclass(frozen=True)
class Param:
    """A searched parameter: its Optuna distribution's ingredients.

    Attributes:
        name: the dotted train.py option.
        kind: ``categorical``, ``int_uniform``, ``uniform`` or ``log_uniform_values`` (``q_uniform`` is
            ``uniform`` with ``step``; ``log_uniform`` is turned into ``log_uniform_values``).
        choices: the values of a categorical parameter.
        low, high, step: the range of a numeric one.
    """

    name: str
    kind: str
    choices: tuple[Choice, ...] = ()
    low: Optional[float] = None
    high: Optional[float] = None
    step: Optional[float] = None


@dataclass(frozen=True)
class Hyperband:
    """Optuna's ``HyperbandPruner(min_resource, max_resource, reduction_factor)`` of ``early_terminate``."""

    min_resource: int
    max_resource: Union[int, str]
    reduction_factor: int


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep config (see the module docstring).

    Attributes:
        name, source, method: the sweep's name, its file and ``grid`` / ``random`` / ``bayes``.
        objective, goal, target: what is selected on, its direction, and a value that ends the sweep.
        params: the searched parameters; constants: the ``value`` parameters (dotted option, value).
        configs, overrides: the ``--config`` files and ``--key=value`` options of ``command``.
        hyperband: the pruner of ``early_terminate`` (None: no pruning).
        run_cap, project: wandb's keys (default trials; the W&B project of the offline runs).
        config_hash: content key of everything a trial's result depends on (names the study).
    """

    name: str
    source: str
    method: str
    objective: Objective
    goal: str
    params: tuple[Param, ...]
    constants: tuple[tuple[str, Any], ...]
    configs: tuple[Path, ...]
    overrides: tuple[tuple[str, Any], ...]
    hyperband: Optional[Hyperband] = None
    target: Optional[float] = None
    run_cap: Optional[int] = None
    project: Optional[str] = None
    config_hash: str = ""

    @property
    def study_name(self) -> str:
        return f"textcause-sweep:{self.name}:{self.config_hash[:12]}"

    @property
    def search_space(self) -> dict[str, list[Choice]]:
        """The grid of a grid sweep (every parameter is categorical)."""
        return {p.name: list(p.choices) for p in self.params}

    @property
    def grid_size(self) -> Optional[int]:
        return math.prod(len(p.choices) for p in self.params) if self.method == "grid" else None

    def n_trials(self, trials: Optional[int]) -> int:
        """How many trials the study must hold: ``trials``, else ``run_cap``, else (grid) every point.

        Raises:
            ValueError: a random or bayes sweep with neither ``--trials`` nor ``run_cap``.
        """
        n = trials if trials is not None else self.run_cap
        if self.grid_size is not None:
            return self.grid_size if n is None else min(n, self.grid_size)
        if n is None:
            raise SpecFile(KIND, self.source).fail(
                f"a {self.method} sweep never ends by itself: give --trials N or the key 'run_cap'."
            )
        return n

    def options(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's dotted train.py options: the command's, the constants, then the trial's values."""
        return {**dict(self.overrides), **dict(self.constants), **dict(params)}


# ------------------------------------------------------------------------------------ reading
def _param(name: str, raw: Any, method: str, source: str) -> tuple[Optional[Param], Any]:
    """A parameter as a :class:`Param` (None for a constant, then its value)."""
    if not OPTION.match(name) or name == "config":
        raise SpecFile(KIND, source).fail(
            f"the parameter {name!r} must be a dotted train.py option such as "
            "model.init_args.lr (a config file cannot be swept)."
        )
    entry = SpecFile(f"{KIND} '{source}', parameter", name)
    if not isinstance(raw, Mapping):
        raise entry.fail(
            f"expected a mapping such as {{values: [...]}} or {{min: 0.0, max: 1.0}}. Got {raw!r} instead."
        )
    if raw.get("distribution") in NO_OPTUNA.split():
        raise entry.fail(
            f"the distribution {raw['distribution']!r} has no Optuna equivalent offline; use one of "
            f"{list(DISTRIBUTIONS)}."
        )
    p = entry.parse(Parameter, {k: v for k, v in raw.items() if k != "values"})
    if p.parameters is not None:
        raise entry.fail("nested 'parameters' are not supported: name each option by its dotted path.")
    kind = p.distribution or ("categorical" if "values" in raw else "constant" if "value" in raw else None)
    if kind is None:
        both_ints = all(isinstance(raw.get(k), int) and not isinstance(raw.get(k), bool) for k in ("min", "max"))
        kind = "int_uniform" if both_ints else "uniform"
    if p.probabilities is not None:
        raise entry.fail("'probabilities' are not supported offline (Optuna's categorical choices are unweighted).")
    if kind == "constant":
        if "value" not in raw:
            raise entry.fail("the key 'value' is required.")
        return None, p.value
    if method == "grid" and kind != "categorical":
        raise entry.fail("a grid sweep needs 'values' (or 'value') for every parameter, not a range.")
    if kind == "categorical":
        values = raw.get("values")
        ok = isinstance(values, list) and bool(values)
        ok = ok and all(v is None or isinstance(v, (str, int, float, bool)) for v in values)
        if not ok or len(set(map(repr, values))) != len(values):
            raise entry.fail(
                f"'values' must be a non-empty list of distinct numbers, strings, booleans or nulls. "
                f"Got {values!r} instead."
            )
        return Param(name, "categorical", tuple(values)), None
    if p.min is None or p.max is None:
        raise entry.fail(f"the distribution {kind!r} needs 'min' and 'max'.")
    low, high = p.min, p.max
    if not low < high:
        raise entry.fail(f"'min' must be smaller than 'max'. Got min={low!r}, max={high!r} instead.")
    if kind == "int_uniform":
        if not all(isinstance(v, int) for v in (low, high)):
            raise entry.fail(f"int_uniform needs int 'min' and 'max'. Got min={low!r}, max={high!r} instead.")
        return Param(name, kind, low=low, high=high), None
    if kind == "log_uniform":  # wandb: exp(uniform(min, max))
        return Param(name, "log_uniform_values", low=math.exp(low), high=math.exp(high)), None
    if kind == "log_uniform_values" and low <= 0:
        raise entry.fail(f"log_uniform_values needs 'min' > 0. Got {low!r} instead.")
    step = (p.q or 1.0) if kind == "q_uniform" else None
    return Param(name, "uniform" if kind == "q_uniform" else kind, low=float(low), high=float(high), step=step), None


def _hyperband(raw: Mapping[str, Any], config: SweepConfig, objective: Objective, file: SpecFile) -> Hyperband:
    et = config.early_terminate
    if et.type is None:
        raise file.fail("the key 'early_terminate.type' is required.")
    for name in ("s", "strict"):
        if raw.get(name) is not None:
            raise file.fail(
                f"'early_terminate.{name}' has no Optuna equivalent: Optuna's Hyperband derives its "
                "brackets from min_iter, max_iter and eta; remove it."
            )
    if et.min_iter is None:
        raise file.fail("the key 'early_terminate.min_iter' is required offline (the first epoch a trial may stop at).")
    if et.max_iter is not None and et.max_iter < et.min_iter:
        raise file.fail(f"'early_terminate.max_iter' must be >= min_iter. Got {et.max_iter!r} instead.")
    if objective.absolute:
        raise file.fail(
            f"early_terminate cannot prune on {objective.name!r}: it is selected on its absolute value, "
            "while each epoch logs the signed value; prune on val_loss instead."
        )
    return Hyperband(et.min_iter, "auto" if et.max_iter is None else et.max_iter, int(et.eta))


def sweep_from_dict(spec: Any, *, source: str = "<dict>", default_name: str = "sweep") -> Sweep:
    """Build a :class:`Sweep` from a parsed sweep config.

    Raises:
        ValueError: an unknown or malformed key, a distribution Optuna has no equivalent of, a command
            that is not ``train.py fit ... ${args}``, a missing config (one sentence naming it).
    """
    file = SpecFile(KIND, source)
    if isinstance(spec, Mapping):
        for name in _WANDB_ONLY:
            if name in spec:
                raise file.fail(
                    f"'{name}' is a W&B server feature that the offline sweep does not run: remove it, "
                    "or run this file with wandb sweep + wandb agent."
                )
    config = file.parse(SweepConfig, spec)
    name = file.name_or(config.name, default_name)
    objective = OBJECTIVES[config.metric.name]
    if config.metric.goal != objective.goal:
        raise file.fail(
            f"'metric.goal' must be {objective.goal!r} for {objective.name}. Got {config.metric.goal!r} instead."
        )
    if config.command is None:
        raise file.fail(f"the key 'command' is required: {COMMAND_DOC}.")
    configs, overrides = parse_command(config.command, config.program, file)
    params, constants = [], {}
    for param_name, raw in config.parameters.items():
        param, value = _param(param_name, raw, config.method, source)
        if param is None:
            constants[param_name] = value
        else:
            params.append(param)
    if not params:
        raise file.fail("'parameters' must search at least one option (values or a range), not only constants.")
    hyperband = None
    if spec.get("early_terminate") is not None:
        hyperband = _hyperband(spec["early_terminate"], config, objective, file)
    texts = [p.read_text(encoding="utf-8") for p in (*default_configs(), *configs)]
    identity = {
        k: spec[k] for k in ("method", "metric", "parameters", "early_terminate", "command", "program") if k in spec
    }
    return Sweep(
        name=name,
        source=source,
        method=config.method,
        objective=objective,
        goal=objective.goal,
        params=tuple(params),
        constants=tuple(constants.items()),
        configs=tuple(configs),
        overrides=tuple(overrides.items()),
        hyperband=hyperband,
        target=config.metric.target,
        run_cap=config.run_cap,
        project=config.project,
        config_hash=content_key(HASH_VERSION, identity, texts),
    )


def _sweep_path(name: str | Path) -> Path:
    """A sweep file: a path, else ``configs/sweeps/<name>.yaml`` of the installed configs."""
    path = Path(name)
    if path.is_file() or path.suffix in (".yaml", ".yml"):
        return path
    return config_dir() / "sweeps" / f"{name}.yaml"


def load_sweep(path: str | Path) -> Sweep:
    """Read a sweep config YAML (see the module docstring).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the YAML is malformed (one sentence naming the file and the key).
    """
    path = _sweep_path(path)
    spec, _ = read_yaml(path, kind=KIND, example="configs/sweeps/sherbert_smoke.yaml")
    return sweep_from_dict(spec, source=str(path), default_name=path.stem)
