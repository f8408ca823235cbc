"""Entry points: ``train.py``, ``evaluate.py`` and the ``textcause`` command with its subcommands.

Nothing here is imported by the rooms below; importing this package is cheap (no torch or
Lightning), so ``textcause --help`` answers at once.
"""

__all__: list[str] = []
