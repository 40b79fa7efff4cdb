"""Watch a starting server: tail its log, notice fatal lines and exit, poll its health.

A :class:`LogWatcher` thread reads the log as it is written, records milestones and stops
everything as soon as a fatal rule matches or the process exits; a :class:`HealthPoller`
thread asks ``/health`` until it answers 200 (and, after readiness, notices when it stops
answering). :func:`wait_ready` combines both under the startup limit.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from autotune.models import Milestone, Phase, Rule

_logger = logging.getLogger(__name__)

_ORDER = list(Phase)
MAX_LINES = 50_000  # log lines kept in memory for classification
# With a ready pattern, /health alone counts as ready after this long: a quieter log level can
# hide the ready line, and a healthy server must not time out for it.
READY_LINE_GRACE_S = 10.0


@dataclass(frozen=True)
class FatalHit:
    """A fatal rule matched a log line."""

    rule: Rule
    line: str
    phase: Phase
    at: float  # time.monotonic() when seen


class LogWatcher(threading.Thread):
    """Tail ``path`` while the process runs; record milestones, fatal lines and exit.

    Args:
        path: the log file the server writes.
        poll_exit: returns the process's exit code, or None while it runs.
        rules: failure rules; those with ``fatal`` end the trial when they match.
        milestones: startup progress patterns.
        ready_pattern: a line that says the server is up, if the engine has one.
        wake: set whenever something happens that the waiting thread must look at.
    """

    def __init__(
        self,
        path: Path,
        poll_exit: Callable[[], int | None],
        rules: Sequence[Rule],
        milestones: Sequence[Milestone],
        ready_pattern: str | None,
        wake: threading.Event,
    ) -> None:
        super().__init__(name="autotune-log", daemon=True)
        self.path = path
        self._poll_exit = poll_exit
        self._fatal_rules = [(r, re.compile(r.pattern)) for r in rules if r.fatal]
        self._milestones = [(m, re.compile(m.pattern)) for m in milestones]
        self._ready = re.compile(ready_pattern) if ready_pattern else None
        self.wake = wake
        self._lock = threading.Lock()
        self._lines: deque[str] = deque(maxlen=MAX_LINES)
        self._halt = threading.Event()
        self.phase = Phase.LAUNCH
        self.labels: list[str] = []
        self.last_milestone: Milestone | None = None
        self.fatal: FatalHit | None = None
        self.ready_line = False
        self.exit_code: int | None = None
        self.exited = threading.Event()

    def advance(self, phase: Phase) -> None:
        """Move to a later phase (never back)."""
        with self._lock:
            if _ORDER.index(phase) > _ORDER.index(self.phase):
                self.phase = phase
                # Beside the log, for a progress view on the same host (best effort).
                with contextlib.suppress(OSError):  # a read-only log folder: no progress note
                    self.path.with_suffix(".phase").write_text(phase.value)

    def lines(self) -> list[str]:
        """The lines read so far (the last MAX_LINES of them)."""
        with self._lock:
            return list(self._lines)

    def stop(self) -> None:
        """Read what is left and end the thread."""
        self._halt.set()
        self.join(timeout=5)

    def run(self) -> None:
        buffer = b""
        while not self.path.exists() and not self._halt.wait(0.02):
            pass
        try:
            handle = open(self.path, "rb")
        except OSError:  # not written yet: next poll
            return
        with handle:
            while True:
                stopping = self._halt.is_set()
                data = handle.read(1 << 16)
                if data:
                    buffer += data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                    *complete, buffer = buffer.split(b"\n")
                    for raw in complete:
                        self._line(raw)
                    continue
                if self.exit_code is None:
                    code = self._poll_exit()
                    if code is not None:
                        # One more read: the last lines may have landed after our read.
                        rest = handle.read()
                        buffer += rest.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                        *complete, buffer = buffer.split(b"\n")
                        for raw in complete:
                            self._line(raw)
                        self.exit_code = code
                        self.exited.set()
                        self.wake.set()
                if stopping:
                    break
                self._halt.wait(0.05)
        if buffer:
            self._line(buffer)

    def _line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace")
        if not line.strip():
            return
        with self._lock:
            self._lines.append(line)
        for milestone, regex in self._milestones:
            if milestone.label not in self.labels and regex.search(line):
                self.labels.append(milestone.label)
                self.last_milestone = milestone
                self.advance(milestone.phase)
                _logger.debug("%s: milestone %s", self.path.name, milestone.label)
        if self._ready is not None and not self.ready_line and self._ready.search(line):
            self.ready_line = True
            self.wake.set()
        if self.fatal is None:
            for rule, regex in self._fatal_rules:
                if regex.search(line):
                    self.fatal = FatalHit(rule, line, rule.phase or self.phase, time.monotonic())
                    _logger.info("%s: fatal line (rule %s): %s", self.path.name, rule.id, line)
                    self.wake.set()
                    break


class HealthPoller(threading.Thread):
    """Poll ``url`` until stopped; ``ok`` once it answered 200, ``lost`` after repeated failures.

    Args:
        url: the health endpoint.
        wake: set when readiness is reached or health is lost.
        interval_s: seconds between polls before readiness.
        timeout_s: timeout of one poll.
        lost_after: consecutive failures after readiness that count as health lost.
        ready_interval_s: seconds between polls after readiness (lighter on a loaded server).
    """

    def __init__(
        self,
        url: str,
        wake: threading.Event,
        *,
        interval_s: float = 0.25,
        timeout_s: float = 2.0,
        lost_after: int = 3,
        ready_interval_s: float = 2.0,
    ) -> None:
        super().__init__(name="autotune-health", daemon=True)
        self.url = url
        self.wake = wake
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.lost_after = lost_after
        self.ready_interval_s = ready_interval_s
        self.ok = threading.Event()
        self.ok_since: float | None = None  # time.monotonic() of the first 200
        self.lost = threading.Event()
        self.last_status: str = "no answer yet"
        self._halt = threading.Event()

    def stop(self) -> None:
        """End polling."""
        self._halt.set()
        self.join(timeout=self.timeout_s + 1)

    def run(self) -> None:
        failures = 0
        with httpx.Client(timeout=self.timeout_s, trust_env=False) as client:
            while not self._halt.is_set():
                try:
                    status = client.get(self.url).status_code
                    self.last_status = f"HTTP {status}"
                    healthy = status == 200
                except httpx.HTTPError as exc:
                    self.last_status = type(exc).__name__
                    healthy = False
                if healthy:
                    failures = 0
                    if not self.ok.is_set():
                        self.ok_since = time.monotonic()
                        self.ok.set()
                        self.wake.set()
                elif self.ok.is_set():
                    failures += 1
                    if failures >= self.lost_after and not self.lost.is_set():
                        self.lost.set()
                        self.wake.set()
                interval = self.ready_interval_s if self.ok.is_set() else self.interval_s
                self._halt.wait(interval)


@dataclass(frozen=True)
class Readiness:
    """How waiting for readiness ended: ``ready``, ``fatal``, ``exited`` or ``timeout``."""

    state: str
    seconds: float


def wait_ready(
    watcher: LogWatcher,
    health: HealthPoller,
    *,
    limit_s: float,
    need_ready_line: bool,
    ready_line_grace_s: float = READY_LINE_GRACE_S,
) -> Readiness:
    """Block until the server is ready, logs a fatal line, exits, or ``limit_s`` passes.

    Ready means ``/health`` answered 200 and, when ``need_ready_line``, the ready line was
    logged (or ``ready_line_grace_s`` passed since the first 200).
    """
    start = time.monotonic()
    deadline = start + limit_s
    while True:
        watcher.wake.clear()
        if watcher.fatal is not None:
            return Readiness("fatal", time.monotonic() - start)
        if watcher.exited.is_set():
            return Readiness("exited", time.monotonic() - start)
        if health.ok.is_set():
            since = health.ok_since or time.monotonic()
            waited = time.monotonic() - since >= ready_line_grace_s
            if watcher.ready_line or not need_ready_line or waited:
                return Readiness("ready", time.monotonic() - start)
        left = deadline - time.monotonic()
        if left <= 0:
            return Readiness("timeout", time.monotonic() - start)
        watcher.wake.wait(min(left, 0.1))


def describe_progress(watcher: LogWatcher) -> str:
    """One phrase naming the last milestone reached, for timeout messages."""
    milestone = watcher.last_milestone
    if milestone is None:
        return "no startup milestone reached"
    return f"last milestone reached: {milestone.label!r} (phase {milestone.phase.value})"
