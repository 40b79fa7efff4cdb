"""Rules matched to a log's lines, with a literal pre-filter that skips most of them.

A rule's pattern is tried on each line without its prefix and as written, across a line
wrapped at a fixed width, over a few lines joined when it holds ``\\n``, and with its ``near``
pattern within a few lines. Before any line is searched, :func:`_may_match` asks
node/literals.py for the runs of text every match must hold: a rule whose words are nowhere in
the log is not searched line by line. The first rule in order wins, but an allocation that
failed before the error a wrapper then raised, or a kill after a line the program went on
from, is the first fatal event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from autotune.models import Cause, Milestone, Rule
from autotune.node.failures.log import _compile, _Log
from autotune.node.literals import required

NEAR_LINES = 40  # how far a rule's ``near`` pattern may be from its hit
WINDOW = 3  # lines joined for a pattern that spans lines
WRAP_MIN = 60  # a line at least this long may have been wrapped onto the next

_LEVEL_WORD = re.compile(r"\b(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\b")


def _wrapped_match(
    regex: re.Pattern[str],
    stripped: Sequence[str],
    raw: Sequence[str],
    i: int,
    sources: Sequence[str | None] | None = None,
) -> bool:
    """Whether ``regex`` matches line ``i`` joined to its continuation, across the join.

    Long lines reach issue threads and some terminals wrapped at a fixed width, even in the
    middle of a word ("cudaMallocAsync(ptr, n, mCudaSt" / "ream->get()): out of memory"). Only
    a long line followed by a bare one is joined: no indent, and no prefix beyond the dress
    both lines share (a container's or a timestamp's, not a new message's header); with
    interleaved processes, the continuation is the next line of the same process.
    """
    if len(raw[i]) < WRAP_MIN:
        return False
    j = i + 1
    if sources is not None and sources[i] is not None:
        while j < len(raw) and j <= i + 3 and sources[j] != sources[i]:
            j += 1
    if j >= len(stripped):
        return False
    after = stripped[j]
    if not after or after[0].isspace():
        return False
    head = raw[i][: len(raw[i]) - len(stripped[i])]
    dress = raw[j][: len(raw[j]) - len(after)]
    if dress and not (head.startswith(dress) and not _LEVEL_WORD.search(dress)):
        return False  # a header of its own: a new message, not a continuation
    line = stripped[i]
    match = regex.search(line + after)
    return match is not None and match.start() < len(line) < match.end()


@lru_cache(maxsize=4)
def _texts(
    stripped: tuple[str, ...], raw: tuple[str, ...], sources: tuple[str | None, ...] | None
) -> tuple[str, str] | None:
    """A log's lines run together, as written and case-folded (node/literals.py), once per
    log. Lines run together keep a match across a wrapped line's join; only a continuation
    found a few lines down (interleaved processes) could be missed: None, those logs are not
    filtered."""
    if sources is not None and any(sources):
        return None
    text = "".join(stripped) + "\n" + "".join(raw)
    return text, text.casefold()


def _may_match(
    pattern: str,
    stripped: Sequence[str],
    raw: Sequence[str],
    sources: Sequence[str | None] | None,
) -> bool:
    """False when the log lacks every run of text a match of ``pattern`` must hold."""
    if "\\n" in pattern or "\n" in pattern:
        return True
    literal = required(pattern)
    if literal is None or not isinstance(stripped, tuple) or not isinstance(raw, tuple):
        return True
    if sources is not None and not isinstance(sources, tuple):
        return True
    texts = _texts(stripped, raw, sources)
    return texts is None or literal.found_in(*texts)


def _rule_hits(
    rule: Rule,
    stripped: Sequence[str],
    raw: Sequence[str],
    sources: Sequence[str | None] | None = None,
) -> list[int]:
    """Indices of the lines ``rule`` matches, without their prefix or (for patterns that name
    a bracketed tag such as ``[TensorRT-LLM]``) as written."""
    if not _may_match(rule.pattern, stripped, raw, sources):
        return []
    regex = _compile(rule.pattern)
    hits = []
    if "\\n" in rule.pattern or "\n" in rule.pattern:
        # A message split over lines: match windows of consecutive lines joined by newlines,
        # counting a hit on the line where the match starts.
        for i in range(len(stripped)):
            if not stripped[i]:
                continue
            for lines in (stripped, raw):
                match = regex.search("\n".join(lines[i : i + WINDOW]))
                if match is not None and match.start() <= len(lines[i]):
                    hits.append(i)
                    break
    else:
        for i, line in enumerate(stripped):
            if not line and not raw[i]:
                continue
            if (
                regex.search(line)
                or (raw[i] != line and regex.search(raw[i]))
                or _wrapped_match(regex, stripped, raw, i, sources)
            ):
                hits.append(i)
    if rule.near is not None and hits:
        near = _compile(rule.near)
        hits = [
            i
            for i in hits
            if any(
                near.search(stripped[j])
                for j in range(max(0, i - NEAR_LINES), min(len(stripped), i + NEAR_LINES + 1))
            )
        ]
    return hits


# Families a program reports when something it called failed first: a wrapper that could not
# load a model ("Could not load Llama model from path", a validation error), a crash, a check.
_WRAPPERS = frozenset(
    {
        Cause.INVALID_ARGUMENT,
        Cause.MODEL_UNSUPPORTED,
        Cause.ASSERTION,
        Cause.RUNTIME_CRASH,
        Cause.UNKNOWN,
    }
)
_MEMORY = frozenset({Cause.CUDA_OOM, Cause.KV_POOL_OOM, Cause.HOST_OOM})


def _memory_first(
    found: tuple[Rule, list[int]],
    rules: Sequence[Rule],
    log: _Log,
    sources: Sequence[str | None],
) -> tuple[Rule, list[int]]:
    """The first fatal event among the rules' hits: an allocation that failed before the
    error a wrapper then raised ("cudaMalloc failed: out of memory", then "validation error
    for LlamaCpp: Could not load model") is the cause, whichever rule comes first in order."""
    rule, hits = found
    if rule.cause in _MEMORY or rule.cause not in _WRAPPERS:
        return found
    stripped, raw = log.for_rules(warnings=False)
    for other in rules:
        if other.cause not in _MEMORY:
            continue
        earlier = [i for i in _rule_hits(other, stripped, raw, sources) if i < hits[0]]
        if earlier:
            return other, earlier
    return found


def _killed_after_progress(
    found: tuple[Rule, list[int]],
    rules: Sequence[Rule],
    log: _Log,
    sources: Sequence[str | None],
    milestones: Sequence[Milestone],
) -> tuple[Rule, list[int]]:
    """A line the program went on after (progress follows it) was not fatal: when the log
    then ends in a kill (``Killed``, SIGKILL), the kill is the first fatal event."""
    rule, hits = found
    if rule.cause == Cause.HOST_OOM:
        return found
    stripped, raw = log.for_rules(warnings=False)
    progress = [_compile(m.pattern) for m in milestones]
    for other in rules:
        if other.cause != Cause.HOST_OOM:
            continue
        later = [i for i in _rule_hits(other, stripped, raw, sources) if i > hits[-1]]
        if later and any(
            r.search(log.raw[j]) for j in range(hits[-1] + 1, later[0]) for r in progress
        ):
            return other, later
    return found


def _first_rule(
    rules: Sequence[Rule],
    stripped: Sequence[str],
    raw: Sequence[str],
    sources: Sequence[str | None] | None = None,
) -> tuple[Rule, list[int]] | None:
    for rule in rules:
        hits = _rule_hits(rule, stripped, raw, sources)
        if hits:
            return rule, hits
    return None


def first_match(lines: Sequence[str], rules: Sequence[Rule]) -> tuple[Rule, list[int]] | None:
    """The first rule (in rule order) with a matching line, and the indices of its matches.

    The indices are those of ``lines`` when no line was split (a flattened line is read as
    several records; then they index those records).
    """
    log = _Log.read(lines)
    sources = tuple(r.source for r in log.records)
    return _first_rule(rules, *log.for_rules(warnings=False), sources) or _first_rule(
        rules, *log.for_rules(warnings=True), sources
    )
