"""LightningModules that estimate propensity scores P(T=1 | text) and collect them for evaluation.

:class:`PropensityModule` holds what every propensity model shares: validation / test / predict
steps that turn a batch into clamped propensities, log the loss, and feed the collectors
(``val_outputs`` / ``test_outputs``) from which :class:`~textcause.callbacks.CausalMetricsCallback`
computes whole-sample ATEs and metrics (gathered over DDP ranks). :class:`PropensityModel` trains
an injected network (``models/components``) with binary cross-entropy on T and Adam or full-batch
L-BFGS (:class:`ConvergedLBFGS`).

Checkpoints rebuild themselves: ``PropensityModel.load_from_checkpoint(path)`` needs no arguments
(the network's rebuild config, :func:`~textcause.models.nets.net_config`, is stored as
``hparams["net"]``). A network that needs data built a certain way declares it
(``net.data_requirements()``), and :func:`~textcause.models.nets.check_data_requirements` compares
it with the data module's settings at setup.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Optional

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import MeanMetric

from textcause.metrics.torch import PredictionCollector
from textcause.models.components.linear import LogisticRegression
from textcause.models.exact_lr import as_scipy, exact_fit, solve_exactly
from textcause.models.lbfgs import ConvergedLBFGS
from textcause.models.nets import as_net, check_data_requirements, save_net_config
from textcause.validation import check_int, check_options, check_real

__all__ = [
    "Batch",
    "EPS",
    "PropensityModel",
    "PropensityModule",
    "clamp_propensity",
    "one_thread_if_forked",
    "world_size",
]

EPS = 1e-6
Batch = dict[str, Any]


#: The checkpoint key of an epoch's running training loss (:meth:`PropensityModel.on_save_checkpoint`).
TRAIN_LOSS_KEY = "textcause_train_loss"


def world_size(module: L.LightningModule) -> int:
    """The number of processes ``module`` trains or evaluates in (1 when it has no trainer)."""
    trainer = module._trainer
    return int(trainer.world_size) if trainer is not None else 1


def one_thread_if_forked(module: L.LightningModule) -> None:
    """Use one intra-op thread in a rank that Lightning forked (``ddp_fork``, ``configs/trainer/ddp_cpu.yaml``).

    OpenMP's thread pool does not survive ``fork``: once the parent has run a parallel region
    (encoding posts, a one-process fit before), a forked child whose next parallel region has more
    than one thread waits forever for threads that were never copied (measured here with torch's
    MKL sparse and dense matmuls). Lightning gives each child ``cores // processes`` threads, which
    is more than one on any machine with more cores than ranks. Forked ranks therefore run one
    thread each; start more of them for more cores. Other launchers are left alone.
    """
    trainer = module._trainer
    launcher = getattr(getattr(trainer, "strategy", None), "launcher", None) if trainer is not None else None
    if getattr(launcher, "_start_method", None) == "fork":
        torch.set_num_threads(1)


def clamp_propensity(p: torch.Tensor) -> torch.Tensor:
    """Clamp probabilities to ``[1e-6, 1 - 1e-6]`` so every estimator's weights stay finite."""
    return p.clamp(EPS, 1.0 - EPS)


class PropensityModule(L.LightningModule):
    """The evaluation side shared by trained propensity models and the baselines.

    Subclasses implement :meth:`propensity_and_loss`. Validation and test steps collect per-unit
    outputs into ``val_outputs`` / ``test_outputs`` and sum the loss; the epoch's end logs
    ``val_loss`` / ``test_loss``, the batch-size-weighted mean (a subclass that overrides
    ``on_validation_epoch_end`` / ``on_test_epoch_end`` calls ``super()``); ``predict_step`` returns
    the outputs as a dict of tensors.

    Attributes:
        requires_training: whether the model has weights to learn (True here and for
            :class:`PropensityModel`; False for the baselines). ``textcause.run.fit`` refuses to
            evaluate a model that requires training without a checkpoint, since an untrained
            network's numbers would be meaningless.
    """

    requires_training: bool = True

    def __init__(self) -> None:
        super().__init__()
        self.val_outputs = PredictionCollector()
        self.test_outputs = PredictionCollector()
        # The validation / test loss under DDP (no state in checkpoints; unused in one process).
        self._loss_means = nn.ModuleDict({stage: MeanMetric().set_dtype(torch.float64) for stage in ("val", "test")})
        # The validation / test loss in one process: (summed loss * batch size, units) of the epoch so far.
        self._eval_loss: dict[str, tuple[torch.Tensor, int]] = {}

    # ------------------------------------------------------------------ to implement
    def propensity_and_loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """Return clamped propensities, shape (B,), and the mean loss on ``batch['t']``."""
        raise NotImplementedError

    def predict_outcomes(self, batch: Batch) -> Optional[tuple[torch.Tensor, torch.Tensor]]:
        """Outcome-model predictions ``(mu0, mu1)`` for AIPW; None when the model has none."""
        return None

    # ------------------------------------------------------------------ evaluation
    def _outputs(self, batch: Batch, p: torch.Tensor) -> dict[str, torch.Tensor]:
        out = {"propensity": p, "index": batch["index"], "t": batch["t"], "y": batch["y"], "p_true": batch["p_true"]}
        mu = self.predict_outcomes(batch)
        if mu is not None:
            out["mu0"], out["mu1"] = mu
        return out

    def _evaluate(self, batch: Batch, stage: str, collector: PredictionCollector) -> torch.Tensor:
        p, loss = self.propensity_and_loss(batch)
        n = int(batch["t"].shape[0])
        if world_size(self) > 1:
            # Lightning's batch-size-weighted epoch mean divides the summed batch sizes by the world
            # size in integer arithmetic (23 units on 2 ranks count as 22); a metric sums float weights.
            self._loss_means[stage].update(loss.detach(), weight=n)
        else:
            self._add_eval_loss(stage, loss, n)
        collector.update(**self._outputs(batch, p.detach()))
        return loss

    def _add_eval_loss(self, stage: str, loss: torch.Tensor, n: int) -> None:
        # The epoch's batch-size-weighted mean loss, summed here and logged once at the epoch's end
        # (_log_eval_loss) in the arithmetic of Lightning's `self.log(..., on_epoch=True, batch_size=n)`
        # (a float32 sum of loss * n, then divided by the summed n), so the same bits, without its
        # bookkeeping on every step (each call moves its result object to the device, field by field).
        value = loss.detach()
        if value.dtype not in (torch.float32, torch.float64):
            value = value.to(torch.float32)
        total, units = self._eval_loss.get(stage) or (torch.tensor(0.0, device=value.device), 0)
        self._eval_loss[stage] = (total + value * n, units + n)

    def _log_eval_loss(self, stage: str) -> None:
        prog_bar = stage == "val"
        if world_size(self) > 1:
            if self._loss_means[stage].update_count:
                self.log(f"{stage}_loss", self._loss_means[stage], on_epoch=True, prog_bar=prog_bar, sync_dist=True)
            return
        summed = self._eval_loss.pop(stage, None)
        if summed is not None:
            mean = summed[0] / torch.tensor(summed[1], device=summed[0].device)
            # batch_size=1: Lightning's epoch mean of one value is that value, bit for bit
            self.log(
                f"{stage}_loss", mean, on_step=False, on_epoch=True, prog_bar=prog_bar, sync_dist=True, batch_size=1
            )

    def _reset(self, stage: str, collector: PredictionCollector) -> None:
        collector.reset()
        self._eval_loss.pop(stage, None)
        # Fresh states that are normal tensors: states reset under inference mode would be inference
        # tensors, which a later run under no_grad (DDP with gloo) cannot update in place.
        with torch.inference_mode(False):
            self._loss_means[stage].reset()

    def setup(self, stage: str) -> None:
        one_thread_if_forked(self)

    def on_validation_epoch_start(self) -> None:
        self._reset("val", self.val_outputs)

    def on_test_epoch_start(self) -> None:
        self._reset("test", self.test_outputs)

    def on_validation_epoch_end(self) -> None:
        self._log_eval_loss("val")

    def on_test_epoch_end(self) -> None:
        self._log_eval_loss("test")

    def validation_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "val", self.val_outputs)

    def test_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "test", self.test_outputs)

    def predict_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> dict[str, torch.Tensor]:
        p, _ = self.propensity_and_loss(batch)
        return {k: v.detach() for k, v in self._outputs(batch, p).items()}


_OPTIMIZERS = ("adam", "lbfgs")


class PropensityModel(PropensityModule):
    """A propensity model trained with binary cross-entropy on T (Adam, Weld et al. appendix E.3).

    Args:
        net: the network, features -> logits of shape (B,) (e.g.
            ``textcause.models.components.LogisticRegression`` or ``MLP``); picked in YAML by
            ``class_path``. A ``{"class_path", "init_args"}`` dict, as stored in checkpoints, is
            also accepted.
        lr: learning rate (> 0); for ``lbfgs`` the initial step length (1.0 is usual).
        weight_decay: L2 penalty (>= 0): Adam's weight decay, or ``weight_decay / 2 * ||w||^2`` added
            to the loss for ``lbfgs`` (the same gradient).
        optimizer: ``adam`` (mini-batch, the paper's choice) or ``lbfgs`` (quasi-Newton: solves an
            L2-regularised logistic regression to convergence like scikit-learn; use it with a batch
            size that holds the whole training split and a few epochs). Full-batch L-BFGS
            (:class:`ConvergedLBFGS`) ends the fit after the epoch whose step converged.
        lbfgs_max_iter: L-BFGS iterations per optimizer step (per batch).
        early_stopping_patience: validation epochs without a lower ``val_loss`` before training
            stops, for a network whose loss sits on a plateau for a while before it falls
            (SHERBERT on a weak signal): :meth:`configure_callbacks` then gives the trainer an
            ``EarlyStopping`` on ``val_loss`` with this patience, which replaces the trainer's own
            (Lightning's rule for a model's callbacks). None (default) keeps the trainer's.
        l1: L1 penalty (>= 0) on the network's input weights: ``l1 * sum(|w|)`` over the weights
            that read the features (``net.input_weights()``: the MLP's hidden layer, the logistic
            regression's ``w``) is added to the training loss (and to the logged ``train_loss``;
            ``val_loss`` stays the plain log-loss). The penalty that makes a lasso, and the tuned LR's
            L1, strong on tens of thousands of n-gram features, most of them noise; with Adam only
            (L-BFGS needs a smooth loss). 0 (default): none. Adam's ``weight_decay`` still applies
            beside it.

    Raises:
        ValueError: a bad value of any argument; ``l1 > 0`` with ``lbfgs``, or with a network
            that names no input weights (SHERBERT, OrderCountNet).
    """

    def __init__(
        self,
        net: nn.Module,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: str = "adam",
        lbfgs_max_iter: int = 50,
        early_stopping_patience: Optional[int] = None,
        l1: float = 0.0,
    ) -> None:
        super().__init__()
        owner = type(self).__name__  # a subclass's errors name the subclass
        self.lr = check_real(lr, "lr", owner, low=0.0, low_open=True)
        self.weight_decay = check_real(weight_decay, "weight_decay", owner, low=0.0)
        self.optimizer_name = check_options(optimizer, "optimizer", owner, _OPTIMIZERS)
        self.lbfgs_max_iter = check_int(lbfgs_max_iter, "lbfgs_max_iter", owner, low=1)
        self.early_stopping_patience = (
            None
            if early_stopping_patience is None
            else check_int(early_stopping_patience, "early_stopping_patience", owner, low=1)
        )
        self.net = as_net(net, owner)
        self.l1 = check_real(l1, "l1", owner, low=0.0)
        if self.l1 > 0 and self.optimizer_name != "adam":
            raise ValueError(
                f"The 'l1' parameter of {owner} needs optimizer 'adam': the L1 penalty is not smooth, "
                f"and L-BFGS assumes a smooth loss. Got l1={l1!r} with optimizer {optimizer!r}."
            )
        if self.l1 > 0 and not callable(getattr(self.net, "input_weights", None)):
            raise ValueError(
                f"The 'l1' parameter of {owner} penalises a network's input weights, and "
                f"{type(self.net).__name__} names none (input_weights()): use it with MLP or LogisticRegression."
            )
        self._train_loss: Optional[torch.Tensor] = None  # (weighted sum, units) of this epoch's training losses
        self._step_batch: Optional[Batch] = None  # the batch of an exact step (optimizer_step), between the calls
        self.save_hyperparameters(ignore=["net"])  # a subclass's own __init__ arguments too (Lightning reads its frame)
        save_net_config(self, owner)

    def configure_callbacks(self) -> list[L.Callback]:
        """The model's own ``EarlyStopping`` on ``val_loss`` when it sets ``early_stopping_patience``.

        Lightning puts a model's callbacks in place of the trainer's of the same type, so this one
        replaces the early stopping of ``configs/trainer/default.yaml`` (patience 5) for this model
        only; without the argument the trainer's callbacks stay as they are.
        """
        if self.early_stopping_patience is None:
            return []
        from lightning.pytorch.callbacks import EarlyStopping

        return [EarlyStopping(monitor="val_loss", mode="min", patience=self.early_stopping_patience)]

    def setup(self, stage: str) -> None:
        super().setup(stage)
        # A net that depends on how the data were built (e.g. SHERBERT with unfrozen encoder layers
        # needs the token states of a given layer of the same encoder) declares it; the data
        # module's typed settings must match (a data module without them, such as a test's toy
        # module, is not checked).
        datamodule = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        settings = getattr(datamodule, "settings", None)
        if settings is not None:
            check_data_requirements(self.net, settings)
        # A net that trains faster with another memory layout of its weights (the MLP's first layer
        # on sparse n-gram batches) takes it here, before the optimizer and any DDP wrapper exist.
        # The values stay the same; L-BFGS flattens gradients with `view` and keeps the plain layout.
        relayout = getattr(self.net, "use_sparse_layout", None)
        if stage == "fit" and self.optimizer_name == "adam" and callable(relayout):
            relayout()

    def on_train_epoch_start(self) -> None:
        self._train_loss = None
        optimizer = self._lbfgs()
        if optimizer is not None:  # one batch an epoch: every L-BFGS step sees the whole training split
            optimizer.full_batch = self.trainer.num_training_batches == 1

    def _add_train_loss(self, loss: torch.Tensor, n: int) -> None:
        # The epoch's batch-size-weighted mean training loss, summed here and logged once at the
        # epoch's end: the value Lightning's `self.log(..., on_epoch=True)` gives, without its
        # bookkeeping on every step (each call moves its result object to the device, field by field).
        part = torch.stack([loss.detach().double() * n, loss.new_tensor(n, dtype=torch.float64)])
        self._train_loss = part if self._train_loss is None else self._train_loss + part

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # A checkpoint saved mid-epoch (last.ckpt) keeps the epoch's running (sum, units) of the training
        # loss, summed over ranks (every rank saves), so a resumed run logs the whole epoch's mean.
        total = self._train_loss
        if total is not None and world_size(self) > 1:
            total = self.trainer.strategy.reduce(total.clone(), reduce_op="sum")
        if total is not None:
            checkpoint[TRAIN_LOSS_KEY] = total.detach().cpu()

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        # Lightning resumes mid-epoch without calling on_train_epoch_start: the sum goes on from here
        # (rank 0 carries it under DDP); a new epoch's start clears it as usual.
        saved = checkpoint.get(TRAIN_LOSS_KEY)
        if isinstance(saved, torch.Tensor) and saved.shape == (2,):
            part = saved.to(device=self.device, dtype=torch.float64)
            self._train_loss = part if self.global_rank == 0 else torch.zeros_like(part)

    def on_train_epoch_end(self) -> None:
        total = self._train_loss
        if total is not None:
            # sums over every rank (DDP), so the mean weighs each unit once, as Lightning's sync does;
            # sync_dist then averages equal values (and keeps Lightning's epoch-level sync warning away)
            total = self.trainer.strategy.reduce(total.clone(), reduce_op="sum") if world_size(self) > 1 else total
            self.log("train_loss", (total[0] / total[1]).float(), on_step=False, on_epoch=True, sync_dist=True)
            self._train_loss = None
        # A converged full-batch L-BFGS fit no longer changes: later epochs would only repeat this
        # epoch's validation numbers. The fit ends after this epoch's validation (its checkpoints and
        # callbacks as for any stop; trainer.min_epochs still holds). Every rank decides alike.
        optimizer = self._lbfgs()
        if optimizer is not None and optimizer.frozen:
            self.trainer.should_stop = True

    def _lbfgs(self) -> Optional[ConvergedLBFGS]:
        trainer = self._trainer
        optimizers = trainer.optimizers if trainer is not None else []
        return optimizers[0] if len(optimizers) == 1 and isinstance(optimizers[0], ConvergedLBFGS) else None

    def forward(self, x: Any) -> torch.Tensor:
        """Logits of P(T=1 | x), shape (B,)."""
        return self.net(x)

    @staticmethod
    def _propensity_and_loss(net: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        logits = net(batch["x"]).float()  # float32 even under bf16 autocast: 1 - 1e-6 must stay < 1
        loss = F.binary_cross_entropy_with_logits(logits, batch["t"].float())
        return clamp_propensity(torch.sigmoid(logits)), loss

    def propensity_and_loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        return self._propensity_and_loss(self.net, batch)

    def _penalty(self, parameters: Any) -> Any:
        """L-BFGS's L2 term ``weight_decay / 2 * ||w||^2`` over ``parameters`` (Adam applies its own decay)."""
        if self.optimizer_name != "lbfgs" or self.weight_decay <= 0:
            return 0.0
        return 0.5 * self.weight_decay * sum((w**2).sum() for w in parameters)

    def _l1_penalty(self) -> torch.Tensor:
        """``l1 * sum(|w|)`` over the network's input weights (see the ``l1`` argument)."""
        net: Any = self.net
        weights: torch.Tensor = net.input_weights()
        return self.l1 * weights.abs().sum()

    def _new_lbfgs(self, parameters: Any) -> ConvergedLBFGS:
        return ConvergedLBFGS(
            parameters, lr=self.lr, max_iter=self.lbfgs_max_iter, history_size=20, line_search_fn="strong_wolfe"
        )

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        self._step_batch = batch if self.exact else None
        _, loss = self.propensity_and_loss(batch)
        loss = loss + self._penalty(self.parameters())
        if self.l1 > 0:
            loss = loss + self._l1_penalty()
        self._add_train_loss(loss, int(batch["t"].shape[0]))
        if self.optimizer_name == "lbfgs" and world_size(self) > 1:
            # L-BFGS decides its line search and its stopping from the loss value: every rank must see
            # the same one, or the ranks take different numbers of closure calls (each a gradient
            # all-reduce) and wait for each other forever. The value becomes the mean over ranks; the
            # gradient stays this rank's, which DDP averages.
            mean = self.trainer.strategy.reduce(loss.detach().clone(), reduce_op="mean")  # the reduce is in place
            loss = loss + (mean - loss.detach())
        return loss

    @property
    def exact(self) -> bool:
        """Whether a full-batch L-BFGS fit of this model is solved exactly by liblinear instead
        (:mod:`textcause.models.exact_lr`): ``lbfgs`` with ``weight_decay > 0``, this class's own loss, a
        plain :class:`~textcause.models.components.LogisticRegression` net, one process."""
        return (
            type(self.net) is LogisticRegression and self.refittable and self.weight_decay > 0 and world_size(self) == 1
        )

    def optimizer_step(self, epoch: int, batch_idx: int, optimizer: Any, optimizer_closure: Any = None) -> None:
        """The L-BFGS step, or, for an :attr:`exact` full-batch fit, liblinear's solution of the same objective.

        The exact step runs the training step once (Lightning's closure) at the current weights,
        solves, sets the weights, runs the training step again (the epoch's ``train_loss`` is the
        loss at the solution) and records the step as converged, so the fit ends after this epoch's
        validation as a converged L-BFGS fit does. Anything else (mini-batches, DDP, another net,
        one class, no penalty) takes the L-BFGS step.
        """
        lbfgs = self._lbfgs()
        if lbfgs is None or not self.exact or not lbfgs.full_batch or lbfgs.frozen or optimizer_closure is None:
            super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)
            return
        optimizer_closure()
        batch, self._step_batch = self._step_batch, None
        if batch is None or not solve_exactly(
            self.net, batch, self.weight_decay, seed=int(torch.initial_seed()) % 2**31
        ):
            self._train_loss = None  # one class, or liblinear's limit: L-BFGS after all, its closures logged
            super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure)
            return
        self._train_loss = None
        optimizer_closure()
        self._step_batch = None
        lbfgs.state[lbfgs._params[0]]["converged"] = True

    @property
    def refittable(self) -> bool:
        """Whether :meth:`refit` repeats this model's fit: L-BFGS on this class's own loss.

        A subclass with a loss of its own (the joint model's propensity and outcome heads) is not
        refit: :meth:`refit` reproduces only the propensity loss of :class:`PropensityModel`.
        """
        own_loss = type(self).propensity_and_loss is PropensityModel.propensity_and_loss
        return self.optimizer_name == "lbfgs" and own_loss and type(self).training_step is PropensityModel.training_step

    def refit(
        self,
        train: Batch,
        val: Batch,
        predict: Batch,
        *,
        max_steps: int,
        patience: Optional[int] = None,
        seed: int = 0,
    ) -> torch.Tensor:
        """Fit a fresh copy of this model's network by its own recipe and return its propensities on ``predict``.

        The recipe of a full-batch L-BFGS fit in the Trainer: the network re-initialised (seeded by
        ``seed``), then up to ``max_steps`` steps (the Trainer's epochs) of :class:`ConvergedLBFGS`
        on the whole ``train`` batch with the training step's loss and penalty, each followed by the
        loss on ``val``; the weights with the lowest validation loss are kept (the best checkpoint);
        the fit ends once a step converges or, with ``patience``, after that many steps without a
        lower validation loss (early stopping). Hyperparameters (``weight_decay``, ``lr``,
        ``lbfgs_max_iter``) are this model's, as tuned. This model is left unchanged. Used by
        refitting intervals (:func:`textcause.estimators.refit.refit_interval`), which call it once
        per replicate on resampled training users. An :attr:`exact` model (a plain logistic
        regression with ``weight_decay > 0``) is solved by liblinear instead, as its Trainer fit is
        (:mod:`textcause.models.exact_lr`): one step that converges, so ``val`` chooses nothing.

        Raises:
            ValueError: a model that is not :attr:`refittable` (its refit would be a whole
                mini-batch training run, or another loss).
        """
        if not self.refittable:
            raise ValueError(
                f"{type(self).__name__} trains with {self.optimizer_name}"
                f"{' and a loss of its own' if self.optimizer_name == 'lbfgs' else ', not full-batch L-BFGS'}: "
                "only a PropensityModel trained by L-BFGS refits cheaply enough for a refitting interval."
            )
        max_steps = check_int(max_steps, "max_steps", "refit", low=1)
        if self.exact:  # liblinear's exact solution: one converged step, nothing for the validation loss to choose
            solution = exact_fit(
                as_scipy(train["x"]),
                train["t"].cpu().numpy(),
                self.weight_decay,
                bias=self.net.linear.bias is not None,
                seed=seed,
            )
            if solution is not None:
                coef, intercept = solution
                logits = np.asarray(as_scipy(predict["x"]) @ coef, dtype=np.float64).ravel() + intercept
                return clamp_propensity(torch.sigmoid(torch.as_tensor(logits, dtype=torch.float32)))
        net = copy.deepcopy(self.net)
        net.train()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for module in net.modules():
                if module is not net and hasattr(module, "reset_parameters"):
                    module.reset_parameters()
        optimizer = self._new_lbfgs(net.parameters())
        optimizer.full_batch = True

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            loss = self._propensity_and_loss(net, train)[1] + self._penalty(net.parameters())
            loss.backward()
            return loss

        best, best_state, since_best = math.inf, None, 0
        for _ in range(max_steps):
            optimizer.step(closure)
            with torch.no_grad():
                val_loss = float(self._propensity_and_loss(net, val)[1])
            if val_loss < best or best_state is None:
                best, best_state, since_best = val_loss, copy.deepcopy(net.state_dict()), 0
            else:
                since_best += 1
            if optimizer.frozen or (patience is not None and since_best >= patience):
                break
        net.load_state_dict(best_state)
        net.eval()
        with torch.no_grad():
            return self._propensity_and_loss(net, predict)[0]

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.optimizer_name == "lbfgs":
            return self._new_lbfgs(self.parameters())
        # foreach: the same arithmetic as the one-tensor-at-a-time loop, bit for bit
        # (tests/models/test_l1_penalty.py), which torch picks on CPU; 4x as fast on the n-gram MLP's weight
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay, foreach=True)
