#!/usr/bin/env python
"""Train a propensity model on a semi-synthetic task.

    python train.py fit --config configs/model/lr_bigram_binary.yaml
    python train.py fit --config configs/model/lr_bigram_binary.yaml --data.task signal_intensity --data.level 2
    python train.py fit --config configs/model/oracle.yaml --print_config

Then ``python evaluate.py runs/textcause/version_N`` writes the results of that run.
"""

import sys

from textcause import startup

if __name__ == "__main__":
    from textcause.cli.parsing import rewrite_config_args
    from textcause.cli.precheck import early_error

    sys.argv[1:] = rewrite_config_args(sys.argv[1:], "train.py")  # a model config's old place (one release)
    mistake = early_error(sys.argv[1:], prog="train.py")  # before Lightning is imported (seconds)
    if mistake is not None:
        print(f"error: {mistake}", file=sys.stderr)
        sys.exit(2)
    with startup.imports():  # Lightning and torch without the collector's passes over them (textcause.startup)
        from textcause.cli.errors import friendly_errors
        from textcause.cli.parsing import lightning_help_kwargs
        from textcause.run.lightning_cli import make_cli
    startup.quick_exit()
    sys.exit(friendly_errors(lambda: make_cli(**lightning_help_kwargs())))
