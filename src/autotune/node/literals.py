"""The text a regular expression cannot match without: a cheap test before a slow one.

A log is matched against a few hundred rules, line by line; most rules match nothing in a
given log, and most of them cannot match unless some plain words occur in it ("out of
memory", "Address already in use"). ``required(pattern)`` reads, for each branch of the
pattern's top-level alternation, the longest run of plain characters every match of that
branch contains; when none of those runs is anywhere in a log's text, the rule cannot match
any of its lines and the line-by-line search is skipped. The reading is conservative:
anything it does not understand (a class, a group, an escape that is not a plain character,
verbose mode, a branch without a run of three characters) ends a run or gives ``None``, and
``None`` means "search as before".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = ["Needle", "required"]

# Escapes that stand for one plain character (the others are classes, anchors or codes).
_PLAIN_ESCAPE = frozenset("\\.^$|?*+()[]{}/-_:;,'\"!@#%&=~<> `")
_QUANTIFIER = frozenset("?*{")
_FLAG = "(?"


@dataclass(frozen=True)
class Needle:
    """Runs of text of which every match contains one; ``fold``: compare case-folded (an
    ``(?i)`` pattern)."""

    words: tuple[str, ...]
    fold: bool

    def found_in(self, text: str, folded: str) -> bool:
        """Whether one of the runs occurs in ``text`` (``folded``: it case-folded)."""
        within = folded if self.fold else text
        return any(word in within for word in self.words)


def _flags(pattern: str) -> tuple[str, int] | None:
    """The leading global flags and where the pattern proper starts (None: unreadable)."""
    if not pattern.startswith(_FLAG) or len(pattern) < 3 or not pattern[2].isalpha():
        return "", 0
    end = pattern.find(")")
    flags = pattern[2:end]
    if end < 0 or not flags.isalpha() or "x" in flags:
        return None
    return flags, end + 1


def _skip_class(pattern: str, i: int) -> int:
    """The index just after the character class opening at ``i``."""
    i += 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _skip_group(pattern: str, i: int) -> int:
    """The index just after the group opening at ``i`` (classes and escapes inside kept)."""
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _skip_class(pattern, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _branches(pattern: str, start: int) -> list[list[str]]:
    """The runs of plain characters at the top level of each branch of ``pattern``."""
    branches: list[list[str]] = [[]]
    run: list[str] = []

    def cut() -> None:
        if run:
            branches[-1].append("".join(run))
            run.clear()

    i = start
    while i < len(pattern):
        c = pattern[i]
        if c == "|":
            cut()
            branches.append([])
            i += 1
            continue
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            i += 2
            if nxt and nxt in _PLAIN_ESCAPE:
                run.append(nxt)
                continue
            cut()  # a class, an anchor or a code: no plain character here
            continue
        if c == "[":
            cut()
            i = _skip_class(pattern, i)
            continue
        if c == "(":
            cut()
            i = _skip_group(pattern, i)
            continue
        if c in _QUANTIFIER:
            if run:
                run.pop()  # the character before may occur zero times
            cut()
            close = pattern.find("}", i) if c == "{" else i
            if close < 0:
                return []  # an unclosed brace: unreadable
            i = close + 1
            continue
        if c == "+":
            cut()  # the character before occurs, but what follows it need not be next
            i += 1
            continue
        if c in ".^$)":
            cut()
            i += 1
            continue
        run.append(c)
        i += 1
    cut()
    return branches


@lru_cache(maxsize=4096)
def required(pattern: str) -> Needle | None:
    """Runs of plain characters of which every match of ``pattern`` holds one, or None.

    Args:
        pattern: a regular expression as the rule files write it (``re`` syntax; a leading
            ``(?i)`` and other global flags allowed).
    """
    flags = _flags(pattern)
    if flags is None:
        return None
    letters, start = flags
    fold = "i" in letters
    words = []
    for runs in _branches(pattern, start):
        best = max(runs, key=len, default="")
        if len(best) < 3 or (fold and not best.isascii()):
            return None  # a branch that could match without a run we can look for
        words.append(best.casefold() if fold else best)
    return Needle(words=tuple(dict.fromkeys(words)), fold=fold) if words else None
