"""What early stopping saves: one study of the real-optimum stand-in scenario, 10 launches.

Runs ``bench/noise_claims.py``'s ``real`` scenario (8% launch noise, flags that act) with a
budget of 10 launches and 3 windows per launch, and prints how many launches the incumbent
pruner stopped, after how many windows, the server seconds it saved (the unmeasured windows
at the pruned trial's mean window length; the stand-in reports simulated seconds) and the
benchmark time spent. SIMULATED. ``--executor ray`` runs the trials as Ray tasks on a local
Ray instance: the windows reach the pruner through the executor's window relay while the
trial runs.

    .venv/bin/python bench/prune_saving.py --seed 7
    .venv/bin/python bench/prune_saving.py --seed 7 --executor ray
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.noise_claims as nc  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--executor", default="local", choices=["local", "ray"])
    args = p.parse_args()
    nc.SPACE["budget"]["trials"] = args.trials
    nc.SPACE["workload"]["windows"] = 3
    with tempfile.TemporaryDirectory(prefix="prune-saving-") as tmp:
        env = {**os.environ, "AUTOTUNE_NODE_STATE": str(Path(tmp) / "ns")}
        status, _, _ = nc.run_study(
            Path(tmp) / "real", env, flags_ignored=False, seed=args.seed, executor=args.executor
        )
    s = status["summary"]
    search = [t for t in status["trials"] if t["confirm_round"] is None and t["timings"]]
    pruned = [t for t in search if t["outcome"] == "pruned" and t["windows"]]
    bench_wall = sum((t["timings"] or {}).get("benchmark_s") or 0 for t in search)
    print(f"executor: {args.executor}")
    print(
        f"search launches: {len(search)}; pruned: {len(pruned)}, after "
        f"{[len(t['windows']) for t in pruned]} of 3 windows"
    )
    print(f"saved: {s['pruned_saved_s']:.1f} server-seconds (simulated)")
    print(f"benchmark time spent: {bench_wall:.1f} s wall (the stand-in runs time-scaled)")
    print(s["verdict"])


if __name__ == "__main__":
    main()
