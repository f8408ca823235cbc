"""The package's version, in the lowest room so that every room (the CLI's ``--version`` too) can read it."""

__all__ = ["__version__"]

__version__ = "0.1.0"
