"""Crash steering: do not launch what the study's own history says will crash.

TPE already learns from crashes (they are told PRUNED with a violated constraint, see
``tell.py``), but only as one half of its good/bad split, so it keeps proposing near the
crashed region, and the best configurations often sit right at its edge (more memory, bigger
batches). Every launch costs minutes on a GPU node, so before a proposal is launched a model
of the crashes so far may refuse it. A refused proposal is recorded as skipped
(``predicted_crash``) with the reason and told to Optuna as infeasible, so the sampler learns
from it too; the baseline and other enqueued trials are never refused.

The default model, ``CrashRegions``, learns *why* each crash happened: conditions on one or
two parameter values that the crashed configuration meets and no configuration that ran
meets, with numeric thresholds half-way to the nearest run; a crash that one value explains
keeps its two-value explanations too (``pairs``: a batch size below any that ran explains it
alone, and the bool that came with it would be missed). It refuses only what every such
explanation of some crash covers, so nothing is refused for being near a crash that another
parameter caused (the earlier nearest-neighbour vote, ``CrashRisk``, did that: kept as
``model="knn"`` to be measured against). A proposal that meets some of a crash's
explanations gets a crash probability from them, each weighed by how likely it is: a
threshold by the stretch it may lie in, between the nearest run and the crash (``weighs``;
two thresholds by the pairs of edges below the crash that no run rules out, ``joint``, and a
proposal meets them as often as such pairs lie below it),
and one on a parameter that caused another crash that failed alike ``kin`` times as much (an
out-of-memory edge that mixed chunking moves: the chunk caused one crash alone, so it is the
likelier cause of the next such crash too, where the choice came with other numbers).
Crashes alike that no shared values explain (a memory pool that the batch size and the
context length fill together crashes along a diagonal, and a run sits inside the box of the
crashes' thresholds) are explained by the two numbers too large together: where they sit
in their ranges, added (``sums``). When a crash's only explanation is a categorical or bool
value that never ran, ``ablation`` proposes the baseline with just that value, once, to
tell the value from its company. Once a study has
had its crash budget (``budget.crash_budget`` of its trials, where the space sets one), a
proposal the model gives ``cap`` (40%) or more of crashing is refused too: before that,
meeting some of a crash's explanations is a chance the model proposals weigh, after it one
the study no longer takes.
``max_streak`` caps refusals in a row, so no model can lock a study out of its space. The
defaults were chosen on ``bench/search`` (docs/benchmarks.md).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from autotune.space.schema import Parameter, StudySpec, config_key, same_value

PREFIX = "predicted crash"  # skip reasons start with this
LEAST_STRETCH = 0.02  # weighs: the least share of its range a threshold's stretch counts


@dataclass(frozen=True)
class SteeringOptions:
    """When and how hard to steer (the defaults were chosen on ``bench/search``).

    ``model``: ``regions`` (crash regions learned as explanations, ``CrashRegions``) or
    ``knn`` (the earlier nearest-neighbour vote, ``CrashRisk``; kept to be measured against).
    """

    enabled: bool = True
    model: str = "regions"
    threshold: float = 0.25  # knn: reject at or above this predicted crash probability
    k: int = 3  # knn: neighbours that vote
    min_launched: int = 8  # knn
    min_crashes: int = 2  # knn
    agree: float = 1.0  # regions: share of a crash's explanations that must cover a proposal
    corroborated: int = 0  # regions: an explanation that this many crashes meet is enough (0: off)
    max_size: int = 2  # regions: most parameters in one explanation
    boundary: bool = True  # regions: thresholds half-way to the nearest run, not at the crash
    edge: float = 0.5  # regions: where between the nearest run (0) and the crash (1) they go
    group: bool = True  # regions: crashes that failed alike are explained together
    soft: bool = True  # regions: the crash probability rises across a threshold's uncertainty
    combine: bool = True  # regions: the crash probability combines every region's share
    sums: bool = True  # regions: crashes alike no shared values explain: two numbers' sum
    # regions: a crash's explanations are weighed by how likely each is (a threshold by the
    # stretch it may lie in), not counted alike
    weighs: bool = True
    eq_weight: float = 0.5  # weighs: a value or choice, against a threshold's stretch (0 to 1)
    # weighs: an explanation on a parameter (and side) that caused another crash that failed
    # alike, where no values explain both, counts this many times (1: no more; measured on
    # blackbox5: 4 and 8 alike, +0.75 points; inert on every other landscape)
    kin: float = 4.0
    # regions (with soft and weighs): a two-number explanation's weight and the chance a
    # proposal meets it read the thresholds' joint stretch, the pairs of edges no run rules
    # out (``_joint``), not each threshold's stretch taken alone
    joint: bool = True
    ablations: int = 4  # regions: launches that test a crash's one-value explanation (0: off)
    # regions: a crash one value explains keeps its two-value explanations too (a batch size
    # below any that ran explains it alone, and the bool that came with it is missed)
    pairs: bool = True
    # regions: crashes after which a proposal as likely to crash as ``cap`` is refused (None:
    # the space's budget.crash_budget of its trials; 0: never)
    budget: int | None = None
    cap: float = 0.4
    explore: float = 0.0  # share of risky proposals launched anyway
    max_streak: int = 20  # rejections in a row before one is launched regardless


def make_risk(
    spec: StudySpec,
    options: SteeringOptions | None = None,
    seed: int | None = None,
    trials: int | None = None,
) -> CrashRisk | CrashRegions:
    """The crash model ``options.model`` names; ``trials``: the study's budget, for the
    crash budget (``budget.crash_budget`` of it) where ``options.budget`` is None."""
    options = options or SteeringOptions()
    if options.model == "knn":
        return CrashRisk(spec, options, seed)
    if options.model == "regions":
        return CrashRegions(spec, options, seed, trials)
    raise ValueError(f"unknown steering model {options.model!r}; use regions or knn")


class CrashRisk:
    """Predicts whether a configuration will crash from the configurations launched so far.

    Args:
        spec: the space (for the parameters' ranges and choices).
        options: thresholds; see ``SteeringOptions``.
        seed: seed of the exploration draws (the study's sampler seed).
    """

    def __init__(
        self, spec: StudySpec, options: SteeringOptions | None = None, seed: int | None = None
    ) -> None:
        self.spec = spec
        self.options = options or SteeringOptions()
        self._rng = random.Random(seed)
        self._points: list[list[float]] = []
        self._crashed: list[bool] = []
        self._streak = 0

    def observe(self, config: Mapping[str, Any], crashed: bool, signature: str = "") -> None:
        """Learn the outcome of one launched configuration (the vote ignores why it crashed)."""
        self._points.append(self._encode(config))
        self._crashed.append(crashed)

    def ablation(
        self, crashed: Mapping[str, Any], baseline: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        """The nearest-neighbour vote proposes no tests (see ``CrashRegions.ablation``)."""
        return None

    @property
    def ready(self) -> bool:
        """Whether there is enough evidence to predict."""
        o = self.options
        return len(self._points) >= o.min_launched and sum(self._crashed) >= o.min_crashes

    def probability(self, config: Mapping[str, Any], soft: bool = True) -> float | None:
        """The predicted crash probability of ``config``, or None before ``ready``
        (``soft`` is the regions model's; the vote has no thresholds)."""
        if not self.ready:
            return None
        q = self._encode(config)
        dists = sorted(
            (math.dist(q, p), c) for p, c in zip(self._points, self._crashed, strict=True)
        )[: self.options.k]
        prior = sum(self._crashed) / len(self._crashed)
        weights = [1.0 / (d + 0.05) for d, _ in dists]
        votes = sum(w for w, (_, c) in zip(weights, dists, strict=True) if c)
        return (votes + prior) / (sum(weights) + 1.0)

    def predicts(self, config: Mapping[str, Any]) -> bool:
        """Whether the model would refuse ``config`` (no exploration draw, no streak)."""
        p = self.probability(config) if self.options.enabled else None
        return p is not None and p >= self.options.threshold

    def check(self, config: Mapping[str, Any]) -> str | None:
        """Why ``config`` should not be launched (a reason starting with "predicted crash"),
        or None to launch it. Call once per proposal; a None counts as a launch."""
        o = self.options
        p = self.probability(config) if o.enabled else None
        if p is None or p < o.threshold or self._streak >= o.max_streak:
            self._streak = 0
            return None
        if self._rng.random() < o.explore:  # keep testing the model's belief now and then
            self._streak = 0
            return None
        self._streak += 1
        return (
            f"{PREFIX} p={p:.2f} (nearest of {len(self._points)} launched configurations "
            f"crashed; threshold {o.threshold:g})"
        )

    # -- encoding -------------------------------------------------------------------------

    def _encode(self, config: Mapping[str, Any]) -> list[float]:
        out: list[float] = []
        for p in self.spec.parameters:
            out.extend(_features(self.spec, p, config.get(p.name), p.name in config))
        return out


Literal = tuple[str, str, Any]  # (parameter, "eq" | "ge" | "le", value)


@dataclass(frozen=True)
class _Joint:
    """An explanation read through its thresholds' joint stretch (``CrashRegions._joint``):
    its weight, its values and choices, its numbers (name, side), the crash's and the runs'
    places (from each side's end; the runs' cut at the crash's, those no other run's box holds),
    and the edges' space left."""

    weight: float
    eqs: tuple[Literal, ...]
    sides: tuple[tuple[str, str], ...]
    crash: list[float]
    runs: list[list[float]]
    area: float


class CrashRegions:
    """Learns which parameter values explain each crash, and refuses what they all predict.

    An *explanation* of a crashed configuration is a condition on one parameter (or, when no
    single one fits, on two) that the crashed configuration meets and that no configuration
    which ran meets: ``mem >= 0.85``, ``attention == 'fa3'``, ``graph_bs >= 256 and mem >=
    0.8``. Conditions are built from the crashed configuration's own values (``==`` for
    categorical and bool values, ``>=`` and ``<=`` for numbers). A proposal is refused when it
    meets at least ``agree`` of the explanations of some crash: with the default 1.0, only when
    every explanation the evidence still allows says it crashes. Explanations the study's
    successes rule out vanish, so a region is learned from a crash or two, and nothing is
    refused for being merely *near* a crash that a different parameter caused.

    Args:
        spec: the space (parameter kinds).
        options: see ``SteeringOptions`` (``agree``, ``max_size``, ``explore``, ``max_streak``).
        seed: seed of the exploration draws.
    """

    def __init__(
        self,
        spec: StudySpec,
        options: SteeringOptions | None = None,
        seed: int | None = None,
        trials: int | None = None,
    ) -> None:
        self.spec = spec
        options = options or SteeringOptions()
        if options.budget is None:  # the space's share of the study's trials
            n = trials or spec.budget.trials
            options = replace(options, budget=crash_allowance(spec.budget.crash_budget, n))
        self.options = options
        self._rng = random.Random(seed)
        self._ok: list[dict[str, Any]] = []
        self._crashes: list[dict[str, Any]] = []
        self._signatures: list[str] = []  # per crash: how it failed
        self._explanations: list[list[tuple[Literal, ...]]] | None = None
        self._corroborated: list[tuple[Literal, ...]] = []  # met by several crashes
        # per crash: the (number, side) pairs that caused other crashes that failed alike
        self._kin: list[set[tuple[str, str]]] = []
        self._ablations = 0
        self._streak = 0
        self._numeric = {p.name for p in spec.parameters if p.type in ("int", "float")}
        # A widened threshold -> (the nearest value that ran, the crash's own value): the
        # edge lies somewhere between, which ``probability`` reads as a ramp when ``soft``.
        self._ramps: dict[Literal, tuple[float, float]] = {}
        self._weights: dict[tuple[Literal, ...], float] = {}  # ``_weight``'s, as they ramp
        # a widened explanation -> the crash's own (``joint``)
        self._origin: dict[tuple[Literal, ...], tuple[Literal, ...]] = {}
        # ``_joint``'s per explanation (None: one read threshold by threshold)
        self._joints: dict[tuple[Literal, ...], _Joint | None] = {}
        self._masks: dict[Literal, int] = {}  # ``_mask``'s, until the next launch
        self._columns: dict[str, np.ndarray] = {}  # each number's values in the successes
        self._scales: dict[str, tuple[Parameter, tuple[float, float]]] = {}  # ``_frac``'s

    def observe(self, config: Mapping[str, Any], crashed: bool, signature: str = "") -> None:
        """Learn the outcome of one launched configuration; ``signature`` says how a crash
        failed (``signature_of``), so that crashes that failed alike are explained together."""
        (self._crashes if crashed else self._ok).append(dict(config))
        if crashed:
            self._signatures.append(signature)
        self._explanations = None
        self._ramps.clear()  # rebuilt with the explanations
        self._weights.clear()
        self._origin.clear()
        self._joints.clear()
        self._masks.clear()
        self._columns.clear()

    def explanations(self) -> list[list[tuple[Literal, ...]]]:
        """Per crash, its explanations still consistent with every success (may be empty).

        Crashes that failed alike (the same cause, or the same message where no rule knew the
        cause) are taken as one region: when some conditions explain all of them at once,
        those are every member's explanations. One crash of a kind leaves many conditions
        that fit it by chance (whatever value no run had yet); a second crash of the kind
        rules most of them out, as no explanation of one crash alone can.
        """
        if self._explanations is None:
            self._explanations = [self._explain(c) for c in self._crashes]
            groups: dict[str, list[int]] = {}
            for i, sig in enumerate(self._signatures):
                if sig:
                    groups.setdefault(sig, []).append(i)
            self._kin = [set() for _ in self._crashes]
            for members in groups.values():
                grouped = len(members) > 1 and self.options.group
                shared = self._explain_all([self._crashes[i] for i in members]) if grouped else []
                if shared:
                    for i in members:
                        self._explanations[i] = shared
                    continue
                # No values explain them together, yet a number that alone caused one of them
                # (every explanation of it names that number and side; a choice they all name
                # only came with it) likely caused the others too: an edge another choice
                # moves (a chunk out of memory above 12288 without mixed chunking, above 8192
                # with it). Their explanations on that number weigh ``kin`` times.
                for j in members:
                    caused = _caused(self._explanations[j])
                    for i in members:
                        if i != j:
                            self._kin[i] |= caused
            need = self.options.corroborated
            self._corroborated = [
                e
                for expl in self._explanations
                for e in expl
                # Pairs of values only: one value met by two crashes may just be a value
                # never run (ablation tests those), and numeric thresholds from one crash are
                # fuzzy; two values that crashed together twice and never ran are a region.
                if need
                and len(e) > 1
                and all(lit[1] == "eq" for lit in e)
                and sum(all(self._meets(lit, c) for lit in e) for c in self._crashes) >= need
            ]
        return self._explanations

    def sum_pairs(self) -> set[frozenset[str]]:
        """The two numbers of each crash explanation that says they are too large together."""
        return {
            frozenset((lit[0], lit[2][0]))
            for expl in self.explanations()
            for e in expl
            for lit in e
            if lit[1] == "sum"
        }

    def _explain(self, crash: dict[str, Any]) -> list[tuple[Literal, ...]]:
        return self._explain_literals(self._literals(crash))

    def _explain_all(self, crashes: list[dict[str, Any]]) -> list[tuple[Literal, ...]]:
        """The explanations that every one of ``crashes`` meets."""
        literals: list[Literal] = []
        for name, value in crashes[0].items():
            if not all(name in c for c in crashes[1:]):
                continue
            values = [c[name] for c in crashes]
            if name in self._numeric and not any(isinstance(v, bool) for v in values):
                # The loosest thresholds that cover them all: >= the least, <= the most.
                literals += [(name, "ge", min(values)), (name, "le", max(values))]
            elif all(same_value(v, value) for v in values):
                literals.append((name, "eq", value))
        # Where no values the crashes share explain them all, two numbers too large
        # together may: crashes along a diagonal edge (a memory pool that the batch size
        # and the context length fill together) meet no one box.
        return self._explain_literals(literals) or self._explain_sums(crashes)

    def _explain_literals(self, literals: list[Literal]) -> list[tuple[Literal, ...]]:
        # A bit mask per literal of the successes that meet it; an explanation must meet none.
        masks = [self._mask(lit) for lit in literals]
        singles: list[tuple[Literal, ...]] = [
            (lit,) for lit, m in zip(literals, masks, strict=True) if m == 0
        ]
        found: list[tuple[Literal, ...]]
        if self.options.max_size < 2 or (singles and not self.options.pairs):
            found = singles
        else:
            alone = {e[0] for e in singles}  # a pair with one of them in it says no more
            found = singles + [
                (literals[i], literals[j])
                for i in range(len(literals))
                for j in range(i + 1, len(literals))
                if literals[i][0] != literals[j][0]
                and masks[i] & masks[j] == 0
                and literals[i] not in alone
                and literals[j] not in alone
            ]
        if not self.options.boundary:
            return found
        return [self._widen(e) for e in found]

    def _mask(self, lit: Literal) -> int:
        """A bit per success, set where it meets ``lit``; kept until the next launch is
        observed (a long study's crashes share their values)."""
        mask = self._masks.get(lit)
        if mask is not None:
            return mask
        name, op, value = lit
        if op in ("ge", "le"):
            column = self._column(name)
            with np.errstate(invalid="ignore"):
                met = column >= value if op == "ge" else column <= value
            mask = int.from_bytes(np.packbits(met, bitorder="little").tobytes(), "little")
        else:  # a value or choice, or a sum: each run read
            mask = sum(1 << i for i, ok in enumerate(self._ok) if self._meets(lit, ok))
        self._masks[lit] = mask
        return mask

    def _column(self, name: str) -> np.ndarray:
        """Number ``name`` in each success (NaN where it is not a number), kept as ``_mask``'s."""
        column = self._columns.get(name)
        if column is None:
            column = self._columns[name] = np.array(
                [
                    float(x)
                    if isinstance(x := ok.get(name), int | float) and not isinstance(x, bool)
                    else np.nan
                    for ok in self._ok
                ]
            )
        return column

    def _widen(self, e: tuple[Literal, ...]) -> tuple[Literal, ...]:
        """Move each numeric threshold toward the nearest configuration that ran.

        ``max_batch >= 795`` after a crash at 795, when 180 ran with the explanation's other
        conditions met, becomes ``max_batch >= 378`` half-way on the log scale (``edge`` 0.5,
        the default) or ``>= 262`` a quarter of the way (0.25): the region's edge lies
        somewhere between the two, and the crash's own value is its far side. Where a
        configuration that ran would fall inside, the threshold goes half-way, then stays at
        the crash's own value.
        """
        for f in sorted({self.options.edge, 0.5}):
            widened = self._widened(e, f)
            if not self._met(widened):
                self._origin[widened] = e
                return widened
        self._origin[e] = e
        return e

    def _widened(self, e: tuple[Literal, ...], f: float) -> tuple[Literal, ...]:
        out = list(e)
        for k, (name, op, value) in enumerate(e):
            if op == "eq":
                continue
            others = [lit for j, lit in enumerate(e) if j != k]
            if op == "sum":
                below = [
                    t
                    for ok in self._ok
                    if all(self._meets(lit, ok) for lit in others)
                    and (t := self._sum(name, value[0], ok)) is not None
                    and t < value[1]
                ]
                if below:
                    edge = max(below)
                    out[k] = (name, op, (value[0], edge + f * (value[1] - edge)))
                    self._ramps[out[k]] = (edge, value[1])
                continue
            ran = self._nearest(name, op, value, others)
            if ran is None:
                continue
            out[k] = (name, op, self._between(name, ran, value, f))
            self._ramps[out[k]] = (ran, value)
        return tuple(out)

    def _met(self, lits: tuple[Literal, ...] | list[Literal]) -> int:
        """A bit per success, set where it meets every one of ``lits``."""
        met = (1 << len(self._ok)) - 1
        for lit in lits:
            met &= self._mask(lit)
        return met

    def _nearest(self, name: str, op: str, value: float, others: list[Literal]) -> float | None:
        """Of the successes that meet ``others``, the value of number ``name`` nearest below
        ``value`` (``op`` "ge"; above it for "le"), as it ran (None: none is)."""
        column = self._column(name)
        met = self._met(others)
        rows = np.unpackbits(
            np.frombuffer(met.to_bytes(len(column) // 8 + 1, "little"), dtype=np.uint8),
            bitorder="little",
        )[: len(column)].astype(bool)
        with np.errstate(invalid="ignore"):
            rows &= column < value if op == "ge" else column > value
        at = np.flatnonzero(rows)
        if not at.size:
            return None
        best = at[int(column[at].argmax() if op == "ge" else column[at].argmin())]
        ran: float = self._ok[int(best)][name]
        return ran

    def _between(self, name: str, a: float, b: float, f: float) -> float:
        """The point ``f`` of the way from ``a`` (ran) to ``b`` (crashed), on the parameter's
        scale."""
        p = self.spec.parameter(name)
        if p.log and a > 0 and b > 0:
            mid = math.exp(math.log(a) + f * (math.log(b) - math.log(a)))
        else:
            mid = a + f * (b - a)
        # Strictly past the configuration that ran, so that it stays outside the region.
        return mid if mid != a else b

    def _literals(self, crash: dict[str, Any]) -> list[Literal]:
        out: list[Literal] = []
        for name, value in crash.items():
            if name in self._numeric and not isinstance(value, bool):
                out += [(name, "ge", value), (name, "le", value)]
            else:
                out.append((name, "eq", value))
        return out

    def _meets(self, lit: Literal, config: Mapping[str, Any]) -> bool:
        """``_meets``, and a sum literal ``(a, "sum", (b, s))``: ``a`` and ``b`` sit in
        their ranges at ``s`` or more, added (``_sum``)."""
        if lit[1] != "sum":
            return _meets(lit, config)
        total = self._sum(lit[0], lit[2][0], config)
        return total is not None and total >= lit[2][1]

    def _sum(self, a: str, b: str, config: Mapping[str, Any]) -> float | None:
        """Where ``a`` and ``b`` of ``config`` sit in their ranges (0 to 1 each, on their
        scales), added (None: either is not set to a number)."""
        xa, xb = (self._frac(n, config.get(n)) for n in (a, b))
        return None if xa is None or xb is None else xa + xb

    def _explain_sums(self, crashes: list[dict[str, Any]]) -> list[tuple[Literal, ...]]:
        """Per two numbers every one of ``crashes`` sets, the two too large together: their
        places in their ranges added at least the least of the crashes', where no success
        had as much (a memory pool that the batch size and the context length fill
        together); widened as other explanations are."""
        if not self.options.sums or self.options.max_size < 2:
            return []
        names = sorted(
            n for n in self._numeric if all(self._frac(n, c.get(n)) is not None for c in crashes)
        )
        found: list[tuple[Literal, ...]] = []
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                least = min(self._sum(a, b, c) or 0.0 for c in crashes)
                lit: Literal = (a, "sum", (b, least))
                if not any(self._meets(lit, ok) for ok in self._ok):
                    found.append((lit,))
        return found if not self.options.boundary else [self._widen(e) for e in found]

    def ablation(
        self, crashed: Mapping[str, Any], baseline: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        """A configuration that tests the crash's simplest explanation, or None.

        When one value alone explains a crash only because no configuration with it ever ran
        (``backend == 'x'`` after one crash with backend x), that explanation would refuse every
        configuration with the value, the optimum too. The baseline with that one value
        changed tells the two apart at the cost of one launch: it runs (the value is not the
        cause; the explanation is dropped) or it crashes (the region is confirmed).
        """
        if (
            not self.options.enabled
            or baseline is None
            or self._ablations >= self.options.ablations
        ):
            return None
        singles = [e[0] for e in self._explain(dict(crashed)) if len(e) == 1]
        # Numeric thresholds are what a crash region's edge looks like; only a categorical or
        # bool value that no run ever had is worth a launch to test.
        if not 0 < len(singles) <= 2 or singles[0][1] != "eq" or len(singles) > 1:
            return None
        name, _, value = singles[0]
        if name not in baseline:
            return None
        test = {**baseline, name: value}
        if any(_same(test, c) for c in (*self._ok, *self._crashes)):
            return None
        self._ablations += 1
        return test

    def probability(self, config: Mapping[str, Any], soft: bool = True) -> float | None:
        """The largest share of one crash's explanations that ``config`` meets (None: no
        crash explained yet); ``soft=False``: met at their thresholds, with no ramp."""
        shares: dict[tuple[tuple[Literal, ...], ...], float] = {}
        explanations = self.explanations()  # (and ``_kin`` with them)
        o = self.options
        jointly = soft and o.soft and o.weighs and o.joint
        for kin, expl in zip(self._kin, explanations, strict=True):
            if not expl:
                continue
            weights, met = [], []
            for e in expl:
                joint = self._joint(e) if jointly else None
                if joint is None:
                    weights.append(self._weight(e))
                    met.append(
                        math.prod(
                            self._degree(lit, config) if soft else self._meets(lit, config)
                            for lit in e
                        )
                    )
                else:
                    weights.append(joint.weight)
                    met.append(self._joint_met(joint, config))
                if any(lit[:2] in kin for lit in e):
                    weights[-1] *= self.options.kin
            # crashes explained together count once
            shares[tuple(expl)] = sum(w * m for w, m in zip(weights, met, strict=True)) / sum(
                weights
            )
        if not shares:
            return None
        if not self.options.combine:
            return max(shares.values())
        # Each crash region some explanation of which is right: the configuration runs only
        # if it escapes every one of them.
        return 1.0 - math.prod(1.0 - h for h in shares.values())

    def _weight(self, e: tuple[Literal, ...]) -> float:
        """How likely explanation ``e`` is the crash's cause, against the crash's others
        (``weighs``; else 1 each). A threshold is as likely anywhere in the stretch where it
        may lie, between the nearest run and the crash (on the parameter's scale, as a share
        of its range; from the range's end where no run is near): a batch size that went from
        139 to 32768 is likelier to have crossed an edge than a buffer that went from 115 to
        178. A value or choice counts ``eq_weight``; the literals of a pair multiply."""
        if not self.options.weighs:
            return 1.0
        if e not in self._weights:
            self._weights[e] = self._stretches(e)
        return self._weights[e]

    def _joint(self, e: tuple[Literal, ...]) -> _Joint | None:
        """Explanation ``e`` read through its crash's own thresholds (``joint``): each
        number's edge as likely anywhere below the crash's value on its side (on its scale),
        the edges that would put a run inside ruled out. Its weight is the share of the
        edges' space left (a value or choice ``eq_weight``, as in ``_stretches``), where
        ``_stretches`` multiplies each threshold's stretch measured alone, so a batch size
        and a thread count that no run had together both high weigh as if every run had
        sat at the range's low end. None: ``e`` has a sum, or no number."""
        if e not in self._joints:
            self._joints[e] = self._joint_of(self._origin.get(e, e))
        return self._joints[e]

    def _joint_of(self, origin: tuple[Literal, ...]) -> _Joint | None:
        eqs = tuple(lit for lit in origin if lit[1] == "eq")
        nums = [lit for lit in origin if lit[1] != "eq"]
        if not 0 < len(nums) <= 2 or any(lit[1] not in ("ge", "le") for lit in nums):
            return None
        sides = tuple((lit[0], lit[1]) for lit in nums)
        crash = self._places({lit[0]: lit[2] for lit in nums}, sides)
        if crash is None:
            return None
        runs = []
        for ok in self._ok:
            at = self._places(ok, sides) if all(_meets(lit, ok) for lit in eqs) else None
            if at is not None:
                runs.append([min(a, c) for a, c in zip(at, crash, strict=True)])
        runs = _front(runs)
        area = _left(crash, runs)
        if area <= 1e-12:
            return None
        weight = max(area, LEAST_STRETCH ** len(nums)) * self.options.eq_weight ** len(eqs)
        return _Joint(weight, eqs, sides, crash, runs, area)

    def _joint_met(self, joint: _Joint, config: Mapping[str, Any]) -> float:
        """The chance ``config`` meets a ``_joint`` explanation: the share of its edges'
        space left that lies at or below ``config``'s numbers."""
        if not all(_meets(lit, config) for lit in joint.eqs):
            return 0.0
        at = self._places(config, joint.sides)
        if at is None:
            return 0.0
        box = [min(max(a, 0.0), c) for a, c in zip(at, joint.crash, strict=True)]
        runs = [[min(r, b) for r, b in zip(run, box, strict=True)] for run in joint.runs]
        return min(1.0, max(0.0, _left(box, runs) / joint.area))

    def _places(
        self, config: Mapping[str, Any], sides: tuple[tuple[str, str], ...]
    ) -> list[float] | None:
        """Where ``config``'s numbers sit in their ranges, each counted from the end its
        threshold starts at: the low end for ``ge``, the high end for ``le`` (None: one is not
        a number)."""
        out = []
        for name, op in sides:
            place = self._frac(name, config.get(name))
            if place is None:
                return None
            out.append(place if op == "ge" else 1.0 - place)
        return out

    def _stretches(self, e: tuple[Literal, ...]) -> float:
        """``_weight`` computed: the product over ``e``'s literals."""
        w = 1.0
        for lit in e:
            name, op, value = lit
            if op == "eq":
                w *= self.options.eq_weight
                continue
            ramp = self._ramps.get(lit)
            if op == "sum":
                ran, crashed = ramp if ramp is not None else (0.0, value[1])
                stretch = abs(crashed - ran) / 2.0
            else:
                end = self.spec.static_range(self.spec.parameter(name))[0 if op == "ge" else 1]
                ran, crashed = ramp if ramp is not None else (end, value)
                stretch = abs(self._place(name, crashed) - self._place(name, ran))
            w *= max(LEAST_STRETCH, min(1.0, stretch))
        return w

    def _degree(self, lit: Literal, config: Mapping[str, Any]) -> float:
        """How likely ``config`` meets ``lit``: 0 or 1, except (``soft``) between a widened
        threshold's nearest run and its crash, where it rises along the parameter's scale."""
        ramp = self._ramps.get(lit) if self.options.soft else None
        if lit[1] == "sum":
            total = self._sum(lit[0], lit[2][0], config)
            if ramp is None or total is None or ramp[0] == ramp[1]:
                return 1.0 if self._meets(lit, config) else 0.0
            return min(1.0, max(0.0, (total - ramp[0]) / (ramp[1] - ramp[0])))
        name = lit[0]
        x = config.get(name)
        if ramp is None or isinstance(x, bool) or not isinstance(x, int | float):
            return 1.0 if self._meets(lit, config) else 0.0
        ran, crashed, at = (self._place(name, v) for v in (*ramp, x))
        if ran == crashed:
            return 1.0 if self._meets(lit, config) else 0.0
        return min(1.0, max(0.0, (at - ran) / (crashed - ran)))

    def _place(self, name: str, x: Any) -> float:
        """Where number ``x`` of ``name`` sits in its range (``_fraction``), for the ramps."""
        place = self._frac(name, x)
        return 0.0 if place is None else place

    def _frac(self, name: str, x: Any) -> float | None:
        """``_fraction`` of number ``x`` of ``name``, its parameter and range looked up once."""
        scale = self._scales.get(name)
        if scale is None:
            p = self.spec.parameter(name)
            scale = self._scales[name] = (p, self.spec.static_range(p))
        return _fraction(self.spec, scale[0], x, scale[1])

    def check(self, config: Mapping[str, Any]) -> str | None:
        """Why ``config`` should not be launched (starts with "predicted crash"), or None."""
        o = self.options
        if not o.enabled or self._streak >= o.max_streak:
            self._streak = 0
            return None
        why = self._why(config)
        if why is None or self._rng.random() < o.explore:
            self._streak = 0
            return None
        self._streak += 1
        return f"{PREFIX}: {why}"

    def predicts(self, config: Mapping[str, Any]) -> bool:
        """Whether the model would refuse ``config`` (no exploration draw, no streak)."""
        return self.options.enabled and self._why(config) is not None

    def _why(self, config: Mapping[str, Any]) -> str | None:
        o = self.options
        for expl in self.explanations():
            hits = [e for e in expl if all(self._meets(lit, config) for lit in e)]
            if hits and len(hits) >= o.agree * len(expl):
                more = f" (1 of {len(expl)} explanations)" if len(expl) > 1 else ""
                return (
                    f"{_conj(hits[0])}, as in a crashed configuration{more}; no "
                    "configuration that ran had it"
                )
        for e in self._corroborated:
            if all(self._meets(lit, config) for lit in e):
                return (
                    f"{_conj(e)}, as in several crashed configurations; no configuration "
                    "that ran had it"
                )
        spent = len(self._crashes)
        if o.budget and spent >= o.budget:
            # The study has had the crashes it may: it takes no more even chances.
            p = self.probability(config)
            if p is not None and p >= o.cap:
                return (
                    f"a {p:.0%} chance of crashing after {spent} crashes (crash budget "
                    f"{o.budget}: budget.crash_budget in the space file)"
                )
        return None


def crash_allowance(share: float, trials: int) -> int:
    """The crashes a crash budget of ``share`` allows a study of ``trials`` (0: no budget)."""
    return max(1, round(share * trials)) if share > 0 else 0


def signature_of(cause: str | None, message: str = "") -> str:
    """How a crash failed, for grouping crashes: its cause, or where no rule named one, its
    message with the numbers taken out (two launches of one region print other sizes)."""
    if cause and cause != "unknown":
        return cause
    text = re.sub(r"\d+(\.\d+)?", "#", message.strip().lower())
    return f"unknown: {text[:120]}" if text else ""


def _caused(expl: list[tuple[Literal, ...]]) -> set[tuple[str, str]]:
    """The (number, side) pairs that every one of a crash's explanations ``expl`` names."""
    sides = [{lit[:2] for lit in e if lit[1] != "eq"} for e in expl]
    return set.intersection(*sides) if sides else set()


def _meets(lit: Literal, config: Mapping[str, Any]) -> bool:
    name, op, value = lit
    if name not in config:
        return False
    x = config[name]
    if op == "eq":
        return same_value(x, value)
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    return bool(x >= value) if op == "ge" else bool(x <= value)


def _front(runs: list[list[float]]) -> list[list[float]]:
    """The runs whose boxes from the origin no other run's box holds (one or two sides): the
    same union, however many runs a long study has; largest first place first, as ``_left``
    reads them (a front cut at any corner keeps that order)."""
    if not runs:
        return []
    if len(runs[0]) == 1:
        return [max(runs)]
    front: list[list[float]] = []
    for run in sorted(runs, key=lambda r: (-r[0], -r[1])):
        if not front or run[1] > front[-1][1]:
            front.append(run)
    return front


def _left(corner: list[float], runs: list[list[float]]) -> float:
    """The volume of the box from the origin to ``corner`` (one or two sides) that no run's
    own box from the origin covers: the edges below a crash that no run rules out. ``runs``
    in ``_front``'s order."""
    if len(corner) == 1:
        return max(0.0, corner[0] - max((r[0] for r in runs), default=0.0))
    covered, top = 0.0, 0.0
    for i, (a, b) in enumerate(runs):
        top = max(top, b)
        covered += (a - (runs[i + 1][0] if i + 1 < len(runs) else 0.0)) * top
    return max(0.0, corner[0] * corner[1] - covered)


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return config_key(a) == config_key(b)


def _conj(e: tuple[Literal, ...]) -> str:
    return " and ".join(_show(lit) for lit in e)


def _show(lit: Literal) -> str:
    name, op, value = lit
    if op == "sum":  # where the two sit in their ranges (0 to 1 on their scales), added
        return f"{name} + {value[0]} >= {value[1]:.2f} of their ranges"
    return f"{name} {dict(eq='==', ge='>=', le='<=')[op]} {value!r}"


def _features(spec: StudySpec, p: Parameter, value: Any, active: bool) -> list[float]:
    if p.type in ("categorical", "bool"):
        # One-hot scaled so that two different values are at distance 1, like numeric ends.
        scale = 1.0 / math.sqrt(2.0)
        return [
            scale if active and value == v and type(value) is type(v) else 0.0 for v in p.values()
        ]
    # int/float: position in the range (log scale where the parameter is log), plus whether
    # the parameter is active at all (conditional parameters).
    x = _fraction(spec, p, value) if active else None
    return [0.0, 0.0] if x is None else [min(1.0, max(0.0, x)), 1.0]


def _fraction(
    spec: StudySpec, p: Parameter, value: Any, bounds: tuple[float, float] | None = None
) -> float | None:
    """Where ``value`` sits in the parameter's range (``bounds`` where given, its static range
    otherwise), 0 to 1 on its scale (log where the parameter is; None: not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    low, high = bounds if bounds is not None else spec.static_range(p)
    x = float(value)
    if p.log and low > 0 and x > 0:
        low, high, x = math.log(low), math.log(high), math.log(x)
    span = high - low
    return (x - low) / span if span > 0 else 0.0


__all__ = [
    "CrashRegions",
    "CrashRisk",
    "PREFIX",
    "SteeringOptions",
    "crash_allowance",
    "make_risk",
    "signature_of",
]
