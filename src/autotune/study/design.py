"""The one-at-a-time start: the baseline with one setting moved per launch.

The first proposals after the baseline are the baseline with one parameter moved: a number to
the far end of its range, a categorical or bool to another choice (as SGLang's auto_benchmark
tiers start), every choice of a categorical once (up to ``DESIGN_MOST`` launches). A crash
region that needs two settings together costs nothing here, and the additive model gets each
setting's and each choice's own effect. It starts as soon as the baseline is launched (other
nodes need not wait for its result). A setting the baseline leaves to the engine (an NCCL
variable left unset) has no value to move from: the design first launches the baseline with
each such setting at a reference value (a number's middle on its scale, a categorical's first
choice), then moves every setting from there, so that each launch still differs from another
in one value. A number whose far end read no better than the baseline is then tried half-way
there too (``mid``): a buffer size can read alike at both ends and peak between them, which
no effect fitted to the ends can show.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from autotune.study.additive import on_grid, scaled, toward
from autotune.study.history import NEAR, failed, has, key, read, sign
from autotune.study.ledger import is_baseline

DESIGN = -1  # one-at-a-time launches from the baseline first (-1: each value and choice once)
DESIGN_MOST = 8  # the most launches the whole design (-1) makes
MID = "flat"  # the design also tries half-way a number whose far end read no better ("all", "off")


class Design:
    """The one-at-a-time start of one study.

    Args:
        launches: one-at-a-time launches to make (0: none; -1: each parameter once and each
            other choice of a categorical, at most ``DESIGN_MOST``).
        mid: ``flat`` (the default): also half-way to its far end a number whose far end read
            no better than the baseline (within ``NEAR``); ``all``: every number (measured,
            off); ``off``: none.
        unset: also move the settings a partial baseline leaves unset, from their reference
            values (``space`` names them).
        early: start while the baseline is running (else after its result).
        center: start from every setting at its reference value, not from the baseline's
            values (measured, off: docs/benchmarks.md).
    """

    def __init__(
        self,
        launches: int = DESIGN,
        *,
        mid: str = MID,
        unset: bool = True,
        early: bool = True,
        center: bool = False,
    ) -> None:
        if mid not in ("flat", "all", "off"):
            raise ValueError(f"mid must be flat, all or off, not {mid!r}")
        self.left = launches  # launches still to make (-1: not counted yet)
        self._whole = launches < 0  # the whole design: every move once
        self._mid = mid
        self._unset = unset
        self._early = early
        self._center = center
        self._at = 0  # where in the design's order (``design_order``) the next one is
        self.made: set[int] = set()  # trials that are design launches

    def plan(
        self, study: Study, trial: FrozenTrial, space: Mapping[str, BaseDistribution]
    ) -> dict[str, Any] | None:
        """The next launch of the start for ``trial`` (None: none now, or the start is over):
        the baseline with one parameter at an end of its range (or another choice); the first
        pass moves each parameter once, the second to its other end. A baseline that leaves
        settings of ``space`` unset is first launched with them at their reference values, and
        every move starts from there."""
        trials = study.get_trials(deepcopy=False)
        ready = (TrialState.COMPLETE, TrialState.RUNNING) if self._early else (TrialState.COMPLETE,)
        base = next(
            (
                t
                for t in trials
                if t.state in ready and is_baseline(t) and (t.params or (space and self._unset))
            ),
            None,
        )
        if base is None:
            return None
        kept = {} if self._center else base.params  # the values the start moves from
        unset = {n: d for n, d in (space if self._unset else {}).items() if n not in kept}
        dists = {**base.distributions, **unset}
        ref = {**kept, **{n: reference(d) for n, d in unset.items()}}
        if unset and any(failed(t) and has(t.params, ref) for t in trials):
            # The reference launch crashed or was refused: every move from it would share
            # what failed, so the start ends here.
            self.left = 0
            return None
        seen = {key(t.params) for t in trials if t.params}
        # (None, 0): the reference configuration itself, when it is not the baseline
        order: list[tuple[str | None, int]] = [(None, 0)] if unset else []
        # A design of every move (-1) has no near ends: they would take the half-way
        # launches' places where those are not made.
        order += design_order(dists, list(ref), self._mid != "off", ends=not self._whole)
        if self.left < 0:  # every parameter once and every other choice of a categorical
            choices = {n for n, d in dists.items() if isinstance(d, CategoricalDistribution)}
            moves = sum(k <= 0 or n in choices for n, k in order if n is not None)
            self.left = min(DESIGN_MOST, moves + bool(unset))
        for name, k in order[self._at :]:
            if self.left <= 0:
                break
            self._at += 1
            if k < 0 and name is not None and not self._flat_end(study, trials, ref, dists, name):
                continue  # half-way only where the far end did no better than the baseline
            self.left -= 1
            config = dict(ref)
            if name is not None:
                config[name] = end(dists[name], ref[name], k)
            if key(config) in seen:  # launched before this driver (a resumed study)
                continue
            self.made.add(trial.number)
            return config
        self.left = 0
        return None

    def _flat_end(
        self,
        study: Study,
        trials: Sequence[FrozenTrial],
        ref: Mapping[str, Any],
        dists: Mapping[str, BaseDistribution],
        name: str,
    ) -> bool:
        """Whether the design's launch of ``name`` at its far end ran and read no better than
        the baseline (by ``NEAR``, log): a number whose far end does nothing may peak inside
        its range (a buffer size), which the two ends cannot show. With ``mid`` "all", every
        number is tried half-way."""
        if self._mid == "all":
            return True
        far = {**ref, name: end(dists[name], ref[name], 0)}
        at_end = [read(t) for t in trials if t.params and has(t.params, far)]
        base = [read(t) for t in trials if is_baseline(t) and t.state == TrialState.COMPLETE]
        end_v = [v for v in at_end if v is not None and v > 0]
        base_v = [v for v in base if v is not None and v > 0]
        if not end_v or not base_v:
            return False
        gain = sign(study) * (
            math.log(statistics.median(end_v)) - math.log(statistics.median(base_v))
        )
        return gain <= NEAR


def design_order(
    dists: Mapping[str, BaseDistribution],
    names: Sequence[str],
    mid: bool = False,
    ends: bool = True,
) -> list[tuple[str, int]]:
    """The one-at-a-time design's launches as (parameter, pass) for ``end``: every parameter
    of ``names`` once (a number to its far end, a choice to another one), then a categorical's
    other choices, then (``mid``) the numbers half-way to their far ends (pass -1), then
    (``ends``) their near ends (pass 1)."""
    return (
        [(n, 0) for n in names]
        + [
            (n, k)
            for n, d in dists.items()
            if isinstance(d, CategoricalDistribution)
            for k in range(1, len(d.choices) - 1)
        ]
        + [
            (n, -1)
            for n, d in dists.items()
            if mid and n in names and isinstance(d, IntDistribution | FloatDistribution)
        ]
        + [
            (n, 1)
            for n, d in dists.items()
            if ends and isinstance(d, IntDistribution | FloatDistribution)
        ]
    )


def reference(d: BaseDistribution) -> Any:
    """The value a design launch gives a setting it does not move and the baseline leaves
    unset: a number's middle on its scale (on its grid), a categorical's first choice."""
    if isinstance(d, CategoricalDistribution):
        return d.choices[0]
    if isinstance(d, IntDistribution | FloatDistribution):
        low, high = float(d.low), float(d.high)
        return on_grid(d, math.sqrt(low * high) if d.log else (low + high) / 2)
    raise TypeError(f"no reference value for {d!r}")


def end(d: BaseDistribution, value: Any, k: int) -> Any:
    """Pass ``k`` of the one-at-a-time design: a number's far end (k=0, the end farther from
    ``value`` on the parameter's scale) or near end (k=1), or half-way to its far end (k=-1);
    another choice of a categorical."""
    if isinstance(d, CategoricalDistribution):
        others = [c for c in d.choices if c != value or type(c) is not type(value)]
        return others[k % len(others)] if others else value
    if not isinstance(d, IntDistribution | FloatDistribution):
        return value
    far_high = scaled(d, value) <= 0.0  # nearer the low end on the parameter's scale
    if k < 0:  # half-way to the far end
        return toward(d, value, d.high if far_high else d.low, 0.5)
    return d.high if far_high == (k == 0) else d.low


__all__ = ["DESIGN", "DESIGN_MOST", "MID", "Design", "design_order", "end", "reference"]
