"""Accuracy of `autotune diagnose` on a blind set (``tests/data/crashlogs-blindN``): real logs
collected from public issue threads by an engineer who never saw the classifier's rules, and
never used to write one. Prints accuracy with its standard error, recall per cause, how many
failed runs were answered ``ok``, and, where the labels say whether the pasted text shows its
cause at all (``in_log``), accuracy on each part.

    python bench/diagnosis_blind.py [--dir tests/data/crashlogs-blind5] [--misses] [--rules-alone]

``--rules-alone``: the rules' own answers, without the cause learnt from the corpus where they
say ``unknown`` (node/learned.py; decision 0026).

Without ``--dir`` it reads the highest-numbered ``crashlogs-blind*`` folder there is. A blind
set that has served is folded into ``tests/data/crashlogs`` as a batch (the fourth is batch
``2026-12-06r``), so with none present the script says so and exits cleanly.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import Counter
from pathlib import Path

from autotune.diagnosis import diagnose_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from tests.node.corpus_helpers import exit_code  # noqa: E402  (the labels' exit status)

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def newest_blind_set(data: Path = DATA) -> Path | None:
    """The highest-numbered ``crashlogs-blindN`` folder under ``data`` (``crashlogs-blind``: 1)."""
    numbered = {}
    for folder in data.glob("crashlogs-blind*"):
        tail = folder.name.removeprefix("crashlogs-blind")
        if folder.is_dir() and (tail == "" or tail.isdigit()):
            numbered[int(tail or 1)] = folder
    return numbered[max(numbered)] if numbered else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list every log answered wrong")
    parser.add_argument("--dir", type=Path, help="the blind set's folder (labels.csv and logs)")
    parser.add_argument("--rules-alone", action="store_true", help="no learnt cause (0026)")
    args = parser.parse_args(argv)
    blind = args.dir or newest_blind_set()
    if blind is None or not (blind / "labels.csv").is_file():
        # A blind set is gathered apart, measured here, then folded into the corpus as a batch.
        where = blind / "labels.csv" if blind is not None else DATA / "crashlogs-blind*"
        print(
            f"no blind set to measure: {where} not found. The fourth blind set was folded into "
            "tests/data/crashlogs as batch 2026-12-06r (bench/diagnosis.py --batch 2026-12-06r); "
            "pass --dir for a new one."
        )
        return
    with (blind / "labels.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    right, ok_for_failed = 0, 0
    total: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    by_trace: dict[str, list[int]] = {}  # in_log -> [right, logs]
    for row in rows:
        text = (blind / f"{row['id']}.log").read_text(encoding="utf-8", errors="replace")
        failure = diagnose_text(text, exit_code=exit_code(row), learnt=not args.rules_alone).failure
        got = "ok" if failure is None else failure.cause.value
        total[row["cause"]] += 1
        if got == row["cause"]:
            right += 1
            hit[row["cause"]] += 1
        elif args.misses:
            said = "" if failure is None else failure.message[:70]
            print(f"{row['id']:22} label {row['cause']:20} answer {got:20} {said}")
        ok_for_failed += got == "ok" and row["cause"] != "ok"
        if row.get("in_log"):
            part = by_trace.setdefault(row["in_log"], [0, 0])
            part[0] += got == row["cause"]
            part[1] += 1
    n = len(rows)
    p = right / n
    se = 100 * math.sqrt(p * (1 - p) / n)
    print(f"blind set: {right}/{n} right ({100 * p:.1f}%, SE {se:.1f}); failed runs answered ok: "
          f"{ok_for_failed}")  # fmt: skip
    for trace, (r, m) in sorted(by_trace.items(), reverse=True):
        print(f"  cause shown in the log: {trace:3}  {r}/{m} right ({100 * r / m:.1f}%)")
    for cause in sorted(total):
        print(f"  {cause:20} {hit[cause]:3d}/{total[cause]}")


if __name__ == "__main__":
    main()
