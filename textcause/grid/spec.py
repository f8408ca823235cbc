"""A benchmark grid declared in YAML: corpora x tasks x levels x models x seeds, one cell each.

The YAML is the :class:`GridConfig` dataclass (its docstring shows every key), parsed by
:mod:`textcause.specs`: every mistake is one ``ValueError`` sentence naming the file and the key. Its
task, seed and evaluation keys are a :class:`Plan`, which ``textcause.evaluate`` parses too. Each
:class:`Cell` knows its train.py arguments and its ``config_hash`` (model YAML, default configs,
overrides, evaluation settings; a method cell's hash covers the method's code and parameters), so a
finished cell computed under another configuration is noticed. Loading a grid imports neither torch
nor Lightning (a method entry imports the method's module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional, Union

from textcause.estimators.registry import PROPENSITY_ESTIMATORS as ESTIMATORS  # noqa: F401 (tests/store/test_postgres.py)
from textcause.grid.cell import Cell
from textcause.grid.entries import (
    KIND,
    is_method_spec,
    method_config_hash,
    method_entries,
    method_entry,
    model_config_hash,
    models_of,
    read_text,
    refits_cheaply,
)
from textcause.grid.tuning import as_search
from textcause.io import content_key
from textcause.observational.spec import (
    MODELS_DOC,
    OPTIONS_DOC,
    PER_MODEL_DOC,
    TUNE_DOC,
    Evaluation,
    model_names,
    options,
    options_ok,
    per_model_ok,
    tune_ok,
)
from textcause.paths import default_configs
from textcause.specs import NAME_DOC, SpecFile, holds, ints, is_name, key, read_yaml
from textcause.validation import check_options, check_that

__all__ = [
    "CORPORA_DOC",
    "METHODS_DOC",
    "TASKS_DOC",
    "TUNE_DOC",
    "VARIANTS_DOC",
    "Grid",
    "GridConfig",
    "GridEvaluation",
    "Plan",
    "Tasks",
    "grid_from_dict",
    "load_grid",
    "parse_plan",
]

TASKS_DOC = "'all', a list of task names or a mapping {task: [levels]}"
CORPORA_DOC = f"a non-empty list of corpus names or paths, or a mapping {{name: path}}, with distinct names {NAME_DOC}"
METHODS_DOC = "a non-empty list of 'package.module:Name' specs or a mapping {name: spec}"
VARIANTS_DOC = (
    f"a non-empty mapping from variant names {NAME_DOC} to train.py options (each corpus runs once per variant)"
)
Tasks = Union[str, list[str], dict[str, Union[Literal["all"], int, list[int], None]]]


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
        return [
            c.cell_id
            for c in self.cells
            if c.cell_id in ledger
            and ledger[c.cell_id].status in statuses
            and ledger[c.cell_id].config_hash != c.config_hash
        ]

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


def _registry_levels() -> dict[str, list[int]]:
    from textcause.simulation.tasks import list_tasks

    levels: dict[str, list[int]] = {}
    for task, level in list_tasks():
        levels.setdefault(task, []).append(level)
    return levels


def _wanted(value: Any) -> dict[str, Any]:
    """A ``tasks`` value other than ``all`` as ``{task: levels}`` (``all`` or None: every level)."""
    value = [value] if isinstance(value, str) else value
    return {t: "all" for t in value} if isinstance(value, (list, tuple)) else dict(value)


def _level_list(wanted: Any, known: list[int]) -> list[int]:
    return known if wanted in ("all", None) else ([wanted] if isinstance(wanted, int) else list(wanted))


def _known_tasks(value: Any, name: str, doc: str) -> None:
    """The rule of ``tasks``: every task and level is in the task registry."""
    if value == "all":
        return
    wanted = _wanted(value)
    check_that(bool(wanted), value, name, None, doc)
    levels = _registry_levels()
    for task, want in wanted.items():
        check_options(task, name, None, sorted(levels))
        for level in _level_list(want, levels[task]):
            check_options(level, f"{name}.{task}", None, levels[task])


def _seeds_ok(value: int | list[int]) -> bool:
    if isinstance(value, int):
        return value >= 1
    return bool(value) and all(s >= 0 for s in value) and len(set(value)) == len(value)


@dataclass(frozen=True, kw_only=True)
class GridEvaluation(Evaluation):
    """``evaluation``: a study's block (``refit_reps`` included), plus the bootstrap of effect methods that
    give no interval."""

    effect_n_boot: int = key(ints(low=0), default=0)


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What each model is run on: task levels, seeds, the evaluation (shared with ``textcause.evaluate``)."""

    tasks: Tasks = key(_known_tasks, default="all", doc=TASKS_DOC)
    seeds: Union[int, list[int]] = key(holds(_seeds_ok), default=[0], doc="a list of distinct ints >= 0 or an int >= 1")
    evaluation: GridEvaluation = key(default=GridEvaluation())

    @property
    def task_levels(self) -> list[tuple[str, int]]:
        """The ``(task, level)`` pairs, in the registry's order for ``all``, else in the config's."""
        levels = _registry_levels()
        if self.tasks == "all":
            return [(t, lv) for t, known in levels.items() for lv in known]
        return [(t, int(lv)) for t, want in _wanted(self.tasks).items() for lv in _level_list(want, levels[t])]

    @property
    def seed_list(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)


def _corpus_items(value: str | list[str] | dict[str, str]) -> list[tuple[str, str]]:
    value = [value] if isinstance(value, str) else value
    if isinstance(value, Mapping):
        return [(k, v) for k, v in value.items()]
    return [(_corpus_name(v), v) for v in value]


def _corpora_ok(value: Any) -> bool:
    names = [n for n, _ in _corpus_items(value)]
    return bool(names) and len(set(names)) == len(names) and all(map(is_name, names))


def _variants_ok(value: Any) -> bool:
    return bool(value) and all(is_name(k) for k in value) and per_model_ok(value)


def _methods_ok(value: Any) -> bool:
    if isinstance(value, Mapping):
        return bool(value) and all(is_name(k) for k in value)
    value = [value] if isinstance(value, str) else value
    return bool(value) and all(is_method_spec(m) for m in value)


@dataclass(frozen=True, kw_only=True)
class GridConfig(Plan):
    """A benchmark config as written; :func:`grid_from_dict` reads it. Each key is documented below::

    name: smoke                       # the grid's name (default: the file's stem)
    corpora: [twitter]                # short names or paths; or a mapping {name: path}
    tasks: all                        # every task and level; or [task, ...] / {task: [levels]}
    models: [oracle, lr_bigram_binary]   # configs/<model>.yaml, paths to model YAML files, or
                                      # "package.module:Name" methods (textcause.methods)
    methods: [examples.x:Method]      # more importable methods (or a mapping {name: spec})
    seeds: [0, 1, 2]                  # or an int n: seeds 0 .. n-1
    overrides: {data.n_users: 300}    # any train.py option, for every cell
    model_overrides: {order_count: {trainer.max_epochs: 2}}   # per model, after `overrides`
    variants: {human: {data.meta_filter: {kind: human}}}   # per variant, after `overrides`: every
                                      # corpus runs once per variant, as corpus "<corpus>_<variant>"
    tune: {lr_bigram_binary: {model.init_args.weight_decay: [0.002, 0.02]}}   # per model: options
                                      # chosen on each cell's validation split (textcause.grid.tuning)
    evaluation: {n_boot: 1000, split: test, estimators: [ipw, stratified, matching], effect_n_boot: 0}
                                      # (also aipw, tmle: run for models with outcome predictions;
                                      # refit_reps: 100 adds refitting intervals for the L-BFGS and tuned LRs)
    threads: 1                        # torch threads per worker (default: cores // workers)
    """

    corpora: Union[str, list[str], dict[str, str]] = key(holds(_corpora_ok), doc=CORPORA_DOC)
    name: Optional[str] = key(default=None, doc=NAME_DOC)
    models: Union[str, list[str], None] = key(holds(lambda v: model_names(v) is not None), default=None, doc=MODELS_DOC)
    methods: Union[str, list[str], dict[str, str], None] = key(holds(_methods_ok), default=None, doc=METHODS_DOC)
    overrides: dict = key(holds(options_ok), default={}, doc=OPTIONS_DOC)
    model_overrides: dict[str, Optional[dict]] = key(holds(per_model_ok), default={}, doc=PER_MODEL_DOC)
    tune: dict = key(holds(tune_ok), default={}, doc=TUNE_DOC)
    variants: Optional[dict[str, Optional[dict]]] = key(holds(_variants_ok), default=None, doc=VARIANTS_DOC)
    threads: Optional[int] = key(ints(low=1), default=None)


def parse_plan(spec: Mapping[str, Any], *, source: str) -> Plan:
    """The :class:`Plan` of a mapping with some of the keys ``tasks``, ``seeds``, ``evaluation``.

    Raises:
        ValueError: "Benchmark config '<source>': ..." naming the key.
    """
    return SpecFile(KIND, source).parse(Plan, spec)


def _corpus_name(source: str) -> str:
    name = Path(source).name
    for ext in (".gz", ".jsonl", ".json", ".csv", ".parquet", ".ndjson"):
        name = name[: -len(ext)] if name.endswith(ext) else name
    return name


def grid_from_dict(
    spec: Mapping[str, Any], *, source: str = "<dict>", default_name: str = "grid", methods: Sequence[str] = ()
) -> Grid:
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
    file = SpecFile(KIND, source)
    config = file.parse(GridConfig, spec)
    if config.models is None and not config.methods and not methods:
        raise file.fail("the key 'models' is required.")
    name = file.name_or(config.name, default_name)
    corpora, tasks, seeds = _corpus_items(config.corpora), config.task_levels, config.seed_list
    variants = {v: dict(options(o)) for v, o in (config.variants or {}).items()}
    # a variant is a corpus of its own name (its cells, ids and rows), with its own train.py options
    corpora = (
        [(f"{c}_{v}", s, o) for c, s in corpora for v, o in variants.items()]
        if variants
        else [(c, s, {}) for c, s in corpora]
    )
    entries = models_of(config.models, source) + method_entries(config.methods, source)
    entries += [method_entry(m, "--method") for m in methods]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise file.fail(f"model names must be distinct. Got {names} instead.")
    file.check(
        check_that,
        set(config.model_overrides) <= set(names),
        config.model_overrides,
        "model_overrides",
        None,
        PER_MODEL_DOC,
    )
    configs = {e.name for e in entries if e.method is None}
    file.check(
        check_that,
        set(config.tune) <= configs,
        config.tune,
        "tune",
        None,
        TUNE_DOC.replace("'models'", "'models' (model configs, not methods)"),
    )
    searches = {m: as_search(dict(options(space))) for m, space in config.tune.items()}
    overrides = dict(options(config.overrides))
    per_model = {m: dict(options(v)) for m, v in config.model_overrides.items()}
    n_boot, split, estimators = config.evaluation.n_boot, config.evaluation.split, config.evaluation.estimators
    effect_n_boot, threads = config.evaluation.effect_n_boot, config.threads
    refit_reps = config.evaluation.refit_reps

    defaults_text = [read_text(p) for p in default_configs()]
    cells = []
    for corpus, corpus_source, variant in corpora:
        for task, level in tasks:
            for entry in entries:
                merged = {**overrides, **variant, **dict(entry.overrides), **per_model.get(entry.name, {})}
                extra: dict[str, Any] = {}
                cell_estimators = estimators
                if entry.method is None:
                    search = searches.get(entry.name, ())
                    extra = {"search": search} if search else {}
                    cell_refit = refit_reps if refit_reps and refits_cheaply(entry.path, merged) else 0
                    if cell_refit:
                        extra["refit_reps"] = cell_refit
                    config_hash = model_config_hash(
                        entry.path,
                        corpus_source,
                        merged,
                        n_boot,
                        split,
                        estimators,
                        defaults_text=defaults_text,
                        search=search,
                        refit_reps=cell_refit,
                    )
                else:
                    cell_estimators = (entry.estimator,) if entry.kind == "effect" else estimators
                    config_hash = method_config_hash(
                        entry.fingerprint, corpus_source, merged, n_boot, split, cell_estimators, effect_n_boot
                    )
                    extra = {"method": entry.method, "effect_n_boot": effect_n_boot}
                for seed in seeds:
                    cells.append(
                        Cell(
                            grid=name,
                            corpus=corpus,
                            source=corpus_source,
                            task=task,
                            level=level,
                            model=entry.name,
                            model_path=entry.path,
                            seed=seed,
                            overrides=tuple(merged.items()),
                            n_boot=n_boot,
                            split=split,
                            estimators=cell_estimators,
                            config_hash=config_hash,
                            **extra,
                        )
                    )
    space = {
        "corpus": [c for c, _, _ in corpora],
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
    spec, _ = read_yaml(path, kind=KIND, example="configs/benchmark/smoke.yaml")
    return grid_from_dict(spec, source=str(path), default_name=Path(path).stem, methods=methods)
