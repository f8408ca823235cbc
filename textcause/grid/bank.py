"""A tuned cell's candidates trained side by side in one Lightning fit, each exactly as it would train alone.

A search over a propensity network's optimiser settings (``lr``, ``weight_decay``, ``l1``) fits the
same network from the same initial weights on the same batches in the same order, once per point.
Alone, each fit pays the Trainer's per-step work (the loop, the data loader, the collate, the
validation loop) for one small network; :class:`CandidateBank` pays it once for all of them. It holds
one copy of the cell's model per candidate and trains them with manual optimisation: on every batch,
each candidate still training takes its own training step (the model's own ``training_step``) and
its own Adam step, as Lightning's automatic optimisation would; after every validation epoch each
candidate's validation loss (the model's own arithmetic) goes through the rules of the trainer's
``EarlyStopping`` and ``ModelCheckpoint``: the lowest loss is its score, and a candidate whose
patience has run out stops training (its weights stay as they were). The fit ends when every
candidate has stopped or at ``max_epochs``.

The numbers are the lone fits' numbers, bit for bit, because nothing the candidates share changes
what one of them computes: the data loader shuffles from its own seeded generator, each candidate's
sparse batch is prepared afresh as a lone fit's is, and a training step must leave torch's and
NumPy's global random states as it found them (checked on the first step: a network that draws from
them, dropout for one, cannot share the batches). :func:`bank_scores` refuses (returns None) any
run that this does not cover, and the grid's tuning (:func:`textcause.grid.tuning.select`) then fits
the candidates one at a time as before. The tuning also refits the chosen candidate alone (the run
that is evaluated, with its checkpoint) and compares its best validation loss with the bank's, bit
for bit, before it trusts the choice. Speed: ``benchmarks/bench_bank.py``.
"""

from __future__ import annotations

import copy
import inspect
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import lightning as L
import numpy as np
import torch
from torch import nn

from textcause.run.settings import RunSettings

__all__ = [
    "BANK_OPTIONS",
    "BankResult",
    "CandidateBank",
    "bank_scores",
]

#: The search options a bank can vary: the model's optimiser settings (every other option changes the
#: network, its data or its training loop, and is fitted one candidate at a time).
BANK_OPTIONS = {"model.init_args.lr": "lr", "model.init_args.weight_decay": "weight_decay", "model.init_args.l1": "l1"}


class _NotBankable(Exception):
    """The run cannot be trained in a bank (found during the fit): fit the candidates alone."""


@dataclass(frozen=True)
class BankResult:
    """One candidate's outcome in a bank.

    Attributes:
        score: its lowest validation loss (a NaN epoch counts as infinity, as in ``ModelCheckpoint``);
            None when it never validated.
        best_epoch: the epoch of that loss.
        epochs: the training epochs it ran.
    """

    score: Optional[float]
    best_epoch: Optional[int]
    epochs: int


def _rng_state() -> tuple[torch.Tensor, Any, Any]:
    """torch's, NumPy's and Python's global random states (NumPy's and Python's in full, positions included)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return torch.get_rng_state(), (kind, bytes(np.asarray(keys).tobytes()), pos, has_gauss, gauss), random.getstate()


def _same_rng(a: tuple[torch.Tensor, Any, Any], b: tuple[torch.Tensor, Any, Any]) -> bool:
    return bool(torch.equal(a[0], b[0])) and a[1] == b[1] and a[2] == b[2]


def _forget_sparse_batch(x: Any) -> None:
    """Drop what a sparse batch tensor cached for its products, so the next candidate prepares it as a lone fit does.

    Not for the numbers: SciPy's kernels take a product only where they give torch's bits
    (:func:`~textcause.models.components.linear.scipy_agrees`). For speed: afresh, each candidate's
    gradient takes SciPy's kernel, which needs no transposed copy of the batch (a 20-point bank of
    8 epochs on Twitter 1,2-gram counts: 15.7-16.7 s against 17.3-17.5 s sharing the batch's forms).
    """
    from textcause.models.components.linear import _CACHE

    if isinstance(x, torch.Tensor) and hasattr(x, _CACHE):
        delattr(x, _CACHE)


class CandidateBank(L.LightningModule):
    """Candidates of one propensity model trained side by side (see the module's description).

    Args:
        models: the candidates, each a :class:`~textcause.models.PropensityModel` with Adam, all with the
            same network and initial weights.
        patience: validation epochs without a lower loss before a candidate stops (``EarlyStopping``).
    """

    def __init__(self, models: Sequence[L.LightningModule], patience: int) -> None:
        super().__init__()
        self.automatic_optimization = False
        self.candidates = nn.ModuleList(models)
        self.patience = int(patience)
        k = len(self.candidates)
        self.active = [True] * k
        self.best: list[Optional[torch.Tensor]] = [None] * k  # ModelCheckpoint's best score
        self.best_epoch: list[Optional[int]] = [None] * k
        self.stop_best = [torch.tensor(math.inf)] * k  # EarlyStopping's best score
        self.wait = [0] * k
        self.epochs = [0] * k

    def setup(self, stage: str) -> None:
        for model in self.candidates:
            model.setup(stage)  # type: ignore[operator]

    def configure_optimizers(self) -> list[torch.optim.Optimizer]:
        return [model.configure_optimizers() for model in self.candidates]  # type: ignore[operator]

    def on_train_epoch_start(self) -> None:
        for i, model in enumerate(self.candidates):
            if self.active[i]:
                model.on_train_epoch_start()  # type: ignore[operator]
                self.epochs[i] += 1

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        optimizers = self.optimizers()
        optimizers = optimizers if isinstance(optimizers, list) else [optimizers]
        checked = False
        for i, model in enumerate(self.candidates):
            if not self.active[i]:
                continue
            # every step, on one candidate (a network that draws does so in each): alone, the draws of
            # one point would not shift another's, here they would
            before = None if checked else _rng_state()
            _forget_sparse_batch(batch.get("x"))
            loss = model.training_step(batch, batch_idx)  # type: ignore[operator]
            optimizer = optimizers[i]
            optimizer.zero_grad()
            self.manual_backward(loss)
            optimizer.step()
            if before is not None:
                if not _same_rng(before, _rng_state()):
                    raise _NotBankable("a training step draws from the global random state")
                checked = True
        _forget_sparse_batch(batch.get("x"))

    def on_train_epoch_end(self) -> None:  # (after the epoch's validation, in Lightning's order)
        for model in self.candidates:
            model._train_loss = None  # type: ignore[assignment]

    def on_validation_epoch_start(self) -> None:
        for model in self.candidates:
            model._eval_loss.pop("val", None)  # type: ignore[operator, union-attr]

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        for i, model in enumerate(self.candidates):
            if self.active[i]:
                _forget_sparse_batch(batch.get("x"))
                _, loss = model.propensity_and_loss(batch)  # type: ignore[operator]
                model._add_eval_loss("val", loss, int(batch["t"].shape[0]))  # type: ignore[operator]
        _forget_sparse_batch(batch.get("x"))

    def on_validation_epoch_end(self) -> None:
        sanity = self.trainer.sanity_checking
        for i, model in enumerate(self.candidates):
            summed = model._eval_loss.pop("val", None)  # type: ignore[operator, union-attr]
            if sanity or not self.active[i] or summed is None:
                continue
            # the value PropensityModule logs as val_loss (its own division, float32)
            current = (summed[0] / torch.tensor(summed[1], device=summed[0].device)).detach().cpu()
            # ModelCheckpoint(mode="min", save_top_k=1): a NaN loss counts as +inf; the first epoch is kept
            saved = torch.tensor(math.inf) if torch.isnan(current) else current
            if self.best[i] is None or bool(torch.lt(saved, self.best[i])):
                self.best[i], self.best_epoch[i] = saved, int(self.current_epoch)
            # EarlyStopping(mode="min", min_delta=0, check_finite=True)
            if not bool(torch.isfinite(current)):
                self.active[i] = False
            elif bool(torch.lt(current, self.stop_best[i])):
                self.stop_best[i], self.wait[i] = current, 0
            else:
                self.wait[i] += 1
                if self.wait[i] >= self.patience:
                    self.active[i] = False
        if not sanity and not any(self.active):
            self.trainer.should_stop = True

    def results(self) -> list[BankResult]:
        """Each candidate's :class:`BankResult`, in the bank's order."""
        return [
            BankResult(None if b is None else float(b), e, n)
            for b, e, n in zip(self.best, self.best_epoch, self.epochs)
        ]


#: Callbacks of a lone fit that change nothing it computes (a resume checkpoint, metrics, the saved config).
_PLAIN_CALLBACKS = ("ResumeCheckpoint", "CausalMetricsCallback", "SaveAndLogConfig", "SaveConfigCallback")


def _patience(trainer: L.Trainer, model: Any) -> Optional[int]:
    """The early stopping patience when the trainer's checkpoint and early stopping are the plain ones on
    ``val_loss`` that the bank mirrors and its other callbacks change nothing a fit computes (None: anything else)."""
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

    from textcause.callbacks import ResumeCheckpoint

    stopping = [c for c in trainer.callbacks if type(c) is EarlyStopping]
    best = [c for c in trainer.callbacks if type(c) is ModelCheckpoint]
    others = [c for c in trainer.callbacks if type(c) not in (EarlyStopping, ModelCheckpoint)]
    if len(best) != 1 or len(stopping) > 1:
        return None
    for c in others:
        if type(c).__name__ not in _PLAIN_CALLBACKS or (
            isinstance(c, (EarlyStopping, ModelCheckpoint)) and not isinstance(c, ResumeCheckpoint)
        ):
            return None  # another checkpoint or early stopping (a subclass included), or an unknown callback
    checkpoint = best[0]
    if (
        checkpoint.monitor != "val_loss"
        or checkpoint.mode != "min"
        or checkpoint.save_top_k != 1
        or getattr(checkpoint, "_every_n_epochs", 1) != 1
        or getattr(checkpoint, "_every_n_train_steps", 0) != 0
        or getattr(checkpoint, "_train_time_interval", None) is not None
    ):
        return None
    if model.early_stopping_patience is not None:
        return int(model.early_stopping_patience)
    if not stopping:
        return None
    es = stopping[0]
    plain = (
        es.monitor == "val_loss"
        and es.mode == "min"
        and es.min_delta == 0
        and es.check_finite
        and es.stopping_threshold is None
        and es.divergence_threshold is None
    )
    return int(es.patience) if plain else None


def _plain_loop(trainer: L.Trainer) -> bool:
    """Whether the trainer's loop is the one the bank reproduces: one CPU process in float32, a
    validation after every whole epoch, no step limits, clipping or accumulation."""

    def whole(limit: Any) -> bool:  # 1.0 is every batch; the integer 1 is one batch
        return limit is None or (isinstance(limit, float) and limit == 1.0)

    return (
        trainer.world_size == 1
        and trainer.num_devices == 1
        and type(trainer.accelerator).__name__ == "CPUAccelerator"
        and type(trainer.strategy).__name__ == "SingleDeviceStrategy"
        and str(trainer.precision) in ("32-true", "32")
        and trainer.accumulate_grad_batches == 1
        and trainer.gradient_clip_val in (None, 0, 0.0)
        and trainer.max_steps == -1
        and trainer.fit_loop.min_epochs in (None, 0)
        and trainer.fit_loop.min_steps in (None, -1, 0)
        and trainer.check_val_every_n_epoch == 1
        and trainer.val_check_interval in (1.0, 1, None)
        and getattr(trainer, "_val_check_time_interval", None) is None
        and whole(trainer.limit_train_batches)
        and whole(trainer.limit_val_batches)
        and not trainer.overfit_batches
        and trainer.reload_dataloaders_every_n_epochs == 0
        and not any(type(c).__name__ == "Timer" for c in trainer.callbacks)  # max_time
        and not trainer.fast_dev_run
        and trainer.max_epochs is not None
        and trainer.max_epochs > 0
    )


def bank_scores(
    settings: RunSettings,
    points: Sequence[Mapping[str, Any]],
    *,
    bank_dir: Any = None,
) -> Optional[tuple[list[BankResult], float]]:
    """Train every point of a search in one :class:`CandidateBank` and return each one's validation score.

    Args:
        settings: the cell's run settings (its configs and overrides); the points are applied on top.
        points: the search's points, each a mapping of :data:`BANK_OPTIONS` keys to values.
        bank_dir: the bank trainer's root folder (nothing of value is written there).

    Returns:
        Each point's :class:`BankResult` (in ``points``' order) and the bank's seconds; None when the
        run is not one a bank reproduces (another model class or optimiser, another option searched,
        another training loop or callbacks, a network that draws random numbers while it trains).
    """
    from textcause.models.propensity import PropensityModel
    from textcause.run.fit import instantiate
    from textcause.run.settings import run_config

    if not points or any(set(p) - set(BANK_OPTIONS) for p in points):
        return None
    try:  # as the CLI reads them (YAML gives "1e-3" as a string); anything else is for the lone fits to judge
        points = [{k: float(v) for k, v in p.items()} for p in points]
    except (TypeError, ValueError):
        return None
    started = time.perf_counter()
    first = RunSettings(
        configs=settings.configs,
        overrides={**settings.overrides, **points[0]},
        run_dir=bank_dir,
        evaluation=settings.evaluation,
        quiet=True,
    )
    if settings.callbacks or settings.loggers:
        return None
    cli = instantiate(run_config(first))
    trainer, model, data = cli.trainer, cli.model, cli.datamodule
    if type(model) is not PropensityModel or model.optimizer_name != "adam" or not _plain_loop(trainer):
        return None
    patience = _patience(trainer, model)
    if patience is None:
        return None
    accepted = set(inspect.signature(PropensityModel.__init__).parameters) - {"self", "net"}
    kwargs = {k: v for k, v in model.hparams.items() if k in accepted}
    models = []
    for point in points:
        own = {**kwargs, **{BANK_OPTIONS[k]: v for k, v in point.items()}}
        models.append(PropensityModel(net=copy.deepcopy(model.net), **own))
    bank = CandidateBank(models, patience)
    bank_trainer = L.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=trainer.max_epochs,
        num_sanity_val_steps=trainer.num_sanity_val_steps,
        inference_mode=bool(getattr(trainer.validate_loop, "inference_mode", True)),
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(bank_dir) if bank_dir is not None else None,
    )
    try:
        bank_trainer.fit(bank, datamodule=data)
    except _NotBankable:
        return None
    return bank.results(), time.perf_counter() - started
