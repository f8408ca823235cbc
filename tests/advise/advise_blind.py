"""A propensity method blind to the text (and so to the inserted posts): the training share of treated users."""

from __future__ import annotations

import numpy as np


class Blind:
    """P(T=1 | X) = the training users' treated share, for every user: no adjustment at all."""

    name = "blind"

    def fit(self, X, t):
        self.share = float(np.mean(t))
        return self

    def predict_proba(self, X):
        return np.full(len(X), self.share)
