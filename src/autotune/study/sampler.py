"""The search's proposals: a one-at-a-time start, then TPE, local moves and an additive model.

TPE finds the right region quickly but, with 30 launches over five or more parameters, rarely
puts every parameter at its best at once, and the best points of server tuning sit at edges
(the largest batch that still fits). So the proposals are mixed:

- ``design``: the first proposals after the baseline are the baseline with one parameter
  moved: a number to the far end of its range, a categorical or bool to another choice (as
  SGLang's auto_benchmark tiers start), every choice of a categorical once (up to
  ``DESIGN_MOST`` launches). A crash region that needs two settings together costs nothing
  here, and the additive model gets each setting's and each choice's own effect. It starts
  as soon as the baseline is launched (other nodes need not wait for its result). A setting
  the baseline leaves to the engine (an NCCL variable left unset) has no value to move from:
  the design first launches the baseline with each such setting at a reference value (a
  number's middle on its scale, a categorical's first choice), then moves every setting from
  there, so that each launch still differs from another in one value. A number whose far
  end read no better than the baseline is then tried half-way there too (``mid``): a buffer
  size can read alike at both ends and peak between them, which no effect fitted to the ends
  can show.
- ``model`` (share of later proposals): the candidate near the best configurations with the
  largest expected improvement under an additive model of the objective (``additive.py``:
  a choice few launches had is uncertain, so it is worth a try where a sure small step is
  not), weighed against the crash model's probability (``risky``), never one the crash model
  refuses or one launched before. Of the candidates whose score is within ``novel`` of the
  best one's, it is the one that puts the fewest choices of a categorical or bool together
  with values of another setting that no run had with them: crash regions are mostly such
  pairs (a backend with a large batch), and a crash with one new pair has one explanation
  where a crash with several new pairs has as many.
- ``local`` (share): the best configuration with one or two values moved a little: a number
  by a small step on its own scale, a categorical or bool to another value.
- ``swap`` (once, after ``SWAP`` complete trials): the best configuration with each other
  choice of a categorical or bool, where the additive model does not call it clearly worse.
  A choice is otherwise judged at the settings of the choice it competes with: a backend
  that crashes above a batch size another one takes looks worse at that batch size and
  never wins, though below its edge it is the faster. A swap the crash model refuses moves
  one number the least way out of the crash's explanations; one that crashed as it was is
  made once more so repaired, and one that ran repaired about as well as the choice it
  replaced would there is made again nearer the edge the crash model has learned since, from
  the configuration it was first made from (it may be the best one by then). A repair that
  crashed before any launch of its swap ran moved a number that was not the cause (a crash
  at a large batch with a new buffer size is explained by either, and the buffer was the
  smaller move): the swap is made once more with that number left and another one moved.
- ``edge step`` (of the model's share, once the swaps are over): the best configuration with
  one number moved toward a crash edge the crash model has learned, as far as its crash
  probability stays low (``edge_risk``), where the additive model predicts a gain: the best
  points sit at edges (the largest batch that still fits), and the model's own candidates
  weigh the probability that the few runs below the edge leave high, so they creep. Before
  the swaps, an edge reached for one choice puts the best where other choices crash.
- everything else is TPE's.

Crashed and refused proposals are told to the study like any other trial, so TPE learns from
them too; the crash models still vet every proposal before it is launched. The shares were
chosen on bench/search and the black boxes (docs/benchmarks.md).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.samplers import BaseSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from autotune.space.schema import same_value
from autotune.study.additive import (
    FINE_KNOTS,
    KNOTS,
    AdditiveModel,
    candidates,
    on_grid,
    scaled,
)
from autotune.study.ledger import is_baseline, is_enqueued
from autotune.study.outcome import CRASH, SKIP

# The defaults, chosen on bench/search and the black boxes (docs/benchmarks.md).
LOCAL_SHARE = 0.2  # share of local moves
MODEL_SHARE = 0.5  # share of the additive model's proposals
DESIGN = -1  # one-at-a-time launches from the baseline first (-1: each value and choice once)
DESIGN_MOST = 8  # the most launches the whole design (-1) makes
REACH = 1.0  # how far (of the [-1, 1] range) a model proposal moves a number
RISKY = 2.0  # weight of log(1 - crash probability) against the proposal's log score
SWAP = 12  # complete trials before each other choice is tried at the best configuration
SWAP_NEAR = 0.05  # a repaired swap this close to the best (log) bisects its edge again
SWAP_MOST = 3  # the most launches of one swap
SWAP_RISK = 0.5  # the largest share of crash explanations a swap may still meet
RETRY = True  # a repaired swap that crashed is made once more with another number moved
EDGE_STEP = True  # once the swaps are over, model draws step a number toward a learned edge
EDGE_RISK = 0.25  # the highest crash probability an edge step goes to
EDGE_GAIN = 0.02  # the least gain (log) the additive model predicts for an edge step
FINE = True  # the additive model may bend finer where that predicts left-out launches better
MID = "flat"  # the design also tries half-way a number whose far end read no better ("all", "off")
EI = True  # rank the model's candidates by expected improvement, not predicted value
NOVEL = 0.7  # of model candidates this close to the best score (log), the fewest new pairs
NOVEL_NEAR = 0.25  # a number this near (share of its scaled range) is the same value


class LocalTPESampler(BaseSampler):
    """A one-at-a-time start, then TPE, small moves of the best and additive-model proposals.

    Args:
        tpe: the TPE sampler that makes every other proposal.
        local: share of trials that are local moves.
        after: complete trials needed before the first local move or model proposal.
        step: size of a numeric move, as a share of the range (one standard deviation).
        design: one-at-a-time proposals from the baseline before anything else (0: none; -1:
            each parameter once and each other choice of a categorical, at most DESIGN_MOST).
        model: share of trials that are the additive model's best candidate.
        reach: how far a model candidate moves a number from where it was, on [-1, 1].
        most: the most parameters one model candidate moves at random.
        risky: weight of log(1 - crash probability) against the model's log score.
        gain: least predicted log gain for a model proposal (measured, off).
        ei: rank model candidates by expected improvement (else by predicted value).
        unset: the design also moves the settings a partial baseline leaves unset, from
            their reference values (else they are TPE's draws; measured, on).
        early: the design starts while the baseline is running (else after its result).
        center: the design starts from every setting at its reference value, not from the
            baseline's values (measured, off: docs/benchmarks.md).
        swap: complete trials before each other choice of a categorical or bool is tried at
            the best configuration (0: never; see ``_plan_swap``).
        swap_every: complete trials between later rounds of swaps (0: one round; measured,
            off).
        retry: a swap whose repair crashed before any launch of it ran is made once more
            with another number moved (the crash says the one moved was not the cause).
        novel: of the model's candidates within this much of the best score (log), the one
            with the fewest untried pairs of a choice and another value is proposed (0: the
            best score alone; needs ``crash_risk``).
        mid: ``flat`` (the default): the design also tries half-way to its far end a number
            whose far end read no better than the baseline (within ``SWAP_NEAR``); ``all``:
            every number (measured, off); ``off``: none.
        edge_step: once the swaps are over, a model draw first steps one number of the best
            configuration toward a learned crash edge (``_plan_edge_step``).
        edge_risk: the highest crash probability an edge step goes to (0.5: a bisection of
            the learned ramp; measured, 0.25 kept).
        fine: the additive model is fitted with finer bends too (``FINE_KNOTS``), and the one
            with the smaller leave-one-out error is used.
        seed: seed of the local draws.

    The driver sets ``refused``, ``crash_risk`` and ``crash_share`` (the crash model's verdict,
    probability, and share of explanations met at their thresholds) so that model proposals
    skip and weigh crashes and swaps are repaired; unset, they do not.
    It sets ``space`` (the distributions of the parameters every configuration has) so that
    the design also moves the settings a partial baseline leaves unset.
    """

    def __init__(
        self,
        tpe: BaseSampler,
        *,
        local: float = LOCAL_SHARE,
        after: int = 8,
        step: float = 0.12,
        design: int = DESIGN,
        model: float = MODEL_SHARE,
        reach: float = REACH,
        most: int = 3,
        risky: float = RISKY,
        gain: float = 0.0,
        ei: bool = EI,
        unset: bool = True,
        early: bool = True,
        center: bool = False,
        swap: int = SWAP,
        swap_every: int = 0,
        retry: bool = RETRY,
        mid: str = MID,
        edge_step: bool = EDGE_STEP,
        edge_risk: float = EDGE_RISK,
        fine: bool = FINE,
        novel: float = NOVEL,
        seed: int | None = None,
    ) -> None:
        self._retry = retry
        self._edge_step = edge_step
        self._edge_risk = edge_risk
        self._fine = fine
        if mid not in ("flat", "all", "off"):
            raise ValueError(f"mid must be flat, all or off, not {mid!r}")
        self._mid = mid
        self._whole = design < 0  # the whole design: every move once
        self._novel = novel
        self._ei = ei
        self._swap = swap
        # (parameter, choice, the configuration it is made from: None for the best) to try
        # (and the numbers a repair may not move: one whose repair crashed)
        self._swaps: list[tuple[str, Any, dict[str, Any] | None, frozenset[str]]] = []
        self._swap_every = swap_every
        self._rounds = 0  # rounds of swaps planned
        # trial -> (parameter, choice, the configuration it was made from, the number the
        # repair moved or None, the numbers it could not move)
        self._swapped: dict[int, tuple[str, Any, dict[str, Any], str | None, frozenset[str]]] = {}
        self._swap_launches: dict[tuple[str, str], int] = {}  # launches of each swap
        self._swap_ran: set[tuple[str, str]] = set()  # swaps a launch of which ran
        self._unset = unset
        self._early = early
        self._center = center
        self._tpe = tpe
        self._model = model
        self._reach = reach
        self._most = most
        self._risky = risky
        self._gain = gain
        self.crash_risk: Callable[[Mapping[str, Any]], float | None] | None = None
        # the share of some crash's explanations a configuration meets at their thresholds
        self.crash_share: Callable[[Mapping[str, Any]], float | None] | None = None
        self.refused: Callable[[Mapping[str, Any]], bool] | None = None
        self.space: Mapping[str, BaseDistribution] = {}
        self._designed: set[int] = set()  # trials that are design launches
        self._design = design  # one-at-a-time launches from the baseline still to make
        self._design_at = 0  # where in the design's order (``_design_order``) the next one is
        self._local = local
        self._after = after
        self._step = step
        self._rng = random.Random(seed)
        self._moves: dict[int, dict[str, Any]] = {}  # trial -> the configuration it proposes

    def reseed_rng(self) -> None:
        self._tpe.reseed_rng()
        self._rng.seed()

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._tpe.before_trial(study, trial)
        if is_enqueued(trial):
            return
        if self._design != 0 and self._plan_design(study, trial):
            return
        if self._swap and self._plan_swap(study, trial):
            return
        draw = self._rng.random()
        if draw >= self._local + self._model:
            return
        # A baseline that leaves settings unset is no place to move from: moves start from
        # the best configuration that names them all.
        best = _best(study, need=set(self.space) if self._unset else None) or _best(study)
        if best is None:
            return
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if len(done) < self._after:
            return
        if draw >= self._local:
            fitted = _fit(study, best, self._fine)  # one fit serves both
            if fitted is None:
                return
            if self._edge_step and self._swaps_over():
                if self._plan_edge_step(study, trial, best, fitted[0]):
                    return
            self._plan_model(study, trial, best, fitted)
            return
        names = list(best.params)
        moved = set(self._rng.sample(names, k=min(len(names), self._rng.choice((1, 1, 2)))))
        self._moves[trial.number] = {
            n: _nudge(best.distributions[n], v, self._rng, self._step) if n in moved else v
            for n, v in best.params.items()
        }

    def _plan_model(
        self,
        study: Study,
        trial: FrozenTrial,
        best: FrozenTrial,
        fitted: tuple[AdditiveModel, list[FrozenTrial]],
    ) -> bool:
        """Make this trial the best candidate of the additive model ``fitted`` (``_fit``)
        that was never launched and that the crash model lets through (False: none)."""
        sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
        trials = study.get_trials(deepcopy=False)
        model, rows = fitted
        tops = sorted(rows, key=lambda t: -sign * float(t.value or 0.0))[:3]
        seen = {_key(t.params) for t in trials if t.params and t.number != trial.number}
        pool = [
            c
            for c in candidates(
                best.distributions,
                [t.params for t in tops],
                self._rng,
                reach=self._reach,
                most=self._most,
            )
            if _key(c) not in seen and (self.refused is None or not self.refused(c))
        ]
        if not pool:
            return False
        predicted = model.predict(pool)
        ref = float(model.predict([best.params])[0])
        if self._ei:  # the expected improvement over the best (log scale): an uncertain
            # prediction (a value few launches had) may be worth more than a sure small step
            score = np.log(_expected_improvement(predicted, model.std(pool), ref) + 1e-12)
        else:
            score = predicted
        if self._risky and self.crash_risk is not None:
            risk = np.array([self.crash_risk(c) or 0.0 for c in pool])
            score = score + self._risky * np.log1p(-np.minimum(risk, 0.95))
        if self._gain and float(predicted.max()) - ref < self._gain:
            return False  # a predicted gain within the noise: polishing, not progress
        if self._novel and self.crash_risk is not None:
            # Of the candidates about as good as the best one, the one that puts the fewest
            # choices together with values they never ran with: a crash region is mostly a
            # choice with a value of another setting, and a crash with one such pair new
            # has one explanation, where one with several has as many.
            pairs = _untried_pairs(best.distributions, pool, [t.params for t in rows])
            near = np.flatnonzero(score >= float(score.max()) - self._novel)
            chosen = pool[min(near, key=lambda i: (pairs[i], -score[i]))]
        else:
            chosen = pool[int(score.argmax())]
        self._moves[trial.number] = chosen
        return True

    def _swaps_over(self) -> bool:
        """Whether the round of swaps is over (or swaps are off)."""
        return not self._swap or (self._rounds > 0 and not self._swaps and not self._swapped)

    def _plan_edge_step(
        self, study: Study, trial: FrozenTrial, best: FrozenTrial, model: AdditiveModel
    ) -> bool:
        """Make this trial the best configuration with one number moved toward a crash edge
        the crash model has learned: as far toward an end of its range (in sixteenths of the
        way) as the crash probability stays within ``edge_risk``, where a crash lies beyond
        and the additive model predicts at least ``EDGE_GAIN`` (the largest such gain; False:
        none). A batch size below the edge that crashed at a larger one stays there
        otherwise: the model's candidates near the edge weigh a probability that the few
        runs between leave high, and the best one is a small step. A run moves the ramp's
        low end up and a crash its high end down, so steps made again close in on the edge."""
        if self.crash_risk is None:
            return False
        ref = float(model.predict([best.params])[0])
        seen = {_key(t.params) for t in study.get_trials(deepcopy=False) if t.params}
        steps: list[tuple[float, dict[str, Any]]] = []
        for n, d in best.distributions.items():
            if not isinstance(d, IntDistribution | FloatDistribution):
                continue
            for end in (d.low, d.high):
                line = [{**best.params, n: v} for v in _sixteenths(d, best.params[n], end)]
                risk = [self.crash_risk(c) or 0.0 for c in line]
                beyond = next((i for i, p in enumerate(risk) if p > self._edge_risk), None)
                if not beyond:  # no learned edge that way, or one already too near
                    continue
                c = line[beyond - 1]
                if _key(c) not in seen and not (self.refused is not None and self.refused(c)):
                    steps.append((float(model.predict([c])[0]) - ref, c))
        gain, config = max(steps, key=lambda s: s[0], default=(0.0, None))
        if config is None or gain < EDGE_GAIN:
            return False
        self._moves[trial.number] = config
        return True

    def _plan_swap(self, study: Study, trial: FrozenTrial) -> bool:
        """Make this trial the best configuration with one categorical or bool at another
        choice, each once, after ``swap`` complete trials: a choice whose best settings differ
        (a backend that crashes above a batch size the other takes) is otherwise judged at the
        other choice's settings and never wins. A choice the additive model calls clearly
        worse is left out. A swap the crash model refuses is repaired: one number moves the
        least way out of the crash's explanations. A swap that crashed as it was, or ran
        repaired within ``SWAP_NEAR`` of what the choice it replaced would do there, is made
        again from what it taught (a bisection of the repaired number's edge); one whose
        repair crashed before any launch of it ran is made again with another number moved
        (``retry``); up to ``SWAP_MOST`` launches of each."""
        trials = study.get_trials(deepcopy=False)
        done = sum(t.state == TrialState.COMPLETE for t in trials)
        due = self._swap + self._rounds * self._swap_every
        plan = not self._swaps and done >= due and (self._rounds == 0 or bool(self._swap_every))
        if not (plan or self._swaps or self._swapped):
            return False
        best = _best(study, need=set(self.space) if self._unset else None) or _best(study)
        if best is None:
            return False
        if plan:
            self._rounds += 1
            self._swaps = [
                (n, c, None, frozenset())
                for n, d in best.distributions.items()
                if isinstance(d, CategoricalDistribution)
                for c in d.choices
            ]
        fitted = _fit(study, best, self._fine)
        for t in trials:  # what a finished swap taught: try it again, or not
            if t.number not in self._swapped or t.state == TrialState.RUNNING:
                continue
            name, choice, base, moved, avoid = self._swapped.pop(t.number)
            repaired = moved is not None
            pair = (name, repr(choice))
            if t.state == TrialState.COMPLETE:
                self._swap_ran.add(pair)
            # Crashed as it was: once more, repaired. Ran repaired, and the choice did about
            # as well as the one it replaced would at those settings (the model's guess): once
            # more nearer the edge. Crashed repaired before any launch of it ran: the repair
            # moved a number that was not the cause (a crash's explanations often tie), so
            # once more with another number moved (``retry``). Crashed nearer the edge: done.
            again = _failed(t) and not repaired
            if self._retry and _failed(t) and moved is not None and pair not in self._swap_ran:
                avoid = avoid | {moved}
                again = True
            if repaired and t.state == TrialState.COMPLETE and t.value and fitted is not None:
                sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
                other = float(fitted[0].predict([{**t.params, name: base[name]}])[0])
                again = sign * math.log(max(t.value, 1e-12)) - other > -SWAP_NEAR
            if again and self._swap_launches.get(pair, 0) < SWAP_MOST:
                # From the configuration it was made from: the swap may be the best now,
                # and its repaired number is what the next launch moves nearer the edge.
                self._swaps.insert(0, (name, choice, base, avoid))
        seen = {_key(t.params) for t in trials if t.params}
        while self._swaps:
            name, choice, made_from, avoid = self._swaps.pop(0)
            base = made_from or dict(best.params)
            if name not in base or same_value(base[name], choice):
                continue
            swapped = {**base, name: choice}
            # A choice the model calls clearly worse is not tried; one made again is, as what
            # it taught says go on, whatever the model says.
            if fitted is not None and made_from is None:
                gain = fitted[0].predict([swapped])[0] - fitted[0].predict([base])[0]
                if gain < -SWAP_NEAR:
                    continue
            config = self._repair(swapped, best.distributions, {name, *avoid})
            if config is None or _key(config) in seen:
                continue
            self._moves[trial.number] = config
            moved = next((n for n in config if not same_value(config[n], swapped[n])), None)
            self._swapped[trial.number] = (name, choice, base, moved, avoid)
            pair = (name, repr(choice))
            self._swap_launches[pair] = self._swap_launches.get(pair, 0) + 1
            return True
        return False

    def _repair(
        self,
        config: dict[str, Any],
        dists: Mapping[str, BaseDistribution],
        fixed: set[str],
    ) -> dict[str, Any] | None:
        """``config``, or the configuration with one number moved the least way (in sixteenths
        of the way to an end of its range) that meets the fewest of a crash's explanations
        (at most ``SWAP_RISK``) and that the crash model does not refuse (None: none)."""

        def refused(c: Mapping[str, Any]) -> bool:
            return self.refused is not None and self.refused(c)

        def share(c: Mapping[str, Any]) -> float:
            return (self.crash_share(c) if self.crash_share is not None else None) or 0.0

        first = share(config)
        if first == 0.0 and not refused(config):
            return config
        tries: list[tuple[float, float, dict[str, Any]]] = [(first, 0.0, config)]
        for n, d in dists.items():
            if n in fixed or n not in config:
                continue
            if not isinstance(d, IntDistribution | FloatDistribution):
                continue
            for end in (d.low, d.high):
                for value in _sixteenths(d, config[n], end):
                    c = {**config, n: value}
                    shift = abs(scaled(d, value) - scaled(d, config[n]))
                    tries.append((round(share(c), 3), shift, c))
        for met, _, c in sorted(tries, key=lambda t: t[:2]):  # the fewest explanations met,
            if met <= SWAP_RISK and not refused(c):  # then the least move
                return c
        return None

    def _plan_design(self, study: Study, trial: FrozenTrial) -> bool:
        """Make this trial the baseline with one parameter at an end of its range (or another
        choice): the first pass moves each parameter once, the second to its other end. A
        baseline that leaves settings unset is first launched with them at their reference
        values, and every move starts from there."""
        trials = study.get_trials(deepcopy=False)
        ready = (TrialState.COMPLETE, TrialState.RUNNING) if self._early else (TrialState.COMPLETE,)
        base = next(
            (
                t
                for t in trials
                if t.state in ready
                and is_baseline(t)
                and (t.params or (self.space and self._unset))
            ),
            None,
        )
        if base is None:
            return False
        kept = {} if self._center else base.params  # the values the start moves from
        space = self.space if self._unset else {}
        unset = {n: d for n, d in space.items() if n not in kept}
        dists = {**base.distributions, **unset}
        ref = {**kept, **{n: _reference(d) for n, d in unset.items()}}
        if unset and any(_failed(t) and _has(t.params, ref) for t in trials):
            # The reference launch crashed or was refused: every move from it would share
            # what failed, so the start ends here.
            self._design = 0
            return False
        seen = {_key(t.params) for t in trials if t.params}
        # (None, 0): the reference configuration itself, when it is not the baseline
        order: list[tuple[str | None, int]] = [(None, 0)] if unset else []
        # A design of every move (-1) has no near ends: they would take the half-way
        # launches' places where those are not made.
        order += _design_order(dists, list(ref), self._mid != "off", ends=not self._whole)
        if self._design < 0:  # every parameter once and every other choice of a categorical
            choices = {n for n, d in dists.items() if isinstance(d, CategoricalDistribution)}
            moves = sum(k <= 0 or n in choices for n, k in order if n is not None)
            self._design = min(DESIGN_MOST, moves + bool(unset))
        for name, k in order[self._design_at :]:
            if self._design <= 0:
                break
            self._design_at += 1
            if k < 0 and name is not None and not self._flat_end(study, trials, ref, dists, name):
                continue  # half-way only where the far end did no better than the baseline
            self._design -= 1
            config = dict(ref)
            if name is not None:
                config[name] = _end(dists[name], ref[name], k, self._rng)
            if _key(config) in seen:  # launched before this driver (a resumed study)
                continue
            self._moves[trial.number] = config
            self._designed.add(trial.number)
            return True
        self._design = 0
        return False

    def _flat_end(
        self,
        study: Study,
        trials: Sequence[FrozenTrial],
        ref: Mapping[str, Any],
        dists: Mapping[str, BaseDistribution],
        name: str,
    ) -> bool:
        """Whether the design's launch of ``name`` at its far end ran and read no better than
        the baseline (by ``SWAP_NEAR``, log): a number whose far end does nothing may peak
        inside its range (a buffer size), which the two ends cannot show. With ``mid`` "all",
        every number is tried half-way."""
        if self._mid == "all":
            return True
        sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
        far = {**ref, name: _end(dists[name], ref[name], 0, self._rng)}
        end = [_read(t) for t in trials if t.params and _has(t.params, far)]
        base = [_read(t) for t in trials if is_baseline(t) and t.state == TrialState.COMPLETE]
        end_v = [v for v in end if v is not None and v > 0]
        base_v = [v for v in base if v is not None and v > 0]
        if not end_v or not base_v:
            return False
        gain = sign * (math.log(statistics.median(end_v)) - math.log(statistics.median(base_v)))
        return gain <= SWAP_NEAR

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        if trial.number in self._moves:
            return {}
        return self._tpe.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if trial.number in self._moves:
            return {}
        return self._tpe.sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        move = self._moves.get(trial.number)
        if move is not None and param_name in move:
            value = move[param_name]
            if not param_distribution._contains(param_distribution.to_internal_repr(value)):
                return _nudge(param_distribution, value, self._rng, self._step)  # out of range
            return value
        if trial.number in self._designed and self._unset:  # a setting the move turned on
            return _reference(param_distribution)
        return self._tpe.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._moves.pop(trial.number, None)
        self._designed.discard(trial.number)
        self._tpe.after_trial(study, trial, state, values)


def _fit(
    study: Study, best: FrozenTrial, fine: bool = True
) -> tuple[AdditiveModel, list[FrozenTrial]] | None:
    """The additive model of the (log) objective over the trials with ``best``'s parameters,
    and those that met their constraints (None: too few to fit). With ``fine``, the model
    with finer bends (``FINE_KNOTS``) where it predicts left-out launches better."""
    sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
    trials = study.get_trials(deepcopy=False)
    alike = [t for t in trials if set(t.params) == set(best.params)]
    rows = [
        t
        for t in alike
        if t.state == TrialState.COMPLETE
        and t.value is not None
        and not any(v > 0 for v in t.constraints.values())
    ]
    # A trial the pruner stopped measured a window or two: what it read still says how
    # its settings did (the one-at-a-time start's worse settings are mostly pruned).
    stopped = [t for t in alike if t.state == TrialState.PRUNED and _read(t) is not None]
    configs = [t.params for t in rows] + [t.params for t in stopped]
    raw = [_read(t) or 0.0 for t in rows + stopped]
    # Effects multiply (tok/s, latency): fit their logs, the larger the better.
    if all(v > 0 for v in raw):
        values = [sign * math.log(v) for v in raw]
    else:
        values = [sign * v for v in raw]
    knots = (KNOTS, FINE_KNOTS) if fine else (KNOTS,)
    models = [AdditiveModel(best.distributions, k) for k in knots]
    if not all([m.fit(configs, values) for m in models]):  # too few launches for either
        return None
    return min(models, key=lambda m: m.loo), rows


def _untried_pairs(
    dists: Mapping[str, BaseDistribution],
    configs: Sequence[Mapping[str, Any]],
    ran: Sequence[Mapping[str, Any]],
) -> np.ndarray:
    """Per configuration, how many pairs of its values, one of them a categorical's or bool's
    choice, no configuration of ``ran`` had together (a number within ``NOVEL_NEAR`` of its
    scaled range counts as the same value)."""
    names = list(dists)
    choice = [isinstance(dists[n], CategoricalDistribution) for n in names]
    count = np.zeros(len(configs))
    if not ran:
        return count

    def coords(cs: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """A choice's index (-1: none of them), a number on [-1, 1] of its scale."""
        out = np.zeros((len(cs), len(names)))
        for j, n in enumerate(names):
            d = dists[n]
            for i, c in enumerate(cs):
                if isinstance(d, CategoricalDistribution):
                    out[i, j] = next(
                        (k for k, x in enumerate(d.choices) if same_value(x, c.get(n))), -1
                    )
                else:
                    out[i, j] = scaled(d, c.get(n))
        return out

    # far[i, r, j]: configuration i's value of parameter j is not run r's, nor near it
    gap = np.abs(coords(configs)[:, None, :] - coords(ran)[None, :, :])
    far = np.where(choice, gap > 0, gap / 2 > NOVEL_NEAR)
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if choice[i] or choice[j]:
                count += np.all(far[:, :, i] | far[:, :, j], axis=1)
    return count


def _design_order(
    dists: Mapping[str, BaseDistribution],
    names: Sequence[str],
    mid: bool = False,
    ends: bool = True,
) -> list[tuple[str, int]]:
    """The one-at-a-time design's launches as (parameter, pass) for ``_end``: every parameter
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


def _reference(d: BaseDistribution) -> Any:
    """The value a design launch gives a setting it does not move and the baseline leaves
    unset: a number's middle on its scale (on its grid), a categorical's first choice."""
    if isinstance(d, CategoricalDistribution):
        return d.choices[0]
    if isinstance(d, IntDistribution | FloatDistribution):
        low, high = float(d.low), float(d.high)
        return on_grid(d, math.sqrt(low * high) if d.log else (low + high) / 2)
    raise TypeError(f"no reference value for {d!r}")


def _expected_improvement(mu: np.ndarray, sd: np.ndarray, ref: float) -> np.ndarray:
    """E[max(0, f - ref)] for f ~ N(mu, sd^2), elementwise."""
    z = (mu - ref) / sd
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return np.asarray(sd * (z * cdf + pdf))


def _read(t: FrozenTrial) -> float | None:
    """What a trial measured: its value, or the mean of the windows a pruned one read (None:
    nothing, a crash)."""
    if t.state == TrialState.COMPLETE and t.value is not None:
        return float(t.value)
    crashed = t.constraints.get(CRASH, 0.0) > 0
    if t.state == TrialState.PRUNED and t.intermediate_values and not crashed:
        return statistics.mean(t.intermediate_values.values())
    return None


def _failed(t: FrozenTrial) -> bool:
    """A trial that crashed or was not launched (refused, broke a constraint)."""
    return t.state == TrialState.PRUNED and (
        t.constraints.get(CRASH, 0.0) > 0 or t.constraints.get(SKIP, 0.0) > 0
    )


def _has(params: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether ``params`` has every value of ``config`` (and maybe conditional others)."""
    return all(n in params and same_value(params[n], v) for n, v in config.items())


def _key(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _best(study: Study, need: set[str] | None = None) -> FrozenTrial | None:
    """The best measured trial that met its constraints (and names every parameter of
    ``need``)."""
    sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
    best: FrozenTrial | None = None
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.value is None or any(v > 0 for v in t.constraints.values()):
            continue
        if need and not need <= set(t.params):
            continue
        if best is None or sign * t.value > sign * (best.value or 0.0):
            best = t
    return best


def _toward(d: IntDistribution | FloatDistribution, value: Any, end: Any, f: float) -> Any:
    """The point ``f`` of the way from ``value`` to ``end`` on the parameter's scale, on its
    grid."""
    a, b = float(value), float(end)
    if d.log and a > 0 and b > 0:
        return on_grid(d, math.exp(math.log(a) + f * (math.log(b) - math.log(a))))
    return on_grid(d, a + f * (b - a))


def _sixteenths(d: IntDistribution | FloatDistribution, value: Any, end: Any) -> list[Any]:
    """The points 1/16, 2/16, ... of the way from ``value`` to ``end`` on the parameter's
    scale and grid, those that differ from ``value``."""
    points = (_toward(d, value, end, k / 16) for k in range(1, 17))
    return [v for v in points if not same_value(v, value)]


def _end(d: BaseDistribution, value: Any, k: int, rng: random.Random) -> Any:
    """Pass ``k`` of the one-at-a-time design: a number's far end (k=0, the end farther from
    ``value`` on the parameter's scale) or near end (k=1); another choice of a categorical."""
    if isinstance(d, CategoricalDistribution):
        others = [c for c in d.choices if c != value or type(c) is not type(value)]
        return others[k % len(others)] if others else value
    if not isinstance(d, IntDistribution | FloatDistribution):
        return value
    far_high = scaled(d, value) <= 0.0  # nearer the low end on the parameter's scale
    if k < 0:  # half-way to the far end
        return _toward(d, value, d.high if far_high else d.low, 0.5)
    return d.high if far_high == (k == 0) else d.low


def _nudge(d: BaseDistribution, value: Any, rng: random.Random, step: float) -> Any:
    """A value near ``value``: ``step`` of the range away (one sigma) on the parameter's scale."""
    if isinstance(d, CategoricalDistribution):
        others = [c for c in d.choices if c != value or type(c) is not type(value)]
        return rng.choice(others) if others else value
    if not isinstance(d, IntDistribution | FloatDistribution):
        return value
    low, high, x = float(d.low), float(d.high), float(value)
    log = d.log and low > 0 and x > 0
    if log:
        low, high, x = math.log(low), math.log(high), math.log(x)
    for _ in range(8):
        y = min(high, max(low, x + rng.gauss(0.0, step) * (high - low)))
        out = on_grid(d, math.exp(y) if log else y)
        if out != value:
            return out
    return value


__all__ = ["DESIGN", "LOCAL_SHARE", "MODEL_SHARE", "LocalTPESampler"]
