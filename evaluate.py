#!/usr/bin/env python
"""Evaluate a trained run: test-split propensities -> ATE estimates, intervals, bias, metrics.

    python evaluate.py runs/textcause/version_0
    python evaluate.py runs/textcause/version_0 --n_boot 2000 --out results/

Writes ``results.json`` (all rows and the run's provenance) into the run folder and appends one CSV
row per estimator to ``results.csv`` in ``--out`` (default: the run folder), then prints a table.
"""

import sys

from textcause import startup
from textcause.cli.errors import friendly_errors
from textcause.cli.evaluate import main

if __name__ == "__main__":
    startup.quick_exit()
    if not {"-h", "--help"} & set(sys.argv[1:]):
        startup.preload("textcause.run.lightning_cli")  # what evaluating a run loads, without the collector's passes
    sys.exit(friendly_errors(lambda: main(sys.argv[1:])))
