"""How an entry point reports a user's mistake: one sentence on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any


def friendly_errors(fn: Callable[[], Any]) -> int:
    """Run ``fn``; a user's mistake (bad path, unknown task, ...) prints one sentence, not a traceback."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    try:
        fn()
    except (ValueError, FileNotFoundError) as err:
        if os.environ.get("TEXTCAUSE_DEBUG"):
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
