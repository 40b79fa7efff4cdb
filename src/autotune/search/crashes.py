"""Where configurations crash: each crash explained by what no configuration that ran had.

An *explanation* of a crashed configuration is a condition on one or two of its values that
no configuration which ran meets: ``attention == fa3``, ``batch >= 300``, ``kernel == k2 and
batch >= 200``, ``batch and mem too large together`` (their places in their ranges added).
Every explanation the runs leave is kept. A number's threshold lies somewhere between the
nearest value that ran and the crash's own, so meeting it is a ramp over that stretch, not a
step; an explanation weighs as much as that stretch is wide (a value or choice as half a
range), as likely a priori as the threshold is to lie anywhere in it, and a pair of
conditions weighs the product (the simpler explanation is the likelier). Crashes that
failed alike (the same signature) are one cause where one explanation covers them all (one
cause is likelier than several): each joins the first such group that an explanation still
covers with it. A configuration's chance of crashing in a group is the weighted share of the
group's explanations it meets; groups combine as independent causes, and
so does each pair of values, both moved from the study's start, that no run had together (a
crash region is mostly such a pair), at the rate this study's launches of new pairs crashed.
A configuration refused before launch (a constraint, a value known to fail) is learned the
same way, as a region of its own: what was refused is never proposed again, nor what looks
the same to the refusal.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from autotune.search.space import Param, encode

EQ = 0.5  # a value or choice weighs as a stretch of half the range
LEAST = 0.02  # the least stretch a threshold weighs
BINS = 4  # a number's range in this many parts, for pairs of values run together
PAIR = 1 << 32  # more than any pair of values' number (``first * 1000 + second``)


@dataclass(frozen=True)
class Explanation:
    """One explanation: its weight and how to read it off encoded configurations."""

    weight: float
    # (columns, kind, a, b): "eq" a choice's index a; "ge"/"le" a ramp from place a (where
    # the nearest run sat) to place b (the crash's); "sum" the columns' places weighed by
    # ``plane`` and added, a ramp from a to b
    terms: tuple[tuple[tuple[int, ...], str, float, float], ...]
    plane: np.ndarray | None = None  # a "sum" term's weights of its columns

    def met(self, x: np.ndarray) -> np.ndarray:
        """How far each row of ``x`` (encoded configurations) meets this explanation, 0 to 1."""
        out = np.ones(len(x))
        for cols, kind, a, b in self.terms:
            if kind == "eq":
                out *= x[:, cols[0]] == a
                continue
            if kind == "sum":
                v = x[:, list(cols)] @ self.plane
            else:
                v = x[:, cols[0]] if kind == "ge" else -x[:, cols[0]]
            ramp = np.clip((v - a) / (b - a), 0.0, 1.0) if b > a else (v >= b).astype(float)
            out *= np.where(np.isnan(ramp), 0.0, ramp)  # (np.nan_to_num: slower, same)
        return out


def explain(crashes: np.ndarray, runs: np.ndarray, params: Sequence[Param]) -> list[Explanation]:
    """The explanations that every one of ``crashes`` (encoded rows that failed alike) meets
    and no run (encoded rows) meets: a value they all had, a number past the lowest of theirs
    (or under the highest), or two of those together; or the numbers' places weighed and
    added past the lowest of theirs."""
    numeric = tuple(p.numeric for p in params)
    if not numeric:
        return _explain(crashes, runs, numeric)
    # The same crashes and runs are explained again by each model of one study state (the
    # driver's and the sampler's), and a region's crashes again as each joins it.
    rows = [np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in (crashes, runs)]
    return list(_explained(rows[0], rows[1], numeric))


@functools.lru_cache(maxsize=512)
def _explained(crashes: bytes, runs: bytes, numeric: tuple[bool, ...]) -> tuple[Explanation, ...]:
    def rows(data: bytes) -> np.ndarray:
        return np.frombuffer(data, dtype=np.float64).reshape(-1, len(numeric))

    return tuple(_explain(rows(crashes), rows(runs), numeric))


def _explain(crashes: np.ndarray, runs: np.ndarray, numeric: tuple[bool, ...]) -> list[Explanation]:
    singles: list[tuple[tuple[int, ...], str, float, float]] = []
    for j, is_number in enumerate(numeric):
        v = crashes[:, j]
        if np.isnan(v).any():
            continue
        if not is_number:
            if (v == v[0]).all():
                singles.append(((j,), "eq", v[0], v[0]))
            continue
        singles.append(((j,), "ge", v.min(), v.min()))
        singles.append(((j,), "le", -v.max(), -v.max()))
    out: list[Explanation] = []
    for term in singles:
        e = _consistent((term,), runs)
        if e is not None:
            out.append(e)
    for s, t in itertools.combinations(singles, 2):
        if s[0] != t[0]:
            e = _consistent((s, t), runs)
            if e is not None:
                out.append(e)
    # the numbers every crash and every run has (a conditional one is not a pool's)
    numbers = [
        j
        for j, is_number in enumerate(numeric)
        if is_number and not np.isnan(crashes[:, j]).any() and not np.isnan(runs[:, j]).any()
    ]
    # A pool the numbers fill together: past a weighted sum; alone, or with a value the
    # crashes share (a KV cache dtype changes what the numbers take), one of as many such
    # values as there are (a condition more on a fitted sum is the less likely).
    more = 1.0 / max(1, len(singles))
    for eq in [None] + [t for t in singles if t[1] == "eq"]:
        among = runs if eq is None else runs[runs[:, eq[0][0]] == eq[2]]
        plane = _plane(crashes[:, numbers], among[:, numbers]) if len(numbers) > 1 else None
        if plane is not None:
            w, start, end = plane
            terms = ((tuple(numbers), "sum", start, end),) + (() if eq is None else (eq,))
            weight = max(LEAST, end - start) * (1.0 if eq is None else EQ * more)
            out.append(Explanation(weight, terms, w))
    return out


def _plane(crashes: np.ndarray, runs: np.ndarray) -> tuple[np.ndarray, float, float] | None:
    """The weights (none negative, summing to 1) of the numbers' places whose weighted sum
    parts the crashes from the runs with the widest gap: (weights, the runs' highest sum,
    the crashes' lowest); None where no such sum parts them."""
    from scipy.optimize import linprog  # here: readers of a ledger need no scipy (model.py)

    n = crashes.shape[1]
    # the weights are not negative: a run at least as large as a crash in every number
    # leaves no such sum (the common case in a long study, found without a program)
    for c in crashes:
        if (runs >= c).all(axis=1).any():
            return None
    # variables: w (n), t, margin; maximise the margin
    cost = np.zeros(n + 2)
    cost[-1] = -1.0
    upper = np.vstack(
        [
            np.hstack([-crashes, np.ones((len(crashes), 1)), np.ones((len(crashes), 1))]),
            np.hstack([runs, -np.ones((len(runs), 1)), np.zeros((len(runs), 1))]),
        ]
    )
    fit = linprog(
        cost,
        A_ub=upper,
        b_ub=np.zeros(len(upper)),
        A_eq=np.hstack([np.ones((1, n)), np.zeros((1, 2))]),
        b_eq=[1.0],
        bounds=[(0, None)] * n + [(None, None), (0, 1)],
        method="highs",
    )
    if fit.status != 0 or fit.x[-1] < 1e-6:
        return None
    w = fit.x[:n]
    start = float((runs @ w).max()) if len(runs) else 0.0
    return w, start, float((crashes @ w).min())


def _consistent(
    terms: tuple[tuple[tuple[int, ...], str, float, float], ...],
    runs: np.ndarray,
    weight: float = 1.0,
) -> Explanation | None:
    """The explanation ``terms`` (thresholds at the crash's values) with each threshold's
    ramp starting where the nearest run that meets the other terms sat; None where some run
    meets them all."""

    def value(term: tuple[tuple[int, ...], str, float, float]) -> np.ndarray:
        cols, kind, _, _ = term
        return runs[:, cols[0]] if kind != "le" else -runs[:, cols[0]]

    meets = [(value(t) == t[2]) if t[1] == "eq" else (value(t) >= t[3]) for t in terms]
    if len(runs) and np.any(np.logical_and.reduce(meets)):
        return None
    done = []
    for k, (cols, kind, _, crash) in enumerate(terms):
        if kind == "eq":
            weight *= EQ
            done.append((cols, kind, crash, crash))
            continue
        others = np.logical_and.reduce(
            [m for i, m in enumerate(meets) if i != k] or [np.ones(len(runs), bool)]
        )
        below = value(terms[k])[others] if len(runs) else np.array([])
        below = below[~np.isnan(below)]
        floor = 0.0 if kind == "ge" else -1.0
        start = float(below.max()) if len(below) else floor
        stretch = max(LEAST, crash - start)
        weight *= min(1.0, stretch)
        done.append((cols, kind, start, crash))
    return Explanation(weight, tuple(done))


class CrashModel:
    """The crash regions a study's crashes and refusals so far say exist.

    Args:
        params: the parameters, in the order configurations are encoded.
        launches: in launch order, each configuration launched and, where it crashed, how
            (its signature; None: it ran).
        refused: (configuration, why) of each proposal refused before launch.
    """

    def __init__(
        self,
        params: Sequence[Param],
        launches: Sequence[tuple[Mapping[str, object], str | None]],
        refused: Sequence[tuple[Mapping[str, object], str]] = (),
        start: Mapping[str, object] | None = None,
    ) -> None:
        self.params = list(params)
        failed = [(c, s) for c, s in launches if s is not None] + list(refused)
        ran = [c for c, s in launches if s is None]
        runs = encode(self.params, ran)
        first = start if start is not None else (ran[0] if ran else {})
        self._start = self._parts(encode(self.params, [first]))[0]
        parts = self._parts(runs)
        self._pairs = [
            (i, j, set((parts[:, i] * 1000 + parts[:, j]).tolist()))
            for i, j in itertools.combinations(range(len(self.params)), 2)
        ]
        # the same pairs as columns, for all pairs of many configurations at once: the first
        # and second column of each pair, and each pair's values that ran, as one sorted array
        # of ``pair index * PAIR + values``
        self._first = np.array([i for i, _, _ in self._pairs], dtype=int)
        self._second = np.array([j for _, j, _ in self._pairs], dtype=int)
        self._ran = np.array(
            sorted(k * PAIR + v for k, (_, _, ran) in enumerate(self._pairs) for v in ran),
            dtype=np.int64,
        )
        self.novel_rate = self._rate(launches)
        rows = encode(self.params, [c for c, _ in failed])
        # Crashes that failed alike are one cause where one explanation covers them all: each
        # joins the first group of its kind that an explanation still covers with it.
        self.regions: dict[str, list[list[Explanation]]] = {}
        groups: dict[str, list[tuple[list[int], list[Explanation]]]] = {}
        for i, (_, signature) in enumerate(failed):
            for members, expl in groups.setdefault(signature, []):
                joined = explain(rows[[*members, i]], runs, self.params)
                if joined:
                    members.append(i)
                    expl[:] = joined
                    break
            else:
                groups[signature].append(([i], explain(rows[[i]], runs, self.params)))
        for signature, found in groups.items():
            self.regions[signature] = [expl for _, expl in found]

    def _parts(self, x: np.ndarray) -> np.ndarray:
        """Each value as a small integer: a choice's index, a number's part of its range
        (``BINS``), 0 where absent."""
        out = np.zeros(x.shape, dtype=int)
        for j, p in enumerate(self.params):
            v = np.minimum(np.floor(x[:, j] * BINS), BINS - 1) if p.numeric else x[:, j]
            out[:, j] = np.nan_to_num(v, nan=-1.0).astype(int) + 1
        return out

    def _rate(self, launches: Sequence[tuple[Mapping[str, object], str | None]]) -> float:
        """The chance that a new pair of moved values crashes, as this study's launches show
        it: replayed in order, the crashes among launches with such pairs over the pairs they
        had (a Beta(1, 19) prior: 5% before any evidence)."""
        crashed, exposed = 0, 0
        if not self._pairs or not launches:
            return 1 / 20
        parts = self._parts(encode(self.params, [c for c, _ in launches]))
        codes, moved = self._codes(parts)
        tested: list[set[int]] = [set() for _ in self._pairs]
        for k, (_, signature) in enumerate(launches):
            row, can = codes[k].tolist(), moved[k].tolist()
            new = sum(1 for m, v, seen in zip(can, row, tested, strict=True) if m and v not in seen)
            if new:
                exposed += new
                crashed += signature is not None
            if signature is None:
                for v, seen in zip(row, tested, strict=True):
                    seen.add(v)
        return (crashed + 1) / (exposed + 20)

    def _codes(self, parts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each configuration's pair of values in every pair of columns, as one number
        (``first * 1000 + second``), and whether both were moved from the start."""
        first, second = parts[:, self._first], parts[:, self._second]
        moved = (first != self._start[self._first]) & (second != self._start[self._second])
        return first * 1000 + second, moved

    def novel(self, x: np.ndarray) -> np.ndarray:
        """How many pairs of each configuration's values, both moved from the start, no run
        had together."""
        if not self._pairs:
            return np.zeros(len(x))
        codes, moved = self._codes(self._parts(x))
        tagged = np.arange(len(self._pairs), dtype=np.int64) * PAIR + codes
        new = moved & ~np.isin(tagged, self._ran)
        return np.asarray(new.sum(axis=1), dtype=float)

    def probability(self, x: np.ndarray) -> np.ndarray:
        """Each encoded configuration's chance of crashing: in a learned region, or as a pair
        of values no run had together (``novel_rate`` each)."""
        escape = (1.0 - self.novel_rate) ** self.novel(x)
        for groups in self.regions.values():
            for expl in groups:  # each group a cause of its own
                if expl:
                    total = sum(e.weight for e in expl)
                    escape *= 1.0 - sum(e.weight * e.met(x) for e in expl) / total
        return 1.0 - escape

    def certain(self, x: np.ndarray) -> np.ndarray:
        """Whether each configuration meets every explanation of some crash at its crash's
        values: what the evidence says will crash (a refusal's region: will be refused)."""
        out = np.zeros(len(x), bool)
        for signature in self.regions:
            out |= self.within(x, signature)
        return out

    def within(self, x: np.ndarray, signature: str) -> np.ndarray:
        """Whether each configuration meets every explanation of some crash of a region."""
        out = np.zeros(len(x), bool)
        for expl in self.regions[signature]:
            if expl:
                out |= np.logical_and.reduce([e.met(x) >= 1.0 for e in expl])
        return out


__all__ = ["CrashModel", "Explanation", "explain"]
