"""A scikit-learn TF-IDF + logistic regression pipeline as a propensity method, on the real Twitter corpus.

    python examples/sklearn_tfidf.py                  # prints the table (about 2 minutes on 2 cores)
    python examples/sklearn_tfidf.py --db results.db  # also stores the rows: textcause report --db results.db

Any scikit-learn classifier or Pipeline that maps a document to T works: textcause joins each user's
posts into one document, fits the pipeline on the training users, predicts P(T=1) for the test users
and runs its estimators (IPTW, stratification, matching) and propensity metrics on the predictions.
"""

from __future__ import annotations

from example_main import main, show_bias
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from textcause.methods import SklearnPropensity


def make_method() -> SklearnPropensity:
    """TF-IDF of unigrams and bigrams used by at least 5 training users, then an L2 logistic regression."""
    pipe = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), min_df=5, max_features=100_000, sublinear_tf=True),
        LogisticRegression(C=10.0, max_iter=2000),
    )
    return SklearnPropensity(pipe, name="tfidf_lr")


if __name__ == "__main__":
    main(make_method(), show_bias, __doc__)
