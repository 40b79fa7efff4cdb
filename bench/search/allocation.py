"""Where a study's launches go: the table of ``bench.search --trace`` files.

Per family and strategy, means per study: launches by the kind of proposal (the budget's:
the baseline, the screen's ``design`` rows and ``pairs`` rows, ``line`` points, the
``model``'s, ``random``, ``relaunch``: a proposal made again; on top of it: the baseline's
extra launches and the confirmation rounds), crashes by kind; the launch at which the
configuration the study reports first ran (and which kind proposed it); the best (noise-free)
of the screen's launches and the reported one; the launches after the screen that were a new
best as measured, and of those the ones that were also better in truth.

    .venv/bin/python -m bench.search --prune --families curve10 --instances 0:4 --seeds 3 \\
        --strategies autotune --trace /tmp/trace.jsonl
    .venv/bin/python -m bench.search.allocation /tmp/trace.jsonl
    .venv/bin/python -m bench.search.allocation /tmp/trace.jsonl --paired autotune
    .venv/bin/python -m bench.search.allocation /tmp/trace.jsonl --budget 30,45,60,90
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from typing import Any

BUDGET = ["baseline", "design", "line", "pairs", "model", "random", "relaunch", "sampler"]
SCREEN = {"baseline", "design", "pairs"}
CURVE = [10, 15, 20, 25, 30]


def _key(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, default=str)


def study(row: dict[str, Any]) -> dict[str, Any]:
    """What one traced study spent and when it found what it reports."""
    search = [la for la in row["launches"] if la["kind"] == "search"]
    extra = [la for la in row["launches"] if la["kind"] == "extra"]
    answer = next((la for la in row["launches"] if la["kind"] == "answer"), None)
    out: dict[str, Any] = {
        "n": Counter(la["source"] for la in search),
        "crash": Counter(la["source"] for la in search if la["crashed"]),
        "extra": Counter(la["source"] for la in extra),
    }
    last = max((i for i, la in enumerate(search) if la["source"] in SCREEN), default=0)
    out["screen_end"] = last + 1
    out["screen_best"] = max((la["pct"] or 0.0 for la in search[: last + 1]), default=0.0)
    out["best_launched"] = max((la["pct"] or 0.0 for la in search), default=0.0)
    out["answer"] = row["answer"]
    at = None
    if answer is not None:
        first = [i for i, la in enumerate(search) if _key(la["config"]) == _key(answer["config"])]
        at = first[0] if first else None
    out["answer_at"] = None if at is None else at + 1
    out["answer_by"] = "-" if at is None else search[at]["source"]
    # new bests after the screen: as measured (what the search sees), and also in truth
    values = [la["value"] for la in search[: last + 1] if la["value"] is not None]
    best_value = max(values, default=0.0)
    best_truth = max((la["pct"] or 0.0 for la in search[: last + 1]), default=0.0)
    seen, real = Counter[str](), Counter[str]()
    for la in search[last + 1 :]:
        if la["value"] is not None and la["value"] > best_value:
            best_value = la["value"]
            seen[la["source"]] += 1
            if (la["pct"] or 0.0) > best_truth + 0.5:
                real[la["source"]] += 1
        best_truth = max(best_truth, la["pct"] or 0.0)
    out["new_best"], out["real_best"] = seen, real
    # the best launched (noise-free) by launch 10, 15, ...; bests as measured by kind, all along
    out["curve"] = [max((la["pct"] or 0.0 for la in search[:k]), default=0.0) for k in CURVE]
    top, anywhere = 0.0, Counter[str]()
    for la in search:
        if la["value"] is not None and la["value"] > top:
            top = la["value"]
            anywhere[la["source"]] += 1
    out["any_best"] = anywhere
    return out


def _m(xs: list[float]) -> str:
    return f"{statistics.mean(xs):.1f}" if xs else "-"


def table(rows: list[dict[str, Any]]) -> str:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["family"], r["strategy"]), []).append(study(r))
    lines = [
        "| family | strategy | studies | budget by kind: "
        + " / ".join(BUDGET)
        + " | crashes by kind | extra: baseline / confirm | screen ends at | best of screen"
        " / launched / reported (%) | reported first ran at (min-max) | reported proposed by"
        " | new bests after the screen: measured (real) | best launched by launch "
        + "/".join(map(str, CURVE))
        + " | new bests as measured, by kind |",
        "| --- " * 13 + "|",
    ]
    for (family, strat), ss in groups.items():
        n = len(ss)
        budget = " / ".join(_m([s["n"][k] for s in ss]) for k in BUDGET)
        crash = Counter[str]()
        for s in ss:
            crash.update(s["crash"])
        crashes = ", ".join(f"{k} {v / n:.1f}" for k, v in crash.most_common()) or "0"
        extra = " / ".join(_m([s["extra"][k] for s in ss]) for k in ("baseline", "confirm"))
        ats = [s["answer_at"] for s in ss if s["answer_at"] is not None]
        by = Counter(s["answer_by"] for s in ss)
        seen, real = Counter[str](), Counter[str]()
        for s in ss:
            seen.update(s["new_best"])
            real.update(s["real_best"])
        anyb = Counter[str]()
        for s in ss:
            anyb.update(s["any_best"])
        bests = ", ".join(f"{k} {v / n:.2f} ({real[k] / n:.2f})" for k, v in seen.most_common())
        lines.append(
            f"| {family} | {strat} | {n} | {budget} | {crashes} | {extra} | "
            f"{_m([s['screen_end'] for s in ss])} | "
            f"{_m([s['screen_best'] for s in ss])} / {_m([s['best_launched'] for s in ss])} / "
            f"{_m([s['answer'] for s in ss])} | "
            f"{_m(ats)} ({min(ats, default=0)}-{max(ats, default=0)}) | "
            + ", ".join(f"{k} {v}" for k, v in by.most_common())
            + f" | {bests or '0'} | "
            + " / ".join(_m([s["curve"][i] for s in ss]) for i in range(len(CURVE)))
            + " | "
            + ", ".join(f"{k} {v / n:.1f}" for k, v in anyb.most_common())
            + " |"
        )
    return "\n".join(lines)


def _se(xs: list[float]) -> float:
    return statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0


def paired(rows: list[dict[str, Any]], base: str) -> str:
    """Each other strategy against ``base`` on the same (landscape, seed): the mean difference
    of % of the optimum and of crashes per family, with its SE over the studies, and pooled."""
    at = {(r["family"], r["landscape"], r["seed"], r["strategy"]): r for r in rows}
    lines = [
        f"| strategy | family | studies | % of optimum | - {base}, paired (SE) "
        f"| crashes (- {base}) |",
        "| --- " * 6 + "|",
    ]
    for strat in dict.fromkeys(r["strategy"] for r in rows if r["strategy"] != base):
        pooled: list[float] = []
        for family in dict.fromkeys(r["family"] for r in rows):
            two = [
                (r, at[k])
                for (f, land, seed, s), r in at.items()
                if f == family and s == strat and (k := (f, land, seed, base)) in at
            ]
            if not two:
                continue
            diff = [a["answer"] - b["answer"] for a, b in two]
            pooled += diff
            crash = [float(a["crashes"] - b["crashes"]) for a, b in two]
            lines.append(
                f"| {strat} | {family} | {len(two)} | "
                f"{statistics.mean(a['answer'] for a, _ in two):.1f} | "
                f"{statistics.mean(diff):+.1f} ({_se(diff):.1f}) | "
                f"{statistics.mean(a['crashes'] for a, _ in two):.1f} "
                f"({statistics.mean(crash):+.1f}) |"
            )
        if pooled:
            lines.append(
                f"| {strat} | pooled | {len(pooled)} | | "
                f"{statistics.mean(pooled):+.2f} ({_se(pooled):.2f}) | |"
            )
    return "\n".join(lines)


def budget(rows: list[dict[str, Any]], ks: list[int], against: str) -> str:
    """What more launches buy: per family and strategy, the best launched (in truth) by launch
    k for each k: mean (lowest; studies at 95%), each strategy's mean paired against
    ``against`` (SE), and the crashes by the last k."""
    curves: dict[tuple[str, str], dict[tuple[str, int], list[float]]] = {}
    crashes: dict[tuple[str, str], list[int]] = {}
    for r in rows:
        search = [la for la in r["launches"] if la["kind"] == "search"]
        best = [max((la["pct"] or 0.0 for la in search[:k]), default=0.0) for k in ks]
        curves.setdefault((r["family"], r["strategy"]), {})[(r["landscape"], r["seed"])] = best
        crashed = sum(1 for la in search[: ks[-1]] if la["crashed"])
        crashes.setdefault((r["family"], r["strategy"]), []).append(crashed)
    lines = [
        "| family | strategy | best launched by launch "
        + " / ".join(map(str, ks))
        + f": mean (lowest; at 95%) | - {against}, paired (SE) | crashes by {ks[-1]} |",
        "| --- " * 5 + "|",
    ]
    for (family, strat), by_study in curves.items():
        cells, diffs = [], []
        base = curves.get((family, against), {})
        for i in range(len(ks)):
            xs = [c[i] for c in by_study.values()]
            cells.append(f"{statistics.mean(xs):.1f} ({min(xs):.0f}; {sum(x >= 95 for x in xs)})")
            d = [c[i] - base[key][i] for key, c in by_study.items() if key in base]
            se = statistics.stdev(d) / len(d) ** 0.5 if len(d) > 1 else 0.0
            diffs.append(f"{statistics.mean(d):+.1f} ({se:.1f})" if d else "-")
        lines.append(
            f"| {family} | {strat} | {' / '.join(cells)} | {' / '.join(diffs)} | "
            f"{statistics.mean(crashes[(family, strat)]):.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("traces", nargs="+", help="files bench.search --trace (or --out) wrote")
    ap.add_argument("--paired", default=None, help="instead: each strategy against this one")
    ap.add_argument(
        "--budget",
        default=None,
        metavar="K,K,...",
        help="instead: the best launched by each launch count K (paired against --paired, "
        "default autotune)",
    )
    a = ap.parse_args(argv)
    rows = [json.loads(line) for f in a.traces for line in open(f) if line.strip()]
    if a.budget:
        ks = [int(k) for k in a.budget.split(",")]
        print(budget(rows, ks, a.paired or "autotune"))
    else:
        print(paired(rows, a.paired) if a.paired else table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
