"""A user-written effect method: cross-fitted AIPW (doubly robust) on TF-IDF features, with its own interval.

    python examples/doubly_robust.py                  # prints the table (about 2 minutes on 2 cores)
    python examples/doubly_robust.py --db results.db  # also stores the rows: textcause report --db results.db

An effect method receives every user the task keeps (their posts, treatments and outcomes) and returns
an ATE, here with a 95% interval. textcause reports its bias against the task's true ATE, whether the
interval covers it, and, on the placebo task, whether it makes a false discovery. It never sees the
truth, and nothing in it is textcause-specific: ``estimate`` takes plain lists and numpy arrays.
"""

from __future__ import annotations

import numpy as np
from example_main import main, print_failures
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from textcause.methods import EffectResult


def _prob(X_fit, target, X_new, C):
    """P(target = 1 | X) from a logistic regression (the observed share if ``target`` has one class)."""
    if np.unique(target).size < 2:
        return np.full(X_new.shape[0], float(np.mean(target)))
    return LogisticRegression(C=C, max_iter=2000).fit(X_fit, target).predict_proba(X_new)[:, 1]


class CrossFitAIPW:
    """AIPW with K-fold cross-fitting: propensity and outcome models are fitted on the other folds.

    psi_i = mu1(x_i) - mu0(x_i) + t_i (y_i - mu1(x_i)) / e(x_i) - (1 - t_i) (y_i - mu0(x_i)) / (1 - e(x_i)),
    ATE = mean(psi), 95% interval = ATE +- 1.96 sd(psi) / sqrt(n) (binary outcomes).
    """

    name = "aipw_tfidf"
    estimator = "aipw_crossfit"  # the label of its rows ("aipw" is textcause's own estimator)

    def __init__(self, n_folds: int = 2, clip: float = 0.01, C: float = 10.0, seed: int = 0) -> None:
        self.n_folds, self.clip, self.C, self.seed = n_folds, clip, C, seed

    def estimate(self, X, t, y):
        docs = np.array(["\n".join(posts) for posts in X], dtype=object)
        folds = np.random.default_rng(self.seed).permutation(len(docs)) % self.n_folds
        psi = np.empty(len(docs))
        for k in range(self.n_folds):
            held, fit = folds == k, folds != k
            vec = TfidfVectorizer(min_df=5, max_features=50_000, sublinear_tf=True)
            X_fit, X_held = vec.fit_transform(docs[fit]), vec.transform(docs[held])
            e = np.clip(_prob(X_fit, t[fit], X_held, self.C), self.clip, 1 - self.clip)
            mu0 = _prob(X_fit[t[fit] == 0], y[fit][t[fit] == 0], X_held, self.C)
            mu1 = _prob(X_fit[t[fit] == 1], y[fit][t[fit] == 1], X_held, self.C)
            th, yh = t[held], y[held]
            psi[held] = mu1 - mu0 + th * (yh - mu1) / e - (1 - th) * (yh - mu0) / (1 - e)
        ate, se = psi.mean(), psi.std(ddof=1) / np.sqrt(len(psi))
        return EffectResult(ate, ate - 1.96 * se, ate + 1.96 * se)


def show(table) -> None:
    """Each cell's estimate, interval, bias and coverage, for the naive difference and the method."""
    cols = ["task", "level", "seed", "estimator", "true_ate", "ate", "ci_low", "ci_high", "bias", "covers_truth"]
    print(table.loc[table["status"] == "ok", cols].round(3).to_string(index=False))
    print_failures(table)


if __name__ == "__main__":
    main(CrossFitAIPW(), show, __doc__)
