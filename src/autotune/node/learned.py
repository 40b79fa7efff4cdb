"""A cause learnt from the corpus of real crash logs, for the logs the rules cannot name.

The rules (``rules/*.yaml``, ``node/families.py``) answer ``unknown`` when no rule and no
family's words decide. For those logs only, a multinomial logistic regression over the words
of the log names a cause (issue 51: chosen by leave-one-batch-out cross-validation on the
corpus's tuning split and kept because it carried to the held-out split and a blind set;
``bench/diagnosis_learned.py`` trains it, measures it and writes its weights,
``learned_causes.json``). Inference here is plain Python: no numpy, no scikit-learn.

What the model reads is what :func:`diagnose_lines <autotune.node.failures.diagnose_lines>`
focuses on, undressed (``node/logparse.py``) and normalised so that no dress of a line changes
it: the first exception lines, the first error lines, the deepest
traceback frames and the last lines, lower case, URLs and folders collapsed, hex to ``x``,
digits to ``0``; and the exit status when one is known. Its features are TF-IDF weights of
word unigrams and bigrams (present or not, each vector of unit length). A learnt answer names
as its evidence the lines whose words weighed most for it; it is never ``ok`` (a log the rules
read as a failed run stays a failure).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from autotune.node.logparse import parse_log

WEIGHTS = Path(__file__).with_name("learned_causes.json")

_URL = re.compile(r"\b(?:https?|file|s3|gs)://\S+")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~@+-]*[/\\])+(?=[\w.-])")  # the folders of a path
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b")
_DIGITS = re.compile(r"\d+")
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (\S+)')
_EXC = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b"
)
_ERRORISH = re.compile(
    r"\b(?:error|fatal|critical|failed|failure|exception|abort(?:ed)?|killed|panic|"
    r"traceback|segmentation|core dumped)\b",
    re.IGNORECASE,
)
LAST = 30  # lines from the end of a log that join the focus
TOKEN = r"(?u)\b[a-z_][a-z0-9_]+\b|\b0\b"  # as the trainer's vectoriser splits words
_TOKEN = re.compile(TOKEN)
EVIDENCE_LINES = 2  # the lines named for a learnt answer


def normalise(text: str) -> str:
    """A line's message as tokens see it: lower case, URLs and folders collapsed, hex to
    ``x``, digits to ``0``."""
    text = _URL.sub(" url ", text)
    text = _PATH.sub("", text)
    text = _HEX.sub("x", text)
    text = _DIGITS.sub("0", text)
    return text.lower()


def messages(lines: Sequence[str]) -> list[tuple[str, str]]:
    """The undressed messages of a log, normalised, each once, in order, with the line each
    came from (ranks that print the same line twice, or a dress that repeats a line, leave
    the same list)."""
    seen: set[str] = set()
    out = []
    for rec in parse_log(lines):
        message = normalise(rec.text).strip()
        if message and message not in seen:
            seen.add(message)
            out.append((message, rec.raw))
    return out


def focus(found: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """What ``diagnose_lines`` looks at, as (message, line) pairs: the first exception lines,
    the first error lines, the deepest traceback frames and the last lines of ``found``
    (:func:`messages`). Not the rules' evidence: its lines of context around a match cover
    fewer distinct lines when every line is printed twice (two ranks)."""
    first_exc = [m for m in found if _EXC.match(m[0].strip())][:2]
    errors = [m for m in found if _ERRORISH.search(m[0])][:5]
    frames = [m for m in found if _FRAME.match(m[0])][-4:]
    return [*first_exc, *errors, *frames, *found[-LAST:]]


def exit_token(exit_code: int | None) -> list[str]:
    """The exit status as a word of its own (``exitcode137``, ``exitcodeneg9``)."""
    return [] if exit_code is None else [f"exitcode{exit_code}".replace("-", "neg")]


def feature_text(lines: Sequence[str], exit_code: int | None) -> str:
    """The text the model reads for a log of ``lines``."""
    return "\n".join([m for m, _ in focus(messages(lines))] + exit_token(exit_code))


def terms(text: str) -> list[str]:
    """The words and word pairs of ``text``, in order, as the trainer's vectoriser makes them
    (pairs run across line ends, as there)."""
    words = _TOKEN.findall(text.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


@dataclass(frozen=True)
class Guess:
    """The model's answer for one log.

    Attributes:
        cause: the cause's value (``Cause``), never ``ok`` or ``unknown``.
        probability: the model's probability for it.
        evidence: the lines whose words weighed most for it, as written in the log.
    """

    cause: str
    probability: float
    evidence: list[str]


@dataclass(frozen=True)
class _Weights:
    classes: list[str]
    intercept: list[float]
    idf: dict[str, float]
    coef: dict[str, dict[int, float]]  # term -> class index -> weight (small ones left out)


@lru_cache(maxsize=1)
def _weights(path: Path = WEIGHTS) -> _Weights | None:
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    idf, coef = {}, {}
    for term, (weight, per_class) in data["terms"].items():
        idf[term] = float(weight)
        if per_class:
            coef[term] = {int(k): float(v) for k, v in per_class.items()}
    return _Weights(list(data["classes"]), list(data["intercept"]), idf, coef)


def guess(lines: Sequence[str], exit_code: int | None = None) -> Guess | None:
    """The learnt cause of a failed run's log of ``lines``, or None when the model has no
    weights or names ``ok`` or ``unknown``."""
    weights = _weights()
    if weights is None:
        return None
    pairs = focus(messages(lines))
    text = "\n".join([m for m, _ in pairs] + exit_token(exit_code))
    # sorted: a set's order changes with each process's hash salt, and a sum of floats with
    # its order (a near tie among lines went one way or the other from run to run)
    present = sorted({t for t in terms(text) if t in weights.idf})
    norm = math.sqrt(sum(weights.idf[t] ** 2 for t in present)) or 1.0
    scores = list(weights.intercept)
    for t in present:
        for k, w in weights.coef.get(t, {}).items():
            scores[k] += weights.idf[t] / norm * w
    best = max(range(len(scores)), key=scores.__getitem__)
    if weights.classes[best] in ("ok", "unknown"):
        return None
    top = max(scores)
    total = sum(math.exp(s - top) for s in scores)
    return Guess(weights.classes[best], 1.0 / total, _weighed(pairs, weights, best, norm))


def _weighed(
    pairs: Sequence[tuple[str, str]], weights: _Weights, best: int, norm: float
) -> list[str]:
    """The lines of ``pairs`` whose words weighed most for class ``best``, in log order."""
    scored = []
    for n, (message, line) in enumerate(pairs):
        weight = sum(
            weights.idf[t] / norm * weights.coef.get(t, {}).get(best, 0.0)
            for t in sorted(set(terms(message)))
            if t in weights.idf
        )
        if weight > 0:
            scored.append((weight, n, line.strip()))
    chosen = sorted(scored, reverse=True)[:EVIDENCE_LINES]
    out: list[str] = []
    for _, _, line in sorted(chosen, key=lambda s: s[1]):
        if line not in out:
            out.append(line)
    return out
