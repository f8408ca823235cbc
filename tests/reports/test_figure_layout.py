"""Figure layout: no t intervals from a handful of seeds, accuracy kept in [0, 1], shared y axes
within a row, a compact layout for many models."""

from __future__ import annotations

import pytest

from textcause.analysis.inference import seed_summary
from textcause.analysis.simulated import simulate_results
from textcause.reports.figures import grid_figure, panel_points, resolve_interval

TASKS = {"linguistic_complexity": 2}


def _summary(n_seeds, models=("oracle", "lr_bigram_binary", "sherbert")):
    return seed_summary(simulate_results(task_levels=TASKS, models=models, n_seeds=n_seeds, seed=3))


@pytest.mark.parametrize(("n_seeds", "expected"), [(1, "bootstrap"), (2, "bootstrap"), (4, "bootstrap"), (5, "seeds")])
def test_auto_intervals_need_five_seeds(n_seeds, expected):
    assert resolve_interval(_summary(n_seeds), "auto") == expected


def test_accuracy_intervals_and_axes_stay_in_the_unit_interval():
    summary = _summary(2)
    pts = panel_points(summary, "linguistic_complexity", None, "treatment_accuracy", "seeds")
    assert pts["lo"].notna().all()
    assert (pts["lo"] >= 0).all() and (pts["hi"] <= 1).all()
    fig = grid_figure(summary, ["linguistic_complexity"], [("acc", None, "treatment_accuracy")], interval="seeds")
    assert fig.axes[0].get_ylim() == (0.0, 1.0)


def test_panels_of_one_metric_in_a_row_share_their_y_range():
    summary = _summary(5)
    cols = [("IPTW", "ipw", "bias"), ("Stratified", "stratified", "bias"), ("Matching", "matching", "bias")]
    fig = grid_figure(summary, ["linguistic_complexity"], cols)
    limits = {ax.get_ylim() for ax in fig.axes[:3]}
    assert len(limits) == 1


def test_compact_layout_is_smaller():
    summary = _summary(1)
    cols = [("acc", None, "treatment_accuracy")]
    wide = grid_figure(summary, ["linguistic_complexity"], cols)
    small = grid_figure(summary, ["linguistic_complexity"], cols, compact=True)
    assert small.get_figwidth() < wide.get_figwidth() and small.get_figheight() < wide.get_figheight()


def test_a_figure_saved_twice_gives_the_same_bytes(tmp_path):
    """A report regenerated from unchanged results leaves its committed figures unchanged: no date in
    the SVG, ids salted by the file's stem rather than drawn at random."""
    from textcause.reports.figures import save_figure

    summary = _summary(5)

    def draw(out):
        fig = grid_figure(summary, ["linguistic_complexity"], [("acc", None, "treatment_accuracy")], interval="seeds")
        return save_figure(fig, out, "fig", formats=("png", "svg"))

    first, second = draw(tmp_path / "a"), draw(tmp_path / "b")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert b"<dc:date>" not in first[1].read_bytes()
