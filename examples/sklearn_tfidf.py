"""A scikit-learn TF-IDF + logistic regression pipeline as a propensity method, on the real Twitter corpus.

    python examples/sklearn_tfidf.py                  # prints the table (about 2 minutes on 2 cores)
    python examples/sklearn_tfidf.py --db results.db  # also stores the rows: textcause report --db results.db

Any scikit-learn classifier or Pipeline that maps a document to T works: textcause joins each user's
posts into one document, fits the pipeline on the training users, predicts P(T=1) for the test users
and runs its estimators (IPTW, stratification, matching) and propensity metrics on the predictions.
"""

from __future__ import annotations

import argparse
import time

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import textcause
from textcause.methods import SklearnPropensity

TASKS = {"linguistic_complexity": [1, 3], "placebo": [1]}
SEEDS = [0, 1]


def make_method() -> SklearnPropensity:
    """TF-IDF of unigrams and bigrams used by at least 5 training users, then an L2 logistic regression."""
    pipe = make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), min_df=5, max_features=100_000, sublinear_tf=True),
        LogisticRegression(C=10.0, max_iter=2000),
    )
    return SklearnPropensity(pipe, name="tfidf_lr")


def show(table) -> None:
    """Bias of each estimator per task level and seed, with the treatment accuracy of the propensities."""
    ok = table[table["status"] == "ok"]
    bias = ok.pivot_table(index=["task", "level", "seed"], columns="estimator", values="bias", sort=False)
    bias["accuracy"] = ok.groupby(["task", "level", "seed"], sort=False)["treatment_accuracy"].first()
    print("bias = estimate - true ATE (true ATE 0.4, placebo 0); accuracy of P(T=1) on the test users")
    print(bias.round(3).to_string())
    failed = table[table["status"] != "ok"].drop_duplicates("cell_id")
    for row in failed.itertuples():
        print(f"failed: {row.cell_id}: {row.error}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=None, help="also write the rows to this results database")
    args = parser.parse_args()
    started = time.perf_counter()
    table = textcause.evaluate(make_method(), corpus="twitter", tasks=TASKS, seeds=SEEDS, n_boot=1000, db=args.db)
    show(table)
    print(f"{table['cell_id'].nunique()} cells in {time.perf_counter() - started:.0f} s")
