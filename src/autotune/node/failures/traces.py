"""Exceptions, tracebacks and stack dumps in a log, and the message a failure is told by.

When no rule names a cause, the log's structure is read from these: the first exception that
is not an echo of another process's death, the extent of the traceback (or native stack dump)
around a line, whose frames tell the phase (phases.py), and the message of the line a failure
rests on, with a validation error's details and the memory figures an out-of-memory gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from autotune.node.failures.log import _Log, _trim

BLOCK_BEFORE = 80  # lines before a hit searched for the frames that tell the phase
BLOCK_AFTER = 20

_TRACEBACK = "Traceback (most recent call last):"
_EXC_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt|Failure|Failed)"
    r"(?::.*|\(.*)?$"
    r"|^what\(\):\s+\S|^thread '[^']*' panicked at|^Error: \S"
)

# Exceptions that only echo another process's failure: the first fatal event is elsewhere.
_ECHO = re.compile(
    r"EngineDeadError|Engine core initialization failed|Engine process failed to start|"
    r"WorkerProc initialization failed|Initialization failed|ShardCannotStart|"
    r"Engine loop has died|died unexpectedly|CalledProcessError|^SystemExit|KeyboardInterrupt|"
    r"ChildProcessError|RayTaskError|ActorDiedError|Failed core proc|Server error: transport"
)
# A box-drawn traceback's line (Rich), not a table's row of figures (two numeric cells).
_BOX_LINE = r"│(?!.*│\s*[\d,.]+\s*│\s*[\d,.]+\s*│)"
_FRAME = re.compile(
    r'^\s*File "|^\s*File \'|^\s+at |^\s*frame #\d+|^\s*\d+\s+0x[0-9a-fA-F]+ |'
    rf"^{_BOX_LINE}|"
    # native frames: gdb's ("#0  0x... in raise ()"), boost's (" 0# 0x... in tritonserver"),
    # TVM's and Rust's numbered symbols ("  0: rust_begin_unwind"), Go's ("pkg.(*T).f(0xc0)"
    # then "\tpath/file.go:851 +0x375"), Windows' ("00007FFE12AE1DE4 torch_python.dll!f")
    r"^\s*#\d+\s+0x[0-9a-fA-F]+ in |^\s*\d+# |^\s+\d+: [\w:<>~(*&]|"
    r"^\s*\S+\.(?:go|s):\d+ \+0x[0-9a-f]+|^(?:[\w.-]+/)+[\w.]+\.(?:\(\*?\w+\)\.)?\w+\(.*\)$|"
    r"^[0-9A-F]{16}(?:[0-9A-F]{16})? \S+!\S"
)
# The header of a native stack dump: a process died in native code (a signal handler's report,
# a Go or Rust panic, a C++ exception's trace, Windows' abort handler); a log that stops in one
# was cut in a crash report, not in a hang.
_STACK_HEADER = re.compile(
    r"^(?:Stack trace:|stack backtrace:|Backtrace:|=+ ?backtrace \(tid: *\d+\) ?=+|"
    r"goroutine \d+ \[[\w ,]+\]:|Unhandled exception caught in |\*\*\* Begin stack trace|"
    r"Exception raised from \S+ at \S+ \(most recent call first\):)"
)

_SIZE = r"-?[\d.,]+\s?(?:[KMGT]i?B|bytes)"
_SIZES = (
    re.compile(rf"Tried to allocate (?P<a>{_SIZE})"),
    re.compile(rf"(?P<f>{_SIZE}) (?:is )?free"),
    re.compile(rf"total capacity of (?P<t>{_SIZE})|\((?:GPU \d+; )?(?P<t2>{_SIZE}) total capacity"),
    re.compile(r"max seq len \((?P<need>\d+)\) is larger than .* KV cache \((?P<have>\d+)\)"),
    re.compile(rf"KV cache memory: (?P<kv>{_SIZE})"),
    re.compile(r"profiled value (?P<prof>-?\d+)"),
    re.compile(rf"KV cache needs? (?P<need2>{_SIZE}).{{0,40}}?(?P<have2>{_SIZE})"),
    re.compile(
        rf"(?P<need3>{_SIZE}) KV cache is needed.*available KV cache memory \((?P<have3>{_SIZE})\)"
    ),
)


def _is_exception(text: str) -> bool:
    return bool(text) and not text[0].isspace() and bool(_EXC_LINE.match(text.strip()))


def _exception_after(
    log: _Log, start: int, limit: int = 300, source: str | None = None
) -> int | None:
    """Index of the first exception line at or after ``start`` (the end of its traceback),
    from the same process when ``source`` is given and one of its lines follows."""
    found = None
    for i in range(start, min(len(log.text), start + limit)):
        if _is_exception(log.text[i]):
            if source is None or log.records[i].source == source:
                return i
            if found is None:
                found = i
    return found


def _last_exception(log: _Log) -> int | None:
    """Index of the exception line that ends the last traceback, or else the last one at all.

    Excerpts and multi-process logs often lack the ``Traceback`` header, so an exception line
    (``RuntimeError: ...``) counts on its own.
    """
    for i in range(len(log.text) - 1, -1, -1):
        if _TRACEBACK in log.text[i]:
            found = _exception_after(log, i + 1, limit=len(log.text), source=log.records[i].source)
            if found is not None:
                return found
            break
    for i in range(len(log.text) - 1, -1, -1):
        if _is_exception(log.text[i]):
            return i
    return None


def _first_fatal_exception(log: _Log) -> int | None:
    """The first exception line that is not an echo of another process's death (else the
    last exception line): the first fatal event, not the last noise."""
    candidates = [i for i, t in enumerate(log.text) if _is_exception(t) and not log.warning[i]]
    for i in candidates:
        if not _ECHO.search(log.text[i]):
            return i
    return candidates[-1] if candidates else None


_TRACE_LINE = re.compile(
    r"^(Traceback|File |During handling|The above exception|Stack \(most recent|Current thread|"
    r"Thread 0x|Fatal Python error|frame #|\*\*\* SIGSEGV|PC: @|\^+$|\d+\s+0x[0-9a-f]+ |╭|╰|"
    + _BOX_LINE
    + ")"
)


def _in_trace(text: str) -> bool:
    """Whether a (prefix-stripped) line belongs to a traceback or a native stack dump."""
    return (
        not text.strip()
        or text[0].isspace()
        or bool(_TRACE_LINE.match(text))
        or bool(_FRAME.match(text))
        or bool(_STACK_HEADER.match(text))
        or _is_exception(text)
    )


def _block_span(stripped: Sequence[str], at: int) -> tuple[int, int]:
    """[start, end) of the traceback (or stack dump) around index ``at``."""
    start = at
    while (
        start > 0
        and at - start < BLOCK_BEFORE
        # a frame's code line (or the rest of a wrapped frame line) belongs to its frame, even
        # when a logger's prefix ate its indentation
        and (_in_trace(stripped[start - 1]) or (start > 1 and _FRAME.match(stripped[start - 2])))
    ):
        start -= 1
    end = at + 1
    while (
        end < len(stripped)
        and end - at < BLOCK_AFTER
        # (the code line of the frame above it, its indentation eaten by a prefix)
        and (_in_trace(stripped[end]) or bool(_FRAME.match(stripped[end - 1])))
    ):
        end += 1
    return start, end


def _trace_block(stripped: Sequence[str], at: int) -> Sequence[str]:
    """The traceback (or stack dump) around index ``at``: its frames, not the progress lines
    logged before it, which belong to earlier phases."""
    start, end = _block_span(stripped, at)
    return stripped[start:end]


def _sizes(text: str) -> str:
    """The memory figures a message gives, as `` [tried 2.00 GiB, free 1.2 GiB, ...]``."""
    found: dict[str, str] = {}
    for regex in _SIZES:
        match = regex.search(text)
        if match is None:
            continue
        for key, value in match.groupdict().items():
            if value:
                found.setdefault(key.rstrip("23"), value.strip())
    names = {
        "a": "tried",
        "f": "free",
        "t": "total",
        "need": "needs",
        "have": "available",
        "kv": "KV cache memory",
        "prof": "profiled tokens",
    }
    parts = [f"{names[k]} {v}" for k, v in found.items() if k in names]
    return f" [{', '.join(parts)}]" if parts else ""


_VALIDATION_HEADER = re.compile(r"\d+ validation errors? for \w+\s*$")
_VALIDATION_TYPE = re.compile(r"\s*\[type=.*$")


def _message(log: _Log, at: int) -> str:
    """The line at ``at``; a validation error's header ("1 validation error for VllmConfig")
    says nothing of what was refused, so its details (field and reason) are read with it."""
    text = log.text[at].strip()
    if _VALIDATION_HEADER.search(text):
        details = []
        # every field it lists (each a name, a reason and a link), up to four of them
        for line in log.text[at + 1 : at + 13]:
            line = _VALIDATION_TYPE.sub("", line).strip()
            if line.startswith("For further information"):
                continue
            if not line or _FRAME.match(line) or _is_exception(line):
                break
            details.append(line)
        if details:
            text = f"{text}: {' '.join(details)}"
    return _trim(text)
