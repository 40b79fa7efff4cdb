"""Accuracy of `autotune diagnose` on the corpus of real crash logs (tests/data/crashlogs).

Each log is an excerpt of a public issue thread, labelled with its cause and phase; the labels
file splits it into a tuning part (rules and vocabulary may be learnt from it) and a held-out
part (never looked at while writing them), in batches gathered on different dates
(tests/data/crashlogs/MANIFEST.md: each later batch was classified once, fresh, before anything
was learnt from it). Each log is diagnosed exactly as ``autotune diagnose LOG`` does (engine
guessed from the log; the exit status too where the labels give one, as
``--exit-code``), in this process. Prints, per split: cause accuracy, phase
accuracy among the right causes, ``ok`` answers for logs of failed runs, per-cause precision
and recall, and the confusion matrix.

    python bench/diagnosis.py                      # both splits, every batch
    python bench/diagnosis.py --batch 2026-12-06f  # one batch (labels.csv `added`)
    python bench/diagnosis.py --misses             # list the tuning part's misses
    python bench/diagnosis.py --generic            # common rules only (the `command` engine)
    python bench/diagnosis.py --no-rules           # no rule at all: family scoring alone
    python bench/diagnosis.py --dress              # same answers with every line re-dressed?
    python bench/diagnosis.py --summary            # the headline line of each split only
    python bench/diagnosis.py --save A.json        # keep every answer, then after a change:
    python bench/diagnosis.py --against A.json     # the answers that moved since A.json

``--against`` names a moved held-out answer by id and right/wrong only, and for a held-out
part never opened (``SEALED``) gives counts alone.

``--misses`` lists tuning logs only: the held-out part is not for writing rules
(``--misses --heldout-misses`` shows those too, for a report after the rules are fixed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

# The corpus and its scoring are test fixtures (tests/node/test_crashlog_corpus.py).
from tests.node.corpus_helpers import (  # noqa: E402
    Verdict,
    accuracy,
    confusion_matrix,
    confusion_table,
    diagnose_all,
    dress_changes,
    load_labels,
    ok_on_failed,
    precision_recall,
)


def report(
    verdicts: list[Verdict],
    splits: list[str],
    *,
    misses: bool,
    heldout_misses: bool = False,
    matrix: bool = True,
    summary: bool = False,
) -> str:
    """The printed report for ``splits``."""
    parts = []
    for split in splits:
        chosen = [v for v in verdicts if split == "all" or v.split == split]
        cause_acc, phase_acc = accuracy(chosen)
        right = sum(v.got_cause == v.cause for v in chosen)
        head = (
            f"## {split}: {len(chosen)} logs, cause {right}/{len(chosen)} = {cause_acc:.1%}, "
            f"phase {phase_acc:.1%} of those, ok for a failed run: {ok_on_failed(chosen)}\n"
        )
        if summary:  # the aggregate score alone (a held-out part that is never opened)
            parts.append(head)
            continue
        parts.append(f"{head}\n{precision_recall(chosen)}\n\n{confusion_table(chosen)}\n")
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


# Held-out parts that are never opened, not even their misses: only counts are printed.
SEALED = {"2026-12-06r", "2026-12-06s", "2026-12-06t", "2026-12-07u", "2026-12-07v", "2026-12-07w"}
SEALED |= {"2026-12-07x", "2026-12-07y", "2026-12-07z", "2026-12-07za", "2026-12-07zb"}
SEALED |= {"2026-12-07zc", "2026-12-07zd"}


def moved(verdicts: list[Verdict], before: dict[str, str]) -> str:
    """The answers (cause@phase) that differ from ``before`` (id -> cause@phase answered), one
    line each; held-out ones by right/wrong only, those of a ``SEALED`` batch as counts."""
    lines, sealed = [], Counter()
    for v in verdicts:
        was, now = before.get(v.id), f"{v.got_cause}@{v.got_phase}"
        if was is None or was == now:
            continue

        def mark(answer: str, v: Verdict = v) -> str:
            cause, phase = answer.split("@")
            return "wrong" if cause != v.cause else "right" if phase == v.phase else "phase wrong"

        step = f"{mark(was)} -> {mark(now)}"
        if v.split == "heldout" and v.batch in SEALED:
            sealed[step] += 1
        elif v.split == "heldout":
            lines.append(f"- {v.id} (held out, {v.batch}): {step}")
        else:
            lines.append(f"- {v.id} ({v.batch}): {was} -> {now}, want {v.cause}@{v.phase}: {step}")
    for step, n in sorted(sealed.items()):
        lines.append(f"- sealed held-out answers {step}: {n}")
    return "\n".join(lines or ["no answer moved"]) + "\n"


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
    parser.add_argument("--summary", action="store_true", help="each split's headline only")
    parser.add_argument("--save", type=Path, help="write every answer (id -> cause@phase) here")
    parser.add_argument("--against", type=Path, help="list the answers moved since --save")
    args = parser.parse_args(argv)
    if args.dress:
        rows = load_labels()
        sealed = {r["id"] for r in rows if r["added"] in SEALED and r["split"] == "heldout"}
        for split in args.split or ["tuning", "heldout"]:
            for name, ids in dress_changes(split=split).items():
                shown = [i if i not in sealed else "(sealed)" for i in ids]
                sys.stdout.write(f"{split} {name}: {len(ids)} answers change {' '.join(shown)}\n")
        return 0
    start = time.perf_counter()
    verdicts = diagnose_all(generic=args.generic, no_rules=args.no_rules)
    took = time.perf_counter() - start
    if args.save:
        args.save.write_text(
            json.dumps({v.id: f"{v.got_cause}@{v.got_phase}" for v in verdicts}, indent=0)
        )
    if args.against:
        sys.stdout.write(moved(verdicts, json.loads(args.against.read_text())))
    if args.batch:
        verdicts = [v for v in verdicts if v.batch == args.batch]
    sys.stdout.write(
        report(
            verdicts,
            args.split or ["tuning", "heldout"],
            misses=args.misses,
            heldout_misses=args.heldout_misses,
            matrix=not args.no_matrix,
            summary=args.summary,
        )
    )
    engines = len({v.engine for v in verdicts})
    sys.stdout.write(
        f"\n{len(verdicts)} logs from {engines} engines/runtimes, diagnosed in {took:.2f} s\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
