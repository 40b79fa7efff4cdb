"""The ``autotune`` command line."""

from autotune.cli.app import main

__all__ = ["main"]
