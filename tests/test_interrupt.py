"""Ctrl-C on ``autotune start``: a real process, a real SIGINT, a real server to tear down.

The first Ctrl-C stops launching, kills the running trial's server, records the trial as
interrupted at once (queued again for the resume), prints the command that resumes and
exits 130; a second Ctrl-C forces the exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import psutil
import pytest
import yaml

SCRIPT = Path(sys.executable).with_name("autotune")

# A server that never gets ready: the trial is still launching when Ctrl-C comes. It answers
# --help at once (the command engine's preflight runs it so).
SLEEPER = """\
import os, signal, sys, time
if "--help" in sys.argv:  # the preflight reads the flags, as from a real server
    print("usage: sleeper PIDFILE [--port PORT] [--x X] [--stubborn]")
    sys.exit(0)
open(sys.argv[1], "w").write(str(os.getpid()))
if "--stubborn" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("loading weights...", flush=True)
time.sleep(600)
"""


def _space(tmp_path: Path, stubborn: bool) -> Path:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(SLEEPER)
    command = [sys.executable, str(sleeper), str(tmp_path / "server.pid"), "--port", "{port}"]
    if stubborn:
        command.append("--stubborn")
    space = {
        "name": "ctrlc",
        "engine": {"name": "command", "command": command, "startup_timeout_s": 300},
        "model": "toy",
        "parameters": [{"name": "x", "type": "categorical", "choices": ["a", "b"], "flag": "--x"}],
        "objective": {"metric": "output_tok_s", "direction": "maximize"},
        "workload": {"concurrency": 1, "num_requests": 1, "warmup_requests": 0},
        "budget": {"trials": 3},
    }
    path = tmp_path / "ctrlc.yaml"
    path.write_text(yaml.safe_dump(space))
    return path


def _start(tmp_path: Path, stubborn: bool = False) -> tuple[subprocess.Popen[str], list[str]]:
    argv = [
        str(SCRIPT),
        "start",
        "--space",
        str(_space(tmp_path, stubborn)),
        "--executor",
        "local",
        "--no-mlflow",
        "-q",
    ]
    proc = subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    pid_file = tmp_path / "server.pid"
    deadline = time.monotonic() + 120
    while not pid_file.exists() or not pid_file.read_text():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the trial never launched"
        time.sleep(0.2)
    return proc, argv


def _server_gone(tmp_path: Path) -> bool:
    pid = int((tmp_path / "server.pid").read_text())
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_ctrl_c_stops_records_interrupted_and_says_how_to_resume(tmp_path: Path) -> None:
    proc, argv = _start(tmp_path)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "Resume with: autotune start --space" in err and "--no-mlflow" in err
    assert _server_gone(tmp_path)
    study = optuna.load_study(
        study_name="ctrlc", storage=f"sqlite:///{tmp_path / 'studies' / 'ctrlc' / 'study.db'}"
    )
    trials = study.get_trials(deepcopy=False)
    first = trials[0]
    assert first.state == optuna.trial.TrialState.FAIL
    assert first.user_attrs["outcome"] == "interrupted"
    # Its configuration is queued again, so the resume runs it first.
    assert [t.user_attrs.get("retry_of") for t in trials[1:]] == [0]
    assert trials[1].state == optuna.trial.TrialState.WAITING


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX signals")
def test_a_second_ctrl_c_forces(tmp_path: Path) -> None:
    proc, _argv = _start(tmp_path, stubborn=True)  # ignores SIGTERM: teardown would wait
    proc.send_signal(signal.SIGINT)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "forced" in err and "Traceback" not in err
    deadline = time.monotonic() + 30
    while not _server_gone(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _server_gone(tmp_path)
