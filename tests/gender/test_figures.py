"""Figure 2's title (never clipped, the untrained-head warning) and band (the fit's, drawn as computed)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from textcause.gender.stats import probe_stats
from textcause.reports.gender import probe_figure, short_name

from .test_stats import YEARS, made_up_scores

matplotlib.use("Agg")
LONG = "/home/someone/experiments/2026/masked-gender/models/pretrained/" + "deep/" * 12 + "bert-large-uncased-wwm"


@pytest.fixture(scope="module")
def curves():
    return probe_stats(made_up_scores(YEARS, scatter=0.01), n_boot=0)


def title_inside(fig) -> bool:
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    width, height = fig.canvas.get_width_height()
    return box.x0 >= 0 and box.x1 <= width and box.y1 <= height


def test_a_long_model_path_is_shortened_and_the_title_stays_inside_the_figure(curves):
    assert short_name(LONG) == ".../bert-large-uncased-wwm" or short_name(LONG).endswith("/bert-large-uncased-wwm")
    assert len(short_name(LONG)) <= 48 and short_name("bert-base-uncased") == "bert-base-uncased"
    assert short_name("runs/gender/finetune/version_3/checkpoints/best-epoch=0.ckpt") == "finetune-version_3"
    fig = probe_figure(curves, LONG)
    title = fig._suptitle.get_text()
    assert LONG not in title and "bert-large-uncased-wwm" in title
    assert title_inside(fig)
    assert not title_inside_without_wrapping(curves)  # the check can fail: an unwrapped long title is clipped


def title_inside_without_wrapping(curves) -> bool:
    fig = probe_figure(curves, "m")
    fig.suptitle(LONG + ": " + fig._suptitle.get_text().replace("\n", " "), fontsize=9)
    return title_inside(fig)


def test_the_untrained_head_warning_is_in_the_title(curves):
    warned = probe_figure(curves, "bert-tiny", untrained=2)._suptitle.get_text()
    assert warned.startswith("WARNING: untrained masked-LM head (2 weights newly initialised)")
    assert "noise" in warned.replace("\n", " ")
    assert "WARNING" not in probe_figure(curves, "bert-tiny")._suptitle.get_text()


def test_the_shaded_band_is_the_fits_band(curves):
    fig = probe_figure(curves, "m")
    ax = fig.axes[0]
    c = next(c for c in curves if c.gender == "female" and c.x_kind == "index")
    verts = ax.collections[0].get_paths()[0].vertices  # the female band: fill_between's polygon
    at = np.array([c.x.min(), c.x.max()])
    lo, hi = c.band(at)
    for x, low, high in zip(at, lo, hi):
        ys = verts[np.isclose(verts[:, 0], x), 1]
        assert ys.min() == pytest.approx(low) and ys.max() == pytest.approx(high)
    assert "confidence band of the least-squares line" in fig._suptitle.get_text().replace("\n", " ")
