"""A log that stops with no error: told to stop, hung, ended by a supervisor, or dumped.

When neither a rule nor an error line explains a log, where and how it stops says why: a
SIGTERM (a teardown, not a crash), every thread's stack dumped (a hang, a watchdog's), a wait
that never ended, requests that stopped generating tokens, a warning that an extension would
not load or that memory is short, a node lost, a failed health check and the supervisor's
kill, no device found, a subsystem's set-up that never finished.
"""

from __future__ import annotations

import re

from autotune.models import Cause, Phase
from autotune.node.failures.clients import _SERVED
from autotune.node.failures.log import HEAD, MILESTONE_HEAD, _last_line, _last_lines, _Log
from autotune.node.failures.phases import _STARTUP, phase_in_block
from autotune.node.failures.traces import _FRAME
from autotune.node.families import names

_METRICS = re.compile(
    r"Avg generation throughput: [\d.]+ tokens/s|gen throughput \(token/s\): [\d.]+"
)
_STALLED = re.compile(
    r"Avg generation throughput: 0\.0+ tokens/s, Running: [1-9]|"
    r"#running-req: [1-9]\d*.*gen throughput \(token/s\): 0\.0+\b"
)

# A process told to stop: SIGTERM by name or number, as engines report it while shutting down.
_TERMINATED = re.compile(
    r"exit code -15\b|exitcode=-15\b|signal 15\b|\bSIGTERM\b|signum=15\b|"
    r"received signal SIGTERM|Received signal 15"
)

# The interpreter's report as it shuts down (multiprocessing's resource tracker): the program
# ended; with no error before it, it was stopped from outside (a start-up limit), not crashed.
_SHUTDOWN = re.compile(r"resource_tracker: There appear to be \d+ leaked|to clean up at shutdown")

# The header of one thread's stack in a dump (Python's faulthandler, py-spy's), and the
# report of a fatal signal
_THREAD_DUMP = re.compile(
    r"^(?:Current )?[Tt]hread 0x[0-9a-fA-F]+ \(most recent call first\):|"
    r"^Thread (?:0x[0-9a-fA-F]+|\d+) \((?:idle|active)(?:\+gil)?\): \""
)
_FATAL_PYTHON = re.compile(r"Fatal Python error")


def _hang_dump(log: _Log) -> int | None:
    """The first thread's header, when the log dumps threads' stacks and no fatal error."""
    dump = next((i for i, text in enumerate(log.text) if _THREAD_DUMP.match(text.strip())), None)
    if dump is None or any(_FATAL_PYTHON.search(text) for text in log.text):
        return None
    return dump


_WATCHDOG_FRAME = re.compile(r"\bin \w*[Ww]atch_?[Dd]og\w*\s*$")


def _dumped_by_watchdog(log: _Log) -> bool:
    """Whether the thread that wrote the dump (the first in it: faulthandler's current thread,
    or the stack an excerpt begins inside) runs a watchdog: the watchdog gave up waiting."""
    dump = next((i for i, text in enumerate(log.text) if _THREAD_DUMP.match(text.strip())), None)
    if dump is None:
        return False
    lead = [t for t in log.text[:dump] if _FRAME.match(t)]
    if not lead:
        nxt = next(
            (
                i
                for i in range(dump + 1, len(log.text))
                if not log.text[i].strip() or _THREAD_DUMP.match(log.text[i].strip())
            ),
            len(log.text),
        )
        lead = list(log.text[dump + 1 : nxt])
    return any(_WATCHDOG_FRAME.search(t) for t in lead)


def _dump_phase(log: _Log) -> Phase | None:
    """The phase the stacks of a thread dump point to: a start-up phase any thread is in, else
    serving, else loading (as ``phase_in_block`` weighs one traceback's frames)."""
    heads = [i for i, text in enumerate(log.text) if _THREAD_DUMP.match(text.strip())]
    found: set[Phase] = set()
    for i in heads:
        phase = phase_in_block(log.text, i + 1) if i + 1 < len(log.text) else None
        if phase is not None:
            found.add(phase)
    order = list(Phase)
    for phases in (found & set(_STARTUP[1:]), found & {Phase.BENCHMARK}, found & {Phase.LOAD}):
        if phases:
            return max(phases, key=order.index)
    return None


# A step the server waits for, in any engine's words ("Waiting for application startup.",
# "Waiting for shard to be ready", "Waiting for init message from ..."); not an idle loop
# waiting for its next request or connection.
_WAITING = re.compile(
    r"\b[Ww]ait(?:ing)? for\b(?! (?:new |more |the next |incoming )?"
    r"(?:requests?|connections?|clients?|input|jobs?|tasks?|work)\b)"
)


def _waits_at_end(log: _Log) -> int | None:
    """The last line, when it says the server waits for a step (of its start, a shard, a
    worker) and nothing follows: the wait never ended, whatever was ready before it."""
    last = _last_line(log)
    return last if last is not None and _WAITING.search(log.text[last][:HEAD]) else None


def _stalled(log: _Log) -> int | None:
    """The last metrics line, when the last two say requests run and nothing is generated
    (a hang while serving: the engine stopped making progress, no error said why)."""
    metrics = [i for i, text in enumerate(log.text) if _METRICS.search(text)]
    if len(metrics) < 2 or not all(_STALLED.search(log.text[i]) for i in metrics[-2:]):
        return None
    if any(_SERVED.search(text) for text in log.text[metrics[-1] + 1 :]):
        return None
    return metrics[-1]


_WARNED_IMPORT = re.compile(
    r"Failed to import .*(?:undefined symbol|cannot open shared object file|"
    r"No module named|Symbol not found)"
)


def _warned_import(log: _Log) -> int | None:
    """A warning that a compiled extension failed to import, when it is where the log stops
    (only warnings follow it); a program that went on after it was not stopped by it."""
    for i in range(len(log.text) - 1, -1, -1):
        text = log.text[i]
        if _WARNED_IMPORT.search(text[: HEAD * 2]) or names(text, Cause.IMPORT_ERROR):
            return i
        if text.strip() and not log.warning[i]:
            return None
    return None


def _warned_short_of_memory(log: _Log) -> tuple[int, Cause] | None:
    """A warning that memory is short (the host's, the device's, the KV cache's), when it is
    where the log stops (only warnings follow it): a loader that refused at a warning's level
    (Ollama's "model request too large for system"); a program that went on was not stopped."""
    for i in range(len(log.text) - 1, -1, -1):
        text = log.text[i]
        for cause in (Cause.KV_POOL_OOM, Cause.HOST_OOM, Cause.CUDA_OOM):
            if log.warning[i] and names(text, cause):
                return i, cause
        if text.strip() and not log.warning[i]:
            return None
    return None


# A supervisor's words for a health check the server failed (Kubernetes' probes, a proxy's or
# Docker's health check) and for the server it then ended (killed, terminated, restarted).
_HEALTH_FAILED = re.compile(
    r"(?i:\b(?:liveness|readiness|startup|health) ?(?:probe|check)s?\b.{0,60}"
    r"\b(?:failed|failing|error|unhealthy|timed out|timeout)\b|\bunhealthy\b)"
)
_ENDED_BY_SUPERVISOR = re.compile(
    r"(?i:\bfailed (?:liveness|readiness|startup) probe\b|\bwill be restarted\b|"
    r"\brestarting (?:the )?container\b|\bkilling (?:the )?(?:container|process|pod)\b|"
    r"^\s*(?:normal|warning)?\s*killing\b|\bsignal: (?:terminated|killed)\b|"
    r"\b(?:process|container|server) (?:exited|was killed|was terminated|stopped)\b)"
)
SUPERVISOR_HINT = (
    "A supervisor (Kubernetes' liveness probe, a proxy's or Docker's health check) ended the "
    "server because it did not answer its health check in time: the start takes longer than "
    "the check allows. Raise the probe's initial delay or failure threshold (or the proxy's "
    "health-check timeout), or look for what made the start slow or hang."
)


# One subsystem's own set-up output, when a start stops in it: a collective library's INFO
# lines (NCCL, HCCL, RCCL setting up communicators), an engine waiting on its workers through
# shared memory (vLLM's broadcast wait: a worker hangs).
_SET_UP = (
    (Cause.NCCL_ERROR, re.compile(r"\b[NHR]CCL INFO\b")),
    (Cause.WATCHDOG_TIMEOUT, re.compile(r"No available shared memory broadcast block found")),
)


def _stopped_in_set_up(log: _Log) -> tuple[int, Cause] | None:
    """The last line and the family of the subsystem whose set-up output all of the log's last
    three lines are, when it stops there (the hang is in that step); None otherwise. The lines
    as written: a library's name may sit in a prefix ("[HCCL INFO] ...")."""
    last = _last_lines(log, 3)
    for cause, words in _SET_UP:
        if last and all(words.search(log.raw[i][:MILESTONE_HEAD]) for i in last):
            return last[-1], cause
    return None


def _node_lost_at_end(log: _Log) -> int | None:
    """Where the log stops (its last lines), a cluster manager's report that a node failed or
    went away (named decisively): the line; None otherwise."""
    for i in _last_lines(log, 8):
        if names(log.text[i], Cause.NODE_LOST):
            return i
    return None


def _ended_by_supervisor(log: _Log) -> int | None:
    """Where the log stops (its last lines), a supervisor that ended the server after a health
    check it failed: the line of the kill, restart or termination; None otherwise."""
    failed = None
    for i in _last_lines(log, 8):
        text = log.text[i]
        if failed is None and _HEALTH_FAILED.search(text):
            failed = i
        if failed is not None and _ENDED_BY_SUPERVISOR.search(text):
            return i
    return None


# An engine's words for a start that found no accelerator (vLLM: "No platform detected").
_NO_DEVICE = re.compile(r"No platform detected\b")


def _found_no_device(log: _Log) -> int | None:
    """The line where the log stops, when it says the engine found no device to run on."""
    last = _last_line(log)
    return last if last is not None and _NO_DEVICE.search(log.text[last]) else None
