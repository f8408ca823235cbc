"""The argument lists that the command-line tests give ``train.py fit`` (``make_cli``), and a light ``--help``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: The configs shipped with the package (model configs under model/).
CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def fit_args(config: str | os.PathLike[str], corpus: str, *options: str) -> list[str]:
    """``fit --config CONFIGS/model/<config> --data.corpus <corpus>`` and then ``options``."""
    return ["fit", "--config", str(CONFIGS / "model" / config), "--data.corpus", corpus, *options]


def quiet_trainer(root: str | os.PathLike[str], name: str | None = None) -> list[str]:
    """Trainer options that write under ``root`` only, with no progress bar and either a CSV logger
    named ``name`` under ``root`` or, for None, no logger at all."""
    if name is None:
        logger = "false"
    else:
        logger = json.dumps(
            {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": str(root), "name": name}}
        )
    return [
        "--trainer.default_root_dir",
        str(root),
        "--trainer.logger",
        logger,
        "--trainer.enable_progress_bar",
        "false",
    ]


def light_help(command: list[str], *heavy: str) -> str:
    """The output of ``textcause <command> --help``, run in a fresh interpreter that must not have
    imported any of the ``heavy`` modules by the end (the test fails otherwise)."""
    code = (
        "import sys\nfrom textcause.cli.main import main\n"
        f"try:\n    main({[*command, '--help']!r})\nexcept SystemExit:\n    pass\n"
        f"assert not [m for m in {list(heavy)!r} if m in sys.modules], 'heavy import'\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout
