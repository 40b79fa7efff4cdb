"""How often does autotune claim a gain? Two stand-in servers with launch noise, many seeds.

Each run is a whole ``autotune start --simulate`` (a subprocess: real Optuna SQLite storage,
the local executor, the stand-in SGLang server time-scaled) on a small space of two SGLang
flags, with the stand-in's launch-to-launch noise at ``--noise`` (default 8%):

- ``null``: ``AUTOTUNE_SIM_FLAGS_IGNORED=1``, every configuration performs like the default;
  a claimed gain is a false claim;
- ``real``: the flags act (``--max-running-requests`` decides how many of 16 streams run at
  once: 2 for the baseline, up to 16), a real optimum of about 2-4x; a claim is right.

The baseline is launched three times, two more configurations are searched, and the top two
are confirmed against the baseline in interleaved rounds (``--confirm 2``). For each seed
it prints the verdict, the gain with its 95% interval and the confirmation's cost, then how
often a gain was claimed in each scenario. Figures are from the stand-in: simulated.

    .venv/bin/python bench/noise_claims.py --seeds 5
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: bench/ is on the path, not the root

# The studies are test fixtures (tests/e2e/test_noise_e2e.py runs one seed of each).
from tests.e2e.noise_studies import BASELINE, SPACE, run_cli_study, run_study  # noqa: E402

__all__ = ["BASELINE", "COLUMNS", "SPACE", "print_tally", "run_cli_study", "run_study", "verdict"]


COLUMNS = (
    f"{'scenario':>8} {'seed':>4} {'claimed':>7} {'gain':>8} {'95% CI':>20} "
    f"{'rounds':>6} {'confirm launches':>16}"
)


def verdict(scenario: str, seed: int, status: dict[str, Any]) -> tuple[bool, str]:
    """Whether a study claimed a gain, and the first columns of its row (under ``COLUMNS``)."""
    s = status["summary"]
    gain = s["gain"] or {}
    lo, hi = gain.get("ci95_pct") or [None, None]
    ci = f"{lo:+.1f}%..{hi:+.1f}%" if lo is not None and hi is not None else "-"
    claimed = bool(gain.get("significant"))
    conf = s.get("confirmation") or {}
    pct = f"{gain['pct']:+.1f}%" if "pct" in gain else "-"
    row = f"{scenario:>8} {seed:>4} {str(claimed):>7} {pct:>8} {ci:>20} "
    return claimed, row + f"{conf.get('rounds', 0):>6} {conf.get('launches', 0):>16}"


def print_tally(claims: dict[str, list[bool]]) -> None:
    """How often each scenario claimed a gain (wrongly for ``null``, rightly otherwise)."""
    for scenario, got in claims.items():
        kind = "wrongly (false claims)" if scenario == "null" else "rightly"
        print(f"{scenario}: a gain was claimed {kind} in {sum(got)} of {len(got)} studies")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--noise", type=float, default=0.08)
    p.add_argument("--scenarios", default="null,real")
    p.add_argument("--confirm", type=int, default=2, help="candidates confirmed")
    p.add_argument("--rounds", type=int, default=3, help="most confirmation rounds (least 3)")
    args = p.parse_args()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    claims: dict[str, list[bool]] = {}
    print(f"stand-in launch noise {args.noise:.0%}; SIMULATED figures")
    print(f"{COLUMNS} {'server s':>8} {'exported':>9} {'wall s':>6}")
    with tempfile.TemporaryDirectory(prefix="noise-claims-") as tmp:
        env["AUTOTUNE_NODE_STATE"] = str(Path(tmp) / "node-state")
        for scenario in args.scenarios.split(","):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                t0 = time.monotonic()
                status, exported, _ = run_study(
                    Path(tmp) / f"{scenario}-{seed}",
                    env,
                    flags_ignored=scenario == "null",
                    seed=seed,
                    noise=args.noise,
                    confirm=args.confirm,
                    rounds=args.rounds,
                )
                claimed, row = verdict(scenario, seed, status)
                claims.setdefault(scenario, []).append(claimed)
                server_s = (status["summary"].get("confirmation") or {}).get("server_s", 0)
                what = "baseline" if exported["is_baseline"] else f"trial {exported['trial']}"
                wall = time.monotonic() - t0
                print(f"{row} {server_s:>8.0f} {what:>9} {wall:>6.0f}", flush=True)
    print()
    print_tally(claims)


if __name__ == "__main__":
    main()
