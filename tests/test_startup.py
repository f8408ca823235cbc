"""textcause.startup: imports with the collector paused and frozen after, a collection then a freeze at exit."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pytest

from textcause import startup


@pytest.fixture
def unfreeze():
    yield
    gc.unfreeze()  # what a test froze goes back to the collector: this process is pytest's, not an entry point's


def test_imports_pauses_the_collector_then_freezes_and_restores_it(unfreeze):
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with startup.imports():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)


def test_imports_restores_the_collector_when_the_block_raises(unfreeze):
    with pytest.raises(ImportError), startup.imports():
        import textcause_no_such_module  # noqa: F401
    assert gc.isenabled()


def test_imports_leaves_a_paused_collector_paused(unfreeze):
    gc.disable()
    try:
        with startup.imports():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_preload_imports_the_modules(tmp_path, monkeypatch, unfreeze):
    (tmp_path / "textcause_preload_probe.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "textcause_preload_probe", raising=False)
    startup.preload("textcause_preload_probe")
    assert sys.modules["textcause_preload_probe"].LOADED
    assert gc.isenabled()


def test_quick_exit_still_finalises_garbage_cycles_and_registers_once(tmp_path):
    """The handler collects before it freezes: a cycle's finalizer still runs at exit."""
    marker = tmp_path / "finalised"
    code = textwrap.dedent(
        f"""
        import atexit, gc
        from textcause import startup
        gc.disable()  # the cycle below is left to the exit handler's collection
        before = atexit._ncallbacks()
        startup.quick_exit()
        startup.quick_exit()
        assert atexit._ncallbacks() == before + 1, atexit._ncallbacks()

        class Node:
            def __del__(self):
                open({str(marker)!r}, "w").write("done")

        a, b = Node(), Node()
        a.other, b.other = b, a
        del a, b
        gc.enable()
        gc.set_threshold(0)  # no automatic collection before exit
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "done"


def _record(monkeypatch):
    from textcause.cli import main as cli_main

    calls: list[tuple] = []
    monkeypatch.setattr(cli_main.startup, "quick_exit", lambda: calls.append(("quick_exit",)))
    monkeypatch.setattr(cli_main.startup, "preload", lambda *m: calls.append(("preload", *m)))
    return cli_main, calls


def test_the_command_preloads_lightning_only_as_its_own_process(monkeypatch, tmp_path):
    cli_main, calls = _record(monkeypatch)
    missing = str(tmp_path / "no_run")
    monkeypatch.setattr(sys, "argv", ["textcause", "evaluate", missing])
    assert cli_main.main() != 0  # a missing run folder: a friendly error, after the start-up steps
    assert calls == [("quick_exit",), ("preload", "textcause.run.lightning_cli")]

    calls.clear()
    monkeypatch.setattr(sys, "argv", ["textcause", "evaluate", "--help"])
    with pytest.raises(SystemExit):
        cli_main.main()
    assert calls == [("quick_exit",)]  # --help stays light

    calls.clear()
    assert cli_main.main(["evaluate", missing]) != 0  # called in-process (a test, a notebook): nothing
    assert calls == []


def test_the_entry_points_and_a_history_read_import_neither_pandas_nor_sklearn(tmp_path):
    # pandas and scikit-learn cost a train.py process about a third of a second to import
    # (benchmarks/bench_startup.py); only table corpora, feature fitting and reports need them.
    corpus = tmp_path / "histories.jsonl"
    corpus.write_text('{"user_id": "a", "posts": ["one post"]}\n{"user_id": "b", "posts": ["another"]}\n')
    code = textwrap.dedent(
        f"""
        import sys
        import textcause.run.lightning_cli, textcause.grid.cell, textcause.cli.main
        from textcause.corpus import load_histories
        assert len(load_histories({str(corpus)!r}, min_posts=1)) == 2
        print(sorted(m for m in ("pandas", "sklearn") if m in sys.modules))
        from textcause.features.ngrams import NgramFeaturizer
        try:
            NgramFeaturizer().get_feature_names_out()
        except Exception as e:
            print(type(e).__module__, type(e).__name__)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "sklearn.exceptions NotFittedError"  # still scikit-learn's own class, imported when raised
