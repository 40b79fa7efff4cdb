"""One typed summary of a study: every figure the report, ``autotune status`` and MLflow show.

``study/ledger.py`` builds it once from storage (``Ledger.summary``); every renderer reads it
and computes no figure of its own, so a headline, a table row and an MLflow metric about one
configuration are the same number. Each figure says what it stands on (``Figure``): the
median of interleaved *confirmation* launches, or the median of the *search*'s launches of
that configuration (often a single launch, shown as such). A gain is stated only between two
figures of the same kind and always with its interval (``Gain``): a single search launch is
never compared with a confirmed median.

Older summaries stored or printed as JSON keep their shape: ``gain`` is still ``{"pct",
"ci95_pct": [lo, hi], "significant", "launches": {"baseline", "best"}, "level", "method"}``.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from autotune.core.records import Direction, StudyRecord, TrialRecord

LEVEL = 0.95  # the confidence of a reported interval


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FigureKind(StrEnum):
    """What a figure stands on."""

    CONFIRMED = "confirmed"  # the median of interleaved confirmation launches
    SEARCH = "search"  # the median of the search's launches of the configuration


class Figure(_Record):
    """One configuration's value of the objective, and the launches it is the median of."""

    value: float
    kind: FigureKind
    launches: int

    def describe(self) -> str:
        """``median of 3 confirmation launches`` / ``1 search launch``."""
        what = "confirmation" if self.kind is FigureKind.CONFIRMED else "search"
        if self.launches == 1:
            return f"1 {what} launch"
        return f"median of {self.launches} {what} launches"


class LaunchCounts(_Record):
    """Launches on each side of a comparison."""

    baseline: int
    best: int


def _finite(value: float, digits: int) -> float | None:
    return round(value, digits) if math.isfinite(value) else None


class Gain(_Record):
    """A gain over a reference in percent (positive is better in either direction), with its
    interval over launches (``study/noise.py`` computes it).

    Maximize: ``best / reference - 1``; minimize: ``1 - best / reference`` (a latency halved
    is +50%). ``ci95_pct`` is the interval at ``level`` (0.95, or stricter when a winner was
    picked among several: Bonferroni); an unbounded end is infinite (``null`` in JSON).
    ``significant``: the whole interval lies above zero.
    """

    pct: float
    ci95_pct: tuple[float, float]
    significant: bool
    launches: LaunchCounts
    level: float = LEVEL
    method: str = "welch-t on log per-launch values"

    @field_validator("ci95_pct", mode="before")
    @classmethod
    def _unbounded(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(math.nan if v is None else v for v in value)
        return value

    @field_serializer("pct", when_used="json")
    def _pct_json(self, value: float) -> float | None:
        return _finite(value, 3)

    @field_serializer("ci95_pct", when_used="json")
    def _ci_json(self, value: tuple[float, float]) -> list[float | None]:
        return [_finite(v, 3) for v in value]

    @field_serializer("level", when_used="json")
    def _level_json(self, value: float) -> float | None:
        return _finite(value, 5)

    @property
    def bounded(self) -> bool:
        """Whether the interval has two finite ends (one launch a side gives none)."""
        lo, hi = self.ci95_pct
        return math.isfinite(hi) or (math.isfinite(lo) and lo > -99.9)

    def interval_text(self) -> str:
        """``+12.3% (95% CI +4.1% .. +20.9%, 5 vs 5 launches)``."""
        lo, hi = self.ci95_pct
        if not self.bounded:
            # One launch a side: no spread to build an interval from ("-100% .. +inf" says
            # the same, less plainly).
            return (
                f"{self.pct:+.1f}% (no interval: {self.launches.best} vs "
                f"{self.launches.baseline} launches, too few to tell from noise)"
            )
        return (
            f"{self.pct:+.1f}% (95% CI {_pct(lo)} .. {_pct(hi)}, "
            f"{self.launches.best} vs {self.launches.baseline} launches)"
        )

    def sentence(self) -> str:
        """The verdict in plain words."""
        if self.significant:
            return f"gain over the baseline {self.interval_text()}"
        if not self.bounded:
            # "No configuration beat the baseline: +8.0%" reads as a contradiction; with one
            # launch a side nothing was shown either way.
            return (
                f"too few launches to tell from noise: {self.pct:+.1f}% ({self.launches.best} vs "
                f"{self.launches.baseline} launches)"
            )
        return f"no configuration beat the baseline beyond noise: {self.interval_text()}"


def _pct(value: float) -> str:
    return f"{value:+.1f}%" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


class Configuration(_Record):
    """One configuration as the study measured it: its figures and its gain over the baseline.

    ``gain`` compares ``confirmed`` with the baseline's confirmed figure when both exist, else
    nothing: the search's figures rank configurations but state no gain (the verdict's gain,
    ``StudySummary.gain``, is the one exception, with its interval widened for the choice).
    """

    trial: int  # the first trial that launched it
    config: dict[str, Any] = Field(default_factory=dict)
    baseline: bool = False
    search: Figure | None = None
    confirmed: Figure | None = None
    gain: Gain | None = None
    status: str = ""  # from the confirmation: winner, tied, dropped (and why), kept

    @property
    def figure(self) -> Figure | None:
        """The figure to show first: the confirmed one, else the search's."""
        return self.confirmed or self.search


class Noise(_Record):
    """The study's measured noise: relative spreads launch to launch and within a launch."""

    launch_cv: float | None = None
    window_cv: float | None = None
    launches: int = 0
    windows: int = 0


class ConfirmationCost(_Record):
    """How the confirmation went: rounds, why it stopped, its winner, ties and cost."""

    rounds: int = 0
    stop_reason: str = ""
    winner: str | None = None
    tied: list[str] = Field(default_factory=list)
    launches: int = 0
    server_s: float = 0.0


class AblationStep(_Record):
    """One changed parameter of the winner reverted to the baseline's value (or unset where
    the baseline leaves it unset), relaunched interleaved with the winner.

    ``contribution``: the winner's gain over the reverted configuration, with its interval
    (positive: the change helps); None when the reverted configuration never measured.
    """

    param: str
    winner_value: Any = None
    baseline_value: Any = None  # None: unset (the engine's default)
    config: dict[str, Any] = Field(default_factory=dict)  # what ran: the winner, reverted
    values: list[float] = Field(default_factory=list)  # per launch of the reverted one
    failed: str = ""  # why the reverted configuration gave no value, when it did not
    contribution: Gain | None = None


class Ablation(_Record):
    """What each change of the winner contributes (``study/ablation.py``), or why it did not
    run (``skipped``: one line)."""

    winner: int | None = None  # the winner's first trial
    rounds: int = 0
    winner_values: list[float] = Field(default_factory=list)
    steps: list[AblationStep] = Field(default_factory=list)
    skipped: str = ""
    launches: int = 0
    server_s: float = 0.0


class ParetoPoint(_Record):
    """A member of a multi-objective study's front: the median of each objective."""

    trial: int
    values: dict[str, float]
    launches: int
    baseline: bool = False


class StudySummary(_Record):
    """Counts and every headline figure of a study (``Ledger.summary``; what trackers finish
    with, what the report and ``status`` print).

    ``answer`` is the configuration to run (the baseline when nothing beat it beyond noise),
    ``baseline`` the baseline, ``configurations`` the best ones, the answer first. ``gain``
    is the verdict's: the search's best over the baseline with its interval, from the
    confirmation rounds when there were any (``confirmed``), else from the search's launches
    with the interval widened for every configuration the best was picked from.

    ``best_value`` and ``baseline_value`` are the answer's and the baseline's figures of the
    same kind (confirmed, or search when the study did not confirm), for trackers and JSON.
    """

    study: str
    metric: str
    direction: Direction
    trials: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict)  # label -> count
    causes: dict[str, int] = Field(default_factory=dict)  # cause (or skip kind) -> count
    simulated: bool = False
    answer: Configuration | None = None
    baseline: Configuration | None = None
    configurations: list[Configuration] = Field(default_factory=list)
    best_trial: int | None = None
    best_value: float | None = None
    best_config: dict[str, Any] | None = None
    baseline_trial: int | None = None
    baseline_value: float | None = None  # only when the baseline ran ok
    gain_pct: float | None = None  # the verdict's gain, percent; positive is better
    gain: Gain | None = None
    beats_baseline: bool = False
    verdict: str = ""  # the gain in plain words
    confirmed: bool = False  # the gain comes from confirmation rounds
    confirmation: ConfirmationCost | None = None
    search_best_trial: int | None = None  # the search's best median (may be a noise winner)
    noise: Noise = Field(default_factory=Noise)
    ablation: Ablation | None = None
    pruned_saved_s: float = 0.0  # server seconds early stopping saved
    # A multi-objective study: its objectives ({"metric", "direction"}, the primary first) and
    # its Pareto front.
    objectives: list[dict[str, str]] = Field(default_factory=list)
    pareto: list[ParetoPoint] | None = None

    @property
    def figure_kind(self) -> FigureKind:
        """The kind of the headline figures (``best_value``, ``baseline_value``)."""
        return FigureKind.CONFIRMED if self.confirmed else FigureKind.SEARCH


class StudyView(_Record):
    """A study read once from storage: what it keeps about itself, every trial, its summary.

    What every reader of a finished (or running) study takes, so that nothing is read or
    computed twice.
    """

    record: StudyRecord
    trials: list[TrialRecord]
    summary: StudySummary

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def simulated(self) -> bool:
        return self.record.simulated


__all__ = [
    "LEVEL",
    "Ablation",
    "AblationStep",
    "Configuration",
    "ConfirmationCost",
    "Figure",
    "FigureKind",
    "Gain",
    "LaunchCounts",
    "Noise",
    "ParetoPoint",
    "StudySummary",
    "StudyView",
]
