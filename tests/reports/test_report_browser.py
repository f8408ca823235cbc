"""The HTML report in a real headless browser: opened alone (no figure files beside it), every figure renders.

Uses Debian's ``chromium`` (``.ci/run`` installs it when missing). Without it the test is skipped
here and fails under CI (``CI=true``), so CI cannot pass it by skipping. A control page whose
figures are linked (``to_html`` without a base folder), copied alone the same way, must fail the
same checks: the checks would catch a report that depends on files beside it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from textcause.analysis.simulated import simulate_results
from textcause.reports.report import build_report, write_report

#: A browser (several processes) and about 10 s: ``make check`` leaves it out, CI (``make test``) runs it.
pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
#: Appended to a copy of the page: after load, the title lists each image's (complete, natural size).
PROBE = """<script>
window.addEventListener("load", function () {
  var r = Array.prototype.map.call(document.images, function (i) {
    return [i.complete, i.naturalWidth, i.naturalHeight];
  });
  document.title = "figures:" + JSON.stringify(r);
});
</script>"""
#: matplotlib's first colour (the markers of the first model): pixels of it mean a figure was drawn.
TAB_BLUE = np.array([0x1F, 0x77, 0xB4])


@pytest.fixture(scope="module")
def browser() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs it (apt-get install -y chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium); the browser check is skipped")
    return CHROMIUM


def chromium(binary: str, profile: Path, *args: str) -> str:
    """Run headless chromium with a fresh profile; its stdout."""
    profile.mkdir(parents=True)
    done = subprocess.run(
        [binary, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def figures_in_browser(binary: str, page: Path, work: Path) -> list[list]:
    """Open a copy of ``page``, alone in a new folder, with the probe; each image's (complete, width, height)."""
    alone = work / "alone"
    alone.mkdir(parents=True)
    html = page.read_text(encoding="utf-8")
    (alone / "check.html").write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    assert sorted(p.name for p in alone.iterdir()) == ["check.html"]
    dom = chromium(
        binary, work / "profile", "--virtual-time-budget=10000", "--dump-dom", (alone / "check.html").as_uri()
    )
    title = re.search(r"<title>figures:(.*?)</title>", dom)
    assert title is not None, f"the probe did not run: {dom[:300]!r}"
    return json.loads(title.group(1))


def screenshot(binary: str, page: Path, work: Path) -> np.ndarray:
    """A 1280 x 3000 screenshot of a copy of ``page`` alone in a new folder, as an RGB uint8 array."""
    import matplotlib.image as mpimg

    alone = work / "alone"
    alone.mkdir(parents=True)
    shutil.copy(page, alone / "report.html")
    shot = work / "shot.png"
    chromium(
        binary, work / "profile", f"--screenshot={shot}", "--window-size=1280,3000", (alone / "report.html").as_uri()
    )
    rgb = mpimg.imread(shot)[..., :3]
    return np.round(rgb * 255).astype(np.uint8)


def n_blue(rgb: np.ndarray) -> int:
    return int((np.abs(rgb.astype(int) - TAB_BLUE).max(axis=-1) <= 8).sum())


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict[str, Path]:
    """A small report from a tiny results database, and a control page that links its figures."""
    root = tmp_path_factory.mktemp("browser")
    df = simulate_results(
        task_levels={"linguistic_complexity": 1, "placebo": 1}, models=("oracle", "lr_lda"), n_seeds=2, seed=3
    )
    db = root / "results.db"
    with sqlite3.connect(db) as con:
        df.to_sql("results", con, index=False)
    written = write_report(db, root / "report", formats=("png",))
    from textcause.reports.markup import to_html

    (root / "control").mkdir()
    blocks, _ = build_report(df, root / "control", formats=("png",))
    control = root / "control" / "linked.html"
    control.write_text(to_html(blocks, "linked figures"), encoding="utf-8")
    return {"page": written["html"], "control": control, "n_figures": len(written["figures"]), "root": root}


def test_every_figure_renders_from_the_page_alone(browser, report, tmp_path):
    figures = figures_in_browser(browser, report["page"], tmp_path / "page")
    assert len(figures) == report["n_figures"] == 3
    for complete, width, height in figures:
        assert complete and width > 1000 and height > 500  # 150 dpi figures, decoded
    rgb = screenshot(browser, report["page"], tmp_path / "shot")
    assert rgb.shape[:2] == (3000, 1280)
    packed = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    assert len(np.unique(packed)) > 50  # not one uniform colour
    assert n_blue(rgb) > 200  # the figures' markers were painted


def test_the_checks_catch_linked_figures(browser, report, tmp_path):
    figures = figures_in_browser(browser, report["control"], tmp_path / "page")
    assert len(figures) == 3 and all(width == 0 for _, width, _ in figures)
    rgb = screenshot(browser, report["control"], tmp_path / "shot")
    assert n_blue(rgb) < 50  # text and tables only: no marker painted
