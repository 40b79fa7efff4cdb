"""Classify a failed trial from its log: cause, phase, evidence, blame and a hint that is right.

Rules are tried in order (most specific first); the first rule with a matching line wins.
When no rule matches, the exit code and the last Python traceback decide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from autotune.models import Cause, Failure, Milestone, Phase, Rule

MAX_LINE = 300  # characters of one evidence line
CONTEXT = 2  # lines of context around the first match
MAX_EVIDENCE = 12
TAIL = 40  # lines of log tail kept in a Failure

KILLED_HINT = (
    "The server was killed with SIGKILL. SGLang SIGKILLs itself when a child process fails, so "
    "look above in the log for the real error (the scheduler's traceback). If there is none, "
    "the host's OOM killer may have ended it: check `dmesg` and host memory."
)
TRACEBACK_HINT = "No rule recognises this error; read the traceback in the log."

_TRACEBACK = "Traceback (most recent call last):"
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)(?::.*)?$")
_ARGPARSE = re.compile(r"(?:^|\s)error: (?:argument |the following arguments|unrecognized|invalid)")
_LOG_PREFIX = re.compile(r"^\s*\[[^\]]{4,60}\]\s*")

# Generic progress lines, used when a log is diagnosed without the engine's milestones.
GENERIC_MILESTONES: tuple[Milestone, ...] = (
    Milestone(
        phase=Phase.LOAD, pattern=r"Load weight begin|Loading weights|Loading model", label="load"
    ),
    Milestone(phase=Phase.MEMORY_POOL, pattern=r"Load weight end|Memory pool|KV Cache", label="kv"),
    Milestone(
        phase=Phase.GRAPH_CAPTURE,
        pattern=r"Capture cuda graph begin|Capturing CUDA graph",
        label="graphs",
    ),
    Milestone(
        phase=Phase.READY,
        pattern=r"fired up and ready to roll|Application startup complete|Uvicorn running on",
        label="ready",
    ),
)


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _trim(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def blamed(names: Iterable[str], argv: Sequence[str], env: dict[str, str]) -> list[str]:
    """The ``names`` present in the launch: a flag in ``argv`` or a variable in ``env``."""
    out = []
    for name in names:
        if name.startswith("-"):
            present = any(arg == name or arg.startswith(name + "=") for arg in argv)
        else:
            present = name in env
        if present:
            out.append(name)
    return out


def first_match(lines: Sequence[str], rules: Sequence[Rule]) -> tuple[Rule, list[int]] | None:
    """The first rule (in rule order) with a matching line, and the indices of its matches."""
    for rule in rules:
        regex = _compile(rule.pattern)
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if hits:
            return rule, hits
    return None


def _evidence(lines: Sequence[str], hits: Sequence[int]) -> list[str]:
    first = hits[0]
    keep = set(range(max(0, first - CONTEXT), min(len(lines), first + CONTEXT + 1)))
    keep.update(hits[:MAX_EVIDENCE])
    chosen = sorted(keep)[:MAX_EVIDENCE]
    return [_trim(lines[i]) for i in chosen if lines[i].strip()]


def _message(line: str) -> str:
    return _trim(_LOG_PREFIX.sub("", line).strip())


def _exception_after(lines: Sequence[str], start: int, limit: int = 300) -> int | None:
    """Index of the first exception line at or after ``start`` (the end of its traceback)."""
    for i in range(start, min(len(lines), start + limit)):
        text = _LOG_PREFIX.sub("", lines[i])
        if text and not text[0].isspace() and _EXC_LINE.match(text.strip()):
            return i
    return None


def _last_exception(lines: Sequence[str]) -> int | None:
    """Index of the exception line that ends the last traceback in ``lines``."""
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if _TRACEBACK in lines[i]:
            start = i
            break
    if start is None:
        return None
    return _exception_after(lines, start + 1, limit=len(lines))


def classify(
    lines: Sequence[str],
    rules: Sequence[Rule],
    *,
    phase: Phase,
    exit_code: int | None,
    argv: Sequence[str],
    env: dict[str, str],
) -> Failure:
    """Decide why a trial failed.

    Args:
        lines: the server log (or its tail).
        rules: failure rules, most specific first.
        phase: the phase the trial had reached; used when the rule names none.
        exit_code: the server's exit code (negative: killed by that signal), None if running.
        argv: the launch command, for blame.
        env: the launch environment (the spec's, not the whole node's), for blame.

    Returns:
        A Failure; cause ``unknown`` when nothing recognisable was found.
    """
    tail = [_trim(line) for line in lines[-TAIL:]]
    found = first_match(lines, rules)
    if found is not None:
        rule, hits = found
        message = _message(lines[hits[0]])
        if lines[hits[0]][:1].isspace():
            # A traceback frame matched: the exception that ends the traceback says what.
            exc_after = _exception_after(lines, hits[0])
            if exc_after is not None:
                message = _message(lines[exc_after])
        if rule.cause == Cause.UNKNOWN:
            # A catch-all line ("Scheduler hit an exception") says only that something failed;
            # the traceback's last line says what.
            exc = _last_exception(lines)
            if exc is not None:
                message = _message(lines[exc])
        return Failure(
            cause=rule.cause,
            phase=rule.phase or phase,
            hint=rule.hint,
            evidence=_evidence(lines, hits),
            rule=rule.id,
            permanent=rule.permanent,
            blame=blamed(rule.blame, argv, env),
            exit_code=exit_code,
            log_tail=tail,
            message=message,
        )
    if exit_code == 2:
        for i, line in enumerate(lines):
            if _ARGPARSE.search(line):
                return Failure(
                    cause=Cause.INVALID_ARGUMENT,
                    phase=Phase.LAUNCH,
                    hint="The command line was rejected; check the flag names and values "
                    "against this engine version's --help.",
                    evidence=_evidence(lines, [i]),
                    exit_code=exit_code,
                    log_tail=tail,
                    message=_message(line),
                )
    exc = _last_exception(lines)
    if exit_code in (-9, 137):
        evidence = _evidence(lines, [exc]) if exc is not None else tail[-5:]
        return Failure(
            cause=Cause.KILLED,
            phase=phase,
            hint=KILLED_HINT,
            evidence=evidence,
            exit_code=exit_code,
            log_tail=tail,
            message=_message(lines[exc]) if exc is not None else "killed by SIGKILL",
        )
    if exc is not None:
        return Failure(
            cause=Cause.UNKNOWN,
            phase=phase,
            hint=TRACEBACK_HINT,
            evidence=_evidence(lines, [exc]),
            exit_code=exit_code,
            log_tail=tail,
            message=_message(lines[exc]),
        )
    message = "no rule matched" if exit_code is None else f"exited with code {exit_code}"
    return Failure(
        cause=Cause.UNKNOWN,
        phase=phase,
        hint="No rule recognises this failure; read the log tail.",
        evidence=tail[-5:],
        exit_code=exit_code,
        log_tail=tail,
        message=message,
    )


def phase_reached(lines: Iterable[str], milestones: Sequence[Milestone]) -> tuple[Phase, list[str]]:
    """The furthest phase the milestones show, and the labels reached in order."""
    order = list(Phase)
    reached = Phase.LAUNCH
    labels: list[str] = []
    compiled = [(m, _compile(m.pattern)) for m in milestones]
    for line in lines:
        for milestone, regex in compiled:
            if milestone.label not in labels and regex.search(line):
                labels.append(milestone.label)
                if order.index(milestone.phase) > order.index(reached):
                    reached = milestone.phase
    return reached, labels


def diagnose_file(
    path: str,
    rules: list[Rule],
    exit_code: int | None = None,
    *,
    milestones: Sequence[Milestone] | None = None,
    argv: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Failure:
    """Classify a server log file after the fact (``autotune diagnose LOGFILE``).

    Args:
        path: the log file.
        rules: failure rules, most specific first (e.g. ``load_rules("sglang")``).
        exit_code: the server's exit code, if known.
        milestones: the engine's startup milestones; generic ones when None.
        argv: the launch command, if known (for blame).
        env: the launch environment, if known (for blame).

    Raises:
        OSError: the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    phase, _ = phase_reached(lines, GENERIC_MILESTONES if milestones is None else milestones)
    return classify(lines, rules, phase=phase, exit_code=exit_code, argv=argv, env=env or {})
