"""Resume-safe by construction: a driver killed with SIGKILL mid-launch and resumed proposes,
launch for launch, what an uninterrupted study proposes (every piece of search state is read
from the trials in storage)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.search.resume_child import driver

ROOT = Path(__file__).resolve().parents[2]
KILLED_AT = 13  # a trial of the model's proposals, past the one-at-a-time screen


def launched(study_dir: Path) -> list[dict[str, object]]:
    """The configurations the study launched, in order (the interrupted launch once)."""
    from autotune.study.ledger import Ledger

    d = driver(study_dir)
    trials = Ledger(d.study).trials()
    return [t.config for t in trials if t.launched]


@pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")
def test_a_study_killed_mid_launch_resumes_with_the_proposals_it_would_have_made(
    tmp_path: Path,
) -> None:
    whole = tmp_path / "whole"
    driver(whole).run()

    killed, reached = tmp_path / "killed", tmp_path / "reached"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.search.resume_child",
            str(killed),
            str(KILLED_AT),
            str(reached),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 120
        while not reached.exists():
            assert child.poll() is None, "the study ended before the launch it was to die in"
            assert time.monotonic() < deadline, "the launch to die in never came"
            time.sleep(0.1)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    resumed = driver(killed)
    resumed.run()

    from autotune.models import Outcome
    from autotune.study.ledger import Ledger

    records = Ledger(resumed.study).trials()
    assert [t.number for t in records if t.outcome is Outcome.INTERRUPTED] == [KILLED_AT]
    assert launched(killed) == launched(whole)
