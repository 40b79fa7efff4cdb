"""Must-deliver 1 of issue 51: a failed run is never answered ``ok``.

A log whose server became ready and then shows a failure in any of the shapes a process or
its logger reports one (an error-level line in any logger's dress, a kill signal in words, a
non-zero exit status, an abort) gets a cause, at worst ``unknown``; a ready log with none of
them stays ``ok``.
"""

from __future__ import annotations

import pytest

from autotune.diagnosis import diagnose_text
from autotune.models import Cause

READY = "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"


@pytest.mark.parametrize(
    "tail",
    [
        # an error level in brackets, alone or after a time stamp
        "[CRITICAL] engine stopped",
        "2024-01-01 12:00:00 [FATAL] engine stopped",
        "[ERR] scheduler died",
        # a kill signal in words
        "worker received signal 9",
        "Worker exited: signal 9",
        "terminated by signal SIGKILL",
        "child killed by signal 6",
        # a non-zero exit status in words
        "process 123 exited with status 1",
        "Process exited with return code 1",
        "subprocess returned non-zero exit status 1",
        "Main process exited, code=exited, status=1/FAILURE",
        "engine exit status 2",
        # an abort, a C library's report, a compiler-style fatal error, a thread's exception
        "Aborted",
        "*** Error in `python3': free(): invalid pointer: 0x00007f",
        "fatal error: too many open files",
        "Exception in thread Thread-3:",
    ],
)
def test_a_failure_after_ready_is_never_ok(tail: str) -> None:
    failure = diagnose_text(READY + tail + "\n").failure
    assert failure is not None, tail


@pytest.mark.parametrize(
    "tail",
    [
        'INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 200 OK',
        "exit code 0",
        "process exited with status 0",
        "[INFO] request served",
        "signal handlers installed",
    ],
)
def test_a_ready_log_without_a_failure_stays_ok(tail: str) -> None:
    assert diagnose_text(READY + tail + "\n").failure is None


@pytest.mark.usefixtures("rules_alone")
@pytest.mark.parametrize(
    "stamp",
    [
        "2024-07-01 07:28:04.488 1 kserve",  # Python logging: time, pid, logger, level
        "2024-07-01 07:28:04,488 model_server",  # time, logger, level
    ],
)
def test_an_error_level_after_a_pid_or_a_logger_is_the_failure_not_a_hang(stamp: str) -> None:
    text = (
        f"{stamp} INFO [__main__.py:<module>():250] Loading model\n"
        f"{stamp} ERROR [__main__.py:<module>():254] Failed to start model server: "
        "integer division or modulo by zero\n"
    )
    failure = diagnose_text(text).failure
    assert failure is not None
    assert failure.cause != Cause.STARTUP_TIMEOUT
    assert "Failed to start model server" in failure.message
