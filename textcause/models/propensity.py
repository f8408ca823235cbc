"""LightningModules that estimate propensity scores P(T=1 | text) and collect them for evaluation.

``PropensityModule`` holds what every propensity model shares: validation / test / predict steps
that turn a batch into clamped propensities, log the loss, and feed a :class:`PredictionCollector`
(``val_outputs`` / ``test_outputs``) from which :class:`~textcause.callbacks.CausalMetricsCallback`
computes whole-sample ATEs and metrics. ``PropensityModel`` trains an injected network
(``models/components``) with binary cross-entropy on T and Adam (Weld et al., appendix E.3).

Checkpoints rebuild themselves: ``PropensityModel.load_from_checkpoint(path)`` needs no arguments,
both for a model built by LightningCLI (the CLI stores the ``net`` config) and for one built in
Python from a component that keeps its ``__init__`` arguments as attributes (see
:func:`net_config`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from typing import Any, Optional

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

from textcause.metrics.torch import PredictionCollector
from textcause.validation import check_int, check_real

EPS = 1e-6
Batch = dict[str, Any]


def clamp_propensity(p: torch.Tensor) -> torch.Tensor:
    """Clamp probabilities to ``[1e-6, 1 - 1e-6]`` so every estimator's weights stay finite."""
    return p.clamp(EPS, 1.0 - EPS)


def net_config(net: nn.Module) -> Optional[dict[str, Any]]:
    """``{"class_path", "init_args"}`` that rebuilds ``net``, or None if it cannot be read off.

    The init arguments are read from attributes named like the ``__init__`` parameters (the
    convention of ``textcause.models.components``, as scikit-learn's ``get_params``); a parameter
    without such an attribute, or with a value that is not a plain YAML scalar/list/dict, gives None.
    """
    cls = type(net)
    init_args: dict[str, Any] = {}
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if not hasattr(net, name):
            return None
        value = getattr(net, name)
        if not _is_plain(value):
            return None
        init_args[name] = value
    return {"class_path": f"{cls.__module__}.{cls.__qualname__}", "init_args": init_args}


def build_net(config: dict[str, Any]) -> nn.Module:
    """Instantiate a network from a ``{"class_path", "init_args"}`` dict (as stored in checkpoints).

    Only modules already imported, or inside the ``textcause`` package, are looked up: a checkpoint
    cannot make this import arbitrary code.

    Raises:
        ValueError: a malformed config, an unknown class, or a class that is not an ``nn.Module``.
    """
    class_path = config.get("class_path") if isinstance(config, dict) else None
    if not isinstance(class_path, str) or "." not in class_path:
        raise ValueError(
            "The 'net' config must be a dict with a dotted 'class_path' and 'init_args'. "
            f"Got {config!r} instead."
        )
    module_name, _, name = class_path.rpartition(".")
    module = sys.modules.get(module_name)
    if module is None and (module_name == "textcause" or module_name.startswith("textcause.")):
        module = importlib.import_module(module_name)
    cls = getattr(module, name, None) if module is not None else None
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ValueError(
            f"The net class {class_path!r} is not an imported torch nn.Module: import the module that "
            "defines it before loading the checkpoint."
        )
    return cls(**dict(config.get("init_args") or {}))


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


class PropensityModule(L.LightningModule):
    """The evaluation side shared by trained propensity models and the baselines.

    Subclasses implement :meth:`propensity_and_loss`. Validation and test steps log
    ``val_loss`` / ``test_loss`` and collect per-unit outputs into ``val_outputs`` /
    ``test_outputs``; ``predict_step`` returns them as a dict of tensors.
    """

    requires_training: bool = True

    def __init__(self) -> None:
        super().__init__()
        self.val_outputs = PredictionCollector()
        self.test_outputs = PredictionCollector()

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
        self.log(f"{stage}_loss", loss, on_step=False, on_epoch=True, prog_bar=stage == "val",
                 sync_dist=True, batch_size=int(batch["t"].shape[0]))
        collector.update(**self._outputs(batch, p.detach()))
        return loss

    def on_validation_epoch_start(self) -> None:
        self.val_outputs.reset()

    def on_test_epoch_start(self) -> None:
        self.test_outputs.reset()

    def validation_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "val", self.val_outputs)

    def test_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "test", self.test_outputs)

    def predict_step(self, batch: Batch, batch_idx: int, dataloader_idx: int = 0) -> dict[str, torch.Tensor]:
        p, _ = self.propensity_and_loss(batch)
        return {k: v.detach() for k, v in self._outputs(batch, p).items()}


OPTIMIZERS = ("adam", "lbfgs")


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
            size that holds the whole training split and a few epochs).
        lbfgs_max_iter: L-BFGS iterations per optimizer step (per batch).
    """

    def __init__(
        self,
        net: nn.Module,
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        optimizer: str = "adam",
        lbfgs_max_iter: int = 50,
    ) -> None:
        super().__init__()
        self.lr = check_real(lr, "lr", "PropensityModel", low=0.0, low_open=True)
        self.weight_decay = check_real(weight_decay, "weight_decay", "PropensityModel", low=0.0)
        if optimizer not in OPTIMIZERS:
            raise ValueError(
                f"The 'optimizer' parameter of PropensityModel must be one of {list(OPTIMIZERS)}. Got {optimizer!r} instead."
            )
        self.optimizer_name = optimizer
        self.lbfgs_max_iter = check_int(lbfgs_max_iter, "lbfgs_max_iter", "PropensityModel", low=1)
        config = net if isinstance(net, dict) else None
        module = build_net(net) if config is not None else net
        if not isinstance(module, nn.Module):
            raise ValueError(
                f"The 'net' parameter of PropensityModel must be a torch nn.Module. Got {type(net).__name__} instead."
            )
        self.net = module
        self._save_hparams(module)

    def _save_hparams(self, net: nn.Module) -> None:
        # Under LightningCLI the hyperparameters are the parsed config (with the net's class_path
        # and init_args, input_dim included); save_hyperparameters() picks them up as given.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*is an instance of `nn.Module`.*")
            self.save_hyperparameters()
        if not isinstance(self.hparams.get("net"), nn.Module):
            return
        # Built in Python: store how to rebuild the net instead of the module object.
        config = net_config(net)
        if config is None:
            warnings.warn(
                f"{type(net).__name__} does not expose its __init__ arguments as attributes: pass "
                "net=... to PropensityModel.load_from_checkpoint.",
                stacklevel=3,
            )
            self.hparams.pop("net")
            self.save_hyperparameters(dict(self.hparams))  # also refreshes hparams_initial
        else:
            self.save_hyperparameters({**self.hparams, "net": config})

    def setup(self, stage: str) -> None:
        # A net that depends on how the data were built (e.g. SHERBERT with unfrozen encoder layers
        # needs the token states of a given layer of the same encoder) checks the data module here.
        check = getattr(self.net, "check_data", None)
        datamodule = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        if callable(check) and datamodule is not None:
            check(datamodule)

    def forward(self, x: Any) -> torch.Tensor:
        """Logits of P(T=1 | x), shape (B,)."""
        return self.net(x)

    def propensity_and_loss(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(batch["x"]).float()  # float32 even under bf16 autocast: 1 - 1e-6 must stay < 1
        t = batch["t"].float()
        loss = F.binary_cross_entropy_with_logits(logits, t)
        return clamp_propensity(torch.sigmoid(logits)), loss

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        _, loss = self.propensity_and_loss(batch)
        if self.optimizer_name == "lbfgs" and self.weight_decay > 0:
            loss = loss + 0.5 * self.weight_decay * sum((w**2).sum() for w in self.parameters())
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True, batch_size=int(batch["t"].shape[0]))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        if self.optimizer_name == "lbfgs":
            return torch.optim.LBFGS(
                self.parameters(), lr=self.lr, max_iter=self.lbfgs_max_iter, history_size=20,
                line_search_fn="strong_wolfe",
            )
        return torch.optim.Adam(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)
