"""Which interval for "X% faster"? Coverage and power of three intervals over launches.

Draws per-launch values with log-normal launch noise (``--noise``, default 8%), optionally
with outliers (``--outliers``: that share of launches lose 25%), for the baseline and a
candidate launched ``n`` times each, and counts:

- coverage: how often the 95% interval of the gain contains the true gain (null: 0%);
- false claims: how often its lower bound is above zero when there is no gain;
- power: how often a real gain (``--gain``, default 3x = +200%, and a small +10%) is claimed.

Methods: ``welch`` (Welch's t on log values; study/noise.py), ``bootstrap`` (percentile
bootstrap of the median ratio, 2000 resamples), ``rank`` (Hodges-Lehmann interval from the
Mann-Whitney distribution; exact, so unbounded when n is too small for 95%).

    .venv/bin/python bench/gain_ci_calibration.py --reps 2000
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from autotune.study.noise import log_ratio_interval  # noqa: E402

Interval = tuple[float, float]


def welch(b: Sequence[float], c: Sequence[float], rng: random.Random) -> Interval:
    _, lo, hi = log_ratio_interval(b, c, 0.95)
    return lo, hi


def bootstrap(b: Sequence[float], c: Sequence[float], rng: random.Random) -> Interval:
    stats = []
    for _ in range(2000):
        rb = [rng.choice(b) for _ in b]
        rc = [rng.choice(c) for _ in c]
        stats.append(math.log(statistics.median(rc) / statistics.median(rb)))
    stats.sort()
    return stats[int(0.025 * len(stats))], stats[int(0.975 * len(stats)) - 1]


_MW_CACHE: dict[tuple[int, int], list[int]] = {}


def _mw_counts(n: int, m: int) -> list[int]:
    """Number of arrangements giving each Mann-Whitney U (exact distribution)."""
    if (n, m) not in _MW_CACHE:
        counts = [0] * (n * m + 1)
        for pos in itertools.combinations(range(n + m), n):
            u = sum(p - i for i, p in enumerate(pos))
            counts[u] += 1
        _MW_CACHE[(n, m)] = counts
    return _MW_CACHE[(n, m)]


def rank(b: Sequence[float], c: Sequence[float], rng: random.Random) -> Interval:
    diffs = sorted(math.log(x) - math.log(y) for x in c for y in b)
    counts = _mw_counts(len(b), len(c))
    total = sum(counts)
    # largest k with P(U < k) <= 0.025: the interval is [D(k+1), D(nm-k)] (1-based).
    acc, k = 0, 0
    while k < len(counts) and (acc + counts[k]) / total <= 0.025:
        acc += counts[k]
        k += 1
    if k == 0:
        return -math.inf, math.inf
    return diffs[k - 1], diffs[len(diffs) - k]


METHODS: dict[str, Callable[[Sequence[float], Sequence[float], random.Random], Interval]] = {
    "welch": welch,
    "bootstrap": bootstrap,
    "rank": rank,
}


def draw(n: int, ratio: float, noise: float, outliers: float, rng: random.Random) -> list[float]:
    out = []
    for _ in range(n):
        v = 1000.0 * ratio * math.exp(rng.gauss(0.0, noise))
        if rng.random() < outliers:
            v *= 0.75
        out.append(v)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--reps", type=int, default=2000)
    p.add_argument("--noise", type=float, default=0.08)
    p.add_argument("--outliers", type=float, default=0.0)
    p.add_argument("--gain", type=float, default=3.0, help="true ratio for the power check")
    p.add_argument("--sizes", default="3,4,5,6,8")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    print(
        f"launch noise {args.noise:.0%} (log-normal), outliers {args.outliers:.0%}, "
        f"{args.reps} repetitions per cell"
    )
    print(
        f"{'n':>3} {'method':>10} {'coverage(null)':>15} {'false claims':>13} "
        f"{'power +10%':>11} {f'power x{args.gain:g}':>10} {'median width':>13}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        for name, method in METHODS.items():
            cover = claims = small = big = 0
            widths = []
            reps = args.reps if name != "bootstrap" else max(200, args.reps // 5)
            for _ in range(reps):
                b = draw(n, 1.0, args.noise, args.outliers, rng)
                c = draw(n, 1.0, args.noise, args.outliers, rng)
                lo, hi = method(b, c, rng)
                cover += lo <= 0.0 <= hi
                claims += lo > 0.0
                widths.append(hi - lo)
                lo2, _ = method(b, draw(n, 1.10, args.noise, args.outliers, rng), rng)
                small += lo2 > 0.0
                lo3, _ = method(b, draw(n, args.gain, args.noise, args.outliers, rng), rng)
                big += lo3 > 0.0
            width = statistics.median(widths)
            wtxt = f"{(math.exp(width) - 1) * 100:.1f}%" if math.isfinite(width) else "unbounded"
            print(
                f"{n:>3} {name:>10} {cover / reps:>15.1%} {claims / reps:>13.1%} "
                f"{small / reps:>11.1%} {big / reps:>10.1%} {wtxt:>13}"
            )


if __name__ == "__main__":
    main()
