"""What the driver tells whoever shows progress (the CLI's progress view, tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from autotune.core.records import SkipRecord
from autotune.models import Outcome, TrialResult


class EventKind(StrEnum):
    """The kinds of events, in the order a study meets them."""

    START = "start"  # the loop begins (after a resume's recovery)
    LAUNCH = "launch"  # a configuration was sent to the executor
    SKIP = "skip"  # a proposal was not launched (``skip`` says why)
    RETRY = "retry"  # an infrastructure failure: the trial runs again, elsewhere
    PHASE = "phase"  # a running trial reached a phase (``message``: a models.Phase value)
    RESULT = "result"  # a launched trial finished and was told
    CONFIRM = "confirm"  # confirmation rounds begin (``message`` names the candidates)
    VERDICT = "verdict"  # the study's answer: the gain and its interval in plain words
    STOP = "stop"  # the loop ended (``message`` says why)


@dataclass(frozen=True)
class Event:
    """Something the driver did.

    ``launched``, ``target``, ``best`` and ``baseline`` are set on ``start``, ``result`` and
    ``stop``: launched trials so far, the budget, and the best and baseline values.
    """

    kind: EventKind
    number: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    result: TrialResult | None = None
    outcome: Outcome | None = None
    value: float | None = None
    message: str = ""
    skip: SkipRecord | None = None
    launched: int = 0
    target: int = 0
    best: float | None = None
    baseline: float | None = None


__all__ = ["Event", "EventKind"]
