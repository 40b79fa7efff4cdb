"""A study of the search benchmark's ``box`` landscape over SQLite, run in its own process by
``test_search_resume.py``: its executor stops answering at one trial (``--block-at``), so the
test can kill the process there, as a driver dies mid-launch."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import yaml
from tests.search.inprocess import InProcessExecutor, in_process_driver
from tests.search.landscapes import by_name

TRIALS = 24


def driver(study_dir: Path, block_at: int = -1, reached: Path | None = None) -> Any:
    """The real driver over ``box`` (noise-free: a value is the same in any process), its
    study in SQLite under ``study_dir``."""
    from autotune.space.load import load_text
    from autotune.study.driver import DriverOptions

    land = by_name("box")
    spec = load_text(yaml.safe_dump(land.space(TRIALS), sort_keys=False), "<box>")

    def evaluate(ts: Any) -> Any:
        if ts.number == block_at:
            assert reached is not None
            reached.write_text(str(ts.number))
            time.sleep(600)  # killed here
        return land.evaluate(dict(ts.params), None)  # type: ignore[arg-type]

    options = DriverOptions(study="resume", study_dir=study_dir, seed=7, confirm=0)
    return in_process_driver(spec, InProcessExecutor(evaluate, 7), options)


if __name__ == "__main__":
    folder, block, flag = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    driver(folder, block, flag).run()
