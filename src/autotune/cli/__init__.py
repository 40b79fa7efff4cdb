"""The ``autotune`` command line: ``main`` is the entry point (``autotune = autotune.cli:main``).

app.py  the application, its options, logging and the one-line errors
"""

from autotune.cli.app import main

__all__ = ["main"]
