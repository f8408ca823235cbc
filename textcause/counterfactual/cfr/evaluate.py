"""The CFR evaluation: representations of texts and of their true counterfactuals in, result rows out.

:func:`evaluate_cfr` splits the units (by group: an author is never on both sides), fits on the
training part a classifier Yhat of the label (standardised logistic regression) on the original
representations, Lemberger et al.'s CFR (:mod:`~textcause.counterfactual.cfr.regression`), the LEACE
and oracle erasers of the concept, and a concept probe; then on the test
part it compares Yhat on each intervention of a unit's representation with Yhat on the
representation of the unit's TRUE counterfactual text:

============================= ================================================================
``identity``                  no intervention: the original representation (the baseline to beat)
``erasure``                   the CFR's erasure only: the orthogonal projection r(x) = x - (u.x) u
``cfr``                       Lemberger et al.'s deterministic CFR r(x) + (b_z' + w_z' . r(x)) u
``cfr_stochastic``            the same + Gaussian noise along u, probabilities averaged over draws
``leace_erasure``             LEACE's erased representation r_L(x), no target value
``leace_mean_cfr``            r_L(x) + E[x_par | Z = z'], the class mean of LEACE's concept component
``leace_mean_cfr_stochastic`` r_L(x) + x_par drawn from Z = z' training units, probabilities averaged
``oracle_erasure``            the oracle eraser's OLS residual (needs the unit's Z)
``oracle_cfr``                the oracle CFR x + (z' - z) b
============================= ================================================================

Rows (``section``, ``method``, ``metric``, ``klass``, ``value``, ``lo``, ``hi``):

* ``cfr``: ``pip``, ``atv`` (with percentile bootstrap intervals over test units), their paired
  differences from ``identity`` (``pip_vs_identity``, ``atv_vs_identity``), ``effect_error`` (the mean
  over classes of |effect from the intervention - effect from the true texts|), ``concept_flip``
  (the share of interventions the concept probe trained on original representations reads as z'),
  and per class ``effect`` (E[p(Z=1) - p(Z=0)]); method ``true_text`` holds the true texts'
  ``effect`` and ``concept_flip``;
* ``probe``: the concept probe's held-out ``accuracy`` and ``auc`` before erasure (``none``) and
  after each eraser (``orth``: the CFR's projection, ``leace``, ``oracle``), with the ``majority``
  rate (chance);
* ``tpr``: per class the TPR gap P(Yhat = c | Y = c, Z = 1) - P(Yhat = c | Y = c, Z = 0),
  ``mean_abs_gap`` (unweighted over classes), ``weighted_abs_gap`` (weighted by the classes' test
  shares, as the authors aggregate BiasInBios) and ``accuracy`` of a classifier trained on the
  ``original`` representations, on ``erased`` ones (the CFR's projection), on ``leace_erased``
  ones, on ``cfr_augmented`` ones (each training unit twice: original and its deterministic CFR,
  same label, as the authors augment), on ``leace_mean_cfr_augmented`` ones (the same with
  ``leace_mean_cfr``), and on ``text_augmented`` ones (original and true counterfactual text: the
  reference that CFR augmentation stands in for);
* ``classifier``: Yhat's test ``accuracy``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from textcause.counterfactual.cfr.erasure import ConceptEditor, averaged_proba, fit_editor
from textcause.counterfactual.cfr.metrics import (
    bootstrap_mean,
    concept_effect,
    identical_predictions,
    total_variation,
    tpr_gaps,
    weighted_abs_gap,
)
from textcause.counterfactual.cfr.pairs import CounterfactualPairs
from textcause.counterfactual.cfr.regression import DEFAULT_ALPHA, MLP_BATCH, RegressionCFR, fit_regression_cfr
from textcause.validation import check_consistent_length, check_int, check_real, check_subset

METHODS = (
    "identity",
    "erasure",
    "cfr",
    "cfr_stochastic",
    "leace_erasure",
    "leace_mean_cfr",
    "leace_mean_cfr_stochastic",
    "oracle_erasure",
    "oracle_cfr",
)
AUGMENTATIONS = ("original", "erased", "leace_erased", "cfr_augmented", "leace_mean_cfr_augmented", "text_augmented")
METHOD_LABELS = {
    "identity": "identity (no intervention)",
    "erasure": "orthogonal erasure only (the CFR's)",
    "cfr": "CFR, deterministic (Lemberger et al.)",
    "cfr_stochastic": "CFR, stochastic (Lemberger et al.)",
    "leace_erasure": "LEACE erasure only",
    "leace_mean_cfr": "LEACE + class-mean component",
    "leace_mean_cfr_stochastic": "LEACE + drawn component",
    "oracle_erasure": "oracle erasure only",
    "oracle_cfr": "oracle CFR (mean shift)",
    "true_text": "true counterfactual text",
}


@dataclasses.dataclass(frozen=True)
class CFRSettings:
    """How the evaluation is run.

    Attributes:
        test_fraction: the share of groups (authors) held out for testing.
        seed: the split's, the bootstrap's and the stochastic draws' seed.
        C: the inverse regularisation of the classifier Yhat (on standardised representations).
        probe_C: the concept probe's.
        n_samples: draws per unit of the stochastic CFRs.
        cfr_alpha: the penalty of the CFR's per-class regressions (0: least squares), on the scale of
            the authors' ``MLPRegressor`` (class z's ridge penalty: ``cfr_alpha * n_z / min(cfr_batch, n_z)``).
        cfr_batch: that minibatch size (200, ``MLPRegressor``'s); None: ``cfr_alpha`` is the ridge penalty.
        svd_tol: the erasers' singular-value threshold (``concept-erasure``'s ``svd_tol``).
        n_boot: bootstrap replicates of the intervals (0: none).
        methods: the interventions compared (``identity`` is always among them).
    """

    test_fraction: float = 0.3
    seed: int = 0
    C: float = 1.0
    probe_C: float = 1.0
    n_samples: int = 20
    cfr_alpha: float = DEFAULT_ALPHA
    cfr_batch: int | None = MLP_BATCH
    svd_tol: float = 0.01
    n_boot: int = 200
    methods: tuple[str, ...] = METHODS

    def __post_init__(self) -> None:
        owner = "CFRSettings"
        check_real(self.test_fraction, "test_fraction", owner, low=0.0, high=1.0, low_open=True, high_open=True)
        check_int(self.seed, "seed", owner, low=0)
        check_real(self.C, "C", owner, low=0.0, low_open=True)
        check_real(self.probe_C, "probe_C", owner, low=0.0, low_open=True)
        check_int(self.n_samples, "n_samples", owner, low=1)
        check_real(self.cfr_alpha, "cfr_alpha", owner, low=0.0)
        if self.cfr_batch is not None:
            check_int(self.cfr_batch, "cfr_batch", owner, low=1)
        check_real(self.svd_tol, "svd_tol", owner, low=0.0, low_open=True)
        check_int(self.n_boot, "n_boot", owner, low=0)
        check_subset(self.methods, "methods", owner, METHODS)


@dataclasses.dataclass(frozen=True)
class CFRResult:
    """The rows of one evaluation and what it was run on.

    Attributes:
        rows: the result rows (see the module docstring).
        classes: the label's classes, in the classifier's column order.
        concept_values: (Z = 0, Z = 1).
        info: sizes, timings, the erasers' ranks.
    """

    rows: list[dict[str, Any]]
    classes: list[str]
    concept_values: tuple[str, str]
    info: dict[str, Any]

    def value(self, section: str, method: str, metric: str, klass: str | None = None) -> float:
        """One row's value (KeyError when absent)."""
        for r in self.rows:
            if (r["section"], r["method"], r["metric"], r["klass"]) == (section, method, metric, klass):
                return r["value"]
        raise KeyError((section, method, metric, klass))


#: Features whose training variance is below this are dropped before standardising (sd 1e-6; MiniLM's sd is ~0.05).
MIN_VARIANCE = 1e-12


def make_classifier(C: float, *, tol: float = 1e-6) -> Any:
    """Standardised multinomial logistic regression, near-constant features dropped first.

    MiniLM vectors are small and L2-normalised, and a few of their coordinates can be constant on a
    corpus (three are, on the templates). After erasure such a coordinate holds rounding residue
    (~1e-19) that still follows the concept; standardising would blow it up to unit scale and a
    probe would read the concept from noise, so features with variance below :data:`MIN_VARIANCE`
    are dropped. Standardising and a tight ``tol`` keep lbfgs from stopping early on small values.
    """
    from sklearn.feature_selection import VarianceThreshold
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(
        VarianceThreshold(MIN_VARIANCE), StandardScaler(), LogisticRegression(C=C, max_iter=10_000, tol=tol)
    )


def split_groups(groups: np.ndarray, test_fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Boolean (train, test) masks with every group on one side; at least one group on each side."""
    unique = np.array(sorted(set(groups.tolist())), dtype=object)
    if len(unique) < 2:
        raise ValueError(f"At least 2 groups (authors) are needed to hold some out. Got {len(unique)} instead.")
    order = rng.permutation(len(unique))
    n_test = min(len(unique) - 1, max(1, int(round(test_fraction * len(unique)))))
    test = np.isin(groups, unique[order[:n_test]])
    return ~test, test


def probe_scores(probe: Any, x: np.ndarray, z: np.ndarray) -> dict[str, float]:
    """A fitted concept probe's held-out accuracy and AUC, and the majority rate (chance)."""
    from sklearn.metrics import roc_auc_score

    p = probe.predict_proba(x)[:, 1]
    both = len(np.unique(z)) == 2
    return {
        "accuracy": float(((p >= 0.5).astype(int) == z).mean()),
        "auc": float(roc_auc_score(z, p)) if both else float("nan"),
        "majority": float(max(z.mean(), 1 - z.mean())),
    }


def _interventions(
    methods: Sequence[str],
    x: np.ndarray,
    z: np.ndarray,
    cfr: RegressionCFR,
    leace: ConceptEditor,
    oracle: ConceptEditor,
    clf: Any,
    rng: np.random.Generator,
    n_samples: int,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each method's (probabilities, representation used for the concept probe) on test rows."""
    target = 1 - z
    out = {}
    for m in methods:
        if m in ("cfr_stochastic", "leace_mean_cfr_stochastic"):
            editor = cfr if m == "cfr_stochastic" else leace
            samples = editor.sample_counterfactuals(x, target, rng, n_samples)
            out[m] = (averaged_proba(clf.predict_proba, samples), samples)
            continue
        if m == "identity":
            rep = x
        elif m == "erasure":
            rep = cfr.erase(x)
        elif m == "cfr":
            rep = cfr.counterfactual(x, target)
        elif m == "leace_erasure":
            rep = leace.erase(x)
        elif m == "leace_mean_cfr":
            rep = leace.counterfactual(x, target)
        elif m == "oracle_erasure":
            rep = oracle.erase(x, z)
        else:  # oracle_cfr
            rep = oracle.counterfactual(x, target, z)
        out[m] = (clf.predict_proba(rep), rep)
    return out


def evaluate_cfr(x: Any, x_cf: Any, pairs: CounterfactualPairs, settings: CFRSettings = CFRSettings()) -> CFRResult:
    """Compare interventions on representations with the true counterfactual texts (see the module docstring).

    Args:
        x: (n, d) representations of ``pairs.original``.
        x_cf: (n, d) representations of ``pairs.counterfactual``.
        pairs: the units (concept, label, group).
        settings: the split, the classifier, the draws.

    Raises:
        ValueError: shapes differ, or the training part lacks a concept value or a label class.
    """
    started = time.perf_counter()
    x = np.asarray(x, dtype=np.float64)
    x_cf = np.asarray(x_cf, dtype=np.float64)
    check_consistent_length(x, x_cf, pairs.label)
    if x.shape != x_cf.shape or x.ndim != 2:
        raise ValueError(f"'x' and 'x_cf' must be (n, d) arrays of one shape. Got {x.shape} and {x_cf.shape} instead.")
    methods = tuple(dict.fromkeys(("identity", *settings.methods)))
    rng = np.random.default_rng([settings.seed, 17])
    train, test = split_groups(pairs.group, settings.test_fraction, rng)
    z = pairs.z
    classes = pairs.classes
    index = {c: i for i, c in enumerate(classes)}
    y = np.array([index[c] for c in pairs.label], dtype=np.int64)
    missing = [classes[c] for c in range(len(classes)) if not (y[train] == c).any()]
    if missing or len(np.unique(z[train])) < 2:
        what = f"the label class(es) {missing}" if missing else "one of the concept values"
        raise ValueError(f"The training part has no unit of {what}: use more units or another seed.")
    xt, zt, yt = x[train], z[train], y[train]
    xs, zs, ys, xs_cf = x[test], z[test], y[test], x_cf[test]

    clf = make_classifier(settings.C).fit(xt, yt)
    probe = make_classifier(settings.probe_C, tol=1e-8).fit(xt, zt)
    cfr = fit_regression_cfr(xt, zt, alpha=settings.cfr_alpha, batch_size=settings.cfr_batch)
    leace = fit_editor(xt, zt, method="leace", svd_tol=settings.svd_tol)
    oracle = fit_editor(xt, zt, method="oracle", svd_tol=settings.svd_tol)
    fitted = time.perf_counter()

    rows: list[dict[str, Any]] = []

    def add(section: str, method: str, metric: str, value: float, klass: str | None = None, ci=(np.nan, np.nan)):
        rows.append(
            {
                "section": section,
                "method": method,
                "metric": metric,
                "klass": klass,
                "value": float(value),
                "lo": float(ci[0]),
                "hi": float(ci[1]),
            }
        )

    p_orig = clf.predict_proba(xs)
    p_true = clf.predict_proba(xs_cf)
    add("classifier", "original", "accuracy", float((p_orig.argmax(1) == ys).mean()))
    effect_true = concept_effect(p_orig, p_true, zs)
    for c, e in zip(classes, effect_true):
        add("cfr", "true_text", "effect", e, c)
    target = 1 - zs
    add("cfr", "true_text", "concept_flip", float((probe.predict(xs_cf) == target).mean()))

    boot = np.random.default_rng([settings.seed, 23])
    per_unit: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for m, (p, rep) in _interventions(methods, xs, zs, cfr, leace, oracle, clf, rng, settings.n_samples).items():
        same, tv = identical_predictions(p_true, p), total_variation(p_true, p)
        per_unit[m] = (same, tv)
        add("cfr", m, "pip", same.mean(), ci=bootstrap_mean(same, boot, settings.n_boot))
        add("cfr", m, "atv", tv.mean(), ci=bootstrap_mean(tv, boot, settings.n_boot))
        effect = concept_effect(p_orig, p, zs)
        for c, e in zip(classes, effect):
            add("cfr", m, "effect", e, c)
        add("cfr", m, "effect_error", float(np.abs(effect - effect_true).mean()))
        flips = [probe.predict(r) for r in rep] if rep.ndim == 3 else [probe.predict(rep)]
        add("cfr", m, "concept_flip", float(np.mean([(f == target).mean() for f in flips])))
    base_same, base_tv = per_unit["identity"]
    for m, (same, tv) in per_unit.items():
        if m == "identity":
            continue
        add(
            "cfr",
            m,
            "pip_vs_identity",
            (same - base_same).mean(),
            ci=bootstrap_mean(same - base_same, boot, settings.n_boot),
        )
        add("cfr", m, "atv_vs_identity", (tv - base_tv).mean(), ci=bootstrap_mean(tv - base_tv, boot, settings.n_boot))

    for name, (tr, te) in {
        "none": ((xt, zt), (xs, zs)),
        "orth": ((cfr.erase(xt), zt), (cfr.erase(xs), zs)),
        "leace": ((leace.erase(xt), zt), (leace.erase(xs), zs)),
        "oracle": ((oracle.erase(xt, zt), zt), (oracle.erase(xs, zs), zs)),
    }.items():
        fresh = make_classifier(settings.probe_C, tol=1e-8).fit(*tr)
        for metric, v in probe_scores(fresh, *te).items():
            add("probe", name, metric, v)

    augmented = {
        "original": (xt, yt, xs),
        "erased": (cfr.erase(xt), yt, cfr.erase(xs)),
        "leace_erased": (leace.erase(xt), yt, leace.erase(xs)),
        "cfr_augmented": (np.vstack([xt, cfr.counterfactual(xt, 1 - zt)]), np.concatenate([yt, yt]), xs),
        "leace_mean_cfr_augmented": (
            np.vstack([xt, leace.counterfactual(xt, 1 - zt)]),
            np.concatenate([yt, yt]),
            xs,
        ),
        "text_augmented": (np.vstack([xt, x_cf[train]]), np.concatenate([yt, yt]), xs),
    }
    for name, (x_fit, y_fit, x_eval) in augmented.items():
        model = clf if name == "original" else make_classifier(settings.C).fit(x_fit, y_fit)
        pred = model.predict(x_eval)
        gaps = tpr_gaps(ys, pred, zs, range(len(classes)))
        for c, g in gaps.items():
            add("tpr", name, "gap", g, classes[c])
        add("tpr", name, "mean_abs_gap", float(np.nanmean(np.abs(list(gaps.values())))))
        add("tpr", name, "weighted_abs_gap", weighted_abs_gap(gaps, ys))
        add("tpr", name, "accuracy", float((pred == ys).mean()))

    info = {
        "n_units": int(len(x)),
        "n_train": int(train.sum()),
        "n_test": int(test.sum()),
        "dim": int(x.shape[1]),
        "leace_rank": leace.rank,
        "cfr_noise_sd": [float(v) for v in np.sqrt(cfr.noise_var)],
        "oracle_rank": oracle.rank,
        "fit_seconds": fitted - started,
        "evaluate_seconds": time.perf_counter() - started,
        "share_changed": float(np.mean([a != b for a, b in zip(pairs.original, pairs.counterfactual)])),
        "test_concept_share": float(zs.mean()),
    }
    return CFRResult(rows, list(classes), pairs.concept_values, info)
