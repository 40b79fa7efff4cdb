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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

# The corpus and its scoring are test fixtures (tests/node/test_crashlog_corpus.py).
from tests.node.corpus_helpers import Verdict, accuracy, confusion_table, diagnose_all  # noqa: E402


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
