"""The ``autotune`` command line: ``main`` is the entry point (``autotune = autotune.cli:main``).

app.py       the application, logging, and ``main``: every error as one line and an exit code
options.py   the options, grouped in typed objects shared by the commands that take them
start.py status.py export.py report.py sync.py validate.py diagnose.py: one command each
studies.py   finding and opening the study a command names
output.py    the answer's lines and the files left beside a study; progress.py the live view
"""

# Each command registers itself on the app as it is imported: this is the order of --help.
# isort: off
from autotune.cli import start, status, export, report, sync, validate, diagnose  # noqa: F401

# isort: on
from autotune.cli.app import main

__all__ = ["main"]
