"""Lists of estimators elsewhere are derived from the registry: a newly registered one appears."""

from __future__ import annotations

from textcause.estimators import registry
from textcause.estimators.registry import adjusted_estimators
from textcause.estimators.weighting import ipw
from textcause.experiments.observational import _progress
from textcause.reports.figures import estimator_columns


def test_adjusted_estimators_are_the_labelled_ones_but_unadjusted_in_display_order():
    assert adjusted_estimators() == ("ipw", "stratified", "matching", "aipw", "tmle")


def test_a_new_estimator_appears_in_the_figures_columns(monkeypatch):
    monkeypatch.setitem(registry.ESTIMATORS, "unlabelled", ipw)
    assert adjusted_estimators()[-1] == "unlabelled"  # registered without a label: last
    monkeypatch.setitem(registry.ESTIMATORS, "newest", ipw)
    monkeypatch.setitem(registry.ESTIMATOR_LABELS, "newest", "Newest")
    assert adjusted_estimators() == ("ipw", "stratified", "matching", "aipw", "tmle", "newest", "unlabelled")
    present = ["unadjusted", "newest", "ipw", "unlabelled", "ipw"]
    assert estimator_columns(present) == [
        ("IPTW bias", "ipw", "bias"),
        ("Newest bias", "newest", "bias"),
        ("unlabelled bias", "unlabelled", "bias"),
    ]


def _row(estimator: str, ate: float) -> dict:
    return {"estimator": estimator, "ate": ate, "ci_low": None, "treatment_accuracy": 0.75}


def test_the_study_line_shows_the_first_default_estimator_with_an_ate(monkeypatch):
    rec = {"status": "ok", "seconds": 1.0, "rows": [_row("unadjusted", 0.5), _row("newest", 0.25), _row("ipw", 0.125)]}
    assert "ipw ATE +0.125" in _progress(1, 1, "m", rec, "done", 1.0)
    monkeypatch.setattr(registry, "DEFAULT_ESTIMATORS", ("newest", *registry.DEFAULT_ESTIMATORS))
    assert "newest ATE +0.250" in _progress(1, 1, "m", rec, "done", 1.0)
    only_unadjusted = {**rec, "rows": [_row("unadjusted", 0.5)]}
    assert "unadjusted ATE +0.500" in _progress(1, 1, "m", only_unadjusted, "done", 1.0)
