"""``python -m textcause``: the ``textcause`` command (:mod:`textcause.cli.main`)."""

import sys

from textcause.cli.main import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
