"""Concept erasure and counterfactual representations (CFRs), on EleutherAI's ``concept-erasure``.

A binary concept Z (0 / 1) and representations X (n, d). Two erasers of the package:

* **LEACE** (``LeaceEraser``, Belrose et al. 2023): the least-squares affine map r(x) = x - A (x - mu)
  after which no linear classifier predicts Z better than a constant (the class-conditional means
  of r(X) are equal on the data it was fitted on). It needs no Z at inference. Split
  x = r(x) + x_par with x_par = A (x - mu), the component in the concept subspace (rank 1 for a
  binary Z). The package's ``constrain_cov_trace`` is off: it mixes the LEACE projection with an
  orthogonal one whenever the projection would increase the trace of the covariance (a guard for
  edits applied again and again inside a network), and the mixture no longer erases exactly.
* **Oracle** (``OracleEraser``): the OLS residual of X on Z, x - (z - mean_z) b; it needs the unit's
  Z, and edits less. Its concept component (z - mean_z) b is a function of z alone.

This module's CFRs (``leace_mean_cfr`` in the evaluation) replace the concept component by one for
the target value z' that does not depend on the rest of the representation. They are NOT the
construction of Lemberger et al. (2024), which regresses the concept coordinate on the erased
representation per target value (:mod:`~textcause.counterfactual.cfr.regression`, the ``cfr``
method); they are kept as a simpler variant:

* **deterministic**: x_{Z<-z'} = r(x) + E[X_par | Z = z'] (the class-conditional mean of the
  concept component on the fitting data); for the oracle eraser x - (z - mean_z) b + (z' - mean_z) b.
* **stochastic**: x_{Z<-z'} = r(x) + x_par^(j) for draws j of the concept components of fitting
  units with Z = z' (the empirical class-conditional distribution); a classifier's probabilities
  are averaged over the draws (:func:`averaged_proba`).

Everything is float64 numpy in, numpy out; torch is only used inside the package's fitters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from textcause.validation import check_consistent_length, check_int, check_options

ERASERS = ("leace", "oracle")


def _as_matrix(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"'{name}' must be a non-empty 2-d array of representations. Got shape {arr.shape} instead.")
    if not np.isfinite(arr).all():
        raise ValueError(f"'{name}' holds non-finite values: representations must be finite.")
    return arr


def _as_binary(z: Any, name: str = "z") -> np.ndarray:
    arr = np.asarray(z)
    if arr.ndim != 1 or not np.isin(arr, (0, 1)).all():
        raise ValueError(f"'{name}' must be a 1-d array of 0 / 1 concept values.")
    return arr.astype(np.int64)


@dataclasses.dataclass(frozen=True)
class ConceptEditor:
    """A fitted eraser and the concept components that make CFRs.

    Attributes:
        method: ``"leace"`` or ``"oracle"``.
        proj_left, proj_right: LEACE's x_par = ((x - bias) @ proj_right.T) @ proj_left.T (d x k, k x d).
        bias: LEACE's mean of X.
        coef: the oracle's OLS coefficient of X on Z (d,), and ``mean_z`` its mean of Z.
        class_means: (2, d) the mean concept component of the fitting units with Z = 0 and Z = 1.
        pools: the concept components of the fitting units with Z = 0 and with Z = 1 (stochastic CFRs).
        rank: the rank of the edit (0: nothing was erased; the cross-covariance was below ``svd_tol``).
    """

    method: str
    class_means: np.ndarray
    pools: tuple[np.ndarray, np.ndarray]
    rank: int
    proj_left: np.ndarray | None = None
    proj_right: np.ndarray | None = None
    bias: np.ndarray | None = None
    coef: np.ndarray | None = None
    mean_z: float = 0.0

    def component(self, x: Any, z: Any = None) -> np.ndarray:
        """The concept component of each row (the oracle needs the rows' ``z``)."""
        x = _as_matrix(x, "x")
        if self.method == "leace":
            return ((x - self.bias) @ self.proj_right.T) @ self.proj_left.T
        if z is None:
            raise ValueError("The oracle eraser needs the concept value 'z' of every row.")
        z = _as_binary(z)
        check_consistent_length(x, z)
        return np.outer(z - self.mean_z, self.coef)

    def erase(self, x: Any, z: Any = None) -> np.ndarray:
        """The erased representations r(x) (the oracle needs ``z``)."""
        x = _as_matrix(x, "x")
        return x - self.component(x, z)

    def counterfactual(self, x: Any, target: Any, z: Any = None) -> np.ndarray:
        """The deterministic CFRs x_{Z<-target}: r(x) + the target value's concept component."""
        target = _as_binary(target, "target")
        check_consistent_length(x, target)
        if self.method == "oracle":
            return self.erase(x, z) + np.outer(target - self.mean_z, self.coef)
        return self.erase(x, z) + self.class_means[target]

    def sample_counterfactuals(
        self, x: Any, target: Any, rng: np.random.Generator, n_samples: int, z: Any = None
    ) -> np.ndarray:
        """(n_samples, n, d) stochastic CFRs: r(x) + concept components drawn from the target value's fitting units."""
        check_int(n_samples, "n_samples", "ConceptEditor.sample_counterfactuals", low=1)
        target = _as_binary(target, "target")
        erased = self.erase(x, z)
        check_consistent_length(erased, target)
        out = np.empty((n_samples,) + erased.shape)
        for v in (0, 1):
            rows = np.flatnonzero(target == v)
            if rows.size == 0:
                continue
            pool = self.pools[v]
            draws = rng.integers(0, len(pool), size=(n_samples, rows.size))
            out[:, rows, :] = erased[rows][None, :, :] + pool[draws]
        return out


def fit_editor(x: Any, z: Any, *, method: str = "leace", svd_tol: float = 0.01) -> ConceptEditor:
    """Fit the eraser ``method`` on (x, z) with ``concept-erasure`` and keep the concept components.

    Args:
        x: (n, d) representations.
        z: (n,) 0 / 1 concept values (both present).
        method: ``"leace"`` (LeaceEraser) or ``"oracle"`` (OracleEraser).
        svd_tol: the package's threshold below which a singular value of the (whitened)
            cross-covariance is dropped (see ``LeaceFitter``); lower it for a weak concept.

    Raises:
        ValueError: bad shapes, non-finite values, a concept with one value.
    """
    import torch
    from concept_erasure import LeaceFitter, OracleFitter

    check_options(method, "method", "fit_editor", ERASERS)
    x = _as_matrix(x, "x")
    z = _as_binary(z)
    check_consistent_length(x, z)
    if len(np.unique(z)) < 2:
        raise ValueError("The concept 'z' must take both values 0 and 1 to fit an eraser.")
    xt = torch.from_numpy(x)
    zt = torch.from_numpy(z.astype(np.float64))
    if method == "leace":
        eraser = LeaceFitter.fit(xt, zt, svd_tol=svd_tol, constrain_cov_trace=False).eraser
        left = eraser.proj_left.double().numpy()
        right = eraser.proj_right.double().numpy()
        editor = ConceptEditor(
            "leace",
            np.zeros((2, x.shape[1])),
            (np.zeros((1, x.shape[1])),) * 2,
            rank=int(np.linalg.matrix_rank(left @ right, tol=1e-10)),
            proj_left=left,
            proj_right=right,
            bias=eraser.bias.double().numpy(),
        )
    else:
        eraser = OracleFitter.fit(xt, zt, svd_tol=svd_tol).eraser
        coef = eraser.coef.double().numpy().reshape(-1)
        editor = ConceptEditor(
            "oracle",
            np.zeros((2, x.shape[1])),
            (np.zeros((1, x.shape[1])),) * 2,
            rank=int(np.linalg.norm(coef) > 0),
            coef=coef,
            mean_z=float(eraser.mean_z.double().numpy().reshape(-1)[0]),
        )
    comp = editor.component(x, z)
    pools = (comp[z == 0], comp[z == 1])
    means = np.stack([p.mean(axis=0) for p in pools])
    return dataclasses.replace(editor, class_means=means, pools=pools)


def averaged_proba(predict_proba: Callable[[np.ndarray], np.ndarray], samples: np.ndarray) -> np.ndarray:
    """The mean over the first axis of ``predict_proba`` on each (n, d) slice of ``samples``."""
    return np.mean([predict_proba(s) for s in samples], axis=0)
