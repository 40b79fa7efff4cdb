"""Log lines the way SGLang writes them: ``[2026-11-29 10:00:00 TP0] message``."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import TextIO

# The first line the stand-in server writes: everything that follows is simulated.
BANNER = "autotune.sim: SIMULATED SGLang server, figures are modelled, not measured"
SRT = "/sgl-workspace/sglang/python/sglang/srt"
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}


class SglangLog:
    """Writes timestamped lines to a stream (stderr by default), thread-safe and unbuffered.

    Args:
        level: SGLang's ``--log-level``; lines below it are dropped (errors always pass).
    """

    def __init__(self, level: str = "info", stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.level = LEVELS.get(level.lower(), 20)
        self._lock = threading.Lock()

    def _write(self, text: str) -> None:
        with self._lock:
            self.stream.write(text if text.endswith("\n") else text + "\n")
            self.stream.flush()

    def line(self, message: str, *, rank: str | None = None, level: str = "info") -> None:
        """One log line; ``rank`` is the scheduler prefix (``TP0``), None for the main process."""
        if LEVELS.get(level, 20) < self.level:
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        prefix = f"{stamp} {rank}" if rank else stamp
        lines = message.split("\n")
        self._write("\n".join([f"[{prefix}] {lines[0]}", *lines[1:]]))

    def raw(self, text: str) -> None:
        """Text without a prefix (tracebacks' continuation, NCCL's own lines)."""
        self._write(text)

    def sigquit_and_die(self) -> None:
        """SGLang's end when a scheduler fails: the parent logs the child's SIGQUIT, then
        SIGKILLs its tree and itself (no clean exit, no streams left hanging)."""
        self.line(
            "Received sigquit from a child process. It usually means the child failed.",
            level="error",
        )
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def frame(path: str, line: int, func: str, code: str) -> str:
    """One traceback frame in Python's format."""
    return f'  File "{path}", line {line}, in {func}\n    {code}'


def scheduler_frames() -> list[str]:
    """The frames every scheduler start-up failure shares."""
    return [
        frame(
            f"{SRT}/managers/scheduler.py", 2912, "run_scheduler_process", "scheduler = Scheduler("
        ),
        frame(f"{SRT}/managers/scheduler.py", 318, "__init__", "self.tp_worker = TpWorkerClass("),
        frame(f"{SRT}/managers/tp_worker.py", 94, "__init__", "self.model_runner = ModelRunner("),
        frame(
            f"{SRT}/model_executor/model_runner.py",
            262,
            "__init__",
            "self.initialize(min_per_gpu_memory)",
        ),
    ]


def traceback_text(
    frames: list[str], error: str, *, cause: tuple[list[str], str] | None = None
) -> str:
    """A Python traceback; ``cause`` is an exception raised while handling another."""
    parts: list[str] = []
    if cause is not None:
        c_frames, c_error = cause
        parts += ["Traceback (most recent call last):", *c_frames, c_error, ""]
        parts += ["During handling of the above exception, another exception occurred:", ""]
    parts += ["Traceback (most recent call last):", *frames, error]
    return "\n".join(parts)
