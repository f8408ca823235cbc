#!/usr/bin/env python
"""A tuned network cell's search, side by side in one fit (textcause.grid.bank) against one fit at a time.

    python benchmarks/bench_bank.py                                   # Twitter SI 1, seed 2, nn_bigram_counts
    python benchmarks/bench_bank.py --model nn_unigram_binary --task linguistic_complexity --level 2
    python benchmarks/bench_bank.py --points 4 --epochs 20            # a quick look

The search is the weld grids' (``configs/benchmark/weld_twitter.yaml``'s ``tune`` block for the
model, 20 points for the n-gram networks) on the cell's task, seed and features, with the grid's
``trainer.max_epochs``. In one process, one thread (as a grid worker runs), the same search is run:

* **one fit at a time** as before this change: each point a lone ``fit_and_evaluate``, with Adam's
  one-tensor-at-a-time loop (torch's CPU default; ``--old-adam`` off to time the foreach Adam alone);
* **the bank**: ``textcause.grid.tuning.select``, i.e. every point in one CandidateBank fit, then the
  chosen point refitted alone (the run the grid evaluates) and checked against the bank.

It prints both times, their ratio, and whether every point's validation loss, and the choice, are
the same to the bit. The features come from the cache (``textcause features`` or a grid run fills it).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[1], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--grid", default=str(ROOT / "configs/benchmark/weld_twitter.yaml"))
    p.add_argument("--corpus", default="twitter")
    p.add_argument("--model", default="nn_bigram_counts")
    p.add_argument("--task", default="signal_intensity")
    p.add_argument("--level", type=int, default=1)
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--points", type=int, default=None, help="the first N points of the search only")
    p.add_argument("--epochs", type=int, default=None, help="max_epochs (default: the grid's)")
    p.add_argument("--new-adam", action="store_true", help="time the lone fits with the foreach Adam too")
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    import textcause.grid.bank as bank_module
    from textcause.grid.spec import load_grid
    from textcause.grid.tuning import _fit_candidate, grid_points, select

    grid = load_grid(args.grid)
    cells = [
        c
        for c in grid.cells
        if c.model == args.model
        and c.corpus == args.corpus
        and c.task == args.task
        and c.level == args.level
        and c.seed == args.seed
    ]
    if not cells:
        print(f"No {args.model} cell on {args.corpus} {args.task} {args.level} seed {args.seed} in {args.grid}.")
        return 2
    cell = cells[0]
    search = cell.search
    points = grid_points(search)
    if args.points:
        points = points[: args.points]
        search = tuple((name, tuple(sorted({p[name] for p in points}, key=repr))) for name, _ in search)
        points = grid_points(search)
    with tempfile.TemporaryDirectory() as tmp:
        settings = cell.run_settings(Path(tmp) / "warm")
        if args.epochs:
            settings = type(settings)(
                configs=settings.configs,
                overrides={**settings.overrides, "trainer.max_epochs": args.epochs},
                run_dir=settings.run_dir,
                evaluation=settings.evaluation,
                quiet=True,
            )
        epochs = settings.overrides.get("trainer.max_epochs")
        print(f"{cell.cell_id}: {len(points)} points, max_epochs {epochs}, 1 thread")
        _fit_candidate(settings, points[0], Path(tmp) / "warm")  # features loaded, kernels probed, once

        original = torch.optim.Adam

        class OneAtATime(original):  # type: ignore[misc, valid-type]
            def __init__(self, params, **kwargs):
                kwargs["foreach"] = False
                super().__init__(params, **kwargs)

        if not args.new_adam:
            torch.optim.Adam = OneAtATime  # type: ignore[misc]
        started = time.perf_counter()
        alone = [_fit_candidate(settings, point, Path(tmp) / "alone" / str(i)) for i, point in enumerate(points)]
        alone_s = time.perf_counter() - started
        torch.optim.Adam = original  # type: ignore[misc]
        scored = [c for c in alone if c.score is not None]
        chosen_alone = min(scored, key=lambda c: c.score)

        calls = []
        real = bank_module.bank_scores

        def counted(*a, **k):
            out = real(*a, **k)
            calls.append(out is not None)
            return out

        bank_module.bank_scores = counted
        started = time.perf_counter()
        best, cands = select(settings, search, Path(tmp) / "bank")
        bank_s = time.perf_counter() - started
        bank_module.bank_scores = real

    banked = {json.dumps(c.params, sort_keys=True): c.score for c in cands}
    same = [a.score == banked.get(json.dumps(a.params, sort_keys=True)) for a in alone]
    print(f"one fit at a time ({'foreach' if args.new_adam else 'one-tensor'} Adam): {alone_s:7.1f} s")
    print(f"bank + the chosen point alone:        {bank_s:7.1f} s   (bank used: {bool(calls and calls[0])})")
    print(f"ratio: {alone_s / bank_s:.2f}x")
    print(
        f"validation losses equal to the bit: {sum(same)}/{len(same)}; same choice: {best.params == chosen_alone.params}"
    )
    print(f"epochs per point: {[c.epochs for c in cands]}")
    return 0 if all(same) and best.params == chosen_alone.params else 1


if __name__ == "__main__":
    raise SystemExit(main())
