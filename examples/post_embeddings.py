"""A propensity method on cached post embeddings: pool each user's post vectors, then logistic regression.

    python examples/post_embeddings.py                  # prints the table (about 30 seconds on 2 cores)
    python examples/post_embeddings.py --db results.db  # also stores the rows: textcause report --db results.db

With ``representation = "post_embeddings"`` a method receives, for each user, a float32 array of shape
(n_posts, 384): every post encoded by the frozen all-MiniLM-L6-v2 encoder. The vectors come from
textcause's embedding cache (``~/.cache/textcause/embeddings``), computed once per corpus and shared with
the built-in hierarchical models; posts not yet cached are encoded first (about 150 posts/s on 2 cores).
"""

from __future__ import annotations

import numpy as np
from example_main import main, show_bias
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


class PooledEmbeddingLogit:
    """Mean and max of a user's post vectors (768 numbers), standardised, then a logistic regression.

    The max keeps a single unusual post visible, such as a post inserted by the task's edit.
    """

    name = "pooled_minilm_lr"
    representation = "post_embeddings"

    def __init__(self, C: float = 0.1) -> None:
        self.C = C

    @staticmethod
    def pool(X) -> np.ndarray:
        return np.stack([np.concatenate([posts.mean(axis=0), posts.max(axis=0)]) for posts in X])

    def fit(self, X, t):
        self.model_ = make_pipeline(StandardScaler(), LogisticRegression(C=self.C, max_iter=2000))
        self.model_.fit(self.pool(X), t)
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(self.pool(X))[:, 1]


if __name__ == "__main__":
    main(PooledEmbeddingLogit(), show_bias, __doc__)
