"""Which run ``train.py fit --ckpt_path ...`` resumes, and the checks made before anything is written.

* ``--ckpt_path last`` means the newest ``<save_dir>/<name>/version_N/checkpoints/last.ckpt`` of a run
  of THIS configuration: a run whose ``config.yaml`` has the same model, data and seed
  (:func:`run_settings`; the trainer may differ, so a resume may train longer). Runs of other
  configurations in the same log folder are never chosen and never touched.
* A checkpoint path inside such a run of this configuration resumes that run in its own folder; any
  other checkpoint is loaded into a new run folder (the folder it came from is left as it is).
* Before the fit starts (before ``config.yaml`` is written or ``metrics.csv`` kept aside), the
  checkpoint is read with ``weights_only=True`` and its ``state_dict`` must fit the model: the same
  parameter names and shapes (:func:`check_checkpoint_fits`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from textcause.io import load_torch, load_yaml
from textcause.run.dotted import dotted_get

__all__ = [
    "SETTINGS_KEYS",
    "check_checkpoint_fits",
    "choose_resume",
    "in_run_folder",
    "keep_metrics",
    "resume_in_place",
    "run_folder",
    "run_settings",
]

#: The parts of a run's config that make it "this configuration" for ``--ckpt_path last``.
SETTINGS_KEYS = ("model", "data", "seed_everything")


def run_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The model, data and seed of a resolved config (what ``--ckpt_path last`` matches runs by).

    The network's ``input_dim`` is left out: it is linked to the data's feature width (compared
    through ``data``), and a saved config and a config before instantiation differ in it.
    """
    settings = copy.deepcopy({key: config.get(key) for key in SETTINGS_KEYS})
    net = ((settings.get("model") or {}).get("init_args") or {}).get("net")
    if isinstance(net, dict) and isinstance(net.get("init_args"), dict):
        net["init_args"].pop("input_dim", None)
    return settings


def _saved_settings(run: Path) -> Optional[dict[str, Any]]:
    """The :func:`run_settings` of a run folder's ``config.yaml`` (None: none, or unreadable)."""
    try:
        config = load_yaml((run / "config.yaml").read_text(encoding="utf-8"))
    except Exception:  # missing, unreadable, not YAML: not a run of this configuration
        return None
    return run_settings(config) if isinstance(config, Mapping) else None


def _version_number(folder: Path) -> int:
    """N of a ``version_N`` folder, else -1."""
    name = folder.name
    return int(name[8:]) if name.startswith("version_") and name[8:].isdigit() else -1


def choose_resume(root: Path, ckpt: str, current: Mapping[str, Any]) -> tuple[Path, Optional[Path]]:
    """The checkpoint to resume from and the run folder to continue in (None: a new folder).

    Args:
        root: the CSV logger's ``<save_dir>/<name>`` folder.
        ckpt: the ``--ckpt_path`` value (``last`` or a path).
        current: the :func:`run_settings` of the configuration being fitted.

    Raises:
        FileNotFoundError: ``last`` and no run of this configuration has a ``checkpoints/last.ckpt``.
    """
    if ckpt == "last":
        found = sorted(root.glob("version_*/checkpoints/last.ckpt"), key=lambda p: _version_number(p.parents[1]))
        own = [p for p in found if _saved_settings(p.parents[1]) == current]
        if not own:
            others = (
                f" ({len(found)} run(s) there are of another model, data or seed, and are left alone)" if found else ""
            )
            raise FileNotFoundError(
                f"--ckpt_path last: no run of this configuration under '{root}' has a checkpoints/last.ckpt "
                f"to resume from{others}; train without --ckpt_path, or give the checkpoint's path."
            )
        path = own[-1]
    else:
        path = Path(ckpt)
    run = path.parent.parent if path.parent.name == "checkpoints" else None
    if (
        run is None
        or _version_number(run) < 0
        or run.parent.resolve() != root.resolve()
        or _saved_settings(run) != current
    ):
        return path, None  # a checkpoint from elsewhere: loaded into a new run folder, its own left alone
    return path, run


def check_checkpoint_fits(model: Any, path: Path) -> None:
    """Refuse a checkpoint whose ``state_dict`` does not fit ``model`` (names and shapes).

    Raises:
        ValueError: one sentence: the file is refused (crafted), holds no ``state_dict``, or does not fit.
    """
    import torch

    state = load_torch(path)
    saved = state.get("state_dict") if isinstance(state, Mapping) else None
    if not isinstance(saved, Mapping):
        raise ValueError(f"The checkpoint '{path}' holds no state_dict: it is not a Lightning checkpoint.")
    own = model.state_dict()
    missing = sorted(set(own) - set(saved))
    unexpected = sorted(set(saved) - set(own))
    shapes = [
        (k, tuple(saved[k].shape), tuple(own[k].shape))
        for k in sorted(set(own) & set(saved))
        if isinstance(saved[k], torch.Tensor)
        and not isinstance(own[k], torch.nn.parameter.UninitializedParameter)
        and tuple(saved[k].shape) != tuple(own[k].shape)
    ]
    if not (missing or unexpected or shapes):
        return
    parts = []
    if missing:
        parts.append(f"{len(missing)} of this model's parameters are not in it (such as '{missing[0]}')")
    if unexpected:
        parts.append(f"{len(unexpected)} of its parameters are not in this model (such as '{unexpected[0]}')")
    if shapes:
        k, a, b = shapes[0]
        parts.append(f"{len(shapes)} differ in shape (such as '{k}': {list(a)} in it, {list(b)} here)")
    raise ValueError(
        f"The checkpoint '{path}' does not fit this {type(model).__name__}: {'; '.join(parts)}; "
        "resume a run of this configuration, or train without --ckpt_path."
    )


def keep_metrics(run: Path) -> None:
    """Keep a resumed run's ``metrics.csv`` as ``metrics.part-K.csv`` (the CSV logger would delete it)."""
    metrics = run / "metrics.csv"
    if metrics.is_file():
        k = 1
        while (run / f"metrics.part-{k}.csv").exists():
            k += 1
        metrics.rename(run / f"metrics.part-{k}.csv")


def run_folder(cfg: Any) -> Any:
    """The run folder a ``test`` / ``validate`` / ``predict`` works on, or None.

    It is the folder of the checkpoint's ``checkpoints/`` (``--ckpt_path RUN/checkpoints/x.ckpt``), else
    the folder of a ``--config RUN/config.yaml`` that has a ``checkpoints/`` folder.
    """
    from pathlib import Path

    ckpt = cfg.get("ckpt_path")
    if ckpt and str(ckpt) not in ("best", "last", "hpc", "registry"):
        path = Path(str(ckpt))
        if path.parent.name == "checkpoints" and (path.parent.parent / "config.yaml").is_file():
            return path.parent.parent
    for config in reversed(cfg.get("config") or []):
        path = Path(str(getattr(config, "absolute", config) or config))
        if path.name == "config.yaml" and (path.parent / "checkpoints").is_dir():
            return path.parent
    return None


def in_run_folder(cfg: Any, subcommand: str, run: Any) -> None:
    """Point a ``test`` / ``validate`` at the run folder's ``<subcommand>/`` log, and make ``predict`` log nothing.

    The CSV loggers of ``test`` / ``validate`` log into ``RUN/<subcommand>/`` (without a run folder:
    where the config says); other loggers (wandb) are kept. ``predict`` logs nothing (its output is the
    prediction writer's CSV), so it opens no log folder. ``test`` predicts its own split for the
    evaluation that follows it (``data.predict_split: test``).
    """
    if subcommand == "predict":
        cfg.trainer.logger = False
        return
    if subcommand == "test":
        data_args = dotted_get(cfg, "data.init_args")
        if data_args is not None and "predict_split" in data_args:
            data_args.predict_split = "test"
    if run is None:
        return
    loggers = cfg.trainer.get("logger")
    for lg in loggers if isinstance(loggers, list) else [loggers] if loggers else []:
        if getattr(lg, "class_path", "").endswith("CSVLogger"):
            lg.init_args.save_dir, lg.init_args.name, lg.init_args.version = str(run), "", subcommand


def resume_in_place(cfg: Any, current: Mapping[str, Any]) -> Any:
    """Point ``fit``'s ``ckpt_path`` and CSV logger at the run to resume, so it continues in its own folder.

    ``ckpt_path: last`` means the newest ``<save_dir>/<name>/version_N/checkpoints/last.ckpt`` of a
    run of this configuration (``current``: its model, data and seed; Lightning alone would look in a
    new ``version_N+1`` and start from scratch); a path to a checkpoint inside such a run resumes that
    run; any other checkpoint starts a new run folder (:func:`choose_resume`).
    Nothing is written here: the checkpoint is checked against the model, and the run's
    ``metrics.csv`` kept as ``metrics.part-K.csv``, in :meth:`TextCauseCLI.before_fit`.

    Returns:
        ``(checkpoint, run folder or None)``, or None when the config has no CSV logger.

    Raises:
        FileNotFoundError: ``last`` was asked for and no run of this configuration has a ``last.ckpt``.
    """
    from pathlib import Path

    loggers = cfg.trainer.get("logger")
    loggers = loggers if isinstance(loggers, list) else [loggers] if loggers else []
    csv = [lg for lg in loggers if getattr(lg, "class_path", "").endswith("CSVLogger")]
    if not csv:
        return None
    args = csv[0].init_args
    root = Path(str(args.get("save_dir") or ".")) / str(args.get("name") or "lightning_logs")
    path, run = choose_resume(root, str(cfg.ckpt_path), current)
    cfg.ckpt_path = str(path)
    if run is not None:
        args.version = _version_number(run)
    return path, run
