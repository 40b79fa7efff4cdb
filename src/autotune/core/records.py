"""What a study keeps about its trials, and what it hands to trackers and reports.

``study/ledger.py`` is the only code that turns Optuna storage into these records and back.
The driver, the trackers, the report, the export and the progress view exchange these
records, never a plain dict with implicit keys. They live beside ``models.py`` (the records
that cross a host boundary) rather than in ``study/`` because the trackers, one layer below
the study, take them too.

Extending a record: add a field *with a default* (studies stored before it existed still
read), then write and read it in ``study/ledger.py`` (``_encode`` / ``_decode``). Nothing
else changes: every reader gets records from the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from autotune.models import Cleanup, Direction, Outcome, Timings, TrialResult

# Outcomes of trials that were launched (``budget_launches`` says which count against the budget).
LAUNCHED = frozenset({Outcome.OK, Outcome.CRASHED, Outcome.TIMEOUT, Outcome.SLO_VIOLATED})
# Outcomes the crash-risk model and the crash streak count as crashes.
CRASHES = frozenset({Outcome.CRASHED, Outcome.TIMEOUT})


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SkipKind(StrEnum):
    """Why a proposal was not launched."""

    CONSTRAINT = "constraint"  # it breaks a constraint of the space
    DEAD_END = "dead_end"  # it shares a configuration, a blamed value or memory with a crash
    PREDICTED_CRASH = "predicted_crash"  # every explanation of an earlier crash covers it
    REPEAT = "repeat"  # already measured: that measurement is reused


class SkipRecord(_Record):
    """A proposal that was not launched, and why."""

    kind: SkipKind
    reason: str  # one line for people, e.g. "breaks constraint tp * dp <= 8"
    same_as: int | None = None  # REPEAT: the trial whose measurement is reused


class TrialRecord(_Record):
    """One trial as the study keeps it (``Ledger.trials`` reads them, in number order).

    ``value`` is the objective metric the trial measured (``ok`` and ``slo_violated`` only),
    never what a crashed or skipped trial was told.
    """

    number: int
    state: str  # Optuna state name: COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    outcome: Outcome | None = None  # None while running, and for a driver bug (FAIL)
    value: float | None = None
    config: dict[str, Any] = Field(default_factory=dict)  # what was (or would be) launched
    metrics: dict[str, float] = Field(default_factory=dict)  # Metrics.flat()
    cause: str | None = None  # a models.Cause value; for a skip, its kind (not for repeats)
    phase: str | None = None
    hint: str = ""
    message: str = ""
    evidence: list[str] = Field(default_factory=list)
    blame: list[str] = Field(default_factory=list)  # "param=value" held responsible
    skip: SkipRecord | None = None
    baseline: bool = False
    # What the engine chose for the settings this launch left unset, as the space writes them
    # (read from the baseline's log: search.DEFAULTS); the search's screen starts there.
    chosen: dict[str, Any] = Field(default_factory=dict)
    simulated: bool = False
    node: str = ""
    log_path: str | None = None
    argv: list[str] = Field(default_factory=list)  # the real engine's command, redacted
    env: dict[str, str] = Field(default_factory=dict)  # what the configuration sets, redacted
    attempts: int = 0  # infrastructure retries
    timings: Timings | None = None
    cleanup: Cleanup | None = None
    duration_s: float | None = None
    constraints: dict[str, float] = Field(default_factory=dict)  # as told to Optuna (> 0 violated)
    retry_of: int | None = None  # queued again after this trial was interrupted
    # the kind of proposal that made it (autotune.search KIND: design, line, pairs, model, random);
    # None for the baseline, relaunches, confirmation rounds and other samplers
    proposed_by: str | None = None
    # Noise and confirmation (study/noise.py, study/confirm.py, study/evidence.py).
    windows: list[dict[str, float]] = Field(default_factory=list)  # Metrics.flat() per window
    peak: dict[str, Any] | None = None  # models.PeakLoad as JSON (survived the peak load?)
    repeat_of: int | None = None  # a relaunch of this earlier trial's configuration
    confirm_round: int | None = None  # launched in this confirmation round
    confirm_key: str | None = None  # "baseline" or the candidate's key ("trial 12")
    # Launched in this round of the winner's ablation (study/ablation.py): the winner, or the
    # winner with one changed parameter reverted to the baseline's value ("winner", "dtype").
    ablation_round: int | None = None
    ablation_key: str | None = None
    pruned_saved_s: float | None = None  # server seconds a pruned trial did not spend
    gpu: str = ""  # the GPU(s) the trial ran on, e.g. "8x NVIDIA H200" (exports say it)
    engine_version: str = ""  # the engine's version as the server reported it
    # Named or swept scenarios: models.ScenarioResult as JSON (name, metrics, windows, sweep
    # steps); the trial's ``metrics`` holds the same values as ``<scenario>.<metric>``.
    scenarios: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def label(self) -> str:
        """Outcome for tables: ``ok``, ``crashed``, ``running``, ``error`` (driver bug)."""
        if self.outcome:
            return self.outcome.value
        return {"RUNNING": "running", "WAITING": "waiting", "FAIL": "error"}.get(
            self.state, self.state.lower()
        )

    @property
    def launched(self) -> bool:
        """Whether a server (or job) was launched: a launched outcome, or pruned mid-benchmark."""
        return self.outcome in LAUNCHED or (self.outcome is Outcome.PRUNED and bool(self.windows))

    @property
    def survived_peak(self) -> bool:
        """False when the trial failed requests at the workload's peak load."""
        return self.peak is None or self.peak.get("survived") is not False

    @property
    def crashed(self) -> bool:
        """Whether it was launched and crashed or never became ready."""
        return self.outcome in CRASHES

    @property
    def searched(self) -> bool:
        """Whether it belongs to the search: not a confirmation or ablation launch."""
        return self.confirm_round is None and self.ablation_round is None

    @property
    def skipped(self) -> str | None:
        """Why the trial was not launched, or None if it was."""
        return self.skip.reason if self.skip is not None else None

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-safe data (``status --json``), with ``label`` and ``skipped``."""
        return {**self.model_dump(mode="json"), "label": self.label, "skipped": self.skipped}


def budget_launches(trials: Iterable[TrialRecord]) -> int:
    """Launches that count against a study's trial budget (``--n-trials``, ``budget.trials``).

    Every launch of the search counts (a relaunch of a configuration the sampler proposed
    again, an ablation test), the baseline once: its extra launches (``--baseline-launches``,
    the launch-to-launch noise), the confirmation rounds and the ablation after the search are
    measurement on top of the budget, so that they never take launches from the search.
    """
    search = [t for t in trials if t.launched and t.searched]
    return sum(not t.baseline for t in search) + min(1, sum(t.baseline for t in search))


class StudyRecord(_Record):
    """What the study keeps about itself."""

    name: str
    metric: str = "value"
    direction: Direction = Direction.MAXIMIZE
    engine: str | None = None  # the real engine's name (also for a simulated study)
    space: dict[str, Any] = Field(default_factory=dict)  # the StudySpec as JSON
    space_file: str = ""
    simulated: bool = False
    tracker_run: str | None = None  # the tracker's record of this study (reused on resume)
    confirmation: dict[str, Any] | None = None  # study/confirm.py Confirmation, as JSON
    ablation: dict[str, Any] | None = None  # core/summary.py Ablation, as JSON
    # A multi-objective study's objectives, the primary first: [{"metric", "direction"}];
    # empty for a single objective (and for studies written before it existed).
    objectives: list[dict[str, str]] = Field(default_factory=list)

    def objective_pairs(self) -> list[tuple[str, Direction]]:
        """``(metric, direction)`` of every objective, the primary first."""
        pairs: list[tuple[str, Direction]] = []
        for o in self.objectives:
            d = o.get("direction")
            pairs.append(
                (str(o.get("metric")), Direction(d) if d in set(Direction) else Direction.MAXIMIZE)
            )
        return pairs or [(self.metric, self.direction)]


class StudyInfo(_Record):
    """What a tracker is told when a study starts or resumes."""

    study: str
    engine: str
    model: str
    metric: str
    direction: Direction
    simulated: bool = False
    space_file: str | None = None  # kept by the tracker as an artifact when it exists
    run_id: str | None = None  # the tracker's record from an earlier run of this study
    parallel: int = 1
    storage: str = ""  # the Optuna storage URL (the tracker redacts passwords)
    description: str = ""
    parameters: list[str] = Field(default_factory=list)  # every parameter of the space
    engine_version: str = ""


class TrialLog(_Record):
    """What a tracker is told about one finished (launched) trial."""

    study: str
    result: TrialResult  # its ``outcome`` is the study's verdict (e.g. ``slo_violated``)
    config: dict[str, Any] = Field(default_factory=dict)
    argv: list[str] = Field(default_factory=list)  # redacted
    env: dict[str, str] = Field(default_factory=dict)  # redacted
    baseline: bool = False
    proposed_by: str | None = None  # TrialRecord.proposed_by


class SkipLog(_Record):
    """What a tracker is told about a proposal that was not launched."""

    study: str
    number: int
    config: dict[str, Any] = Field(default_factory=dict)
    skip: SkipRecord


def gain_pct(best: float | None, base: float | None, direction: str) -> float | None:
    """Improvement of ``best`` over ``base`` in percent; positive is better."""
    if best is None or base is None or base == 0:
        return None
    change = (best - base) / abs(base) * 100.0
    return change if direction == "maximize" else -change


__all__ = [
    "CRASHES",
    "LAUNCHED",
    "Direction",
    "SkipKind",
    "SkipLog",
    "SkipRecord",
    "StudyInfo",
    "StudyRecord",
    "TrialLog",
    "TrialRecord",
    "budget_launches",
    "gain_pct",
]
