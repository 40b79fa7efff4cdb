"""How much of a measured gain is real: a per-study noise model and a gain with its interval.

A server launched twice with the same flags does not measure the same twice: the launch is the
unit of noise (memory layout, clocks, a neighbour on a shared machine), and windows measured on
one running server only see the smaller within-launch part. So every comparison here is between
*launches* (one value per launch: the median of its windows), never between windows.

The interval is Welch's t-interval on the logarithm of the per-launch values: a ratio of
geometric means, so the same relative noise gives the same width on any scale. It was chosen
by a calibration check (``bench/gain_ci_calibration.py``; its figures are in
docs/benchmarks.md): it holds its 95% at the few launches a GPU study can afford, where a
bootstrap of the median ratio under-covers and a rank interval does not exist. A winner picked
among several candidates is compared at a Bonferroni-adjusted level (``candidates``), so that
the chance that any of them is claimed on noise stays within 5%. Student's t quantiles come
from scipy.

Launches made in rounds (confirmation's) are compared within rounds instead
(:func:`blocked_gain`): each round a block, the noise the residual of an additive model of
round and configuration on log values, so that a machine that drifts between rounds (its
caches warming launch after launch) does not widen the interval until no gain shows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autotune.core.summary import LEVEL, Gain, LaunchCounts, Noise
from autotune.models import Direction

WELCH = "welch-t on log per-launch values"
BLOCKED = "t on log ratios within rounds (rounds as blocks)"


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (scipy.stats)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    # imported here: scipy.stats takes most of a second, and most readers of a study (every
    # ``autotune status``) never ask for an interval
    from scipy import stats

    return float(stats.t.ppf(p, df))


# -- samples -------------------------------------------------------------------------------------


def launch_value(windows: Sequence[float]) -> float:
    """One launch's value: the median of its windows (a slow first window does not drag it)."""
    if not windows:
        raise ValueError("a launch needs at least one window")
    return float(statistics.median(windows))


def _log_sd(values: Sequence[float]) -> float | None:
    if len(values) < 2 or any(v <= 0 for v in values):
        return None
    return statistics.stdev(math.log(v) for v in values)


@dataclass(frozen=True)
class NoiseModel:
    """The study's measured noise, as relative spreads (standard deviation of log values).

    ``launch_cv``: from one launch to the next of the same configuration (the baseline, launched
    several times at the start, plus every other configuration launched more than once).
    ``window_cv``: between windows on one running server, pooled over launches.
    """

    launch_cv: float | None
    window_cv: float | None
    launches: int
    windows: int

    @classmethod
    def from_launches(cls, groups: Sequence[Sequence[Sequence[float]]]) -> NoiseModel:
        """Build from ``groups`` (one per configuration) of launches (each a list of windows).

        The launch spread is pooled over every configuration launched at least twice, so a
        configuration relaunched later sharpens it; only positive values count (logs).
        """
        num, den = 0.0, 0
        wnum, wden = 0.0, 0
        n_launch = n_window = 0
        for launches in groups:
            values = [launch_value(w) for w in launches if w]
            n_launch += len(values)
            sd = _log_sd(values)
            if sd is not None:
                num += sd * sd * (len(values) - 1)
                den += len(values) - 1
            for windows in launches:
                n_window += len(windows)
                wsd = _log_sd(windows)
                if wsd is not None:
                    wnum += wsd * wsd * (len(windows) - 1)
                    wden += len(windows) - 1
        return cls(
            launch_cv=math.sqrt(num / den) if den else None,
            window_cv=math.sqrt(wnum / wden) if wden else None,
            launches=n_launch,
            windows=n_window,
        )

    def detectable_pct(self, n_baseline: int, n_best: int, level: float = LEVEL) -> float | None:
        """The smallest gain (percent) the interval could tell from zero with these launch counts.

        None when the launch noise is unknown (fewer than two launches of anything).
        """
        if self.launch_cv is None or n_baseline < 2 or n_best < 2:
            return None
        se = self.launch_cv * math.sqrt(1 / n_baseline + 1 / n_best)
        df = n_baseline + n_best - 2
        return (math.exp(t_quantile(1 - (1 - level) / 2, df) * se) - 1) * 100

    def record(self) -> Noise:
        """The noise as the study's summary keeps it."""
        return Noise(
            launch_cv=self.launch_cv,
            window_cv=self.window_cv,
            launches=self.launches,
            windows=self.windows,
        )


def log_ratio_interval(
    baseline: Sequence[float], best: Sequence[float], level: float = LEVEL
) -> tuple[float, float, float]:
    """``(estimate, lo, hi)`` of log(best / baseline), Welch's interval on log values.

    With one launch on a side there is no spread from that side; the other side's spread stands
    in for it (the same server, the same machine), and with one launch on both the interval is
    unbounded.
    """
    lb = [math.log(v) for v in baseline]
    lc = [math.log(v) for v in best]
    est = statistics.fmean(lc) - statistics.fmean(lb)
    vb = statistics.variance(lb) if len(lb) > 1 else None
    vc = statistics.variance(lc) if len(lc) > 1 else None
    if vb is None and vc is None:
        return est, -math.inf, math.inf
    vb = vc if vb is None else vb
    vc = vb if vc is None else vc
    assert vb is not None and vc is not None
    sb, sc = vb / len(lb), vc / len(lc)
    se2 = sb + sc
    if se2 == 0:
        return est, est, est
    # Welch-Satterthwaite degrees of freedom; a side with one launch contributes none of its own.
    parts = [s * s / (n - 1) for s, n in ((sb, len(lb)), (sc, len(lc))) if n > 1]
    df = max(1.0, se2 * se2 / sum(parts))
    half = t_quantile(1 - (1 - level) / 2, df) * math.sqrt(se2)
    return est, est - half, est + half


def gain(
    baseline: Sequence[float],
    best: Sequence[float],
    direction: Direction,
    *,
    candidates: int = 1,
    level: float = LEVEL,
) -> Gain:
    """The gain of ``best`` over ``baseline`` (per-launch values) with its interval.

    Args:
        baseline: one value per baseline launch (positive).
        best: one value per launch of the winner (positive).
        direction: the objective's direction; the gain is positive when ``best`` is better.
        candidates: how many configurations the winner was picked from on these launches
            (Bonferroni: each interval at ``1 - (1 - level) / candidates``).
        level: the family's confidence.

    Raises:
        ValueError: an empty side or a non-positive value.
    """
    if not baseline or not best:
        raise ValueError("the gain needs at least one launch of the baseline and of the best")
    if any(v <= 0 for v in (*baseline, *best)):
        raise ValueError("per-launch values must be positive (the interval is on their logs)")
    each = 1 - (1 - level) / max(1, candidates)
    counts = LaunchCounts(baseline=len(baseline), best=len(best))
    return _gain(log_ratio_interval(baseline, best, each), direction, counts, each)


def _gain(
    interval: tuple[float, float, float],
    direction: Direction,
    counts: LaunchCounts,
    level: float,
    method: str = WELCH,
) -> Gain:
    """The :class:`Gain` of the log-ratio ``(estimate, lo, hi)``."""
    est, lo, hi = interval
    if direction == "minimize":  # smaller is better: the gain is the relative drop, 1 - c/b
        pct, lo_pct, hi_pct = (-_expm1_pct(x) for x in (est, hi, lo))
    else:  # larger is better: the relative rise, c/b - 1
        pct, lo_pct, hi_pct = (_expm1_pct(x) for x in (est, lo, hi))
    return Gain(
        pct=pct,
        ci95_pct=(lo_pct, hi_pct),
        significant=lo_pct > 0,
        launches=counts,
        level=level,
        method=method,
    )


def blocked_log_ratio(
    rounds: Mapping[int, Mapping[str, float]], reference: str, other: str, level: float = LEVEL
) -> tuple[float, float, float, int] | None:
    """``(estimate, lo, hi, rounds used)`` of log(other / reference) from launches made in
    rounds, each round a block (confirmation's interleaved rounds): None with fewer than two
    rounds holding both.

    The estimate is the mean over rounds of the log ratio within a round, so a drift of the
    machine between rounds (a warming cache, a neighbour) cancels. The noise is the residual
    of an additive model on log values, round plus configuration, fitted to every
    configuration measured in all those rounds: with several candidates confirmed together,
    their launches estimate the noise too ((rounds - 1) x (configurations - 1) degrees of
    freedom; with two, the paired t-interval).
    """
    used = sorted(r for r, row in rounds.items() if reference in row and other in row)
    if len(used) < 2:
        return None
    keys = [k for k in rounds[used[0]] if all(k in rounds[r] for r in used)]
    y = {(r, k): math.log(rounds[r][k]) for r in used for k in keys}
    est = statistics.fmean(y[r, other] - y[r, reference] for r in used)
    row = {r: statistics.fmean(y[r, k] for k in keys) for r in used}
    col = {k: statistics.fmean(y[r, k] for r in used) for k in keys}
    grand = statistics.fmean(row.values())
    ss = sum((y[r, k] - row[r] - col[k] + grand) ** 2 for r in used for k in keys)
    df = (len(used) - 1) * (len(keys) - 1)
    if ss == 0:
        return est, est, est, len(used)
    half = t_quantile(1 - (1 - level) / 2, df) * math.sqrt(2 * ss / df / len(used))
    return est, est - half, est + half, len(used)


def blocked_gain(
    rounds: Mapping[int, Mapping[str, float]],
    reference: str,
    best: str,
    direction: Direction,
    *,
    candidates: int = 1,
    level: float = LEVEL,
) -> Gain | None:
    """:func:`gain` of ``best`` over ``reference`` from launches made in rounds
    (:func:`blocked_log_ratio`), None with fewer than two rounds holding both."""
    if any(v <= 0 for row in rounds.values() for k, v in row.items() if k in (reference, best)):
        raise ValueError("per-launch values must be positive (the interval is on their logs)")
    rounds = {r: {k: v for k, v in row.items() if v > 0} for r, row in rounds.items()}
    each = 1 - (1 - level) / max(1, candidates)
    found = blocked_log_ratio(rounds, reference, best, each)
    if found is None:
        return None
    est, lo, hi, n = found
    return _gain((est, lo, hi), direction, LaunchCounts(baseline=n, best=n), each, BLOCKED)


def _column(rounds: Mapping[int, Mapping[str, float]], key: str) -> list[float]:
    return [rounds[r][key] for r in sorted(rounds) if key in rounds[r]]


def gain_in_rounds(
    rounds: Mapping[int, Mapping[str, float]],
    reference: str,
    best: str,
    direction: Direction,
    *,
    candidates: int = 1,
    level: float = LEVEL,
) -> Gain:
    """:func:`blocked_gain` once two rounds hold both, else :func:`gain` over all their
    launches."""
    g = blocked_gain(rounds, reference, best, direction, candidates=candidates, level=level)
    if g is not None:
        return g
    ref, other = _column(rounds, reference), _column(rounds, best)
    return gain(ref, other, direction, candidates=candidates, level=level)


def better_in_rounds(
    rounds: Mapping[int, Mapping[str, float]], a: str, b: str, direction: Direction, level: float
) -> bool:
    """Whether ``a`` is better than ``b`` beyond noise: within rounds once two rounds hold
    both (:func:`blocked_log_ratio`), else over all their launches (:func:`better`)."""
    found = blocked_log_ratio(rounds, b, a, level)
    if found is None:
        return better(_column(rounds, a), _column(rounds, b), direction, level)
    _, lo, hi, _ = found
    return lo > 0 if direction == "maximize" else hi < 0


def _expm1_pct(x: float) -> float:
    if x == math.inf:
        return math.inf
    if x == -math.inf:
        return -100.0
    return math.expm1(x) * 100.0


def better(a: Sequence[float], b: Sequence[float], direction: Direction, level: float) -> bool:
    """Whether ``a`` is better than ``b`` beyond noise (interval of the ratio excludes 1)."""
    _, lo, hi = log_ratio_interval(b, a, level)
    return lo > 0 if direction == "maximize" else hi < 0


__all__ = [
    "BLOCKED",
    "LEVEL",
    "WELCH",
    "Gain",
    "NoiseModel",
    "better",
    "better_in_rounds",
    "blocked_gain",
    "blocked_log_ratio",
    "gain",
    "gain_in_rounds",
    "launch_value",
    "log_ratio_interval",
    "t_quantile",
]
