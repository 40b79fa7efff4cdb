"""The running stand-in's scheduler thread: a failure in it ends the server as SGLang's does."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from autotune.sim.args import build_parser, to_launch
from autotune.sim.logs import SglangLog
from autotune.sim.nccl import parse_nccl_env
from autotune.sim.profiles import PCIE_BLACKWELL
from autotune.sim.state import SimState

ns = build_parser().parse_args(["--model-path", "m", "--tp-size", "8"])
state = SimState(to_launch(ns, {}, parse_nccl_env({})), PCIE_BLACKWELL, 1, SglangLog())

def broken(now):
    raise ZeroDivisionError("a bug in the model")

state.scheduler.plan = broken
for _ in state.open("hello", 2, 4, "r1"):
    pass
print("a stream ended without its tokens")
"""


def test_a_failing_scheduler_thread_kills_the_server_instead_of_hanging_streams() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == -9, proc.stdout + proc.stderr
    assert "Scheduler hit an exception: Traceback" in proc.stderr
    assert "ZeroDivisionError: a bug in the model" in proc.stderr
    assert "Received sigquit from a child process" in proc.stderr
    assert "without its tokens" not in proc.stdout
