"""The search's proposals: a one-at-a-time start, then TPE, local moves and an additive model.

TPE finds the right region quickly but, with 30 launches over five or more parameters, rarely
puts every parameter at its best at once, and the best points of server tuning sit at edges
(the largest batch that still fits). So the proposals are mixed:

- ``design`` (``design.py``): the first proposals after the baseline are the baseline with
  one setting moved, each once: a crash region that needs two settings together costs nothing
  there, and the additive model gets each setting's and each choice's own effect.
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
  by a small step on its own scale, a categorical or bool to another value; a move the crash
  model gives an even chance of crashing is drawn again (``local_risk``): near a learned edge
  such moves crashed four times in five.
- ``swap`` (``swaps.py``; once, after ``SWAP`` complete trials): the best configuration with
  each other choice of a categorical or bool, repaired below the crash edges learned so far
  (or, where a crash pairs it with another choice, with that one moved, where the model
  does not call the result clearly worse than the best):
  a choice is otherwise judged at the settings of the choice it competes with, and a backend
  that crashes above a batch size another one takes never wins.
- ``edge step`` (of the model's share, once the swaps are over): the best configuration with
  one number moved toward a crash edge the crash model has learned, as far as its crash
  probability stays low (``edge_risk``), where the additive model predicts a gain: the best
  points sit at edges (the largest batch that still fits), and the model's own candidates
  weigh the probability that the few runs below the edge leave high, so they creep. Before
  the swaps, an edge reached for one choice puts the best where other choices crash. No
  step goes past a run that moved the same number the same way from the best and read no
  better (``edge_stop``): a pool's gains level off below its edge, and the model's curve,
  fitted across the whole range, keeps rising there.
- everything else is TPE's, except in the study's last ``endgame`` launches: there TPE's
  share goes to the model and local moves in proportion, as a draw that explores finds
  nothing the study has launches left to follow up (the driver sets ``left``).

Crashed and refused proposals are told to the study like any other trial, so TPE learns from
them too; the crash models still vet every proposal before it is launched. The shares were
chosen on bench/search and the black boxes (docs/benchmarks.md).
"""

from __future__ import annotations

import math
import random
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
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from autotune.space.schema import same_value
from autotune.study.additive import (
    CENTER,
    RIDGE,
    AdditiveModel,
    candidates,
    on_grid,
    scaled,
    sixteenths,
)
from autotune.study.design import DESIGN, MID, Design, reference
from autotune.study.history import best_trial, fit, key, sign
from autotune.study.ledger import is_enqueued, mark_proposed
from autotune.study.swaps import (
    CHOICE_FLOOR,
    CHOICE_RISK,
    RETEST,
    RETRY,
    SWAP,
    SWAP_RISK,
    Swaps,
)

# The defaults, chosen on bench/search and the black boxes (docs/benchmarks.md).
LOCAL_SHARE = 0.2  # share of local moves
LOCAL_RISK = 0.5  # a local move the crash model gives this chance of crashing is drawn again
LOCAL_DRAWS = 8  # the most draws of one local move
MODEL_SHARE = 0.5  # share of the additive model's proposals
REACH = 1.0  # how far (of the [-1, 1] range) a model proposal moves a number
RISKY = 2.0  # weight of log(1 - crash probability) against the proposal's log score
EDGE_STEP = True  # once the swaps are over, model draws step a number toward a learned edge
EDGE_RISK = 0.25  # the highest crash probability an edge step goes to
EDGE_GAIN = 0.02  # the least gain (log) the additive model predicts for an edge step
# no edge step past a run that moved the same number the same way from the best and read no
# better (the model's curve keeps rising where the gains have levelled off)
EDGE_STOP = True
FINE = True  # the additive model may bend finer where that predicts left-out launches better
# a number whose fitted effect peaks inside its range gets a square term too (``history.fit``)
SQUARE = "peaks"
EI = True  # rank the model's candidates by expected improvement, not predicted value
NOVEL = 0.7  # of model candidates this close to the best score (log), the fewest new pairs
ENDGAME = 6  # the last launches of the budget, where TPE's share goes to the model and local moves
NOVEL_NEAR = 0.25  # a number this near (share of its scaled range) is the same value
# the kinds: the one-at-a-time start, a swap, a swap that retests a choice that crashed once
# (the driver launches it unscreened), the additive model, an edge step, a local move, TPE;
# and a crash's one-value test, which the driver enqueues (the baseline, relaunches and
# confirmation rounds have none)
SOURCES = ("design", "swap", "retest", "model", "edge", "local", "tpe", "ablation")


class LocalTPESampler(BaseSampler):
    """A one-at-a-time start, then TPE, small moves of the best and additive-model proposals.

    Args:
        tpe: the TPE sampler that makes every other proposal.
        local: share of trials that are local moves.
        local_risk: a local move the crash model gives this probability of crashing or more is
            drawn again, up to ``LOCAL_DRAWS`` times (1.0: never).
        after: complete trials needed before the first local move or model proposal.
        step: size of a numeric move, as a share of the range (one standard deviation).
        design: one-at-a-time proposals from the baseline before anything else (0: none; -1:
            each parameter once and each other choice of a categorical; ``design.Design``).
        model: share of trials that are the additive model's best candidate.
        reach: how far a model candidate moves a number from where it was, on [-1, 1].
        most: the most parameters one model candidate moves at random.
        slides: model candidates also move every two numbers of a best configuration this
            far (of [-1, 1]) in opposite directions, along the edge of a pool two numbers fill
            (measured: +0.3 and +0.0 points on the two tuning sets, -0.2 on the hand-made
            landscapes and held out; off).
        slide_sums: slides only for two numbers a crash explanation says are too large
            together (``sum_pairs``).
        risky: weight of log(1 - crash probability) against the model's log score.
        gain: least predicted log gain for a model proposal (measured, off).
        ei: rank model candidates by expected improvement (else by predicted value).
        unset, early, center, mid: the design's (``design.Design``); ``unset`` also makes
            moves start from the best configuration that names every setting.
        swap, swap_every, retry, swap_risk, swap_choices, choice_floor, retest: the swaps'
            ``after``, ``every``, ``retry``, ``risk``, ``choice_risk``, ``choice_floor`` and
            ``retest`` (``swaps.Swaps``; ``swap`` 0: none).
        novel: of the model's candidates within this much of the best score (log), the one
            with the fewest untried pairs of a choice and another value is proposed (0: the
            best score alone; needs ``crash_risk``).
        edge_step: once the swaps are over, a model draw first steps one number of the best
            configuration toward a learned crash edge (``_plan_edge_step``).
        edge_risk: the highest crash probability an edge step goes to (0.5: a bisection of
            the learned ramp; measured, 0.25 kept).
        edge_stop: no edge step past a run that moved that number that way from the best
            and read no better, or was pruned (``_levelled``).
        edge_gain: the least gain (log) the additive model must predict for an edge step
            (measured 0.01: level).
        edge_far: where no step within ``edge_risk`` predicts ``edge_gain``, a step as far
            as this crash probability (0: none; measured 0.5: level to worse than
            ``edge_risk`` 0.5 itself, so off).
        fine: the additive model is fitted with finer bends too (``FINE_KNOTS``), and the one
            with the smaller leave-one-out error is used.
        square: ``peaks``: a number whose fitted effect is highest inside its range gets a
            square term as well, so its best value may lie between two bends; ``all``: every
            number (measured: a pool that keeps paying less and less is bent down before its
            edge); ``off``.
        ridge: the additive model's shrinkage of effects the launches barely support.
        centred: the additive model's features are centred on the launches' mean.
        endgame: in the budget's last this many launches, what would be TPE's draws go to
            the model and local moves.
        seed: seed of the local draws.

    The driver sets ``refused``, ``crash_risk``, ``crash_share`` and ``sum_pairs`` (the crash
    model's verdict, probability, share of explanations met at their thresholds, and the two
    numbers it found too large together) so that model proposals skip and weigh crashes and
    swaps are repaired; unset, they do not. Before each proposal it sets ``left``, the
    launches the budget has left, for the endgame; unset, there is none.
    It sets ``space`` (the distributions of the parameters every configuration has) so that
    the design also moves the settings a partial baseline leaves unset.
    """

    def __init__(
        self,
        tpe: BaseSampler,
        *,
        local: float = LOCAL_SHARE,
        local_risk: float = LOCAL_RISK,
        after: int = 8,
        step: float = 0.12,
        design: int = DESIGN,
        model: float = MODEL_SHARE,
        reach: float = REACH,
        most: int = 3,
        slides: tuple[float, ...] = (),
        slide_sums: bool = False,
        risky: float = RISKY,
        gain: float = 0.0,
        ei: bool = EI,
        unset: bool = True,
        early: bool = True,
        center: bool = False,
        swap: int = SWAP,
        swap_every: int = 0,
        retry: bool = RETRY,
        swap_risk: float = SWAP_RISK,
        swap_choices: float = CHOICE_RISK,
        choice_floor: str = CHOICE_FLOOR,
        retest: bool = RETEST,
        mid: str = MID,
        edge_step: bool = EDGE_STEP,
        edge_risk: float = EDGE_RISK,
        edge_stop: bool = EDGE_STOP,
        edge_gain: float = EDGE_GAIN,
        edge_far: float = 0.0,
        fine: bool = FINE,
        square: str = SQUARE,
        ridge: float = RIDGE,
        centred: bool = CENTER,
        novel: float = NOVEL,
        endgame: int = ENDGAME,
        seed: int | None = None,
    ) -> None:
        self._design = Design(design, mid=mid, unset=unset, early=early, center=center)
        self._swaps = Swaps(swap, swap_every, retry, swap_risk, swap_choices, choice_floor, retest)
        self._edge_step = edge_step
        self._edge_risk = edge_risk
        self._edge_stop = edge_stop
        self._edge_gain = edge_gain
        self._edge_far = edge_far
        self._fine = fine
        self._square = square
        self._ridge = ridge
        self._centred = centred
        self._novel = novel
        self._ei = ei
        self._unset = unset
        self._tpe = tpe
        self._model = model
        self._reach = reach
        self._most = most
        self._slides = slides
        self._slide_sums = slide_sums
        self._risky = risky
        self._gain = gain
        self.crash_risk: Callable[[Mapping[str, Any]], float | None] | None = None
        # the share of some crash's explanations a configuration meets at their thresholds
        self.crash_share: Callable[[Mapping[str, Any]], float | None] | None = None
        self.sum_pairs: Callable[[], set[frozenset[str]]] | None = None
        self.refused: Callable[[Mapping[str, Any]], bool] | None = None
        self.space: Mapping[str, BaseDistribution] = {}
        self._local = local
        self._local_risk = local_risk
        self._after = after
        self._step = step
        self._rng = random.Random(seed)
        self._moves: dict[int, dict[str, Any]] = {}  # trial -> the configuration it proposes
        self._endgame = endgame
        self.left: int | None = None  # launches left in the budget (the driver sets it)

    def reseed_rng(self) -> None:
        self._tpe.reseed_rng()
        self._rng.seed()

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._tpe.before_trial(study, trial)
        if is_enqueued(trial):
            return
        # Which kind of proposal this trial is, kept with it (``TrialRecord.proposed_by``):
        # a person reading the study sees why a configuration was tried, and bench/search
        # counts what each kind found and crashed.
        mark_proposed(study, trial, self._plan(study, trial))

    def _plan(self, study: Study, trial: FrozenTrial) -> str:
        """Plan this trial's configuration (into ``_moves``; none for TPE's) and say which
        kind of proposal it is (``SOURCES``)."""
        if self._design.left != 0:
            config = self._design.plan(study, trial, self.space)
            if config is not None:
                self._moves[trial.number] = config
                return "design"
        if self._swaps.after and self._swaps.due(study):
            best = self._best(study)
            if best is not None:
                config = self._swaps.plan(
                    study,
                    trial,
                    best,
                    self._fit(study, best),
                    self.crash_share,
                    self.refused,
                )
                if config is not None:
                    self._moves[trial.number] = config
                    return "retest" if trial.number in self._swaps.retests else "swap"
        draw = self._rng.random()
        if draw >= self._local + self._model:
            shares = self._local + self._model
            if self.left is None or self.left > self._endgame or shares <= 0.0:
                return "tpe"
            # The last launches: an exploring draw finds what no launch is left to follow
            # up, so TPE's share goes to the model and local moves, in proportion.
            draw = (draw - shares) / (1.0 - shares) * shares
        best = self._best(study)
        if best is None:
            return "tpe"
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if len(done) < self._after:
            return "tpe"
        if draw >= self._local:
            fitted = self._fit(study, best)  # one fit serves both
            if fitted is None:
                return "tpe"
            if self._edge_step and self._swaps.over():
                if self._plan_edge_step(study, trial, best, fitted[0]):
                    return "edge"
            return "model" if self._plan_model(study, trial, best, fitted) else "tpe"
        self._moves[trial.number] = self._local_move(best)
        return "local"

    def _fit(
        self, study: Study, best: FrozenTrial
    ) -> tuple[AdditiveModel, list[FrozenTrial]] | None:
        """The additive model over the study's trials, with this sampler's settings."""
        return fit(study, best, self._fine, self._ridge, self._centred, self._square)

    def _local_move(self, best: FrozenTrial) -> dict[str, Any]:
        """The best configuration with one or two values nudged; drawn again while the crash
        model gives it ``local_risk`` or more (the last draw stands)."""
        names = list(best.params)
        risk = self.crash_risk if self._local_risk < 1.0 else None
        for _ in range(LOCAL_DRAWS):
            moved = set(self._rng.sample(names, k=min(len(names), self._rng.choice((1, 1, 2)))))
            move = {
                n: _nudge(best.distributions[n], v, self._rng, self._step) if n in moved else v
                for n, v in best.params.items()
            }
            if risk is None or (risk(move) or 0.0) < self._local_risk:
                break
        return move

    def _best(self, study: Study) -> FrozenTrial | None:
        """The configuration moves start from: a baseline that leaves settings unset is no
        place to move from, so the best one that names them all, if any ran."""
        return best_trial(study, need=set(self.space) if self._unset else None) or best_trial(study)

    def _plan_model(
        self,
        study: Study,
        trial: FrozenTrial,
        best: FrozenTrial,
        fitted: tuple[AdditiveModel, list[FrozenTrial]],
    ) -> bool:
        """Make this trial the best candidate of the additive model ``fitted`` (``history.fit``)
        that was never launched and that the crash model lets through (False: none)."""
        trials = study.get_trials(deepcopy=False)
        model, rows = fitted
        tops = sorted(rows, key=lambda t: -sign(study) * float(t.value or 0.0))[:3]
        seen = {key(t.params) for t in trials if t.params and t.number != trial.number}
        slide_pairs = None  # slides for every two numbers, with slide_sums the learned sums' only
        if self._slide_sums:
            slide_pairs = self.sum_pairs() if self.sum_pairs is not None else set()
        pool = [
            c
            for c in candidates(
                best.distributions,
                [t.params for t in tops],
                self._rng,
                reach=self._reach,
                most=self._most,
                slides=self._slides,
                pairs=slide_pairs,
            )
            if key(c) not in seen and (self.refused is None or not self.refused(c))
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

    def _plan_edge_step(
        self, study: Study, trial: FrozenTrial, best: FrozenTrial, model: AdditiveModel
    ) -> bool:
        """Make this trial the best configuration with one number moved toward a crash edge
        the crash model has learned: as far toward an end of its range (in sixteenths of the
        way) as the crash probability stays within ``edge_risk``, where a crash lies beyond
        and the additive model predicts at least ``edge_gain`` (the largest such gain; False:
        none). A batch size below the edge that crashed at a larger one stays there
        otherwise: the model's candidates near the edge weigh a probability that the few
        runs between leave high, and the best one is a small step. A run moves the ramp's
        low end up and a crash its high end down, so steps made again close in on the edge."""
        if self.crash_risk is None:
            return False
        ref = float(model.predict([best.params])[0])
        trials = study.get_trials(deepcopy=False)
        seen = {key(t.params) for t in trials if t.params}
        stopped = _levelled(study, trials, best) if self._edge_stop else set()
        gain, config = self._edge_step_to(self._edge_risk, best, model, ref, seen, stopped)
        if gain < self._edge_gain and self._edge_far > self._edge_risk:
            gain, config = self._edge_step_to(self._edge_far, best, model, ref, seen, stopped)
        if config is None or gain < self._edge_gain:
            return False
        self._moves[trial.number] = config
        return True

    def _edge_step_to(
        self,
        risk_at: float,
        best: FrozenTrial,
        model: AdditiveModel,
        ref: float,
        seen: set[Any],
        stopped: set[Any],
    ) -> tuple[float, dict[str, Any] | None]:
        """The edge step with the largest predicted gain (log, over ``ref``) that goes as far
        as a crash probability of ``risk_at``, and that gain ((0, None): none)."""
        assert self.crash_risk is not None
        steps: list[tuple[float, dict[str, Any]]] = []
        for n, d in best.distributions.items():
            if not isinstance(d, IntDistribution | FloatDistribution):
                continue
            for end in (d.low, d.high):
                if (n, end) in stopped:
                    continue
                line = [{**best.params, n: v} for v in sixteenths(d, best.params[n], end)]
                risk = [self.crash_risk(c) or 0.0 for c in line]
                beyond = next((i for i, p in enumerate(risk) if p > risk_at), None)
                if not beyond:  # no learned edge that way, or one already too near
                    continue
                c = line[beyond - 1]
                if key(c) not in seen and not (self.refused is not None and self.refused(c)):
                    steps.append((float(model.predict([c])[0]) - ref, c))
        return max(steps, key=lambda s: s[0], default=(0.0, None))

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
        if trial.number in self._design.made and self._unset:  # a setting the move turned on
            return reference(param_distribution)
        return self._tpe.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._moves.pop(trial.number, None)
        self._design.made.discard(trial.number)
        self._tpe.after_trial(study, trial, state, values)


def _levelled(study: Study, trials: Sequence[FrozenTrial], best: FrozenTrial) -> set[Any]:
    """(number, end of its range) pairs where a run had ``best``'s values but that number
    moved toward that end, and read no better than ``best``: the gains have levelled off
    there (or turned), whatever the additive model's curve says."""
    out: set[Any] = set()
    if best.value is None:
        return out
    s = sign(study)
    mine = s * float(best.value)
    for t in trials:
        if t.number == best.number or set(t.params) != set(best.params):
            continue
        if t.state == TrialState.COMPLETE and t.value is not None:
            if s * float(t.value) > mine:
                continue
        elif t.state != TrialState.PRUNED:  # a pruned run read worse than the runs before
            continue
        moved = [n for n, v in t.params.items() if not same_value(v, best.params[n])]
        if len(moved) != 1:
            continue
        n = moved[0]
        d = best.distributions[n]
        if isinstance(d, IntDistribution | FloatDistribution):  # a number's values
            out.add((n, d.high if t.params[n] > best.params[n] else d.low))
    return out


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


def _expected_improvement(mu: np.ndarray, sd: np.ndarray, ref: float) -> np.ndarray:
    """E[max(0, f - ref)] for f ~ N(mu, sd^2), elementwise."""
    z = (mu - ref) / sd
    cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return np.asarray(sd * (z * cdf + pdf))


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


__all__ = ["DESIGN", "LOCAL_SHARE", "MODEL_SHARE", "SOURCES", "LocalTPESampler"]
