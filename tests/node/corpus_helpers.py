"""The corpus of real crash logs (tests/data/crashlogs) diagnosed, and its scoring.

``tests/node/test_crashlog_corpus.py`` holds ``autotune diagnose`` to accuracy floors on it;
``bench/diagnosis.py`` prints the same figures per split and batch.
"""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from autotune.diagnosis import diagnose_text, rules_for
from autotune.node.failures import diagnose_lines

CORPUS = Path(__file__).resolve().parents[1] / "data" / "crashlogs"


def cause_of(lines: list[str], exit_code: int | None = None) -> str:
    """What ``autotune diagnose`` names as the cause of a log of ``lines``: ``ok`` if healthy."""
    failure = diagnose_text("\n".join(lines), exit_code=exit_code).failure
    return "ok" if failure is None else failure.cause.value


def cause_phase(lines: list[str], engine: str | None = None) -> tuple[str, str] | None:
    """The failure's cause and phase in a log of ``lines``, or None for a healthy log."""
    failure = diagnose_text("\n".join(lines), engine=engine).failure
    return None if failure is None else (failure.cause.value, failure.phase.value)


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


def exit_code(row: dict[str, str]) -> int | None:
    """The exit status a labels row gives (optional ``exit_code`` column), None if not given."""
    code = (row.get("exit_code") or "").strip()
    return int(code) if code.lstrip("-").isdigit() else None


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
            rules = [] if no_rules else common
            failure = diagnose_lines(text.splitlines(), rules, exit_code=exit_code(row))
            engine = ""
        else:
            found = diagnose_text(text, exit_code=exit_code(row))
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


def dress_changes(
    corpus: Path = CORPUS, split: str = "tuning", *, every: bool = True
) -> dict[str, list[str]]:
    """Per dress, the ids of ``split`` whose cause changes when every line is re-dressed:
    each log in every dress, or (``every=False``) each log in one, the dresses taken in turn
    down the ids, so that each dress still meets a sixth of the corpus."""
    changed: dict[str, list[str]] = {name: [] for name in DRESSES}
    rows = [r for r in load_labels(corpus) if split in ("all", r["split"])]
    for n, row in enumerate(sorted(rows, key=lambda r: r["id"])):
        lines = (corpus / f"{row['id']}.log").read_text(encoding="utf-8").splitlines()
        code = exit_code(row)
        plain = diagnose_text("\n".join(lines), exit_code=code).failure
        want = "ok" if plain is None else plain.cause.value
        dresses = list(DRESSES.items())
        for name, dress in dresses if every else [dresses[n % len(dresses)]]:
            got = diagnose_text("\n".join(dress(lines)), exit_code=code).failure
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


__all__ = [
    "CORPUS",
    "DRESSES",
    "Verdict",
    "accuracy",
    "confusion_matrix",
    "confusion_table",
    "diagnose_all",
    "dress_changes",
    "exit_code",
    "load_labels",
    "ok_on_failed",
    "precision_recall",
]
