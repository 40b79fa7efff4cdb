"""Trial overhead: how much of the time between two servers is autotune's, not the server's.

For consecutive launched trials it prints the time from one server's exit (node proven clean)
to the next server's readiness, the next server's own start time (launch to /health 200), the
driver's gap (node clean -> next launch) and the teardown proof. Reads a study's storage, or the
JSON records the GPU test writes.

    .venv/bin/python bench/trial_overhead.py --study quickstart     # ./studies/<name>/study.db
    .venv/bin/python bench/trial_overhead.py --json docs/gpu/h200-trials-2026-11-29.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def _records_from_study(name: str, root: Path, storage: str | None) -> list[dict[str, Any]]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = storage or f"sqlite:///{(root / name / 'study.db').resolve()}"
    study = optuna.load_study(study_name=name, storage=url)
    return [
        {
            "number": t.number,
            "outcome": t.user_attrs.get("outcome"),
            "timings": t.user_attrs.get("timings"),
        }
        for t in study.get_trials(deepcopy=False)
    ]


def overhead_rows(records: list[dict[str, Any]]) -> list[dict[str, float | int]]:
    """One row per pair of consecutive launched trials that both have wall-clock instants."""
    timed = [r for r in records if (r.get("timings") or {}).get("launched_at")]
    timed.sort(key=lambda r: r["timings"]["launched_at"])
    rows: list[dict[str, float | int]] = []
    for a, b in zip(timed, timed[1:], strict=False):
        ta, tb = a["timings"], b["timings"]
        if not (ta.get("clean_at") and tb.get("ready_at") and tb.get("launch_to_ready_s")):
            continue
        rows.append(
            {
                "from": a["number"],
                "to": b["number"],
                "exit_to_ready_s": tb["ready_at"] - ta["clean_at"],
                "own_start_s": tb["launch_to_ready_s"],
                "driver_gap_s": tb["launched_at"] - ta["clean_at"],
                "teardown_s": ta.get("teardown_s") or 0.0,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study")
    parser.add_argument("--study-root", type=Path, default=Path("studies"))
    parser.add_argument("--storage")
    parser.add_argument("--json", type=Path, help="records written by tests/gpu/test_h200.py")
    args = parser.parse_args()
    if args.json:
        records = json.loads(args.json.read_text())
    elif args.study:
        records = _records_from_study(args.study, args.study_root, args.storage)
    else:
        parser.error("give --study NAME or --json FILE")
    rows = overhead_rows(records)
    if not rows:
        print("no consecutive launched trials with timings")
        return
    print(
        f"{'trials':>10} {'exit->ready s':>14} {'own start s':>12} {'autotune s':>11} "
        f"{'driver gap s':>13} {'teardown s':>11}"
    )
    for r in rows:
        print(
            f"{r['from']:>4} -> {r['to']:<3} {r['exit_to_ready_s']:>14.2f} "
            f"{r['own_start_s']:>12.2f} "
            f"{r['exit_to_ready_s'] - r['own_start_s']:>11.2f} {r['driver_gap_s']:>13.3f} "
            f"{r['teardown_s']:>11.2f}"
        )
    gaps = [float(r["driver_gap_s"]) for r in rows]
    tds = [float(r["teardown_s"]) for r in rows]
    print(
        f"median driver gap {statistics.median(gaps):.3f} s, "
        f"median teardown {statistics.median(tds):.2f} s, "
        f"median own start {statistics.median(float(r['own_start_s']) for r in rows):.2f} s"
    )


if __name__ == "__main__":
    main()
