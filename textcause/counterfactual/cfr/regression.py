"""The counterfactual representation (CFR) as Lemberger et al. (2024) build it: erase, then regress back.

Lemberger & Saillenfest, "Explaining Text Classifiers with Counterfactual Representations"
(arXiv:2402.00711, ECAI 2024), the method section that builds a CFR from an erased representation
and a regression of the concept component on it (its number is not checked here: the project's
copy of the paper is a summary), as implemented in the authors' code
(ToineSayan/counterfactual-representations-for-explanation, ``CFR.py``: ``Erasure`` and
``LinearConceptValueAssignmentWithMSEloss``; the notebooks ``CFRs_EEECp_*.ipynb`` and
``CFRs_biasbios.ipynb`` run it with ``projection='orth'``).
For a binary concept Z and training representations X (n, d):

1. **The concept direction** u (d,): the unit vector spanning the column space of the
   cross-covariance Sigma_XZ of X with Z one-hot (rank 1 for a binary Z: u is parallel to
   E[X | Z = 1] - E[X | Z = 0]; its sign is fixed so that u . (mu_1 - mu_0) > 0, which changes
   no CFR).
2. **Erasure by orthogonal projection**: the concept coordinate c(x) = u . x and the erased
   representation r(x) = x - c(x) u (the authors' ``X @ P.T`` with P = I - u u^T; no centring).
   The class-conditional means of r(X) are equal on the fitting data, so no linear classifier
   reads Z from r(X) better than a constant there.
3. **Per target value z, a regression of the coordinate on the erased representation**:

       (w_z, b_z) = argmin_{w, b}  sum_{i: z_i = z} (c(x_i) - b - w . r(x_i))^2  +  alpha ||w||^2

   (ridge with an unpenalised intercept; ``alpha = 0``: the minimum-norm least-squares fit).
4. **The deterministic CFR** to the target value z':

       x_{Z<-z'} = r(x) + (b_{z'} + w_{z'} . r(x)) u

5. **The stochastic CFR** adds Gaussian noise along u:
   x_{Z<-z'} + eps u with eps ~ N(m_{z'}, s_{z'}^2), where m_z and s_z^2 are the mean and the
   (ddof 0, maximum-likelihood) variance of the residuals c(x_i) - b_z - w_z . r(x_i) of the
   fitting units with Z = z (the authors fit a one-component ``GaussianMixture`` to them).
   A classifier's probabilities are averaged over the draws.

Where this differs from the authors' code, and why: they fit step 3 with scikit-learn's
``MLPRegressor`` (no hidden layer, adam, early stopping on a validation share, ``alpha`` 5e-2 in
the BiasInBios and gender-balanced EEEC notebooks, 5e-4 in the race one, 1e-4 by default in
``CFR.py``), which approximates this ridge objective. ``MLPRegressor``'s loss on a minibatch of
``b = min(200, n)`` units is ``(1 / 2b) (sum of squared errors + alpha ||w||^2)``; over an epoch's
``n / b`` minibatches that is ``(1 / 2b) (sum over all units + (alpha n / b) ||w||^2)``, a ridge
penalty of ``alpha * n / b`` on the summed squared error. ``alpha`` is therefore taken on the
authors' scale: the ridge penalty of class z is ``alpha * n_z / min(batch_size, n_z)``
(``batch_size`` 200, scikit-learn's default; ``batch_size=None`` uses ``alpha`` as the penalty
itself). With early stopping scikit-learn first holds out a tenth of the units, so the authors'
n is about 0.9 n_z, and their early stopping shrinks the fit further, by an amount that depends
on the run; here
the objective is solved exactly (numpy ``lstsq``), so the fit is deterministic and needs no
validation split. ``GaussianMixture`` adds
``reg_covar`` (1e-6) to the variance; here the variance is the residuals' own.
Everything is float64 numpy in, numpy out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from textcause.counterfactual.cfr.erasure import _as_binary, _as_matrix
from textcause.validation import check_consistent_length, check_int, check_real

#: The ``MLPRegressor`` penalty of the authors' BiasInBios notebook (``alpha``; see :data:`MLP_BATCH`).
DEFAULT_ALPHA = 5e-2

#: ``MLPRegressor``'s minibatch (``batch_size="auto"``: ``min(200, n)``), which sets ``alpha``'s scale.
MLP_BATCH = 200


@dataclasses.dataclass(frozen=True)
class RegressionCFR:
    """A fitted Lemberger et al. CFR (see the module docstring for the formula).

    Attributes:
        direction: u (d,), the unit concept direction.
        coef: (2, d) w_z of the regressions for Z = 0 and Z = 1.
        intercept: (2,) b_z.
        noise_mean: (2,) m_z, the mean residual of the fitting units with Z = z.
        noise_var: (2,) s_z^2, their (ddof 0) residual variance.
        alpha: the penalty as given (on ``MLPRegressor``'s scale unless ``batch_size`` was None).
        penalty: (2,) the ridge penalty each class's regression was fitted with.
    """

    direction: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    noise_mean: np.ndarray
    noise_var: np.ndarray
    alpha: float
    penalty: tuple[float, float] = (0.0, 0.0)

    def coordinate(self, x: Any) -> np.ndarray:
        """c(x) = u . x for each row."""
        return _as_matrix(x, "x") @ self.direction

    def erase(self, x: Any) -> np.ndarray:
        """r(x) = x - c(x) u: the orthogonal projection that removes the concept direction."""
        x = _as_matrix(x, "x")
        return x - np.outer(x @ self.direction, self.direction)

    def predicted_coordinate(self, x: Any, target: Any) -> np.ndarray:
        """b_{z'} + w_{z'} . r(x), each row with its own target value z'."""
        erased = self.erase(x)
        target = _as_binary(target, "target")
        check_consistent_length(erased, target)
        return np.einsum("nd,nd->n", erased, self.coef[target]) + self.intercept[target]

    def counterfactual(self, x: Any, target: Any) -> np.ndarray:
        """The deterministic CFRs r(x) + (b_{z'} + w_{z'} . r(x)) u."""
        return self.erase(x) + np.outer(self.predicted_coordinate(x, target), self.direction)

    def sample_counterfactuals(self, x: Any, target: Any, rng: np.random.Generator, n_samples: int) -> np.ndarray:
        """(n_samples, n, d) stochastic CFRs: the deterministic ones + eps u, eps ~ N(m_{z'}, s_{z'}^2)."""
        check_int(n_samples, "n_samples", "RegressionCFR.sample_counterfactuals", low=1)
        base = self.counterfactual(x, target)
        target = _as_binary(target, "target")
        eps = rng.standard_normal((n_samples, len(target))) * np.sqrt(self.noise_var[target]) + self.noise_mean[target]
        return base[None, :, :] + eps[:, :, None] * self.direction[None, None, :]


def concept_direction(x: np.ndarray, z: np.ndarray, rcond: float = 1e-5) -> np.ndarray:
    """The unit vector spanning the column space of Cov(X, one-hot Z) (the authors' ``E_SigXZ``).

    Raises:
        ValueError: the cross-covariance is (numerically) zero: the class means are equal.
    """
    from scipy.linalg import orth

    onehot = np.stack([1 - z, z], axis=1).astype(np.float64)
    sigma_xz = (x - x.mean(axis=0)).T @ (onehot - onehot.mean(axis=0)) / len(x)
    basis = orth(sigma_xz, rcond=rcond)
    if basis.shape[1] == 0 or not np.any(sigma_xz):
        raise ValueError("The concept's class means are equal: there is no concept direction to erase.")
    u = basis[:, 0]
    diff = x[z == 1].mean(axis=0) - x[z == 0].mean(axis=0)
    return -u if u @ diff < 0 else u


def ridge(features: np.ndarray, target: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """(w, b) minimising sum (target - b - features w)^2 + alpha ||w||^2 (minimum-norm w when alpha = 0)."""
    mean_f, mean_t = features.mean(axis=0), target.mean()
    centred = features - mean_f
    if alpha > 0:
        d = features.shape[1]
        design = np.vstack([centred, np.sqrt(alpha) * np.eye(d)])
        response = np.concatenate([target - mean_t, np.zeros(d)])
    else:
        design, response = centred, target - mean_t
    w = np.linalg.lstsq(design, response, rcond=None)[0]
    return w, float(mean_t - mean_f @ w)


def fit_regression_cfr(
    x: Any, z: Any, *, alpha: float = DEFAULT_ALPHA, batch_size: int | None = MLP_BATCH
) -> RegressionCFR:
    """Fit the Lemberger et al. CFR on (x, z) (see the module docstring).

    Args:
        x: (n, d) representations.
        z: (n,) 0 / 1 concept values (both present).
        alpha: the penalty of the per-class regressions (>= 0; 0: least squares), on the scale of
            the authors' ``MLPRegressor``: class z's ridge penalty is ``alpha * n_z / min(batch_size, n_z)``.
        batch_size: that minibatch size (``MLPRegressor``'s 200); None: ``alpha`` is the ridge penalty itself.

    Raises:
        ValueError: bad shapes, non-finite values, a concept with one value, equal class means.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> z = rng.integers(0, 2, 200)
        >>> x = rng.normal(size=(200, 4)) + np.outer(z, [2.0, 0, 0, 0])
        >>> cfr = fit_regression_cfr(x, z)
        >>> np.round(np.abs(cfr.direction), 1).tolist()[0]
        1.0
        >>> x_cf = cfr.counterfactual(x, 1 - z)
        >>> bool(abs(x_cf[z == 0, 0].mean() - x[z == 1, 0].mean()) < 0.5)
        True
    """
    check_real(alpha, "alpha", "fit_regression_cfr", low=0.0)
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", "fit_regression_cfr", low=1)
    x = _as_matrix(x, "x")
    z = _as_binary(z)
    check_consistent_length(x, z)
    if len(np.unique(z)) < 2:
        raise ValueError("The concept 'z' must take both values 0 and 1 to fit a CFR.")
    u = concept_direction(x, z)
    c = x @ u
    erased = x - np.outer(c, u)
    coef, intercept = np.zeros((2, x.shape[1])), np.zeros(2)
    noise_mean, noise_var, penalty = np.zeros(2), np.zeros(2), [0.0, 0.0]
    for v in (0, 1):
        rows = z == v
        n_z = int(rows.sum())
        penalty[v] = float(alpha) if batch_size is None else float(alpha) * n_z / min(batch_size, n_z)
        coef[v], intercept[v] = ridge(erased[rows], c[rows], penalty[v])
        resid = c[rows] - erased[rows] @ coef[v] - intercept[v]
        noise_mean[v], noise_var[v] = resid.mean(), resid.var()
    return RegressionCFR(u, coef, intercept, noise_mean, noise_var, float(alpha), (penalty[0], penalty[1]))
