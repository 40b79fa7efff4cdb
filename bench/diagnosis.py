"""Accuracy of `autotune diagnose` on the corpus of real crash logs (tests/data/crashlogs).

Each log is an excerpt of a public issue thread, labelled with its cause and phase; the labels
file splits it into a tuning part (rules and vocabulary may be learnt from it) and a held-out
part (never looked at while writing them), in batches gathered on different dates
(tests/data/crashlogs/MANIFEST.md: each later batch was classified once, fresh, before anything
was learnt from it). Each log is diagnosed exactly as ``autotune diagnose LOG`` does (engine
guessed from the log, no exit code), in this process. Prints, per split: cause accuracy, phase
accuracy among the right causes, ``ok`` answers for logs of failed runs, per-cause precision
and recall, and the confusion matrix.

    python bench/diagnosis.py                      # both splits, every batch
    python bench/diagnosis.py --batch 2026-12-06f  # one batch (labels.csv `added`)
    python bench/diagnosis.py --misses             # list the tuning part's misses
    python bench/diagnosis.py --generic            # common rules only (the `command` engine)
    python bench/diagnosis.py --no-rules           # no rule at all: family scoring alone
    python bench/diagnosis.py --dress              # same answers with every line re-dressed?

``--misses`` lists tuning logs only: the held-out part is not for writing rules
(``--misses --heldout-misses`` shows those too, for a report after the rules are fixed).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from autotune.diagnosis import diagnose_text, rules_for
from autotune.node.failures import diagnose_lines

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "crashlogs"


@dataclass(frozen=True)
class Verdict:
    """One log: its labels and what diagnose said."""

    id: str
    url: str
    engine: str
    split: str
    batch: str
    cause: str
    phase: str
    got_cause: str
    got_phase: str
    got_engine: str
    rule: str | None
    message: str


def load_labels(corpus: Path = CORPUS) -> list[dict[str, str]]:
    """The rows of the labels file."""
    with (corpus / "labels.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def diagnose_all(
    corpus: Path = CORPUS, *, generic: bool = False, no_rules: bool = False
) -> list[Verdict]:
    """Diagnose every log of the corpus as ``autotune diagnose`` would (``generic``: with the
    common rules only; ``no_rules``: with no rule, the family scoring of node/families.py
    alone)."""
    common, _ = rules_for("common")
    out = []
    for row in load_labels(corpus):
        text = (corpus / f"{row['id']}.log").read_text(encoding="utf-8", errors="replace")
        if generic or no_rules:
            failure = diagnose_lines(text.splitlines(), [] if no_rules else common)
            engine = ""
        else:
            found = diagnose_text(text)
            failure, engine = found.failure, found.engine or ""
        out.append(
            Verdict(
                id=row["id"],
                url=row["url"],
                engine=row["engine"],
                split=row["split"],
                batch=row.get("added", ""),
                cause=row["cause"],
                phase=row["phase"],
                got_cause="ok" if failure is None else failure.cause.value,
                got_phase=row["phase"] if failure is None else failure.phase.value,
                got_engine=engine,
                rule=None if failure is None else failure.rule,
                message="" if failure is None else failure.message,
            )
        )
    return out


# Ways a log reaches people: each rewrites every line; the answer must not change.
DRESSES = {
    "compose": lambda lines: [f"svc-1  | {line}" for line in lines],
    "timestamp": lambda lines: [f"2025-01-01T00:00:00.123456Z {line}" for line in lines],
    "ansi": lambda lines: [f"\x1b[36m{line}\x1b[0m" for line in lines],
    "journald": lambda lines: [f"Jan 01 00:00:00 host engine[123]: {line}" for line in lines],
    "json": lambda lines: [json.dumps({"log": line + "\n", "stream": "stderr"}) for line in lines],
    "two ranks": lambda lines: [f"[rank{r}]: {line}" for line in lines for r in (0, 1)],
}


def dress_changes(corpus: Path = CORPUS, split: str = "tuning") -> dict[str, list[str]]:
    """Per dress, the ids of ``split`` whose cause changes when every line is re-dressed."""
    changed: dict[str, list[str]] = {name: [] for name in DRESSES}
    for row in load_labels(corpus):
        if split != "all" and row["split"] != split:
            continue
        lines = (corpus / f"{row['id']}.log").read_text(encoding="utf-8").splitlines()
        plain = diagnose_text("\n".join(lines)).failure
        want = "ok" if plain is None else plain.cause.value
        for name, dress in DRESSES.items():
            got = diagnose_text("\n".join(dress(lines))).failure
            if ("ok" if got is None else got.cause.value) != want:
                changed[name].append(row["id"])
    return changed


def accuracy(verdicts: list[Verdict]) -> tuple[float, float]:
    """(cause accuracy, phase accuracy among logs with the right cause)."""
    if not verdicts:
        return 0.0, 0.0
    right = [v for v in verdicts if v.got_cause == v.cause]
    phase_ok = [v for v in right if v.got_phase == v.phase]
    return len(right) / len(verdicts), (len(phase_ok) / len(right) if right else 0.0)


def ok_on_failed(verdicts: list[Verdict]) -> int:
    """Logs of failed runs answered ``ok``."""
    return sum(v.got_cause == "ok" and v.cause != "ok" for v in verdicts)


def precision_recall(verdicts: list[Verdict]) -> str:
    """A markdown table: per cause, its logs, precision and recall."""
    causes = sorted({v.cause for v in verdicts} | {v.got_cause for v in verdicts})
    lines = [
        "| cause | logs | answered | precision | recall |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for cause in causes:
        truth = sum(v.cause == cause for v in verdicts)
        said = sum(v.got_cause == cause for v in verdicts)
        hit = sum(v.cause == cause and v.got_cause == cause for v in verdicts)
        precision = f"{hit / said:.0%}" if said else "-"
        recall = f"{hit / truth:.0%}" if truth else "-"
        lines.append(f"| `{cause}` | {truth} | {said} | {precision} | {recall} |")
    return "\n".join(lines)


def confusion_table(verdicts: list[Verdict]) -> str:
    """A markdown table: one row per true cause, how many were diagnosed as what."""
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for v in verdicts:
        rows[v.cause][v.got_cause] += 1
    lines = ["| cause | logs | right | diagnosed as (when wrong) |", "| --- | ---: | ---: | --- |"]
    for cause in sorted(rows):
        counts = rows[cause]
        total = sum(counts.values())
        wrong = ", ".join(f"{c} {n}" for c, n in counts.most_common() if c != cause)
        lines.append(f"| `{cause}` | {total} | {counts[cause]} | {wrong or '-'} |")
    return "\n".join(lines)


def confusion_matrix(verdicts: list[Verdict]) -> str:
    """The full matrix: rows the true cause, columns the answer (abbreviated)."""
    causes = sorted({v.cause for v in verdicts} | {v.got_cause for v in verdicts})
    short = {c: "".join(p[:3] for p in c.split("_")) for c in causes}
    counts = Counter((v.cause, v.got_cause) for v in verdicts)
    head = "| true \\ said | " + " | ".join(short[c] for c in causes) + " |"
    lines = [head, "| --- |" + " ---: |" * len(causes)]
    for truth in causes:
        if not any(v.cause == truth for v in verdicts):
            continue
        cells = [str(counts[(truth, said)] or ".") for said in causes]
        lines.append(f"| `{truth}` | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("columns: " + ", ".join(f"{short[c]} = {c}" for c in causes))
    return "\n".join(lines)


def report(
    verdicts: list[Verdict],
    splits: list[str],
    *,
    misses: bool,
    heldout_misses: bool = False,
    matrix: bool = True,
) -> str:
    """The printed report for ``splits``."""
    parts = []
    for split in splits:
        chosen = [v for v in verdicts if split == "all" or v.split == split]
        cause_acc, phase_acc = accuracy(chosen)
        right = sum(v.got_cause == v.cause for v in chosen)
        parts.append(
            f"## {split}: {len(chosen)} logs, cause {right}/{len(chosen)} = {cause_acc:.1%}, "
            f"phase {phase_acc:.1%} of those, ok for a failed run: {ok_on_failed(chosen)}\n\n"
            f"{precision_recall(chosen)}\n\n{confusion_table(chosen)}\n"
        )
        if matrix:
            parts.append(confusion_matrix(chosen) + "\n")
        if misses and (split != "heldout" or heldout_misses):
            for v in chosen:
                if v.got_cause != v.cause:
                    parts.append(
                        f"- {v.id} ({v.engine}, read as {v.got_engine or '-'}) want {v.cause}@"
                        f"{v.phase} got {v.got_cause}@{v.got_phase} [{v.rule}] "
                        f"{v.message[:100]}  {v.url}"
                    )
            parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--split", choices=["tuning", "heldout", "all"], action="append")
    parser.add_argument("--batch", help="only the logs added on this date (labels.csv `added`)")
    parser.add_argument("--generic", action="store_true", help="common rules for every log")
    parser.add_argument("--no-rules", action="store_true", help="no rule: family scoring alone")
    parser.add_argument("--misses", action="store_true", help="list the tuning logs missed")
    parser.add_argument(
        "--heldout-misses", action="store_true", help="with --misses: the held-out ones too"
    )
    parser.add_argument("--no-matrix", action="store_true", help="leave the full matrix out")
    parser.add_argument("--dress", action="store_true", help="re-dress every line; compare")
    args = parser.parse_args(argv)
    if args.dress:
        for split in args.split or ["tuning", "heldout"]:
            for name, ids in dress_changes(split=split).items():
                sys.stdout.write(f"{split} {name}: {len(ids)} answers change {' '.join(ids)}\n")
        return 0
    start = time.perf_counter()
    verdicts = diagnose_all(generic=args.generic, no_rules=args.no_rules)
    took = time.perf_counter() - start
    if args.batch:
        verdicts = [v for v in verdicts if v.batch == args.batch]
    sys.stdout.write(
        report(
            verdicts,
            args.split or ["tuning", "heldout"],
            misses=args.misses,
            heldout_misses=args.heldout_misses,
            matrix=not args.no_matrix,
        )
    )
    engines = len({v.engine for v in verdicts})
    sys.stdout.write(
        f"\n{len(verdicts)} logs from {engines} engines/runtimes, diagnosed in {took:.2f} s\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
