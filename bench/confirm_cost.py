"""What confirmation costs and what it claims, in process, over many seeded draws.

Confirmation (study/confirm.py) is run against an in-process measurer whose launches are
log-normal draws around a true value per configuration (``--noise``, default 8% launch to
launch), on five situations a study ends in:

- ``null``: three candidates and the baseline all equal (a claimed gain is false);
- ``one3x``: one candidate 3x the baseline, two equal to it;
- ``tie3x``: three candidates all about 3x (the CPU quickstart's case: the top three within
  noise of each other, far above the baseline);
- ``worse``: two candidates slower than the baseline (0.8x, 0.75x);
- ``near``: one candidate 6% above the baseline (inside the noise at five launches a side);
- ``plus15``: two candidates 15% above the baseline, one equal (a gain at the edge of what
  three to five launches a side can show).

For each it prints the mean and largest number of rounds and launches, the claim rate, and
how often the exported configuration is the truly best (or the baseline when nothing beats
it). Run it against another version of autotune by putting that version first on the path
(``PYTHONPATH=/path/to/other/src``) to compare stop rules; docs/benchmarks.md has both.

    .venv/bin/python bench/confirm_cost.py --seeds 400
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from autotune.study.confirm import BASELINE, Candidate, ConfirmOptions, Sample, confirm

SCENARIOS: dict[str, dict[str, float]] = {
    "null": {BASELINE: 100, "A": 100, "B": 100, "C": 100},
    "one3x": {BASELINE: 100, "A": 300, "B": 100, "C": 100},
    "tie3x": {BASELINE: 100, "A": 300, "B": 303, "C": 297},
    "worse": {BASELINE: 100, "A": 80, "B": 75},
    "near": {BASELINE: 100, "A": 106},
    "plus15": {BASELINE: 100, "A": 115, "B": 115, "C": 100},
}


class Draws:
    """One launch -> a draw around the configuration's true value, on a machine that may
    drift: every launch multiplies what the machine gives by ``exp(drift)`` (a steady trend:
    caches warming) and by ``exp(N(0, walk))`` (a random walk: neighbours, clocks)."""

    def __init__(
        self, truth: dict[str, float], noise: float, seed: int, drift: float = 0.0,
        walk: float = 0.0,
    ) -> None:  # fmt: skip
        self.truth, self.noise, self.rng = truth, noise, random.Random(seed)
        self.drift, self.walk, self.level = drift, walk, 0.0

    def __call__(self, c: Candidate, round_no: int) -> Sample:
        value = self.truth[c.key] * math.exp(self.level + self.rng.gauss(0.0, self.noise))
        self.level += self.drift + (self.rng.gauss(0.0, self.walk) if self.walk else 0.0)
        return Sample(value, server_s=1.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=400)
    p.add_argument("--noise", type=float, default=0.08)
    p.add_argument("--rounds", default="3,5", help="min,max rounds (the driver's default 3,5)")
    p.add_argument("--drift", type=float, default=0.0, help="log drift per launch (0.03: +3%%)")
    p.add_argument("--walk", type=float, default=0.0, help="sd of a random walk per launch")
    args = p.parse_args()
    lo, hi = (int(x) for x in args.rounds.split(","))
    print(
        f"launch noise {args.noise:.0%}, drift {args.drift:.1%} and walk {args.walk:.1%} a "
        f"launch, rounds {lo}..{hi}, {args.seeds} seeds (in process)"
    )
    print(
        f"{'scenario':>9} {'rounds':>6} {'max':>4} {'launches':>8} {'max':>4} "
        f"{'claimed':>8} {'right export':>12}"
    )
    for name, truth in SCENARIOS.items():
        keys = [k for k in truth if k != BASELINE]
        rounds, launches, claims, right = [], [], 0, 0
        true_best = max(keys, key=lambda k: truth[k])
        ratio = truth[true_best] / truth[BASELINE]
        beats = ratio > 1.5  # a gain worth finding for sure
        # In between, either answer is defensible: the claim rate is the power.
        judged = beats or ratio <= 1.0
        for seed in range(args.seeds):
            res = confirm(
                [Candidate(key=k, config={"k": k}) for k in keys],
                Draws(truth, args.noise, seed, args.drift, args.walk),
                "maximize",
                ConfirmOptions(lo, hi),
            )
            rounds.append(res.rounds)
            launches.append(int(res.cost["launches"]))
            claims += res.winner != BASELINE
            # Ties: any candidate within 2% of the truly best is as good an export.
            if beats:
                right += res.winner != BASELINE and truth[res.winner] >= truth[true_best] * 0.98
            else:
                right += res.winner == BASELINE
        share = f"{right / args.seeds:.1%}" if judged else "-"
        print(
            f"{name:>9} {statistics.fmean(rounds):>6.2f} {max(rounds):>4} "
            f"{statistics.fmean(launches):>8.2f} {max(launches):>4} "
            f"{claims / args.seeds:>8.1%} {share:>12}"
        )


if __name__ == "__main__":
    main()
