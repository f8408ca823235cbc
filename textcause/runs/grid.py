"""A benchmark grid declared in YAML: corpora x tasks x levels x models x seeds, one cell each.

    name: smoke                       # the grid's name (default: the file's stem)
    corpora: [twitter]                # short names or paths; or a mapping {name: path}
    tasks: all                        # every task and level; or [task, ...] / {task: [levels]}
    models: [oracle, lr_bigram_binary]   # configs/<model>.yaml, paths to model YAML files, or
                                      # "package.module:Name" methods (textcause.methods)
    methods: [examples.x:Method]      # more importable methods (or a mapping {name: spec})
    seeds: [0, 1, 2]                  # or an int n: seeds 0 .. n-1
    overrides: {data.n_users: 300}    # any train.py option, for every cell
    model_overrides: {order_count: {trainer.max_epochs: 2}}   # per model, after `overrides`
    evaluation: {n_boot: 1000, split: test, estimators: [ipw, stratified, matching], effect_n_boot: 0}
    threads: 1                        # torch threads per worker (default: cores // workers)

Each :class:`Cell` knows its train.py arguments and its ``config_hash`` (the model YAML text, the
default configs, the overrides and the evaluation settings), so a finished cell computed under
another configuration is noticed. A method cell (``Cell.method`` set) is run by
:func:`textcause.runs.method_cell.run_method_cell` instead of train.py; its hash covers the method's code
and parameters instead of a YAML file. Loading a grid imports neither torch nor Lightning (a method
entry imports the method's module).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from textcause.corpus.types import SPLITS
from textcause.estimators.registry import PROPENSITY_ESTIMATORS as ESTIMATORS
from textcause.io import content_key
from textcause.paths import default_configs, model_config_path
from textcause.observational.spec import model_names
from textcause.runs.cell import Cell

GRID_KEYS = ("name", "corpora", "tasks", "models", "methods", "seeds", "overrides", "model_overrides", "evaluation",
             "threads")
EVALUATION_KEYS = ("n_boot", "split", "estimators", "effect_n_boot")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
CONFIG_HASH_VERSION = "textcause-benchmark-cell/v1"
METHOD_CELL_HASH_VERSION = "textcause-method-cell/v1"


@dataclass(frozen=True)
class Grid:
    """A named set of cells (see the module docstring for the YAML)."""

    name: str
    cells: tuple[Cell, ...]
    search_space: dict[str, list[Any]] = field(default_factory=dict)
    threads: int | None = None
    source: str = ""

    @property
    def grid_hash(self) -> str:
        """A content key of every cell id and config hash (names the Optuna study)."""
        return content_key(self.name, sorted((c.cell_id, c.config_hash) for c in self.cells))

    @property
    def study_name(self) -> str:
        return f"textcause-benchmark:{self.name}:{self.grid_hash[:12]}"

    def reconfigured(self, ledger: Mapping[str, Any], statuses: tuple[str, ...] = ("ok", "failed")) -> list[str]:
        """Ids of this grid's cells that the ledger holds with one of ``statuses`` under another config hash."""
        return [c.cell_id for c in self.cells if c.cell_id in ledger and ledger[c.cell_id].status in statuses
                and ledger[c.cell_id].config_hash != c.config_hash]

    def cell_for(self, params: Mapping[str, Any]) -> Cell:
        """The cell of Optuna grid parameters (``corpus``, ``task`` as ``task-level``, ``model``, ``seed``)."""
        return self._by_params[(params["corpus"], params["task"], params["model"], int(params["seed"]))]

    @property
    def _by_params(self) -> dict[tuple[Any, ...], Cell]:
        cached = self.__dict__.get("_index")
        if cached is None:
            cached = {tuple(c.params.values()): c for c in self.cells}
            object.__setattr__(self, "_index", cached)
        return cached


def _fail(source: str, message: str) -> ValueError:
    return ValueError(f"Benchmark config '{source}': {message}")


def _corpora(value: Any, source: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, Mapping):
        items = [(str(k), str(v)) for k, v in value.items()]
    elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        items = [(_corpus_name(v), v) for v in value]
    else:
        raise _fail(source, f"'corpora' must be a non-empty list of corpus names or paths, or a mapping {{name: path}}. Got {value!r} instead.")
    names = [n for n, _ in items]
    if not items or len(set(names)) != len(names) or not all(_NAME.match(n) for n in names):
        raise _fail(source, f"corpus names must be distinct and made of letters, digits, '_', '.', '-'. Got {names} instead.")
    return items


def _corpus_name(source: str) -> str:
    name = Path(source).name
    for ext in (".gz", ".jsonl", ".json", ".csv", ".parquet", ".ndjson"):
        name = name[: -len(ext)] if name.endswith(ext) else name
    return name


def _tasks(value: Any, source: str) -> list[tuple[str, int]]:
    from textcause.simulation.tasks import list_tasks

    known = list_tasks()
    levels: dict[str, list[int]] = {}
    for task, level in known:
        levels.setdefault(task, []).append(level)
    if value == "all":
        return list(known)
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        value = {t: "all" for t in value}
    if not isinstance(value, Mapping) or not value:
        raise _fail(source, f"'tasks' must be 'all', a list of task names or a mapping {{task: [levels]}}. Got {value!r} instead.")
    out: list[tuple[str, int]] = []
    for task, wanted in value.items():
        if task not in levels:
            raise _fail(source, f"unknown task {task!r}; known tasks are {sorted(levels)}.")
        wanted = levels[task] if wanted in ("all", None) else ([wanted] if isinstance(wanted, int) else wanted)
        for level in wanted:
            if level not in levels[task]:
                raise _fail(source, f"task {task!r} has levels {levels[task]}. Got level {level!r} instead.")
            out.append((task, int(level)))
    return out


def _seeds(value: Any, source: str) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return list(range(value))
    if (isinstance(value, list) and value and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value)
            and len(set(value)) == len(value)):
        return list(value)
    raise _fail(source, f"'seeds' must be a list of distinct ints >= 0 or an int >= 1. Got {value!r} instead.")


@dataclass(frozen=True)
class ModelEntry:
    """One entry of a grid's models: a model config, or an importable method.

    Attributes:
        name: the model column of its rows.
        path: the model config file (a method: the file defining it, for reference).
        method: a method's ``"package.module:Name"`` spec (None: a model config).
        kind: ``config``, ``propensity`` or ``effect``.
        estimator: an effect method's estimator label.
        fingerprint: a method's content key of code and parameters.
        overrides: the entry's own train.py options (a ``ConfigPropensity``'s).
    """

    name: str
    path: Path
    method: str | None = None
    kind: str = "config"
    estimator: str = ""
    fingerprint: str = ""
    overrides: tuple[tuple[str, Any], ...] = ()


def is_method_spec(text: str) -> bool:
    """Whether a ``models`` entry names an importable method (``package.module:Name``)."""
    return ":" in text and not text.endswith((".yaml", ".yml"))


def method_entry(spec: str, source: str, name: str | None = None) -> ModelEntry:
    """Import a method spec and describe it as a :class:`ModelEntry` (a config method becomes a config entry)."""
    from textcause.methods.adapters import ConfigPropensity, as_method, describe_method

    try:
        obj = as_method(spec)
        info = describe_method(obj)
    except (ValueError, FileNotFoundError) as err:
        raise _fail(source, f"method {spec!r}: {err}") from None
    name = name or info.name
    if isinstance(obj, ConfigPropensity):
        return ModelEntry(name, obj.config, overrides=tuple(obj.overrides.items()))
    return ModelEntry(name, info.source_file or Path(spec), method=spec, kind=info.kind, estimator=info.estimator,
                      fingerprint=info.fingerprint)


def _models(value: Any, source: str) -> list[ModelEntry]:
    names = model_names(value)
    if names is None:
        raise _fail(source, f"'models' must be a non-empty list of model config names. Got {value!r} instead.")
    out = []
    for m in names:
        if is_method_spec(m):
            out.append(method_entry(m, source))
            continue
        path = model_config_path(m)
        out.append(ModelEntry(path.stem, path))
    return out


def _methods(value: Any, source: str) -> list[ModelEntry]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if isinstance(value, Mapping) and value and all(isinstance(k, str) and _NAME.match(k) and isinstance(v, str)
                                                    for k, v in value.items()):
        return [method_entry(v, source, name=k) for k, v in value.items()]
    if isinstance(value, list) and value and all(isinstance(m, str) and is_method_spec(m) for m in value):
        return [method_entry(m, source) for m in value]
    raise _fail(source, "'methods' must be a non-empty list of 'package.module:Name' specs or a mapping "
                        f"{{name: spec}}. Got {value!r} instead.")


def model_config_hash(path: Path, corpus_source: str, overrides: Mapping[str, Any], n_boot: int, split: str,
                      estimators: Any, *, defaults_text: list[str] | None = None) -> str:
    """The config hash of a model config cell: the YAML text, the default configs and every setting."""
    defaults_text = [_read_text(p) for p in default_configs()] if defaults_text is None else defaults_text
    return content_key(CONFIG_HASH_VERSION, _read_text(path), defaults_text, corpus_source, sorted(overrides.items()),
                       n_boot, split, list(estimators))


def method_config_hash(fingerprint: str, corpus_source: str, overrides: Mapping[str, Any], n_boot: int, split: str,
                       estimators: Any, effect_n_boot: int) -> str:
    """The config hash of a method cell: the method's fingerprint and every setting but the coordinates."""
    return content_key(METHOD_CELL_HASH_VERSION, fingerprint, corpus_source, sorted(overrides.items()), n_boot, split,
                       list(estimators), effect_n_boot)


def _overrides(value: Any, what: str, source: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
        raise _fail(source, f"'{what}' must be a mapping of train.py options (e.g. data.n_users: 300). Got {value!r} instead.")
    return {k.lstrip("-"): v for k, v in value.items()}


def _evaluation(value: Any, source: str) -> tuple[int, str, tuple[str, ...], int]:
    value = {} if value is None else value
    if not isinstance(value, Mapping) or set(value) - set(EVALUATION_KEYS):
        raise _fail(source, f"'evaluation' takes the keys {list(EVALUATION_KEYS)}. Got {value!r} instead.")
    n_boot = value.get("n_boot", 1000)
    if not isinstance(n_boot, int) or isinstance(n_boot, bool) or n_boot < 0:
        raise _fail(source, f"'evaluation.n_boot' must be an int >= 0. Got {n_boot!r} instead.")
    split = value.get("split", "test")
    if split not in SPLITS:
        raise _fail(source, f"'evaluation.split' must be one of {list(SPLITS)}. Got {split!r} instead.")
    estimators = value.get("estimators", list(ESTIMATORS))
    if not isinstance(estimators, (list, tuple)) or not estimators or not set(estimators) <= set(ESTIMATORS):
        raise _fail(source, f"'evaluation.estimators' must be a non-empty subset of {list(ESTIMATORS)}. Got {estimators!r} instead.")
    effect_n_boot = value.get("effect_n_boot", 0)
    if not isinstance(effect_n_boot, int) or isinstance(effect_n_boot, bool) or effect_n_boot < 0:
        raise _fail(source, f"'evaluation.effect_n_boot' must be an int >= 0. Got {effect_n_boot!r} instead.")
    return n_boot, split, tuple(estimators), effect_n_boot


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def grid_from_dict(spec: Mapping[str, Any], *, source: str = "<dict>", default_name: str = "grid",
                   methods: Sequence[str] = ()) -> Grid:
    """Build a :class:`Grid` from a parsed benchmark config.

    Args:
        spec: the parsed YAML (see the module docstring).
        source: where it came from, for error messages.
        default_name: the grid's name when ``spec`` has none.
        methods: more ``"package.module:Name"`` methods to evaluate (``textcause benchmark --method``).

    Raises:
        ValueError: on an unknown key, task, level, a method that cannot be imported or a malformed
            value (one sentence naming it).
    """
    if not isinstance(spec, Mapping):
        raise _fail(source, f"expected a mapping with the keys {list(GRID_KEYS)}. Got {type(spec).__name__} instead.")
    unknown = sorted(set(spec) - set(GRID_KEYS))
    if unknown:
        raise _fail(source, f"unknown key(s) {unknown}; expected some of {list(GRID_KEYS)}.")
    if "corpora" not in spec:
        raise _fail(source, "the key 'corpora' is required.")
    if "models" not in spec and not spec.get("methods") and not methods:
        raise _fail(source, "the key 'models' is required.")
    name = spec.get("name", default_name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(source, f"'name' must be made of letters, digits, '_', '.', '-'. Got {name!r} instead.")
    corpora = _corpora(spec["corpora"], source)
    tasks = _tasks(spec.get("tasks", "all"), source)
    entries = _models(spec["models"], source) if "models" in spec else []
    entries += _methods(spec.get("methods"), source) + [method_entry(m, "--method") for m in methods]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise _fail(source, f"model names must be distinct. Got {names} instead.")
    seeds = _seeds(spec.get("seeds", [0]), source)
    overrides = _overrides(spec.get("overrides"), "overrides", source)
    per_model = spec.get("model_overrides") or {}
    if not isinstance(per_model, Mapping) or set(per_model) - set(names):
        raise _fail(source, f"'model_overrides' must map model names of 'models' to options. Got {per_model!r} instead.")
    per_model = {m: _overrides(v, f"model_overrides.{m}", source) for m, v in per_model.items()}
    n_boot, split, estimators, effect_n_boot = _evaluation(spec.get("evaluation"), source)
    threads = spec.get("threads")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise _fail(source, f"'threads' must be an int >= 1. Got {threads!r} instead.")

    defaults_text = [_read_text(p) for p in default_configs()]
    cells = []
    for corpus, corpus_source in corpora:
        for task, level in tasks:
            for entry in entries:
                merged = {**overrides, **dict(entry.overrides), **per_model.get(entry.name, {})}
                extra: dict[str, Any] = {}
                cell_estimators = estimators
                if entry.method is None:
                    config_hash = model_config_hash(entry.path, corpus_source, merged, n_boot, split, estimators,
                                                    defaults_text=defaults_text)
                else:
                    cell_estimators = (entry.estimator,) if entry.kind == "effect" else estimators
                    config_hash = method_config_hash(entry.fingerprint, corpus_source, merged, n_boot, split,
                                                     cell_estimators, effect_n_boot)
                    extra = {"method": entry.method, "effect_n_boot": effect_n_boot}
                for seed in seeds:
                    cells.append(Cell(
                        grid=name, corpus=corpus, source=corpus_source, task=task, level=level, model=entry.name,
                        model_path=entry.path, seed=seed, overrides=tuple(merged.items()), n_boot=n_boot, split=split,
                        estimators=cell_estimators, config_hash=config_hash, **extra,
                    ))
    space = {
        "corpus": [c for c, _ in corpora],
        "task": [f"{t}-{lv}" for t, lv in tasks],
        "model": names,
        "seed": seeds,
    }
    return Grid(name=name, cells=tuple(cells), search_space=space, threads=threads, source=source)


def load_grid(path: str | Path, *, methods: Sequence[str] = ()) -> Grid:
    """Read a benchmark config YAML (see the module docstring), plus ``methods`` (``--method`` specs).

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if the YAML is malformed or names an unknown task or level.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No benchmark config at '{path}': give a YAML file such as configs/benchmark/smoke.yaml.")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"Benchmark config '{path}' is not valid YAML: {err}") from None
    return grid_from_dict(spec, source=str(path), default_name=path.stem, methods=methods)
