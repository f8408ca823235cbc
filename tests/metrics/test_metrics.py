"""Metrics: references from scikit-learn, scipy and torchmetrics, hand computations, errors."""

from __future__ import annotations

import numpy as np
import pytest

from textcause.estimators import Estimate, ipw
from textcause.metrics import (
    ADInterval,
    arbour_dimmery_interval,
    bias,
    brier_score,
    expected_calibration_error,
    interval_narrower_than_ad,
    iptw_weight_mse,
    propensity_brier,
    spearman,
    treatment_accuracy,
)


@pytest.fixture(scope="module")
def units() -> dict[str, np.ndarray]:
    """The paper's DGP (true propensity 0.9 / 0.1) with a noisy estimated propensity."""
    rng = np.random.default_rng(0)
    n = 5000
    class1 = rng.random(n) < 0.5
    p = np.where(class1, 0.9, 0.1)
    t = (rng.random(n) < p).astype(np.int64)
    y = (rng.random(n) < np.where(class1 & (t == 0), 0.1, 0.9)).astype(np.float64)
    p_hat = np.clip(p + rng.normal(0, 0.1, n), 0.02, 0.98)
    return {"t": t, "y": y, "p": p, "p_hat": p_hat}


def test_brier_score_equals_sklearn(units):
    from sklearn.metrics import brier_score_loss

    ref = brier_score_loss(units["t"], units["p_hat"])
    assert brier_score(units["t"], units["p_hat"]) == pytest.approx(ref, abs=1e-12)
    assert propensity_brier(units["p_hat"], units["p"]) == pytest.approx(np.mean((units["p_hat"] - units["p"]) ** 2))
    assert propensity_brier(units["p"], units["p"]) == 0.0


@pytest.mark.parametrize("n_bins", [1, 10, 15])
def test_ece_equals_torchmetrics(units, n_bins):
    import torch
    from torchmetrics.classification import BinaryCalibrationError

    # include propensities of exactly 0, 1 and bin edges
    p = np.r_[units["p_hat"], 0.0, 1.0, 0.5, 0.2]
    t = np.r_[units["t"], 1, 0, 1, 0]
    ref = BinaryCalibrationError(n_bins=n_bins, norm="l1")(torch.tensor(p), torch.tensor(t)).item()
    assert expected_calibration_error(t, p, n_bins=n_bins) == pytest.approx(ref, abs=1e-9)


def test_ece_hand_computation():
    t = np.array([1, 0, 1, 1])
    p = np.array([0.1, 0.2, 0.8, 0.9])
    # 2 bins: [0, .5): gap |1 - .3| ; [.5, 1): gap |2 - 1.7|
    assert expected_calibration_error(t, p, n_bins=2) == pytest.approx((0.7 + 0.3) / 4)


def test_treatment_accuracy(units):
    import torch
    from torchmetrics.classification import BinaryAccuracy

    ref = BinaryAccuracy(threshold=0.5)(torch.tensor(units["p_hat"]), torch.tensor(units["t"])).item()
    assert treatment_accuracy(units["t"], units["p_hat"]) == pytest.approx(ref, abs=1e-6)
    assert treatment_accuracy([1, 0, 1, 0], [0.9, 0.5, 0.5, 0.2]) == 0.75  # 0.5 predicts 0
    assert treatment_accuracy([1, 0, 1, 0], [0.9, 0.5, 0.5, 0.2], threshold=0.4) == 0.75


def test_spearman_equals_scipy_with_ties(units):
    from scipy.stats import spearmanr

    # the true propensity is two-valued: massive ties
    assert spearman(units["p_hat"], units["p"]) == pytest.approx(
        spearmanr(units["p_hat"], units["p"]).statistic, abs=1e-12
    )
    rounded = np.round(units["p_hat"], 1)
    assert spearman(rounded, units["p_hat"]) == pytest.approx(spearmanr(rounded, units["p_hat"]).statistic, abs=1e-12)
    assert spearman(units["p"], units["p"]) == pytest.approx(1.0)
    assert spearman(1 - units["p_hat"], units["p_hat"]) == pytest.approx(-1.0)


def test_spearman_constant_input_is_zero_not_nan(units):
    assert spearman(np.full(units["p"].size, 0.5), units["p"]) == 0.0
    assert spearman(units["p_hat"], np.full(units["p"].size, 0.3)) == 0.0


def test_iptw_weight_mse_hand_computation():
    t = np.array([1, 0, 1])
    p_hat = np.array([0.5, 0.25, 0.8])
    p = np.array([0.4, 0.5, 0.5])
    inv_hat = np.array([1 / 0.5, 1 / 0.75, 1 / 0.8])
    inv = np.array([1 / 0.4, 1 / 0.5, 1 / 0.5])
    expected = sum((inv_hat[i] / inv_hat.sum() - inv[i] / inv.sum()) ** 2 for i in range(3))  # a SUM
    assert iptw_weight_mse(t, p_hat, p) == pytest.approx(expected, abs=1e-15)
    assert iptw_weight_mse(t, p, p) == 0.0
    # a rescaled propensity is not a rescaled weight: the normalisation cancels only a constant
    assert iptw_weight_mse(t, np.full(3, 0.3), np.full(3, 0.3)) == 0.0


def test_bias_sign():
    est = Estimate(ate=0.3, method="ipw", n_used=10)
    assert bias(est, 0.4) == pytest.approx(-0.1)
    assert bias(0.5, 0.4) == pytest.approx(0.1)


def test_arbour_dimmery_interval_hand_computation():
    t = np.array([1, 0, 1, 0])
    y = np.array([1.0, 0.5, 2.0, 1.0])
    p_hat = np.array([0.6, 0.3, 0.5, 0.6])
    p = np.array([0.5, 0.4, 0.7, 0.5])
    s = (p_hat - p) ** 2
    b1 = abs((y[0] / p[0] * s[0] / p_hat[0] ** 2 + y[2] / p[2] * s[2] / p_hat[2] ** 2) / 4)
    b0 = abs((y[1] / (1 - p[1]) * s[1] / (1 - p_hat[1]) ** 2 + y[3] / (1 - p[3]) * s[3] / (1 - p_hat[3]) ** 2) / 4)
    b = arbour_dimmery_interval(t, y, p_hat, p)
    est = ipw(t, y, p_hat)
    assert (b.b0, b.b1) == (pytest.approx(b0, abs=1e-15), pytest.approx(b1, abs=1e-15))
    assert b.low == pytest.approx(est.ate - b0 - b1, abs=1e-12)
    assert b.high == pytest.approx(est.ate + b0 + b1, abs=1e-12)
    assert b.width == pytest.approx(2 * (b0 + b1))


def test_ad_interval_collapses_with_the_true_propensity(units):
    b = arbour_dimmery_interval(units["t"], units["y"], units["p"], units["p"])
    assert b.b0 == b.b1 == 0.0
    assert b.low == b.high == pytest.approx(ipw(units["t"], units["y"], units["p"]).ate)
    noisy = arbour_dimmery_interval(units["t"], units["y"], units["p_hat"], units["p"])
    assert noisy.low < noisy.high
    assert (noisy.b0, noisy.b1, noisy.low, noisy.high) == pytest.approx(
        (0.16509610967675276, 1.5782945135750552, -1.1877359497123265, 2.2990452967912893), rel=1e-9
    )  # seed 0, pinned
    assert interval_narrower_than_ad(noisy.low + 0.01, noisy.high - 0.01, noisy)
    assert not interval_narrower_than_ad(noisy.low - 0.01, noisy.high, noisy)


def test_metric_error_messages(units):
    t, p = units["t"], units["p_hat"]
    with pytest.raises(
        ValueError, match=r"The 'threshold' parameter of treatment_accuracy must be a float >= 0\.0 and <= 1\.0"
    ):
        treatment_accuracy(t, p, threshold=1.5)
    with pytest.raises(
        ValueError, match=r"The 'n_bins' parameter of expected_calibration_error must be an int >= 1\. Got 0"
    ):
        expected_calibration_error(t, p, n_bins=0)
    with pytest.raises(ValueError, match=r"The 'propensity' values must lie in \[0, 1\]"):
        brier_score(t, p + 1)
    with pytest.raises(ValueError, match=r"The 'true_propensity' values must lie strictly between 0 and 1"):
        iptw_weight_mse(t, p, np.zeros_like(p))
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples"):
        spearman(p, p[:-1])
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples"):
        arbour_dimmery_interval(t, units["y"], p, units["p"][:-1])
    with pytest.raises(ValueError, match=r"has only one class"):
        treatment_accuracy(np.ones_like(t), p)
    with pytest.raises(ValueError, match=r"'propensity' contains NaN"):
        spearman(np.r_[np.nan, p[1:]], p)
    with pytest.raises(ValueError, match=r"The 'true_ate' parameter of bias must be a float"):
        bias(0.3, float("nan"))
    ad = ADInterval(low=-1.0, high=1.0, b0=0.5, b1=0.5, y0_hat=0.0, y1_hat=0.0)
    with pytest.raises(
        ValueError, match=r"The 'ci_high' parameter of interval_narrower_than_ad must be a float >= 0\.2"
    ):
        interval_narrower_than_ad(0.2, 0.1, ad)


# --- hostile input: a finite metric or one ValueError, never NaN, inf or a raw exception -----------


def test_iptw_weight_mse_stays_finite_when_inverse_weights_overflow():
    # 1 / 5e-324 overflows to inf and the normalised weights became NaN; they are at most 1, so the
    # metric is well defined: here the estimated weights put everything on unit 0
    t = np.array([1, 0, 1, 0])
    p_hat = np.array([5e-324, 0.5, 0.5, 0.5])
    p = np.full(4, 0.5)
    value = iptw_weight_mse(t, p_hat, p)
    assert np.isfinite(value) and value == pytest.approx((1 - 0.25) ** 2 + 3 * 0.25**2, abs=1e-15)
    assert iptw_weight_mse(t, p, p_hat) == value  # symmetric in the two propensities


def test_ad_interval_refuses_exploding_weights_and_huge_outcomes():
    t = np.array([1, 0, 1, 0])
    y = np.array([1.0, 0.0, 1.0, 0.5])
    p = np.full(4, 0.5)
    with pytest.raises(
        ValueError,
        match=r"The 'true_propensity' values of arbour_dimmery_interval give 1 unit an "
        r"inverse-probability weight above 1e\+08.*clip the propensities explicitly",
    ):
        arbour_dimmery_interval(t, y, p, np.array([5e-324, 0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match=r"The 'propensity' values of arbour_dimmery_interval give 1 unit"):
        arbour_dimmery_interval(t, y, np.array([0.5, 1 - 1e-16, 0.5, 0.5]), p)
    with pytest.raises(ValueError, match=r"The 'y' values of arbour_dimmery_interval must have magnitude <= 1e\+100"):
        arbour_dimmery_interval(t, np.array([1e308, -1e308, 1e308, 1.0]), p, p)


def test_bias_that_overflows_is_refused():
    with pytest.raises(ValueError, match=r"The bias 1e\+308 - -1e\+308 overflows float64"):
        bias(1e308, -1e308)


def test_interval_widths_that_overflow_compare_correctly():
    wide = ADInterval(low=-1e308, high=1e308, b0=1e308, b1=1e308, y0_hat=0.0, y1_hat=0.0)
    assert interval_narrower_than_ad(-1e308, 0.9e308, wide)  # widths 1.9e308 < 2e308, both overflow
    assert not interval_narrower_than_ad(-1e308, 1e308, wide)
    with pytest.raises(ValueError, match=r"The 'ad.high' parameter of interval_narrower_than_ad must be a float"):
        interval_narrower_than_ad(0.0, 1.0, ADInterval(low=0.0, high=float("inf"), b0=0, b1=0, y0_hat=0, y1_hat=0))


def test_ece_with_absurdly_many_bins_is_refused_not_allocated(units):
    with pytest.raises(
        ValueError,
        match=r"The 'n_bins' parameter of expected_calibration_error must be an int in the "
        r"range \[1, 1000000\]\. Got 1000000000000 instead\.",
    ):
        expected_calibration_error(units["t"], units["p_hat"], n_bins=10**12)


def test_accuracy_interval_validates_its_inputs(units):
    from textcause.metrics.classification import accuracy_interval

    t, p = units["t"], units["p_hat"]
    lo, hi = accuracy_interval(t, p, n_boot=50)
    assert 0 <= lo <= treatment_accuracy(t, p) <= hi <= 1
    assert accuracy_interval(np.ones(4), np.full(4, 0.9), n_boot=10) == (1.0, 1.0)  # one class: defined
    assert accuracy_interval(t, p, n_boot=0) == (None, None) and accuracy_interval([], [], n_boot=10) == (None, None)
    with pytest.raises(ValueError, match=r"'propensity' contains NaN"):  # NaN counted as a wrong prediction before
        accuracy_interval(t, np.r_[np.nan, p[1:]], n_boot=10)
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples"):
        accuracy_interval(t, p[:-1], n_boot=10)
    with pytest.raises(ValueError, match=r"The treatment 't' must be binary"):
        accuracy_interval(t * 2, p, n_boot=10)
    with pytest.raises(
        ValueError, match=r"The 'level' parameter of accuracy_interval must be a float > 0\.0 and < 1\.0"
    ):
        accuracy_interval(t, p, n_boot=10, level=1.0)


def test_thresholds_too_large_for_a_float_are_refused(units):
    with pytest.raises(ValueError, match=r"The 'threshold' parameter of treatment_accuracy must be a float"):
        treatment_accuracy(units["t"], units["p_hat"], threshold=10**400)
