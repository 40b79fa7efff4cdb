"""Accuracy of `autotune diagnose` on the corpus of real crash logs (tests/data/crashlogs).

Each log is a short excerpt of a public issue thread, labelled with its cause and phase; the
labels file splits the corpus into a tuning part (rules were written looking at it) and a
held-out part (never looked at while writing rules). Prints, per split, the cause accuracy,
the phase accuracy (on logs whose cause is right) and a per-cause confusion table.

    python bench/diagnose_corpus.py                 # both splits
    python bench/diagnose_corpus.py --split heldout --misses
    python bench/diagnose_corpus.py --generic       # common rules only (the `command` engine)

A log of a project engine (sglang, vllm, transformers) is diagnosed with that engine's rules,
any other (TensorRT-LLM, Ray, NCCL, ...) with the common rules; ``--generic`` uses the common
rules for every log. A healthy log is right when diagnose finds no failure (``ok``).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from autotune.node.failures import diagnose_file
from autotune.rules import load_rules

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "crashlogs"
PROJECT_ENGINES = frozenset({"sglang", "vllm", "transformers"})


@dataclass(frozen=True)
class Verdict:
    """One log: its labels and what diagnose said."""

    id: str
    url: str
    engine: str
    split: str
    cause: str
    phase: str
    got_cause: str
    got_phase: str
    rule: str | None
    message: str


def load_labels(corpus: Path = CORPUS) -> list[dict[str, str]]:
    """The rows of the labels file."""
    with (corpus / "labels.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def diagnose_all(corpus: Path = CORPUS, *, generic: bool = False) -> list[Verdict]:
    """Diagnose every log of the corpus."""
    out = []
    for row in load_labels(corpus):
        engine = row["engine"] if row["engine"] in PROJECT_ENGINES and not generic else "command"
        failure = diagnose_file(str(corpus / f"{row['id']}.log"), load_rules(engine))
        out.append(
            Verdict(
                id=row["id"],
                url=row["url"],
                engine=row["engine"],
                split=row["split"],
                cause=row["cause"],
                phase=row["phase"],
                got_cause="ok" if failure is None else failure.cause.value,
                got_phase=row["phase"] if failure is None else failure.phase.value,
                rule=None if failure is None else failure.rule,
                message="" if failure is None else failure.message,
            )
        )
    return out


def accuracy(verdicts: list[Verdict]) -> tuple[float, float]:
    """(cause accuracy, phase accuracy among logs with the right cause)."""
    if not verdicts:
        return 0.0, 0.0
    right = [v for v in verdicts if v.got_cause == v.cause]
    phase_ok = [v for v in right if v.got_phase == v.phase]
    return len(right) / len(verdicts), (len(phase_ok) / len(right) if right else 0.0)


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


def report(verdicts: list[Verdict], splits: list[str], *, misses: bool) -> str:
    """The printed report for ``splits``."""
    parts = []
    for split in splits:
        chosen = [v for v in verdicts if split == "all" or v.split == split]
        cause_acc, phase_acc = accuracy(chosen)
        right = sum(v.got_cause == v.cause for v in chosen)
        parts.append(
            f"## {split}: {len(chosen)} logs, cause {right}/{len(chosen)} = {cause_acc:.1%}, "
            f"phase {phase_acc:.1%} of those\n\n{confusion_table(chosen)}\n"
        )
        if misses:
            for v in chosen:
                if v.got_cause != v.cause or v.got_phase != v.phase:
                    parts.append(
                        f"- {v.id} ({v.engine}) want {v.cause}@{v.phase} got "
                        f"{v.got_cause}@{v.got_phase} [{v.rule}] {v.message[:100]}  {v.url}"
                    )
            parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["tuning", "heldout", "all"], action="append")
    parser.add_argument("--generic", action="store_true", help="common rules for every log")
    parser.add_argument("--misses", action="store_true", help="list the logs diagnosed wrong")
    args = parser.parse_args(argv)
    verdicts = diagnose_all(generic=args.generic)
    sys.stdout.write(report(verdicts, args.split or ["tuning", "heldout"], misses=args.misses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
