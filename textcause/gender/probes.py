"""The probes of the masked gender task (table 1): templates x tenses of "to be" x life stages x W.

The templates, tenses and life stages are data (``textcause/gender/data/probes.yaml``), and so are
the built-in W lists (``data/w/<name>.yaml``: ``years``, ``countries``, ``subreddits``). Either can
be replaced: :func:`load_probe_spec` takes any YAML file of the same shape, :func:`load_w_list` a
built-in name, a YAML file of the same shape, a text file (one value per line) or a Python list.
A probe keeps its mask as the placeholder ``{mask}`` until a tokenizer renders it
(:meth:`Probe.render`), so the same probes serve BERT's ``[MASK]`` and RoBERTa's ``<mask>``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from textcause.io import load_yaml

MASK = "{mask}"
#: The fields a template fills when the probes are made (the mask stays a placeholder).
FIELDS = ("verb", "life_stage", "w")


@dataclasses.dataclass(frozen=True)
class ProbeSpec:
    """The heuristic of table 1: templates per W category, the tenses and the life stages.

    Attributes:
        templates: W category -> templates with ``{mask}``, ``{verb}``, ``{life_stage}`` and ``{w}``.
        tenses: the forms of "to be" (the paper: "was", "is", "will be").
        life_stages: the life stages (the paper's six, from "a child" to "all grown up").
    """

    templates: dict[str, tuple[str, ...]]
    tenses: tuple[str, ...]
    life_stages: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.templates:
            raise ValueError("A probe spec needs at least one W category under 'templates'.")
        for category, temps in self.templates.items():
            if not temps:
                raise ValueError(f"The W category {category!r} of the probe spec has no template.")
            for t in temps:
                if t.count(MASK) != 1 or any("{" + f + "}" not in t for f in FIELDS):
                    raise ValueError(
                        f"The template {t!r} must hold '{{mask}}' once and each of '{{verb}}', "
                        "'{life_stage}' and '{w}'."
                    )
        for name in ("tenses", "life_stages"):
            values = getattr(self, name)
            if not values or not all(isinstance(v, str) and v for v in values):
                raise ValueError(f"The '{name}' of a probe spec must be a non-empty list of non-empty strings.")


@dataclasses.dataclass(frozen=True)
class WList:
    """An ordered list of values of W (the x-axis of figure 2).

    Attributes:
        name: its name (a built-in name or the file's stem).
        category: the W category whose templates it fills (``date``, ``place``, ``subreddit``, ...).
        values: the values as they are written into the probes.
        numbers: the values as numbers when W is numeric (years), else None.
    """

    name: str
    category: str
    values: tuple[str, ...]
    numbers: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.values) < 2:
            raise ValueError(f"The W list {self.name!r} has {len(self.values)} values: a slope needs at least two.")
        if len(set(self.values)) != len(self.values):
            dup = next(v for v in self.values if self.values.count(v) > 1)
            raise ValueError(f"The W list {self.name!r} lists {dup[:40]!r} more than once.")
        if self.numbers is not None and not all(math.isfinite(x) for x in self.numbers):
            bad = next(v for v, x in zip(self.values, self.numbers) if not math.isfinite(x))
            raise ValueError(
                f"The W list {self.name!r} holds the number {bad[:24]!r}, which is not finite: W's numbers must be finite."
            )
        if self.numbers is not None and len(self.numbers) != len(self.values):
            raise ValueError(f"The W list {self.name!r} has {len(self.numbers)} numbers for {len(self.values)} values.")


@dataclasses.dataclass(frozen=True)
class Probe:
    """One gender-neutral input text with a mask, and where it comes from.

    Attributes:
        text: the sentence with the ``{mask}`` placeholder.
        w_category: the W category (``date``, ``place``, ``subreddit``, ...).
        w_list: the W list's name.
        w_value: the value of W written in the text.
        w_index: the position of the value in its W list (0-based).
        w_number: the value as a number where W is numeric, else None.
        template_index: the template's position among its category's templates.
        tense: the form of "to be".
        life_stage: the life stage.
    """

    text: str
    w_category: str
    w_list: str
    w_value: str
    w_index: int
    w_number: float | None
    template_index: int
    tense: str
    life_stage: str

    def render(self, mask_token: str) -> str:
        """The text with the tokenizer's mask token in place of ``{mask}``."""
        return self.text.replace(MASK, mask_token)

    @property
    def frame(self) -> tuple[int, str, str]:
        """The sentence skeleton (template, tense, life stage) shared by the probes of every W value."""
        return self.template_index, self.tense, self.life_stage


#: The most values a W list may have (a ``range`` beyond it is refused before it is built).
MAX_W_VALUES = 100_000


def read_utf8(path: Path | Any, what: str = "file") -> str:
    """A text file's contents as UTF-8; a leading byte-order mark is the file's signature, not text.

    Raises:
        ValueError: bytes that are not UTF-8 (naming the file and the line).
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ValueError(f"The {what} {str(path)!r} is not UTF-8 text (line {line}): save it as UTF-8.") from None


def _read_yaml(path: Path | Any) -> dict[str, Any]:
    text = read_utf8(path)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as err:
        raise ValueError(f"The file {str(path)!r} is not valid YAML ({err.__class__.__name__}).") from None
    if not isinstance(data, dict):
        raise ValueError(f"The file {str(path)!r} must hold a YAML mapping.")
    return data


def _data(*parts: str) -> Any:
    return resources.files("textcause.gender").joinpath("data", *parts)


def load_probe_spec(path: str | Path | None = None) -> ProbeSpec:
    """The templates, tenses and life stages: the paper's (``path=None``) or those of a YAML file.

    Raises:
        ValueError: the file is missing or not of the shape of ``data/probes.yaml``.
    """
    if path is None:
        ref = _data("probes.yaml")
    else:
        ref = Path(path)
        if not ref.is_file():
            raise ValueError(f"The probe spec file {str(path)!r} does not exist.")
    data = _read_yaml(ref)
    missing = [k for k in ("templates", "tenses", "life_stages") if k not in data]
    if missing or not isinstance(data["templates"], dict):
        raise ValueError(
            f"The probe spec {str(ref)!r} needs the keys 'templates' (a mapping), 'tenses' and 'life_stages'."
        )
    return ProbeSpec(
        templates={str(k): tuple(map(str, v if isinstance(v, list) else [v])) for k, v in data["templates"].items()},
        tenses=tuple(data["tenses"] or ()),
        life_stages=tuple(data["life_stages"] or ()),
    )


def builtin_w_lists() -> list[str]:
    """The names of the W lists shipped with the package (``years``, ``countries``, ``subreddits``)."""
    return sorted(p.name[:-5] for p in _data("w").iterdir() if p.name.endswith(".yaml"))


def _numbers(values: Sequence[str]) -> tuple[float, ...] | None:
    try:
        return tuple(float(v) for v in values)
    except ValueError:
        return None


def _w_from_mapping(data: dict[str, Any], name: str, category: str | None) -> WList:
    if "range" in data:
        r = data["range"]
        if (
            not isinstance(r, dict)
            or not all(isinstance(r.get(k), int) and not isinstance(r.get(k), bool) for k in ("start", "stop", "step"))
            or r["step"] < 1
            or r["stop"] < r["start"]
        ):
            raise ValueError(f"The 'range' of the W list {name!r} must give ints start <= stop and step >= 1.")
        n = (r["stop"] - r["start"]) // r["step"] + 1
        if n > MAX_W_VALUES:
            raise ValueError(
                f"The 'range' of the W list {name!r} gives {n} values: at most {MAX_W_VALUES} are allowed."
            )
        values = [str(v) for v in range(r["start"], r["stop"] + 1, r["step"])]
    elif isinstance(data.get("values"), list):
        bad = [v for v in data["values"] if not isinstance(v, (str, int, float)) or isinstance(v, bool)]
        if bad:
            raise ValueError(
                f"The W list {name!r} holds a value of type {type(bad[0]).__name__}: each value must be a string or a number."
            )
        values = [str(v) for v in data["values"]]
    else:
        raise ValueError(f"The W list {name!r} needs 'values' (a list) or 'range' (start, stop, step).")
    numbers = _numbers(values) if data.get("numeric", True) else None
    cat = category or str(data.get("category") or ("date" if numbers is not None else "place"))
    return WList(name=name, category=cat, values=tuple(values), numbers=numbers)


def load_w_list(w: str | Path | Sequence[Any], *, category: str | None = None, name: str | None = None) -> WList:
    """A W list from a built-in name, a file or a list of values.

    Args:
        w: a built-in name (:func:`builtin_w_lists`), a ``.yaml`` file of the built-in shape, a text
            file with one value per line (blank lines and ``#`` comments skipped), or the values.
            Files are UTF-8; a leading byte-order mark is read as such (``utf-8-sig``), never as
            part of the first value.
        category: the W category whose templates the values fill (default: the file's, else
            ``date`` for numeric values and ``place`` otherwise).
        name: the list's name (default: the built-in name or the file's stem; ``custom`` for a list).

    Raises:
        ValueError: an unknown name, a missing file or an empty list.
    """
    if isinstance(w, (list, tuple)):
        values = [str(v) for v in w]
        return WList(
            name=name or "custom",
            category=category or ("date" if _numbers(values) else "place"),
            values=tuple(values),
            numbers=_numbers(values),
        )
    text = str(w)
    if text in builtin_w_lists():
        return _w_from_mapping(_read_yaml(_data("w", f"{text}.yaml")), name or text, category)
    path = Path(text).expanduser()
    if not path.is_file():
        raise ValueError(f"Unknown W list {text!r}: use one of {builtin_w_lists()} or a file with one value per line.")
    if path.suffix in (".yaml", ".yml"):
        return _w_from_mapping(_read_yaml(path), name or path.stem, category)
    # utf-8-sig: a byte-order mark (Windows editors write one) is the file's signature, not part of its first value
    lines = [ln.strip() for ln in read_utf8(path, "W file").splitlines()]
    values = [ln for ln in lines if ln and not ln.startswith("#")]
    if not values:
        raise ValueError(f"The W file {text!r} has no values: write one value per line.")
    return load_w_list(values, category=category, name=name or path.stem)


def make_probes(w: WList, spec: ProbeSpec | None = None) -> list[Probe]:
    """Every probe of a W list: its category's templates x tenses x life stages x W values.

    The order is W value, then template, then tense, then life stage.

    Raises:
        ValueError: the spec has no templates for the W list's category.
    """
    spec = load_probe_spec() if spec is None else spec
    if w.category not in spec.templates:
        raise ValueError(
            f"The probe spec has no templates for the W category {w.category!r}: use one of {sorted(spec.templates)}."
        )
    out = []
    for i, value in enumerate(w.values):
        number = None if w.numbers is None else w.numbers[i]
        for t, template in enumerate(spec.templates[w.category]):
            for tense in spec.tenses:
                for stage in spec.life_stages:
                    text = template.replace("{verb}", tense).replace("{life_stage}", stage).replace("{w}", value)
                    out.append(
                        Probe(
                            text=text,
                            w_category=w.category,
                            w_list=w.name,
                            w_value=value,
                            w_index=i,
                            w_number=number,
                            template_index=t,
                            tense=tense,
                            life_stage=stage,
                        )
                    )
    return out
