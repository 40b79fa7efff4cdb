"""A real study driver over a space file whose engine is a ``command`` (the black boxes, the
toy server): the local executor, no tracker; what the search's end-to-end tests run."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def command_driver(space_file: Path, study_dir: Path, **options: Any) -> Any:
    """The ``study.Driver`` over ``space_file`` (``options``: DriverOptions fields; ``study``
    names it)."""
    from autotune.dispatch.local import LocalExecutor
    from autotune.engines import get_engine
    from autotune.space.load import load
    from autotune.study.driver import Driver, DriverOptions
    from autotune.tracking.none import NullTracker

    spec = load(space_file)
    engine = get_engine(spec.engine)
    opts = DriverOptions(study=options.pop("study", "study"), study_dir=study_dir, **options)
    return Driver(
        spec,
        engine=engine,
        real_engine=engine,
        executor=LocalExecutor(0, 1),
        tracker=NullTracker(),
        options=opts,
    )
