"""Trial servers outlive a launcher killed with SIGKILL: the kernel guard and the reaper.

Real processes throughout: a launcher process starts a server through ``ServerProcess`` (as
``run_trial`` does inside a Ray worker) and is then SIGKILLed, as Ray kills a worker whose
driver died or whose raylet is gone.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from dispatch_helpers import POLITE, STUBBORN, alive, grandchild_pid, launch, wait_for

from autotune.node.process import (
    DRIVER_ENV,
    STUDY_KEY_ENV,
    NodeState,
    ServerProcess,
    reap_orphans,
    registered_servers,
)


def test_a_server_is_on_record_while_it_runs_and_off_it_after_teardown(tmp_path: Path) -> None:
    proc = ServerProcess([sys.executable, "-c", POLITE], dict(os.environ), tmp_path / "s.log")
    proc.start()
    try:
        records = registered_servers()
        assert [r["pid"] for r in records] == [proc.pid]
        assert records[0]["owner_pid"] == os.getpid()
        assert records[0]["token"] == proc.token
    finally:
        report = proc.teardown(2.0)
    assert report.processes_left == 0
    assert registered_servers() == []


def test_a_server_gets_sigterm_when_its_launcher_is_killed(tmp_path: Path) -> None:
    launcher, info = launch(POLITE, tmp_path / "s.log")
    assert alive(info["pid"])
    launcher.kill()
    launcher.wait(timeout=10)
    wait_for(lambda: not alive(info["pid"]), 10, "the server to die with its launcher")
    # Its record stays (nobody tore it down): the reaper drops it, with nothing to kill.
    reaped = reap_orphans()
    assert [(r["pid"], r["killed"], r["left"]) for r in reaped] == [(info["pid"], [], [])]
    assert registered_servers() == []


def test_the_reaper_kills_an_orphan_and_its_escaped_grandchild(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    launcher, info = launch(STUBBORN, log)
    grandchild = wait_for(lambda: grandchild_pid(log), 10, "the grandchild to start")
    launcher.kill()
    launcher.wait(timeout=10)
    # SIGTERM from the kernel is ignored: the server and its grandchild live on.
    assert alive(info["pid"]) and alive(grandchild)
    assert os.getsid(grandchild) == grandchild != os.getsid(info["pid"])  # left the group

    reaped = reap_orphans(grace_s=0.3)
    assert len(reaped) == 1
    assert set(reaped[0]["killed"]) == {info["pid"], grandchild}
    assert reaped[0]["left"] == []
    assert not alive(info["pid"]) and not alive(grandchild)
    assert registered_servers() == []


def test_every_trial_start_reaps_first(tmp_path: Path, node_state: Path) -> None:
    """``run_trial`` begins with ``NodeState().check``: an orphan is gone before launch."""
    log = tmp_path / "s.log"
    launcher, info = launch(STUBBORN, log)
    wait_for(lambda: grandchild_pid(log), 10, "the server to ignore SIGTERM")
    launcher.kill()
    launcher.wait(timeout=10)
    assert alive(info["pid"])
    assert NodeState(node_state).check(0) is None
    assert not alive(info["pid"])
    assert registered_servers() == []


def test_the_reaper_spares_live_launchers_and_takes_a_stale_driver_run(tmp_path: Path) -> None:
    env = {**os.environ, STUDY_KEY_ENV: "study-a", DRIVER_ENV: "host:1:1.0"}
    proc = ServerProcess([sys.executable, "-c", POLITE], env, tmp_path / "s.log")
    proc.start()
    try:
        assert reap_orphans() == []  # its launcher (this process) is alive
        assert reap_orphans(study_key="study-b", driver="host:2:2.0") == []  # another study
        assert reap_orphans(study_key="study-a", driver="host:1:1.0") == []  # this driver run
        assert alive(proc.pid)
        # The same study resumed by a new driver run: the old run's server is an orphan.
        reaped = reap_orphans(study_key="study-a", driver="host:2:2.0", grace_s=2.0)
        assert [r["killed"] for r in reaped] == [[proc.pid]]
        assert not alive(proc.pid)
    finally:
        if alive(proc.pid):
            os.kill(proc.pid, signal.SIGKILL)
        proc.teardown(1.0)
