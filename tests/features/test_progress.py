"""Progress bars of the long feature steps: tokenising, LDA's passes, encoding posts.

Shown on stderr when asked (or when stderr is a terminal), never when disabled or when stderr is
not a terminal (grid workers' log files, captured runs); they never change the output.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from sklearn.decomposition import LatentDirichletAllocation

import textcause.progress
from textcause.features import build_representation
from textcause.features.embeddings import PostEmbeddingCache
from textcause.features.ngrams import NgramFeaturizer
from textcause.progress import format_seconds, progress_bar, show_progress

WORDS = "coffee morning train rain music game city park dog cat movie book".split()


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _no_delay(monkeypatch):
    monkeypatch.setattr(textcause.progress, "DELAY", 0.0)  # bars of quick steps would wait this long


@pytest.fixture(scope="module")
def texts() -> list[list[str]]:
    rng = np.random.default_rng(0)
    return [[" ".join(rng.choice(WORDS, size=6)) for _ in range(5)] for _ in range(40)]


def lda(progress):
    return NgramFeaturizer("lda", min_users=2, lda_topics=3, lda_max_iter=4, progress=progress)


def test_bars_when_enabled_none_when_disabled(texts, capsys):
    shown = lda(True)
    x = shown.fit_transform(texts)
    err = capsys.readouterr().err
    assert "tokenising 40 users" in err and "40/40" in err
    assert "fitting LDA (3 topics)" in err and "4/4" in err
    # The fitted LDA is a plain scikit-learn estimator: the counting wrapper is gone.
    assert type(shown.lda_) is LatentDirichletAllocation and "_em_step" not in vars(shown.lda_)
    hidden = lda(False)
    np.testing.assert_array_equal(hidden.fit_transform(texts), x)  # the bar does not change the output
    np.testing.assert_array_equal(hidden.transform(texts), shown.transform(texts))
    assert capsys.readouterr().err.count("40/40") == 1  # one bar: the enabled featurizer's transform


def test_default_shows_bars_on_a_terminal_only(texts, capsys, monkeypatch):
    lda(None).fit_transform(texts)  # pytest's captured stderr is not a terminal
    assert capsys.readouterr().err == ""
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert show_progress(None) and not show_progress(False)
    lda(None).fit_transform(texts)
    assert "fitting LDA" in terminal.getvalue() and "tokenising" in terminal.getvalue()


def test_build_representation_passes_progress(texts, capsys, tmp_path):
    build_representation("bigram_binary", texts, np.arange(30), min_users=2, cache_dir=tmp_path, progress=True)
    assert "tokenising 40 users" in capsys.readouterr().err
    build_representation("bigram_binary", texts, np.arange(30), min_users=2, cache=False, progress=False)
    assert capsys.readouterr().err == ""


def test_quick_steps_print_nothing(capsys, monkeypatch):
    monkeypatch.setattr(textcause.progress, "DELAY", 60.0)
    for _ in progress_bar(range(100), desc="quick", progress=True):
        pass
    assert capsys.readouterr().err == ""
    assert format_seconds(37) == "00:37" and format_seconds(3723) == "1:02:03"


def test_encoding_bar(tiny_encoder, capsys, tmp_path):
    posts = [f"post number {i} about {WORDS[i % len(WORDS)]}" for i in range(20)]
    PostEmbeddingCache(tiny_encoder, precision="fp32", cache_dir=tmp_path / "a", progress=True).embed(posts)
    err = capsys.readouterr().err
    assert "encoding with" in err and "20/20" in err
    PostEmbeddingCache(tiny_encoder, precision="fp32", cache_dir=tmp_path / "b", progress=False).embed(posts)
    assert "encoding" not in capsys.readouterr().err


def _on_a_terminal(code: str, columns: int, rows: int) -> str:
    """What ``code`` (run in a new process with stderr on a pseudo-terminal of this size) writes there."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import subprocess
    import termios
    from pathlib import Path

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code], stderr=slave, stdout=subprocess.DEVNULL, cwd=Path(__file__).parents[2]
        )
        os.close(slave)
        out = b""
        while True:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # the process ended and closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=30) == 0, out
    finally:
        os.close(master)
    return out.decode("utf-8", "replace")


@pytest.mark.parametrize(("columns", "rows"), [(0, 0), (100, 30)])
def test_a_terminal_that_reports_no_size_still_shows_the_bar(columns, rows):
    # A pseudo-terminal opened by a program (`script`, an IDE's console, an automation tool) reports
    # 0 x 0: tqdm then drew nothing at all, while Lightning's bars (rich: 80 columns) showed.
    code = (
        "import textcause.progress as p\n"
        "p.DELAY = 0\n"
        "bar = p.progress_bar(total=4, desc='encoding with tiny', unit='post')\n"
        "for _ in range(4):\n"
        "    bar.update(1)\n"
        "bar.close()\n"
    )
    shown = _on_a_terminal(code, columns, rows)
    assert "encoding with tiny" in shown and "4/4" in shown and "post/s" in shown


def test_a_cold_encode_shows_its_bar_and_eta_before_the_first_batch(tiny_encoder, tmp_path, monkeypatch):
    """The bar of a cold encode (inside `train.py fit`: the data build) appears while the encoder loads."""
    import time

    from textcause.features.encoder import Encoder

    real = Encoder._choose_precision

    def slow(self, *args):  # the weights load and the precision probe take a while on a real encoder
        time.sleep(0.3)
        return real(self, *args)

    monkeypatch.setattr(Encoder, "_choose_precision", slow)
    monkeypatch.setattr(textcause.progress, "DELAY", 0.1)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    posts = [f"post number {i} about {WORDS[i % len(WORDS)]}" for i in range(20)]
    PostEmbeddingCache(tiny_encoder, cache_dir=tmp_path, processes=1).embed(posts)  # progress=None: a terminal
    shown = terminal.getvalue()
    assert f"encoding with {tiny_encoder}:   0%" in shown and "0/20 [00:00<?" in shown  # before the first batch
    assert "20/20 [00:00<00:00" in shown  # done, with its ETA
