"""Confirmation before a winner: relaunch the top candidates and the baseline, interleaved.

The search picks its best configuration from single, noisy launches, so the best of many is
biased upwards (the winner's curse): on a space where no flag matters, *some* configuration
always measures a few percent above the baseline. Confirmation measures the top K candidates
again, side by side with the baseline in rounds that come in mirrored pairs (baseline, A, B, C,
then C, B, A, baseline; then baseline, B, C, A, ...), and only these fresh launches decide.
Each round is a block: a gain is the mean of the log ratios within rounds, its noise the
residual of round plus configuration (study/noise.py ``blocked_gain``), so a drift of the
machine between rounds cancels, and a steady drift within them favours no one over a pair.
On the H100 the 512-stream SGLang study's baseline rose 18% over five launches (caches warming):
across launches that drift hid every gain; within rounds it does not (docs/benchmarks.md).

- a candidate whose launch fails (crash, failed requests at the workload's peak load) is out;
- after ``min_rounds``, candidates clearly worse than the leader are dropped (cheaper rounds);
- it stops as soon as the answer the user gets is settled (the stop rule below), else at
  ``max_rounds``;
- the winner is the candidate with the best confirmed median; its gain over the baseline
  comes with an interval within rounds (over launches while fewer than two rounds hold both),
  Bonferroni-adjusted for the K candidates; when that interval does not lie above zero the
  baseline stays the answer.

The stop rule, looked at after every round from ``min_rounds`` on (three launches a side by
default: fewer give an interval too wide to mean anything). What the user gets is one
configuration to export and one claim about it, so only that needs to be settled:

1. *gain*: the leader (best median among the candidates still in) beats the baseline at a
   strict interim level (Bonferroni over the looks, so that stopping at the first look that
   clears zero adds no false claims) -> stop, the leader is exported;
2. *no gain*: no candidate still in can beat the baseline by ``min_gain_pct`` (every upper
   bound is below it), or the leader's estimated gain (its geometric mean over the
   baseline's) is not above zero (more rounds would have to reverse the sign of the
   estimate before the interval could clear zero)
   -> stop, the baseline is exported.

Candidates that tie with each other do not need more rounds: which of them is exported
changes nothing the user was promised (each is as good as the others within noise), so the
best median is taken and the ones it cannot be told from are reported as ``tied``. Before
this rule, confirmation waited for a single candidate to stand out and ran to
``max_rounds`` whenever two candidates tied (docs/benchmarks.md gives the cost, before and
after).

It is written against a small ``measure`` callable (one launch, one value) so that the same
code runs with an in-process fake in unit tests and with the real executor in the driver.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_serializer

from autotune.core.summary import ConfirmationCost
from autotune.models import Direction
from autotune.study.noise import LEVEL, Gain, better_in_rounds, gain_in_rounds

BASELINE = "baseline"


class Candidate(BaseModel):
    """A configuration to confirm; ``key`` names it in records (``baseline``, ``trial 12``)."""

    model_config = ConfigDict(frozen=True)

    key: str
    config: dict[str, Any]
    trial: int | None = None  # the search trial it came from


@dataclass(frozen=True)
class Sample:
    """What one confirmation launch measured.

    ``value`` is None when the launch produced no valid value (crashed, timed out, failed
    requests at peak load, missed an SLO); ``reason`` then says why.
    """

    value: float | None
    windows: tuple[float, ...] = ()
    server_s: float = 0.0
    trial: int | None = None
    reason: str = ""


# One launch of a candidate in a given round -> what it measured. Must not raise for a
# configuration's failure (return a Sample with value None).
Measure = Callable[[Candidate, int], Sample]
# One round's launches at once (several workers), in the round's order -> their samples, in
# that order. Must not raise for a configuration's failure.
MeasureRound = Callable[[Sequence[tuple[Candidate, int]]], list[Sample]]


@dataclass(frozen=True)
class ConfirmOptions:
    """How hard to confirm."""

    min_rounds: int = 3
    max_rounds: int = 5
    level: float = LEVEL
    # A leader whose gain cannot exceed this (upper bound, percent) has settled as "no gain".
    min_gain_pct: float = 1.0

    def __post_init__(self) -> None:
        if not 2 <= self.min_rounds <= self.max_rounds:
            raise ValueError("confirmation needs 2 <= min_rounds <= max_rounds")


class Launch(BaseModel):
    """One confirmation launch, in order."""

    model_config = ConfigDict(frozen=True)

    round: int
    key: str
    value: float | None
    server_s: float
    trial: int | None = None
    reason: str = ""

    @field_serializer("server_s", when_used="json")
    def _seconds(self, value: float) -> float:
        return round(value, 3)

    @classmethod
    def of(cls, round_no: int, key: str, s: Sample) -> Launch:
        """The record of what ``s`` measured (a value that is not finite: none)."""
        value = s.value if s.value is not None and math.isfinite(s.value) else None
        return cls(round=round_no, key=key, value=value, server_s=s.server_s, trial=s.trial,
                   reason=s.reason)  # fmt: skip


class Confirmation(BaseModel):
    """The outcome of a confirmation; stored on the study as its JSON (``model_dump``).

    ``best``: the candidate with the best confirmed median (None: every candidate failed).
    ``winner``: ``best`` if its gain is significant, else ``baseline``. ``cost`` is written
    beside the fields for readers of the raw JSON and ignored on reading.
    """

    model_config = ConfigDict(extra="ignore")

    direction: Direction
    candidates: list[Candidate]
    launches: list[Launch] = Field(default_factory=list)
    dropped: dict[str, str] = Field(default_factory=dict)
    rounds: int = 0
    stop_reason: str = ""
    best: str | None = None
    winner: str = BASELINE
    gain: Gain | None = None
    # Candidates the winner cannot be told from (within noise): the export would be as good.
    tied: list[str] = Field(default_factory=list)

    def values(self, key: str) -> list[float]:
        return [x.value for x in self.launches if x.key == key and x.value is not None]

    def median(self, key: str) -> float | None:
        v = self.values(key)
        return float(statistics.median(v)) if v else None

    def by_round(self) -> dict[int, dict[str, float]]:
        """``{round: {key: value}}`` of the launches that measured a (positive) value."""
        out: dict[int, dict[str, float]] = {}
        for x in self.launches:
            if x.value is not None and x.value > 0:
                out.setdefault(x.round, {})[x.key] = x.value
        return out

    def gain_of(self, key: str, candidates: int, level: float) -> Gain:
        """The gain of ``key`` over the baseline: within rounds (rounds as blocks: a drift
        between rounds cancels) once two rounds hold both, else over all their launches."""
        return gain_in_rounds(
            self.by_round(), BASELINE, key, self.direction, candidates=candidates, level=level
        )

    def beats(self, a: str, b: str, level: float) -> bool:
        """Whether ``a`` measured better than ``b`` beyond noise (as :meth:`gain_of`)."""
        return better_in_rounds(self.by_round(), a, b, self.direction, level)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost(self) -> dict[str, float]:
        """``{"launches", "server_s"}``: what the confirmation spent."""
        spent = sum(x.server_s for x in self.launches)
        return {"launches": len(self.launches), "server_s": round(spent, 3)}

    def winner_candidate(self) -> Candidate | None:
        """The winning candidate, or None when the baseline stays the answer."""
        return next((c for c in self.candidates if c.key == self.winner), None)

    def summary(self) -> ConfirmationCost:
        """How it went, as the study's summary shows it."""
        return ConfirmationCost(
            rounds=self.rounds,
            stop_reason=self.stop_reason,
            winner=self.winner,
            tied=list(self.tied),
            launches=len(self.launches),
            server_s=round(sum(x.server_s for x in self.launches), 3),
        )

    def table_rows(self) -> list[tuple[str, int, float | None, str]]:
        """``(key, launches, median, status)`` for the baseline and each candidate."""
        out = []
        for key in [BASELINE, *(c.key for c in self.candidates)]:
            status = self.dropped.get(key, "")
            if key == self.winner and key != BASELINE:
                status = "winner"
            elif key in self.tied:
                status = f"tied with {self.best} (within noise)"
            elif key == BASELINE and self.winner == BASELINE:
                status = "kept (nothing beat it beyond noise)"
            n = sum(1 for x in self.launches if x.key == key)
            out.append((key, n, self.median(key), status))
        return out


class Progress(BaseModel):
    """A confirmation under way, stored on the study after every launch so that a resume
    after Ctrl-C or a machine's time limit goes on from the last launch: the plan (its
    candidates and baseline, fixed when it began) and what each launch measured so far.

    ``search_trials``: the search's trials when the plan was made; a resume after a longer
    search (new trials) plans again.
    """

    search_trials: int
    candidates: list[Candidate]
    baseline: dict[str, Any]
    launches: list[Launch] = Field(default_factory=list)
    windows: dict[str, list[float]] = Field(default_factory=dict)  # by "round key"

    def sample(self, key: str, round_no: int) -> Sample | None:
        """What the launch of ``key`` in round ``round_no`` measured, if it ran."""
        for x in self.launches:
            if x.key == key and x.round == round_no:
                windows = tuple(self.windows.get(f"{round_no} {key}", ()))
                return Sample(x.value, windows, x.server_s, x.trial, x.reason)
        return None

    def add(self, key: str, round_no: int, sample: Sample) -> None:
        self.launches.append(Launch.of(round_no, key, sample))
        self.windows[f"{round_no} {key}"] = list(sample.windows)


def round_order(first: str, others: Sequence[str], round_no: int) -> list[str]:
    """Rounds in mirrored pairs: ``first`` (the reference) first, the others rotated by one
    each pair (no fixed neighbour), and the next round the same launches in reverse, so that a
    steady drift of the machine (caches warming launch after launch) favours no one over a
    pair."""
    k = (round_no - 1) // 2 % max(1, len(others))
    order = [first, *others[k:], *others[:k]]
    return order if round_no % 2 else order[::-1]


def _best_key(keys: Sequence[str], medians: dict[str, float], direction: Direction) -> str:
    sign = 1.0 if direction == "maximize" else -1.0
    return max(keys, key=lambda k: sign * medians[k])


def confirm(
    candidates: Sequence[Candidate],
    measure: Measure,
    direction: Direction,
    options: ConfirmOptions | None = None,
    *,
    on_launch: Callable[[Launch], None] | None = None,
    measure_round: MeasureRound | None = None,
) -> Confirmation:
    """Relaunch ``candidates`` and the baseline in interleaved rounds and pick the winner.

    Args:
        candidates: the top configurations of the search (the baseline is measured too; do
            not include it here).
        measure: launches one configuration once and returns what it measured.
        direction: the objective's direction.
        options: rounds and levels.
        on_launch: called after every launch (progress display).
        measure_round: launches a whole round at once (on several workers) instead of one
            ``measure`` at a time; the round's order, and so the interleaving, is the same
            (a candidate is dropped only after its own launch, so a round is known at its
            start).

    Returns:
        The record of every launch, the dropped candidates with their reasons, the winner and
        the gain with its interval.
    """
    opts = options or ConfirmOptions()
    keys = [c.key for c in candidates]
    if BASELINE in keys or len(set(keys)) != len(keys):
        raise ValueError("candidate keys must be unique and not 'baseline'")
    by_key = {c.key: c for c in candidates}
    baseline = Candidate(key=BASELINE, config={})
    result = Confirmation(direction=direction, candidates=list(candidates))
    active = list(keys)
    k = max(1, len(candidates))
    looks = opts.max_rounds - opts.min_rounds + 1
    # Interim decisions are taken at a stricter level, so that stopping as soon as an interval
    # happens to clear zero does not add false claims (Bonferroni over the looks).
    interim = 1 - (1 - opts.level) / looks
    drop_level = 1 - (1 - opts.level) / k

    for round_no in range(1, opts.max_rounds + 1):
        order = round_order(BASELINE, active, round_no)
        batch = [(by_key.get(key, baseline), round_no) for key in order]
        samples = measure_round(batch) if measure_round is not None else None
        for i, key in enumerate(order):
            s = samples[i] if samples is not None else measure(*batch[i])
            launch = Launch.of(round_no, key, s)
            value = launch.value
            result.launches.append(launch)
            if on_launch is not None:
                on_launch(launch)
            if value is None and key != BASELINE:
                # A winner must survive every launch: one failure disqualifies.
                active.remove(key)
                result.dropped[key] = f"failed in round {round_no}: {s.reason or 'no value'}"
        result.rounds = round_no
        if not active:
            result.stop_reason = "every candidate failed"
            break
        if round_no < opts.min_rounds:
            continue
        base = result.values(BASELINE)
        measured = {key: result.values(key) for key in active}
        medians = {key: float(statistics.median(v)) for key, v in measured.items() if v}
        if not medians or len(base) < 2:
            continue
        leader = _best_key(list(medians), medians, direction)
        for key in list(active):
            if key != leader and len(measured[key]) >= 2 and result.beats(leader, key, drop_level):
                active.remove(key)
                result.dropped[key] = f"clearly worse than {leader} (round {round_no})"
        still = [key for key in active if measured[key]]
        why = _settled(result, still, leader, k, interim, opts.min_gain_pct)
        if why:
            result.stop_reason = why
            break
    else:
        result.stop_reason = f"{opts.max_rounds} rounds (the most allowed)"

    decide(result, [c.key for c in candidates], k, opts.level)
    return result


def _settled(
    result: Confirmation,
    still: list[str],
    leader: str,
    k: int,
    interim: float,
    min_gain_pct: float,
) -> str:
    """Why the answer is settled (the module's stop rule), or "" to run another round;
    ``still``: the candidates still in that have measured a value."""
    g = result.gain_of(leader, k, interim)
    tie = " (the candidates still in tie: the best median is taken)" if len(still) > 1 else ""
    if g.significant:
        return f"{leader} beats the baseline at a strict interim level{tie}"
    if g.pct <= 0:
        return f"{leader}, the best candidate, measures no better than the baseline"
    uppers = [result.gain_of(key, k, interim).ci95_pct[1] for key in still]
    if max(uppers) < min_gain_pct:
        return f"no candidate can beat the baseline by {min_gain_pct:g}%"
    return ""


def decide(result: Confirmation, keys: list[str], k: int, level: float) -> None:
    """Pick the best confirmed median among the survivors and decide whether it won."""
    survivors = [key for key in keys if key not in result.dropped or "worse" in result.dropped[key]]
    medians = {key: result.median(key) for key in survivors}
    measured = {key: m for key, m in medians.items() if m is not None}
    base = result.values(BASELINE)
    if not measured or not base:
        result.best, result.winner, result.gain = None, BASELINE, None
        return
    best = _best_key(list(measured), measured, result.direction)
    result.best = best
    result.gain = result.gain_of(best, k, level)
    result.winner = best if result.gain.significant else BASELINE
    # The others that cannot be told from the best (at the level candidates are dropped at).
    drop_level = 1 - (1 - level) / max(1, k)
    result.tied = [
        key
        for key in measured
        if key != best and key not in result.dropped and not result.beats(best, key, drop_level)
    ]


__all__ = [
    "BASELINE",
    "Candidate",
    "ConfirmOptions",
    "Confirmation",
    "Launch",
    "Measure",
    "Sample",
    "confirm",
    "decide",
    "round_order",
]
