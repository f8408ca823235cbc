"""``python -m textcause``: the ``textcause`` command (:mod:`textcause.cli.main`)."""

import sys

from textcause.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
