"""The sampler: a one-at-a-time screen, then the additive model's expected improvement,
weighed by the chance of crashing.

Each proposal is planned whole before Optuna asks for its values, from the trials in storage
and nothing else, so a study resumed after its driver was killed proposes what it would have:

- **The screen** (``design`` launches at most): the first configuration (an enqueued
  baseline, its unset settings at the values the system chose where a ``DEFAULTS``
  attribute names them, else each setting's reference value; a baseline that sets nothing
  ran at the named values, and the trial after it, planned before any setting was known,
  moves the first one asked for) with one setting moved per
  launch: a number to the far end of its range, a choice to each other value. A crash that
  needs two settings together costs nothing here, and each setting's own effect is measured.
  A feature a move switched on starts with its settings at their least, then its numbers
  at their middle together (a centre point: the best may lie inside), and each is then
  moved once from there.
- **Lines** (after the screen): a second point on each move's line through the numbers it
  moved: halfway back where it crashed (the edge lies between) or gained more than the
  noise, halfway to the other end where one number moved and lost more than the noise.
- **Pairs of choices** (``pairs`` launches at most): rows of a strength-2 covering array
  over the choices, built greedily (as AETG builds one): the first configuration with up to
  half of its choices moved, so that as many pairs of moved values as one launch can meet
  are met that no launch had together, whatever each did alone (a flag that pays only with
  another, a choice's later values), weighed by the chance of not crashing.
- **The model** after them: the additive Gaussian process (``model.py``) over every launch that
  served, with the configurations still running given the value it predicts (a constant
  liar: parallel workers do not propose the same thing); the crash model (``crashes.py``)
  over every crash and refusal. Candidates are the best configuration with one or two
  settings moved, the best few moved at random, the choices of one of the best with the
  numbers of another, random configurations, and the best of those moved again; the
  proposal is the one whose expected improvement, times the chance of not crashing to the
  power ``risk``, is largest. It is never a configuration a trial already
  had, one ``feasible`` refuses, or one every explanation of some crash or refusal covers.

A trial tells the sampler it crashed, or was refused before launch, through a user
attribute (``CRASH``, ``REFUSED``: why; trials that failed alike form one region). A failed
trial without either (an interrupted launch) is ignored.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from autotune.search import adapter
from autotune.search.crashes import CrashModel
from autotune.search.model import AdditiveGP, expected_improvement
from autotune.search.space import (
    Config,
    Param,
    active,
    conditions,
    encode,
    key,
    known,
    param_of,
    same,
)

CRASH = "search:crash"  # user attribute: the trial crashed; its value says how (a signature)
REFUSED = "search:refused"  # user attribute: the trial was not launched; its value says why
KIND = "proposed_by"  # user attribute the sampler writes: design, line, pairs, model, random
MOVE = "search:move"  # user attribute: which move of the screen a design trial is
# user attribute of an enqueued trial that leaves settings unset: the values the system chose
# for them (an engine's own defaults, read from its log); the screen starts from them
DEFAULTS = "search:defaults"
DESIGN = 9  # the most one-at-a-time launches of the screen
RISK = 2.0  # how much a chance of crashing weighs against the expected improvement
PAIRS = 6  # the most proposals that screen pairs of choices (rows of a covering array)
MOST = 150  # the most launches the objective's model is fitted on

Feasible = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Fit:
    """The models one proposal is planned with."""

    params: list[Param]
    gp: AdditiveGP
    crashes: CrashModel


@dataclass
class History:
    """What a study's trials say, as the sampler reads them."""

    params: dict[str, Param]
    ran: list[Config] = field(default_factory=list)  # served (or stopped while serving)
    y: list[float] = field(default_factory=list)  # their objective (log, larger better)
    failed: list[tuple[Config, str]] = field(default_factory=list)  # refused
    # what was launched, in order, with how it crashed (None: it ran)
    launches: list[tuple[Config, str | None]] = field(default_factory=list)
    pending: list[Config] = field(default_factory=list)  # running, or queued with values
    seen: set[Any] = field(default_factory=set)  # every configuration a trial had
    start: Config | None = None  # what the screen moves from
    defaults: Config = field(default_factory=dict)  # the start's unset settings (DEFAULTS)
    # the screen's moves made: each one's label, and the configuration its trial had
    moves: dict[str, Config] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)  # proposals made, by kind
    told: int = 0  # trials whose outcome the sampler reads
    # which choice switches each conditional parameter on (``space.conditions``), read from
    # the sampled trials (an enqueued baseline may leave settings unset)
    conds: dict[str, Any] = field(default_factory=dict)
    donors: list[Config] = field(default_factory=list)  # what ran, best first
    # the sampler's ``feasible`` verdicts while it plans one proposal, by key: a candidate is
    # weighed several times (as a neighbour, then in the pool), its verdict asked once
    verdicts: dict[Any, bool] = field(default_factory=dict)


def read(study: Study, trials: Sequence[FrozenTrial]) -> History:
    """The history of ``study`` from its trials."""
    maximize = study.direction == StudyDirection.MAXIMIZE
    h = History(known(trials))
    values: list[float] = []
    sampled: list[Config] = []
    # The launches of the configuration that carries DEFAULTS ran with those values: where the
    # ranges hold them exactly, they are its values (the screen's start is then itself).
    marked = next((t for t in trials if isinstance(t.user_attrs.get(DEFAULTS), dict)), None)
    ran_as: tuple[Any, Config] | None = None
    if marked is not None:
        h.defaults = dict(marked.user_attrs[DEFAULTS])
        exact = {
            n: v
            for n, p in h.params.items()
            if n in h.defaults and same(v := _nearest(p, h.defaults), h.defaults[n])
        }
        ran_as = (key(marked.params or adapter.fixed_params(marked) or {}), exact)
    for t in trials:
        fixed = adapter.fixed_params(t)
        params = t.params or (fixed or {})
        # (an enqueued baseline that sets nothing ran at the marked values too)
        if ran_as is not None and (params or fixed is not None) and key(params) == ran_as[0]:
            params = {**ran_as[1], **params}
        if t.params and adapter.fixed_params(t) is None:
            sampled.append(t.params)
        if MOVE in t.user_attrs:
            h.moves[str(t.user_attrs[MOVE])] = dict(t.params)
        kind = t.user_attrs.get(KIND)
        if isinstance(kind, str):
            h.kinds[kind] = h.kinds.get(kind, 0) + 1
        if not params:
            continue
        h.seen.add(key(params))
        if h.start is None and adapter.fixed_params(t) is not None:
            h.start = dict(params)
        if t.state in (TrialState.RUNNING, TrialState.WAITING):
            h.pending.append(dict(params))
            continue
        if REFUSED in t.user_attrs:
            h.failed.append((dict(params), f"refused: {t.user_attrs[REFUSED]}"))
            h.told += 1
            continue
        if CRASH in t.user_attrs:
            h.launches.append((dict(params), f"crash: {t.user_attrs[CRASH]}"))
            h.told += 1
            continue
        value: float | None = None
        if t.state == TrialState.COMPLETE and t.value is not None:
            value = float(t.value)
        elif t.state == TrialState.PRUNED and t.intermediate_values:
            value = float(np.mean(list(t.intermediate_values.values())))
        if value is None or not math.isfinite(value):
            continue  # failed for no reason of its own (interrupted), or stopped at once
        h.told += 1
        if any(c > 0 for c in _constraints(t)):  # ran, but broke a constraint (an SLO)
            h.launches.append((dict(params), "constraint"))
            continue
        h.launches.append((dict(params), None))
        h.ran.append(dict(params))
        values.append(value if maximize else -value)
    if values and all(v > 0 for v in values):
        h.y = [math.log(v) for v in values]
    elif values and all(v < 0 for v in values):
        h.y = [-math.log(-v) for v in values]
    else:
        h.y = values
    h.conds = conditions(sampled, list(h.params))
    h.donors = [h.ran[i] for i in np.argsort(h.y)[::-1]] if h.y else []
    return h


def _nearest(p: Param, defaults: Config) -> Any:
    """``p``'s value in ``defaults``, the nearest its range allows (None: none there)."""
    value = defaults.get(p.name)
    if p.numeric and isinstance(value, int | float) and not isinstance(value, bool):
        return p.at(p.place(min(max(value, p.low), p.high)))
    return p.choices[p.index(value)] if value is not None and p.index(value) >= 0 else None


def _constraints(t: FrozenTrial) -> list[float]:
    return list(t.system_attrs.get("constraints", ()) or ())


class Sampler(BaseSampler):
    """A sampler for expensive objectives that crash: a one-at-a-time screen, then an additive
    Gaussian process with pairs of effects, weighed by a model of where crashes lie.

    Usable on any single-objective Optuna study: a trial that crashed sets
    ``trial.set_user_attr(CRASH, "why")`` (then is told as failed or pruned); one refused
    before it ran sets ``REFUSED``. Everything it knows it reads from the study's trials.

    Args:
        seed: seed of its random draws (each proposal's from the seed and the trials told).
        feasible: whether a configuration may be proposed at all (constraints, values known to
            fail); a refused one is never proposed (default: all may). Asked once per
            configuration while one proposal is planned.
        design: the most one-at-a-time launches at the start (0: none).
        risk: the exponent of the chance of not crashing that weighs expected improvement
            (0: crashes are not avoided).
        pairs: the most proposals that screen choices together (rows of a covering array of
            their pairs), after the one-at-a-time screen.
    """

    def __init__(
        self,
        *,
        seed: int | None = None,
        feasible: Feasible | None = None,
        design: int = DESIGN,
        risk: float = RISK,
        pairs: int = PAIRS,
    ) -> None:
        self._seed = seed if seed is not None else int(np.random.default_rng().integers(2**31))
        self.feasible = feasible
        self._design = design
        self._risk = risk
        self._pairs = pairs
        self._plans: dict[int, Config] = {}
        self._defaults: dict[int, Config] = {}  # DEFAULTS as each planned trial read them
        self._starts: set[int] = set()  # trials that launch the screen's first configuration
        # trials planned before any parameter was known (a baseline that set nothing), each
        # with how many settings it lets pass before it moves one (one more per such trial
        # pending before it: parallel workers do not make the same move)
        self._blind: dict[int, int] = {}

    def reseed_rng(self) -> None:
        self._seed = int(np.random.default_rng().integers(2**31))

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return {}

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        if adapter.fixed_params(trial) is not None:
            return  # enqueued: asked for by name
        trials = study.get_trials(deepcopy=False)
        h = read(study, [t for t in trials if t.number != trial.number])
        # A trial asked for but not yet given its values (another worker between ask and
        # suggest) is pending with what this sampler planned for it.
        for t in trials:
            if t.state == TrialState.RUNNING and not t.params and t.number in self._plans:
                h.pending.append(self._plans[t.number])
                h.seen.add(key(self._plans[t.number]))
        rng = np.random.default_rng([self._seed, h.told, len(h.pending)])
        kind, plan, move = self._plan(h, rng)
        self._plans[trial.number] = plan
        self._defaults[trial.number] = h.defaults
        if move is not None and key(plan) == key(self._start(h) or {}):
            self._starts.add(trial.number)
        if not plan and h.defaults and not h.params:
            self._blind[trial.number] = len(self._blind)
        adapter.set_user_attr(study, trial, KIND, kind)
        if move is not None:
            adapter.set_user_attr(study, trial, MOVE, move)

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        plan = self._plans.get(trial.number, {})
        p = param_of(param_name, param_distribution)
        if param_name in plan:
            value = plan[param_name]
            if adapter.contains(param_distribution, value):
                return value
            if p.numeric:  # out of this trial's range (a bound taken from another parameter)
                return p.at(p.place(min(max(value, p.low), p.high)))
        # Not planned (a parameter no trial had yet): a setting the baseline left unset at the
        # value the system chose for it, else at its reference value, one a feature switched
        # on at its least; or a feasible draw.
        rng = np.random.default_rng([self._seed, trial.number, len(trial.params)])
        chosen = _nearest(p, self._defaults.get(trial.number, {}))
        first = chosen
        if first is None:
            first = p.reference() if trial.number in self._starts else p.least()
        firsts = [first]
        skip = self._blind.get(trial.number)
        if skip is not None and chosen is not None and (far := self._far(p, chosen)):
            # Nothing was known of the space when this trial was planned (a baseline that set
            # nothing ran at the values the system chose): one setting moves from its chosen
            # value, the screen's first move; the others stay at theirs (a setting the system
            # named no value for at its own start). Refused, the next setting moves instead.
            if skip == 0:
                firsts = [far[0], chosen]
            else:
                self._blind[trial.number] = skip - 1
        draws = firsts + [
            p.choices[rng.integers(len(p.choices))] if p.choices else p.at(rng.random())
            for _ in range(20)
        ]
        for i, value in enumerate(draws):
            if self.feasible is None or self.feasible({**trial.params, param_name: value}):
                if len(firsts) == 2 and i == 0:
                    del self._blind[trial.number]
                    adapter.set_user_attr(study, trial, KIND, "design")
                    adapter.set_user_attr(study, trial, MOVE, f"{param_name}={value!r}")
                return value
        return draws[0]

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self._plans.pop(trial.number, None)
        self._defaults.pop(trial.number, None)
        self._starts.discard(trial.number)
        self._blind.pop(trial.number, None)

    # -- planning -----------------------------------------------------------------------------

    def _plan(self, h: History, rng: np.random.Generator) -> tuple[str, Config, str | None]:
        """(kind, configuration, screen move) of the next proposal."""
        if h.start is None and h.ran:
            h.start = h.ran[0]
        start = self._start(h)
        if start is not None and sum("~" not in m for m in h.moves) < self._design:
            for label, move in self._moves(h, start):
                if label not in h.moves and self._allowed(h, move):
                    return "design", move, label
        if len(h.ran) >= 3:
            fit = self._fit(h)
            if start is not None:
                for label, move in self._lines(h, start, 2.0 * max(fit.gp.noise, 0.01)):
                    if label not in h.moves and self._allowed(h, move):
                        return "line", move, label
            if start is not None and h.kinds.get("pairs", 0) < self._pairs:
                plan = self._cover(h, start, fit, rng)
                if plan is not None:
                    return "pairs", plan, None
            plan = self._model(h, rng, fit)
            if plan is not None:
                return "model", plan, None
        return "random", self._random(h, rng), None

    def _start(self, h: History) -> Config | None:
        """The screen's first configuration: the baseline with the settings it leaves unset at
        the values the system chose for them (``DEFAULTS``, the nearest the range allows),
        else at their reference values."""
        if h.start is None:
            return None
        chosen = {n: v for n, p in h.params.items() if (v := _nearest(p, h.defaults)) is not None}
        reference = {n: p.reference() for n, p in h.params.items()}
        return active({**reference, **chosen, **h.start}, h.conds)

    def _moves(self, h: History, start: Config) -> list[tuple[str, Config]]:
        """The screen, each move with its label: ``start`` itself where it is not the
        baseline; each setting moved once (a number to its far end, a choice to its next
        value); each choice's other values; then, where a move switched a feature on and
        ran, each setting it switched on moved once from there."""
        out: list[tuple[str, Config]] = []
        if key(start) != key(h.start or {}):
            out.append(("start", dict(start)))
        later = []
        for name, p in h.params.items():
            if name in start:
                out += [
                    (f"{name}={v!r}", {**start, name: v}) for v in self._far(p, start[name])[:1]
                ]
                later += [
                    (f"{name}={v!r}", {**start, name: v}) for v in self._far(p, start[name])[1:]
                ]
        out += later
        for label, ran in list(h.moves.items()):
            if "/" in label or label == "start" or not any(key(ran) == key(c) for c in h.ran):
                continue
            new = [n for n in ran if n not in start and n in h.params]
            numbers = [n for n in new if h.params[n].numeric]
            if numbers:  # its numbers at the middle together: the best may lie inside
                out.append(
                    (f"{label}/center", {**ran, **{n: h.params[n].reference() for n in numbers}})
                )
            for name in new:
                out += [
                    (f"{label}/{name}={v!r}", {**ran, name: v})
                    for v in self._far(h.params[name], ran[name])[:1]
                ]
        return [(label, self._complete(h, m)) for label, m in out]

    def _lines(self, h: History, start: Config, enough: float) -> list[tuple[str, Config]]:
        """A second point on the line of each move of the screen that moved numbers: halfway
        back where the move crashed (the edge lies between) or where it changed the
        objective by more than ``enough`` for the better (the best may lie between); where
        it moved one number and was worse, halfway to the other end. A move that changed
        nothing beyond ``enough`` (noise) gets none."""
        values: dict[Any, list[float]] = {}
        for c, y in zip(h.ran, h.y, strict=True):
            values.setdefault(key(c), []).append(y)
        crashed = {key(c) for c, s in h.launches if s is not None}
        out = []
        for label, moved in h.moves.items():
            base = h.moves.get(label.rsplit("/", 1)[0]) if "/" in label else start
            if "~" in label or base is None:
                continue
            names = [
                n
                for n, p in h.params.items()
                if p.numeric and n in base and n in moved and not same(base[n], moved[n])
            ]
            k, b = key(moved), values.get(key(base))
            if not names:
                continue
            if k in crashed or (b and k in values and np.mean(values[k]) > np.mean(b) + enough):
                u = {
                    n: (h.params[n].place(base[n]) + h.params[n].place(moved[n])) / 2 for n in names
                }
            elif len(names) == 1 and b and k in values and np.mean(values[k]) < np.mean(b) - enough:
                p, n = h.params[names[0]], names[0]
                u = {
                    n: (p.place(base[n]) + (0.0 if p.place(moved[n]) > p.place(base[n]) else 1.0))
                    / 2
                }
            else:
                continue
            line = {**base, **{n: h.params[n].at(v) for n, v in u.items()}}
            out.append((f"{label}~", self._complete(h, line)))
        return out

    def _far(self, p: Param, value: Any) -> list[Any]:
        """A setting's moves in the screen: a number's far end, a choice's other values."""
        if p.numeric:
            return [p.at(0.0 if p.place(value) > 0.5 else 1.0)]
        return [c for c in p.choices if p.index(c) != p.index(value)]

    def _complete(self, h: History, config: Config) -> Config:
        """``config`` with exactly the parameters its values switch on: one it lacks takes
        its value in the best launch that had it (else, where a feature switches it on, its least,
        and its reference value otherwise)."""
        full = dict(config)
        for name, p in h.params.items():
            if name not in full:
                donor = next((d[name] for d in h.donors if name in d), None)
                fallback = p.least() if name in h.conds else p.reference()
                full[name] = donor if donor is not None else fallback
        return active(full, h.conds)

    def _allowed(self, h: History, config: Config) -> bool:
        k = key(config)
        if k in h.seen:
            return False
        if self.feasible is None:
            return True
        verdict = h.verdicts.get(k)
        if verdict is None:
            verdict = h.verdicts[k] = self.feasible(config)
        return verdict

    def _random(self, h: History, rng: np.random.Generator) -> Config:
        """A random configuration nobody had (the reference configuration first)."""
        for i in range(200):
            c = {
                n: (
                    p.reference()
                    if i == 0
                    else p.choices[rng.integers(len(p.choices))]
                    if p.choices
                    else p.at(rng.random())
                )
                for n, p in h.params.items()
            }
            c = self._complete(h, c)
            if self._allowed(h, c):
                return c
        return c

    def _fit(self, h: History) -> Fit:
        """The models of the objective and of crashes over what the trials say; a running
        configuration reads what the objective's model predicts for it (a constant liar:
        parallel workers do not propose the same thing twice)."""
        params = list(h.params.values())
        numeric = np.array([p.numeric for p in params])
        rows = np.arange(len(h.ran))
        if len(rows) > MOST:  # a long study: the best half and the latest half
            rows = np.union1d(np.argsort(h.y)[-MOST // 2 :], rows[-MOST // 2 :])
        x = encode(params, [h.ran[i] for i in rows])
        y = np.array(h.y)[rows]
        gp = AdditiveGP(x, y, numeric)
        if h.pending:
            xp = encode(params, h.pending)
            lie, _ = gp.predict(xp)
            gp = AdditiveGP(np.vstack([x, xp]), np.concatenate([y, lie]), numeric, gp.theta)
        return Fit(params, gp, CrashModel(params, h.launches, h.failed, self._start(h)))

    def _weigh(self, fit: Fit, gain: np.ndarray, x: np.ndarray) -> np.ndarray:
        """log(gain) + ``risk`` x log(chance of not crashing); -inf where a crash is certain."""
        p = fit.crashes.probability(x)
        out = np.log(gain + 1e-12) + self._risk * np.log1p(-np.minimum(p, 0.999))
        return np.where(fit.crashes.certain(x), -np.inf, out)

    def _cover(
        self, h: History, start: Config, fit: Fit, rng: np.random.Generator
    ) -> Config | None:
        """The screen of pairs, by design: ``start`` with at most half of its choices moved,
        so as to cover as many pairs of moved values that no launch had together as one
        launch can (rows of a strength-2 covering array, built greedily as in AETG: every
        pair of moved values is met once, whatever each did alone), weighed by the chance of
        not crashing to the power ``risk`` (None: every pair covered, or no row is safe)."""
        names = [n for n, p in h.params.items() if n in start and p.choices]
        done = [c for c, _ in h.launches] + h.pending
        had = {(a, repr(c[a]), b, repr(c[b])) for c in done for a in c for b in c}
        # a moved value whose move alone looks as likely to crash as not is left out
        alone = [(n, v) for n in names for v in self._far(h.params[n], start[n])]
        x = encode(fit.params, [self._complete(h, {**start, n: v}) for n, v in alone])
        risky = fit.crashes.probability(x) >= 0.5 if alone else np.zeros(0, bool)
        moves: dict[str, list[Any]] = {n: [] for n in names}
        for (n, v), bad in zip(alone, risky, strict=True):
            if not bad:
                moves[n].append(v)
        missing = {
            (a, repr(u), b, repr(w))
            for i, a in enumerate(names)
            for b in names[i + 1 :]
            for u in moves[a]
            for w in moves[b]
            if (a, repr(u), b, repr(w)) not in had
        }
        if not missing:
            return None
        most = max(2, (len(names) + 1) // 2)
        # how many missing pairs a moved value is in, whatever the row (ties broken by it)
        ahead = {
            (a, repr(v)): sum(_met(missing, a, v, b, y) for b in names for y in moves[b])
            for a in names
            for v in moves[a]
        }
        rows: list[Config] = []
        for _ in range(30):
            row, moved = dict(start), list[str]()
            for k in rng.permutation(len(names)):
                a, gains = names[k], list[float]()
                for v in moves[a]:
                    now = sum(_met(missing, a, v, b, row[b]) for b in moved)
                    gains.append(now + ahead[a, repr(v)] / 1e3)
                if gains and len(moved) < most and max(gains) > 0:
                    row[a] = moves[a][int(np.argmax(gains))]
                    moved.append(a)
            rows.append(row)
        rows = self._unique(h, rows)
        if not rows:
            return None
        x = encode(fit.params, rows)
        new = np.array(
            [
                sum(
                    _met(missing, a, c.get(a), b, c.get(b))
                    for a, b in itertools.combinations(names, 2)
                )
                for c in rows
            ]
        )
        score = self._weigh(fit, new.astype(float), x)
        score = np.where((fit.crashes.probability(x) < 0.5) & (new > 0), score, -np.inf)
        return rows[int(np.argmax(score))] if np.isfinite(score.max()) else None

    def _model(self, h: History, rng: np.random.Generator, fit: Fit) -> Config | None:
        """The candidate with the largest expected improvement times the chance of not
        crashing to the power ``risk`` (None: no candidate left)."""
        scored = self._scored(h, rng, fit)
        if scored is None:
            return None
        _, pool, scores = scored
        return pool[int(np.argmax(scores))]

    def _scored(
        self, h: History, rng: np.random.Generator, fit: Fit
    ) -> tuple[Config, list[Config], np.ndarray] | None:
        """The model's incumbent, its candidates and their scores (None: none is open)."""
        mean, _ = fit.gp.predict(encode(fit.params, h.ran))
        best = int(np.argmax(mean))
        incumbent, level = h.ran[best], float(mean[best])
        tops = [h.ran[i] for i in np.argsort(mean)[::-1][:8]]

        def score(cs: list[Config]) -> np.ndarray:
            x = encode(fit.params, cs)
            mu, sd = fit.gp.predict(x)
            return self._weigh(fit, expected_improvement(mu, sd, level), x)

        pool = self._candidates(h, incumbent, tops, rng)
        if not pool:
            return None
        scores = score(pool)
        keys = {key(c) for c in pool}
        for _ in range(2):  # the best few moved again, one setting at a time
            top = [pool[i] for i in np.argsort(scores)[::-1][:4]]
            more = [c for t in top for c in self._neighbours(h, t, rng)]
            more = [c for c in self._unique(h, more) if key(c) not in keys]
            keys |= {key(c) for c in more}
            if not more:
                break
            pool += more
            scores = np.concatenate([scores, score(more)])
        return (incumbent, pool, scores) if np.isfinite(scores.max()) else None

    def _candidates(
        self, h: History, incumbent: Config, tops: list[Config], rng: np.random.Generator
    ) -> list[Config]:
        """The best configuration with one setting moved, or two; the best few moved at
        random; random configurations; the choices of one of the best with the numbers of
        another."""
        names = [n for n in h.params if n in incumbent]
        out = self._neighbours(h, incumbent, rng)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                for _ in range(3):
                    out.append(
                        {
                            **incumbent,
                            a: self._draw(h.params[a], rng),
                            b: self._draw(h.params[b], rng),
                        }
                    )
        for _ in range(150):
            c = dict(tops[rng.integers(len(tops))])
            for k in rng.permutation(len(names))[: rng.integers(1, 4)]:
                c[names[k]] = self._draw(h.params[names[k]], rng)
            out.append(c)
        for _ in range(150):
            out.append({n: self._draw(p, rng) for n, p in h.params.items()})
        # what the screens found for the choices and for the numbers, together
        for numbers in tops:
            for chosen in tops:
                out.append({**numbers, **{n: v for n, v in chosen.items() if h.params[n].choices}})
        return self._unique(h, out)

    def _neighbours(self, h: History, config: Config, rng: np.random.Generator) -> list[Config]:
        """``config`` with one setting moved: a number across its range and near where it is,
        a choice to each other value."""
        out = []
        for name, p in h.params.items():
            if name not in config:
                continue
            if p.choices:
                out += [{**config, name: c} for c in p.choices]
                continue
            u = p.place(config[name])
            places = list(np.linspace(0.0, 1.0, 11)) + [u + d for d in (-0.08, -0.03, 0.03, 0.08)]
            out += [{**config, name: p.at(v)} for v in places]
        return self._unique(h, out)

    def _draw(self, p: Param, rng: np.random.Generator) -> Any:
        return p.choices[rng.integers(len(p.choices))] if p.choices else p.at(rng.random())

    def _unique(self, h: History, configs: list[Config]) -> list[Config]:
        out, keys = [], set()
        for c in configs:
            c = self._complete(h, c)
            k = key(c)
            if k not in keys and self._allowed(h, c):
                keys.add(k)
                out.append(c)
        return out


def _met(missing: set[tuple[str, str, str, str]], a: str, x: Any, b: str, y: Any) -> bool:
    """Whether values ``x`` of ``a`` and ``y`` of ``b`` are a pair no launch had together."""
    return (a, repr(x), b, repr(y)) in missing or (b, repr(y), a, repr(x)) in missing


__all__ = ["CRASH", "DESIGN", "KIND", "MOVE", "REFUSED", "RISK", "History", "Sampler", "read"]
