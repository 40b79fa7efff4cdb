"""The corpus of real crash logs (tests/data/crashlogs) diagnosed, and its accuracy.

``tests/node/test_crashlog_corpus.py`` holds ``autotune diagnose`` to accuracy floors on it;
``bench/diagnose_corpus.py`` prints the same figures per split.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from autotune.node.failures import diagnose_file
from autotune.rules import load_rules

CORPUS = Path(__file__).resolve().parents[1] / "data" / "crashlogs"
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
