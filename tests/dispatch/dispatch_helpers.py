"""Helpers for dispatch tests: trial servers whose launcher dies, and a loopback Ray cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

# A launcher: starts one server through ServerProcess (as run_trial does in a Ray worker),
# prints what it started, then waits to be killed.
LAUNCHER = """
import json, os, sys, time
from pathlib import Path
from autotune.node.process import ServerProcess
env = {**os.environ, **json.loads(sys.argv[3])}
proc = ServerProcess([sys.executable, "-c", sys.argv[1]], env, Path(sys.argv[2]))
proc.start()
print(json.dumps({"pid": proc.pid, "token": proc.token, "entry": str(proc.entry)}), flush=True)
time.sleep(600)
"""

# A server that dies on SIGTERM.
POLITE = "import time; print('up', flush=True); time.sleep(600)"

# A server that ignores SIGTERM and leaves a grandchild in a session of its own (it escapes
# the process group; only its inherited token finds it).
STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(
    [sys.executable, "-c",
     "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
    start_new_session=True,
)
print("grandchild", child.pid, flush=True)
time.sleep(600)
"""


def launch(
    code: str, log: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """Start a launcher process; returns it and what it says it started."""
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, code, str(log), json.dumps(env or {})],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    assert launcher.stdout is not None
    line = launcher.stdout.readline()
    assert line, "the launcher died before starting its server"
    return launcher, json.loads(line)


def wait_for(predicate: Any, limit_s: float, what: str) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {limit_s:g} s waiting for {what}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def grandchild_pid(log: Path) -> int | None:
    """The grandchild PID a STUBBORN server logged, once it has."""
    if not log.exists():
        return None
    for line in log.read_text().splitlines():
        if line.startswith("grandchild "):
            return int(line.split()[1])
    return None
