"""A real study driver over a space file whose engine is a ``command`` (the black boxes, the
toy server): the local executor, no tracker; what the search's end-to-end tests run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.study.study_helpers import make_driver


def command_driver(space_file: Path, study_dir: Path, **options: Any) -> Any:
    """The ``study.Driver`` over ``space_file`` (``options``: DriverOptions fields; ``study``
    names it)."""
    options.setdefault("study", "study")
    return make_driver(space_file, study_dir, **options)
