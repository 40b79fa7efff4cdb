"""The words a rule cannot match without (node/literals.py): read right, never too many.

A needle that a match could lack would hide a failure, so the property that matters is
soundness: whenever a pattern matches a text, one of its needle's words is in that text.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.node.corpus_helpers import CORPUS, load_labels

from autotune.diagnosis import diagnose_text
from autotune.node.failures import matching
from autotune.node.literals import required
from autotune.rules import bundled_rule_files, load_rules


@pytest.mark.parametrize(
    ("pattern", "words", "fold"),
    [
        ("CUDA out of memory", ("CUDA out of memory",), False),
        ("(?i)address already in use", ("address already in use",), True),
        ("OutOfMemoryError|CUDA out of memory", ("OutOfMemoryError", "CUDA out of memory"), False),
        (r"Model architectures? \[.*\] (are|is) not supported", ("Model architecture",), False),
        (r"errors? while (loading|saving) the model", (" the model",), False),
        (r"NCCL [Ee]rror", ("NCCL ",), False),
        (r"\bKilled\s+\S", ("Killed",), False),
        (r"signal \d+ \(SIGKILL\)", (" (SIGKILL)",), False),
        (r"[A-Z]+Error", ("Error",), False),
        (r"(Prefill|Decode) out of", (" out of",), False),
        (r"x{2,3}yyyy", ("yyyy",), False),
        (r"ab+cdef", ("cdef",), False),
        (r"^(?!.*Failed to import).*undefined symbol", ("undefined symbol",), False),
    ],
)
def test_the_needle_is_what_every_match_holds(
    pattern: str, words: tuple[str, ...], fold: bool
) -> None:
    needle = required(pattern)
    assert needle is not None and needle.words == words and needle.fold == fold


@pytest.mark.parametrize(
    "pattern",
    [
        r"\d+ validation errors?|ab",  # a branch without a run of three characters
        r"(?x) CUDA \s out",  # verbose: spaces mean nothing
        r"(?i:cuda) err",  # a scoped flag: a group, and two letters left
        r"[A-Z]+Er",
        r"(?i)straße",  # case-folding beyond ASCII is the regex engine's own
        r"x{2,",  # unreadable
    ],
)
def test_what_cannot_be_read_safely_gives_no_needle(pattern: str) -> None:
    assert required(pattern) is None


# Pieces of patterns, each with texts it matches: a text built from one branch's pieces
# matches the pattern (unless a word boundary falls between two pieces).
ATOMS: list[tuple[str, list[str]]] = [
    *((re.escape(w), [w]) for w in ["out of memory", "CUDA", "Error", "error", "ab", " ", ":"]),
    ("s?", ["", "s"]),
    ("x+", ["x", "xx"]),
    (r"\d+", ["7", "42"]),
    (r"[Ee]rror", ["Error", "error"]),
    ("(CUDA|NCCL)", ["CUDA", "NCCL"]),
    (".*", ["", "zz", "q q"]),
    ("(?:ab)?", ["", "ab"]),
    ("x{1,2}", ["x", "xx"]),
    (r"\s*", ["", " "]),
    (r"\b", [""]),
    (r"\.", ["."]),
    (r"\S", ["k", "-"]),
    ("e?rror", ["rror", "error"]),
]


@st.composite
def _pattern_and_text(draw: st.DrawFn) -> tuple[str, str]:
    atoms = st.integers(0, len(ATOMS) - 1)
    branches = draw(st.lists(st.lists(atoms, min_size=1, max_size=6), min_size=1, max_size=3))
    fold = draw(st.booleans())
    pattern = ("(?i)" if fold else "") + "|".join("".join(ATOMS[i][0] for i in b) for b in branches)
    chosen = draw(st.sampled_from(branches))
    text = "".join(draw(st.sampled_from(ATOMS[i][1])) for i in chosen)
    if fold and draw(st.booleans()):
        text = text.upper()
    return pattern, draw(st.sampled_from(["", "noise "])) + text


@settings(max_examples=500, deadline=None)
@given(_pattern_and_text())
def test_a_pattern_never_matches_a_text_that_lacks_its_needle(case: tuple[str, str]) -> None:
    pattern, text = case
    needle = required(pattern)
    if needle is not None and re.search(pattern, text):
        assert needle.found_in(text, text.casefold()), (pattern, text, needle)


def test_most_bundled_rules_have_a_needle() -> None:
    """Otherwise the filter would buy nothing: 487 of 520 when it was written."""
    rules = [r for name in bundled_rule_files() for r in load_rules(name)]
    assert sum(required(r.pattern) is not None for r in rules) >= 0.85 * len(rules)


@pytest.mark.parametrize("every", [6, pytest.param(3, marks=pytest.mark.slow)])
def test_the_filter_changes_no_answer_on_real_logs(
    monkeypatch: pytest.MonkeyPatch, every: int
) -> None:
    """Every sixth log of the corpus of real crash logs (every third: the slow tier),
    diagnosed with the filter and without it: the same cause, phase, rule, evidence and
    engine."""
    rows = load_labels()[::every]
    texts = [
        (CORPUS / f"{r['id']}.log").read_text(encoding="utf-8", errors="replace") for r in rows
    ]
    with_filter = [diagnose_text(t) for t in texts]
    monkeypatch.setattr(matching, "_may_match", lambda *_: True)
    without = [diagnose_text(t) for t in texts]
    assert [d.failure for d in with_filter] == [d.failure for d in without]
    assert [d.engine for d in with_filter] == [d.engine for d in without]
