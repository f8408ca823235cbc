"""Full-batch L-BFGS that stops moving once converged: the plain LR's solver where liblinear is not used
(mini-batches, DDP, other nets; :mod:`textcause.models.exact_lr` solves the rest exactly)."""

from __future__ import annotations

import torch

__all__ = ["ConvergedLBFGS"]


class ConvergedLBFGS(torch.optim.LBFGS):
    """``torch.optim.LBFGS`` that, in a full-batch fit, stops moving once a step stopped on its own tolerances.

    Full-batch L-BFGS inside the Trainer takes one optimizer step (up to ``max_iter`` iterations)
    per epoch. A step that ends before ``max_iter`` iterations and ``max_eval`` evaluations has
    stopped on ``tolerance_grad`` / ``tolerance_change`` (in float32: the loss no longer changes),
    and the optimizer records ``converged`` in its state (saved in checkpoints). With
    ``full_batch`` set (every step sees the same whole training split; :class:`PropensityModel`
    sets it when an epoch has one batch), later steps then evaluate the closure once (the
    ``training_step`` logs the loss, every DDP rank takes part in the same gradient all-reduce) and
    leave the weights alone, instead of new line searches that move them by rounding noise only.
    With mini-batches every step iterates, as ``torch.optim.LBFGS`` does.

    Attributes:
        full_batch: whether every step sees the whole training split (default False).
        stop_when_converged: a class attribute; False restores ``torch.optim.LBFGS``'s behaviour
            (every step iterates again and the Trainer runs every epoch), for benchmarks.
    """

    stop_when_converged: bool = True
    full_batch: bool = False

    @property
    def converged(self) -> bool:
        """Whether the last step stopped on the tolerances rather than on ``max_iter`` / ``max_eval``."""
        return bool(self.state[self._params[0]].get("converged", False))

    @property
    def frozen(self) -> bool:
        """Whether steps leave the weights alone: converged, in a full-batch fit, with the switch on."""
        return self.stop_when_converged and self.full_batch and self.converged

    def step(self, closure):  # type: ignore[override]
        """One L-BFGS step, or (:attr:`frozen`) one evaluation of ``closure`` with the weights left as they are."""
        if self.frozen:
            with torch.enable_grad():
                return closure()
        state = self.state[self._params[0]]
        iters, evals = state.get("n_iter", 0), state.get("func_evals", 0)
        loss = super().step(closure)
        state = self.state[self._params[0]]
        group = self.param_groups[0]
        state["converged"] = bool(
            state["n_iter"] - iters < group["max_iter"] and state["func_evals"] - evals < group["max_eval"]
        )
        return loss
