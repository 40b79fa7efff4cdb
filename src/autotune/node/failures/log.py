"""A log as the classifier reads it: undressed, ranks' echoes dropped, non-events blanked.

node/logparse.py takes each line's prefixes off; :class:`_Log` then keeps one copy of a line
that several ranks wrote at once, blanks a line that reports an error the program ignored and
a kill its sender called a clean stop (neither is an event of the run), and hands the rules
the lines worth matching: no routine progress, no warnings unless asked. How much of a line is
read or kept, and which lines a failure shows as its evidence, are decided here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from autotune.node.logparse import LogLine, parse_log

MAX_LINE = 300  # characters of one evidence line
CONTEXT = 2  # lines of context around the first match
MAX_EVIDENCE = 12

HEAD = 300  # characters of a line where its error words are looked for
MILESTONE_HEAD = 600  # characters of a line where progress words are looked for

_ROUTINE = re.compile(
    r"^(?:Avg prompt throughput|Avg generation throughput|Decode batch|Prefill batch|"
    r"Loading safetensors checkpoint shards: +\d+%|llama_model_loader: - kv|"
    r"Capturing batches \(|\S+ - \"(?:POST|GET) [^\"]*\" 2\d\d)"
)

_IGNORED = re.compile(
    r"^(?:Ignor(?:e|ed|ing)|Skip(?:ped|ping)?)\b[\w .-]{0,40}?\b(?:errors?|exceptions?)\b|"
    r"\b(?:[Ee]rror|[Ee]xception)s? (?:was |were |is |are )?(?:ignored|skipped)\b(?! in: )"
)
# A kill its sender reports, on the next line, as a stop that went as meant ("signal: killed",
# then "runner stopped successfully"): a supervisor stopping its own worker, no failure.
_KILL = re.compile(r"(?i:signal:? killed|signal:? 9\b|\bSIGKILL\b|\bkilled\b)")
_STOPPED_CLEANLY = re.compile(
    r"(?i:\b(?:stopped|shut ?down|exited|terminated|unloaded) "
    r"(?:successfully|cleanly|gracefully)\b)"
)


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _trim(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


_RANK_ECHO = 4  # how far back a line another rank wrote the same is looked for


def _one_per_rank(records: Iterable[LogLine]) -> list[LogLine]:
    """``records`` without the lines that another rank (or process) has just written the same:
    several ranks logging one failure interleave copies of each line, and a message, its
    continuation and its traceback must read as they would from one rank."""
    kept: list[LogLine] = []
    for rec in records:
        echo = rec.source is not None and any(
            prev.text == rec.text and prev.source not in (None, rec.source)
            for prev in kept[-_RANK_ECHO:]
        )
        if not echo:
            kept.append(rec)
    return kept


@dataclass(frozen=True)
class _Log:
    """A log undressed: per record its raw text, its message and whether it is a warning."""

    records: tuple[LogLine, ...]
    raw: tuple[str, ...]
    text: tuple[str, ...]
    warning: tuple[bool, ...]
    # the log ends in a kill its sender called a clean stop (_stopped_on_purpose)
    stopped: bool = False

    @classmethod
    def read(cls, lines: Sequence[str]) -> _Log:
        # A line that reports an error the program ignored ("Ignore import error when loading
        # X: No module named 'y'", written by every healthy SGLang start) is no event of the
        # run: read as an empty line, it is never the cause, the evidence or an error.
        records = tuple(
            LogLine(raw="", text="") if _IGNORED.search(r.text[:HEAD]) else r
            for r in _one_per_rank(parse_log(lines))
        )
        stops = [i for i in range(len(records)) if _stopped_on_purpose(records, i)]
        last = max((i for i, r in enumerate(records) if r.text.strip()), default=None)
        records = tuple(
            LogLine(raw="", text="") if i in stops else r for i, r in enumerate(records)
        )
        return cls(
            records=records,
            raw=tuple(r.raw for r in records),
            text=tuple(r.text for r in records),
            warning=tuple(r.is_warning for r in records),
            # the clean stop is the log's last word
            stopped=bool(stops) and last is not None and _next_message(records, stops[-1]) == last,
        )

    def since(self, start: int) -> _Log:
        """The records from index ``start`` on."""
        return _Log(
            records=self.records[start:],
            raw=self.raw[start:],
            text=self.text[start:],
            warning=self.warning[start:],
        )

    def until(self, end: int) -> _Log:
        """The records before index ``end``."""
        return _Log(
            records=self.records[:end],
            raw=self.raw[:end],
            text=self.text[:end],
            warning=self.warning[:end],
        )

    def for_rules(self, *, warnings: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(messages, raw lines) rules are matched on: routine progress and serving lines
        (metrics, batches, ``POST ... 200``, shard loading) blanked, and warnings too unless
        ``warnings`` (indices kept). Long logs are mostly routine lines."""
        skip = [
            (w and not warnings) or bool(_ROUTINE.search(t))
            for t, w in zip(self.text, self.warning, strict=True)
        ]
        text = tuple("" if k else t for t, k in zip(self.text, skip, strict=True))
        raw = tuple("" if k else r for r, k in zip(self.raw, skip, strict=True))
        return text, raw


def _next_message(records: Sequence[LogLine], at: int) -> int | None:
    """Index of the first record after ``at`` with a message."""
    return next((i for i in range(at + 1, len(records)) if records[i].text.strip()), None)


def _stopped_on_purpose(records: Sequence[LogLine], at: int) -> bool:
    """Whether the record at ``at`` reports a kill that the next record with a message calls
    a clean stop (the sender stopping its own worker, not a failure)."""
    if not _KILL.search(records[at].text[:HEAD]):
        return False
    after = _next_message(records, at)
    return after is not None and bool(_STOPPED_CLEANLY.search(records[after].text[:HEAD]))


def _evidence(raw: Sequence[str], hits: Sequence[int]) -> list[str]:
    if not hits:
        return []
    first = hits[0]
    keep = set(range(max(0, first - CONTEXT), min(len(raw), first + CONTEXT + 1)))
    keep.update(hits[:MAX_EVIDENCE])
    chosen = sorted(keep)[:MAX_EVIDENCE]
    return [_trim(raw[i]) for i in chosen if raw[i].strip()]


def _last_line(log: _Log) -> int | None:
    """Index of the last line with a message, if any."""
    return next((i for i in range(len(log.text) - 1, -1, -1) if log.text[i].strip()), None)


def _last_lines(log: _Log, n: int) -> list[int]:
    """Indices of the log's last ``n`` lines with any text, in order."""
    return [i for i, t in enumerate(log.text) if t.strip()][-n:]
