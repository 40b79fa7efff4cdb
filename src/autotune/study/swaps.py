"""Swaps: the best configuration with each other choice of a categorical or bool, once.

A choice is otherwise judged at the settings of the choice it competes with: a backend that
crashes above a batch size another one takes looks worse at that batch size and never wins,
though below its edge it is the faster. So once, after ``SWAP`` complete trials, the best
configuration is launched with each other choice, where the additive model does not call it
clearly worse. A swap the crash model refuses moves one number the least way out of the
crash's explanations (``repair``), or another categorical or bool to the choice the additive
model rates best where that leaves fewer of them met and the model does not call the result
clearly worse than the best: compile that crashed with the fastest backend is tried with the
next one, where no number's move gets out of the pair (measured on ``blackbox4``: 183 to 221
of 240 studies at 95% of the optimum; docs/benchmarks.md). One that crashed as it was is
made once more so repaired, and one that ran repaired about as well as the choice it
replaced would there is made again nearer the edge the crash model has learned since, from
the configuration it was first made from (it may be the best one by then). A repair that
crashed before any launch of its swap ran moved a number that was not the cause (a crash at
a large batch with a new buffer size is explained by either, and the buffer was the smaller
move): the swap is made once more with that number left and another one moved (``retry``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from autotune.models import Cause
from autotune.space.schema import same_value
from autotune.study.additive import AdditiveModel, scaled, sixteenths
from autotune.study.history import NEAR, failed, key, sign
from autotune.study.ledger import cause_of, is_baseline
from autotune.study.outcome import CRASH

SWAP = 12  # complete trials before each other choice is tried at the best configuration
SWAP_MOST = 3  # the most launches of one swap
SWAP_RISK = 0.5  # the largest share of crash explanations a swap may still meet
CHOICE_SHIFT = 1.0  # a repair's move to another choice, as far as a number's move of [-1, 1]
RETRY = True  # a repaired swap that crashed is made once more with another number moved
# A choice whose one launch, the baseline with just that choice, crashed is swapped into the
# best configuration as it is, once, whatever the crash model says (a retest): one crash of a
# choice with everything else at the baseline's values explains it by the choice alone, and
# refuses it everywhere, the optimum too (DP attention out of memory in graph capture at the
# baseline's graph batch size, and serving below it).
RETEST = True
# crashes that say the value itself is never valid here, whatever the other settings: no
# kernel for this GPU, an argument the server does not take, a missing package, a model the
# setting does not support. Not retested.
INHERENT = frozenset(
    {Cause.ARCH_UNSUPPORTED, Cause.INVALID_ARGUMENT, Cause.IMPORT_ERROR, Cause.MODEL_UNSUPPORTED}
)
# the largest share of crash explanations a swap repaired by another choice may meet (0: a
# repair moves numbers only)
CHOICE_RISK = 0.7
# what a repair by another choice must not be clearly worse than, by the additive model:
# "best" (the configuration the swap is made from), "swap" (the swap unrepaired) or "none"
CHOICE_FLOOR = "best"

Verdict = Callable[[Mapping[str, Any]], bool]
Share = Callable[[Mapping[str, Any]], float | None]
Fitted = tuple[AdditiveModel, list[FrozenTrial]]


class Swaps:
    """The round of swaps of one study, and what each swap launched so far taught.

    Args:
        after: complete trials before the swaps (0: never).
        every: complete trials between later rounds (0: one round; measured, off).
        retry: a swap whose repair crashed before any launch of it ran is made once more
            with another number moved (the crash says the one moved was not the cause).
        risk: the largest share of crash explanations the repair of a swap made again may
            leave met (a swap that crashed with two choices in its company meets two pair
            explanations that no number's move leaves; measured 0.8, ``SWAP_RISK`` kept).
        choice_risk: the largest share of crash explanations a swap repaired by moving
            another categorical or bool may leave met (0: repairs move numbers only).
        choice_floor: a repair by another choice is made only where the additive model
            does not call it clearly worse (``NEAR``) than ``"best"``, the configuration the
            swap is made from, or ``"swap"``, the swap unrepaired (``"none"``: wherever).
    """

    def __init__(
        self,
        after: int = SWAP,
        every: int = 0,
        retry: bool = RETRY,
        risk: float = SWAP_RISK,
        choice_risk: float = CHOICE_RISK,
        choice_floor: str = CHOICE_FLOOR,
        retest: bool = RETEST,
    ) -> None:
        self.after = after
        self.retest = retest
        self.retests: set[int] = set()  # trials that are retests (launched unscreened)
        self.choice_risk = choice_risk
        self.choice_floor = choice_floor
        self.risk = risk
        self.every = every
        self.retry = retry
        self.rounds = 0  # rounds of swaps planned
        # (parameter, choice, the configuration it is made from: None for the best) to try
        # (and the numbers a repair may not move: one whose repair crashed)
        self.queue: list[tuple[str, Any, dict[str, Any] | None, frozenset[str]]] = []
        # trial -> (parameter, choice, the configuration it was made from, the number the
        # repair moved or None, the numbers it could not move)
        self.made: dict[int, tuple[str, Any, dict[str, Any], str | None, frozenset[str]]] = {}
        self.launches: dict[tuple[str, str], int] = {}  # launches of each swap
        self.ran: set[tuple[str, str]] = set()  # swaps a launch of which ran

    def over(self) -> bool:
        """Whether the round of swaps is over (or swaps are off)."""
        return not self.after or (self.rounds > 0 and not self.queue and not self.made)

    def due(self, study: Study) -> bool:
        """Whether there is a swap to plan or one whose launch has news."""
        done = sum(t.state == TrialState.COMPLETE for t in study.get_trials(deepcopy=False))
        return self._plan_now(done) or bool(self.queue or self.made)

    def _plan_now(self, done: int) -> bool:
        due = self.after + self.rounds * self.every
        return not self.queue and done >= due and (self.rounds == 0 or bool(self.every))

    def plan(
        self,
        study: Study,
        trial: FrozenTrial,
        best: FrozenTrial,
        fitted: Fitted | None,
        share: Share | None,
        refused: Verdict | None,
    ) -> dict[str, Any] | None:
        """The next swap for ``trial`` (None: none): made at ``best``, judged by the additive
        model ``fitted``, repaired against the crash model's ``share`` and ``refused``. A
        swap that crashed as it was, or ran repaired within ``NEAR`` of what the choice it
        replaced would do there, is made again from what it taught (a bisection of the
        repaired number's edge); one whose repair crashed before any launch of it ran is made
        again with another number moved (``retry``); up to ``SWAP_MOST`` launches of each."""
        trials = study.get_trials(deepcopy=False)
        done = sum(t.state == TrialState.COMPLETE for t in trials)
        if self._plan_now(done):
            self.rounds += 1
            self.queue = [
                (n, c, None, frozenset())
                for n, d in best.distributions.items()
                if isinstance(d, CategoricalDistribution)
                for c in d.choices
            ]
        for t in trials:  # what a finished swap taught: try it again, or not
            if t.number not in self.made or t.state == TrialState.RUNNING:
                continue
            name, choice, base, moved, avoid = self.made.pop(t.number)
            repaired = moved is not None
            pair = (name, repr(choice))
            if t.state == TrialState.COMPLETE:
                self.ran.add(pair)
            # Crashed as it was: once more, repaired. Ran repaired, and the choice did about
            # as well as the one it replaced would at those settings (the model's guess): once
            # more nearer the edge. Crashed repaired before any launch of it ran: the repair
            # moved a number that was not the cause (a crash's explanations often tie), so
            # once more with another number moved (``retry``). Crashed nearer the edge: done.
            again = failed(t) and not repaired
            if self.retry and failed(t) and moved is not None and pair not in self.ran:
                avoid = avoid | {moved}
                again = True
            if repaired and t.state == TrialState.COMPLETE and t.value and fitted is not None:
                other = float(fitted[0].predict([{**t.params, name: base[name]}])[0])
                again = sign(study) * math.log(max(t.value, 1e-12)) - other > -NEAR
            if again and self.launches.get(pair, 0) < SWAP_MOST:
                # From the configuration it was made from: the swap may be the best now,
                # and its repaired number is what the next launch moves nearer the edge.
                self.queue.insert(0, (name, choice, base, avoid))
        seen = {key(t.params) for t in trials if t.params}
        while self.queue:
            name, choice, made_from, avoid = self.queue.pop(0)
            base = made_from or dict(best.params)
            if name not in base or same_value(base[name], choice):
                continue
            swapped = {**base, name: choice}
            # A retest goes as it is, whatever the additive model and the crash model say.
            retest = (
                made_from is None
                and self.retest
                and _crashed_once_at_baseline(trials, swapped, name)
            )
            config = (
                swapped
                if retest
                else self._repaired(
                    swapped, base, made_from, name, avoid, best, fitted, share, refused
                )
            )
            if config is None or key(config) in seen:
                continue
            moved = next((n for n in config if not same_value(config[n], swapped[n])), None)
            self.made[trial.number] = (name, choice, base, moved, avoid)
            pair = (name, repr(choice))
            self.launches[pair] = self.launches.get(pair, 0) + 1
            if retest:
                self.retests.add(trial.number)
            return config
        return None

    def _repaired(
        self,
        swapped: dict[str, Any],
        base: dict[str, Any],
        made_from: dict[str, Any] | None,
        name: str,
        avoid: frozenset[str],
        best: FrozenTrial,
        fitted: Fitted | None,
        share: Share | None,
        refused: Verdict | None,
    ) -> dict[str, Any] | None:
        """``swapped`` as ``repair`` makes it launchable (None: not tried, the model calls it
        clearly worse than ``base``, or no repair)."""
        model = fitted[0] if fitted is not None else None
        floor = None
        if model is not None:
            at_swap, at_base = (float(v) for v in model.predict([swapped, base]))
            # A choice the model calls clearly worse is not tried; one made again is, as
            # what it taught says go on, whatever the model says.
            if made_from is None and at_swap - at_base < -NEAR:
                return None
            if self.choice_floor != "none":
                floor = (at_base if self.choice_floor == "best" else at_swap) - NEAR
        risk = self.risk if made_from is not None else SWAP_RISK
        return repair(
            swapped,
            best.distributions,
            {name, *avoid},
            share,
            refused,
            risk,
            self.choice_risk,
            model,
            floor,
        )


def _crashed_once_at_baseline(
    trials: list[FrozenTrial], swapped: dict[str, Any], name: str
) -> bool:
    """Whether ``swapped[name]`` was launched exactly once, with every other setting at the
    baseline's values (the one-at-a-time start or a crash's ablation), crashed there for a
    cause that may depend on the other settings (not ``INHERENT``), and never ran, while
    ``swapped`` has another value of some other setting (``RETEST``). A crash with other
    settings moved too already tells the crash model which ones came with it."""
    value = swapped[name]
    had = [t for t in trials if name in t.params and same_value(t.params[name], value)]
    crashed = [t for t in had if failed(t) and t.constraints.get(CRASH, 0.0) > 0]
    if len(crashed) != 1 or any(not failed(t) for t in had if t.state != TrialState.RUNNING):
        return False
    if cause_of(crashed[0]) in INHERENT:
        return False
    other = crashed[0].params
    bases = [t.params for t in trials if is_baseline(t) and set(t.params) == set(other)]
    return any(
        all(same_value(other[n], v) for n, v in b.items() if n != name) for b in bases
    ) and any(not same_value(other[n], v) for n, v in swapped.items() if n != name)


def repair(
    config: dict[str, Any],
    dists: Mapping[str, BaseDistribution],
    fixed: set[str],
    share: Share | None,
    refused: Verdict | None,
    most: float = SWAP_RISK,
    choice_risk: float = 0.0,
    model: AdditiveModel | None = None,
    floor: float | None = None,
) -> dict[str, Any] | None:
    """``config``, or the configuration with one number (not of ``fixed``) moved the least
    way, in sixteenths of the way to an end of its range, that meets the fewest of a crash's
    explanations (``share``, at most ``most`` and not all) and that the crash model does not
    refuse (None: none). With ``choice_risk``, a categorical or bool (not of ``fixed``) moved
    to another choice is a repair too, as far as a number's move across ``CHOICE_SHIFT`` of
    [-1, 1], that may meet up to ``choice_risk``; of such repairs that tie, the one ``model``
    rates best, and none it rates below ``floor``."""

    def no(c: Mapping[str, Any]) -> bool:
        return refused is not None and refused(c)

    def met(c: Mapping[str, Any]) -> float:
        return (share(c) if share is not None else None) or 0.0

    first = met(config)
    if first == 0.0 and not no(config):
        return config
    # (explanations met, how far the move goes, minus the model's prediction, the most
    # explanations it may meet, the configuration)
    tries: list[tuple[float, float, float, float, dict[str, Any]]] = [
        (first, 0.0, 0.0, most, config)
    ]
    for n, d in dists.items():
        if n in fixed or n not in config:
            continue
        if choice_risk and isinstance(d, CategoricalDistribution):
            for choice in d.choices:
                if not same_value(choice, config[n]):
                    c = {**config, n: choice}
                    worth = float(model.predict([c])[0]) if model is not None else 0.0
                    if floor is not None and worth < floor:
                        continue
                    tries.append((round(met(c), 3), CHOICE_SHIFT, -worth, choice_risk, c))
            continue
        if not isinstance(d, IntDistribution | FloatDistribution):
            continue
        for end in (d.low, d.high):
            for value in sixteenths(d, config[n], end):
                c = {**config, n: value}
                shift = abs(scaled(d, value) - scaled(d, config[n]))
                tries.append((round(met(c), 3), shift, 0.0, most, c))
    for m, _, _, limit, c in sorted(tries, key=lambda t: t[:3]):  # the fewest explanations
        if m <= limit and m < 1.0 and not no(c):  # met, then the least move
            return c
    return None


__all__ = ["RETEST", "RETRY", "SWAP", "SWAP_MOST", "SWAP_RISK", "Swaps", "repair"]
