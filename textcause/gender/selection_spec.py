"""The YAML of the controlled selection-bias experiment (``configs/gender/selection.yaml``).

    name: selection                 # the experiment's name (default: the file's stem)
    model_config: gender/finetune   # the fine-tuning config (configs/<name>.yaml or a .yaml path)
    source: blogs                   # the corpus (author gender in its metadata)
    unit: example                   # what is selected: example (G = the masked words' gender) or author
    gender_field: gender            # the authors' gender field (unit: author)
    w_name: year                    # W's name, written in the prefix ("year: 1990. ")
    w_values: [1975, 1980, ...]     # the values W is drawn from, uniformly per author; the probes' W
    strengths: [0, 0.33, 0.67, 1]   # f(W, G) = 1/2 + strength * x(W) * (+1 female / -1 male)
    seeds: [0, 1, 2]                # the W draw's, selection's, split's and training's seed
    n_sentences: 6000               # masked sentences kept after selection (train + val + test)
    pool_sentences: 20000           # masked sentences built before selection
    max_tokens: 64                  # a sentence's tokens (prefix on top)
    max_epochs: 1
    batch_size: 32
    lr: 1.0e-4
    precision: bf16-mixed
    encoder: null                   # the encoder (null: the packaged all-MiniLM-L6-v2)
    threads: 2                      # torch threads (null: torch's own)
    probes: [prefixed, paper]       # probe templates: W as the training prefix, and the paper's table 1
    n_boot: 1000                    # replicates of the probe bootstrap beside the fit's interval (0: none)
    level: 0.95                     # every interval's level
    overrides: {}                   # any train.py option, for every fine-tune

Parsed by :mod:`textcause.specs` (one ``ValueError`` sentence naming the file and the key);
loading it imports neither torch nor Lightning.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional, Union

from textcause.io import content_key
from textcause.paths import config_dir, model_config_path
from textcause.specs import NAME_DOC, SpecFile, holds, ints, is_name, key, one_of, read_yaml, reals

KIND = "Selection experiment config"
EXAMPLE = "configs/gender/selection.yaml"
UNITS = ("example", "author")
PROBE_SETS = ("prefixed", "paper")
PRECISIONS = ("32", "32-true", "bf16-mixed", "16-mixed", "bf16-true")


def _distinct(values: Any) -> bool:
    return len(set(map(str, values))) == len(values)


@dataclasses.dataclass(frozen=True)
class SelectionSpec:
    """The experiment as written (see the module docstring)."""

    name: Optional[str] = key(default=None, doc=NAME_DOC)
    model_config: str = key(default="gender/finetune", doc="a config name or a .yaml path")
    source: str = key(default="blogs")
    unit: str = key(one_of(UNITS), default="example")
    gender_field: str = key(default="gender")
    w_name: str = key(holds(is_name), default="year", doc=NAME_DOC)
    w_values: list[Union[int, str]] = key(
        holds(lambda v: len(v) >= 2 and _distinct(v)),
        default=[1975, 1980, 1985, 1990, 1995, 2000, 2005, 2010],
        doc="a list of at least 2 distinct values",
    )
    strengths: list[float] = key(
        holds(lambda v: len(v) >= 1 and _distinct(v) and all(0 <= s <= 1 for s in v)),
        default=[0.0, 0.33, 0.67, 1.0],
        doc="a non-empty list of distinct numbers in [0, 1]",
    )
    seeds: list[int] = key(
        holds(lambda v: len(v) >= 1 and _distinct(v) and all(s >= 0 for s in v)),
        default=[0, 1, 2],
        doc="a non-empty list of distinct ints >= 0",
    )
    n_sentences: int = key(ints(low=3), default=6000)
    pool_sentences: Optional[int] = key(ints(low=3), default=20000)
    max_tokens: int = key(ints(low=1), default=64)
    max_epochs: int = key(ints(low=1), default=1)
    batch_size: int = key(ints(low=1), default=32)
    lr: float = key(reals(low=0, low_open=True), default=1e-4)
    precision: str = key(one_of(PRECISIONS), default="bf16-mixed")
    encoder: Optional[str] = key(default=None)
    threads: Optional[int] = key(ints(low=1), default=None)
    probes: list[str] = key(
        holds(lambda v: len(v) >= 1 and _distinct(v) and all(p in PROBE_SETS for p in v)),
        default=["prefixed", "paper"],
        doc=f"a non-empty list of distinct probe sets among {list(PROBE_SETS)}",
    )
    n_boot: int = key(ints(low=0), default=1000)
    level: float = key(reals(low=0, high=1, low_open=True, high_open=True), default=0.95)
    overrides: dict = key(
        holds(lambda v: all(isinstance(k, str) and k for k in v)), default={}, doc="a mapping of train.py options"
    )


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A parsed experiment: its spec, name, model config path and where it came from."""

    spec: SelectionSpec
    name: str
    model_config: Path
    source: str = ""

    @property
    def units(self) -> list[tuple[float, int]]:
        """Every (strength, seed), seed-major (the units of one seed share a pool build)."""
        return [(float(s), int(seed)) for seed in self.spec.seeds for s in self.spec.strengths]

    @property
    def w_values(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.spec.w_values)

    def unit_id(self, strength: float, seed: int) -> str:
        return f"{self.name}:s{strength:g}:seed{seed}"

    @property
    def config_hash(self) -> str:
        """A key of everything that decides a unit's numbers except its strength and seed."""
        fields = dataclasses.asdict(self.spec)
        for name in ("name", "strengths", "seeds", "threads"):
            fields.pop(name)
        return content_key(fields, self.model_config.read_text(encoding="utf-8"))[:16]


def parse_experiment(data: Any, *, source: str = "<dict>") -> Experiment:
    """The experiment of a parsed YAML mapping.

    Raises:
        ValueError: "Selection experiment config '<source>': ..." naming the key.
        FileNotFoundError: the model config does not exist.
    """
    file = SpecFile(KIND, source)
    spec = file.parse(SelectionSpec, {} if data is None else data)
    stem = Path(source).stem if source and not source.startswith("<") else "selection"
    name = file.name_or(spec.name, stem)
    name_or_path = spec.model_config
    if name_or_path.endswith((".yaml", ".yml")):
        config = model_config_path(name_or_path)
    else:  # a name under configs/ (the fine-tuning configs: gender/finetune), else a model config name
        config = config_dir() / f"{name_or_path}.yaml"
        if not config.is_file():
            config = model_config_path(name_or_path)
    if not config.is_file():
        raise file.fail(f"'model_config' names {str(config)!r}, which does not exist: give e.g. gender/finetune.")
    if len(spec.w_values) < 2 or not all(is_name(str(v).replace(" ", "_")) for v in spec.w_values):
        raise file.fail("'w_values' must be at least 2 values made of letters, digits, '_', '.', '-' or spaces.")
    return Experiment(spec=spec, name=name, model_config=config, source=source)


def load_experiment(path: str | Path) -> Experiment:
    """The experiment of a YAML file (see :func:`parse_experiment`)."""
    data, _ = read_yaml(path, kind=KIND, example=EXAMPLE)
    return parse_experiment(data, source=str(path))
