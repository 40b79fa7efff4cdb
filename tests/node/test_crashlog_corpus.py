"""The corpus of real crash logs: its labels are sound, and diagnose is accurate on it.

The accuracy floors are real measurements on real data (bench/diagnose_corpus.py prints the
same figures): a rule change that breaks a family fails here. The held-out part was split off
before any rule was written and no rule was written from it.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from tests.node.corpus_helpers import accuracy, confusion_table, diagnose_all

from autotune.models import Cause, Phase

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "crashlogs"
HELD_OUT_FLOOR = 0.95


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    with (CORPUS / "labels.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_labels_are_well_formed(rows: list[dict[str, str]]) -> None:
    assert len(rows) >= 120
    causes = {c.value for c in Cause} | {"ok"}
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    for row in rows:
        assert (CORPUS / f"{row['id']}.log").read_text(encoding="utf-8").strip(), row["id"]
        assert re.match(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$", row["url"])
        assert row["cause"] in causes, row
        assert row["phase"] in {p.value for p in Phase}, row
        assert row["split"] in {"tuning", "heldout"}, row
    files = {p.stem for p in CORPUS.glob("*.log")}
    assert files == set(ids), "every log has a label and every label a log"


def test_corpus_spans_the_engines_and_families(rows: list[dict[str, str]]) -> None:
    engines = Counter(r["engine"] for r in rows)
    for engine in ("sglang", "vllm", "trtllm", "transformers", "torch-distributed", "ray"):
        assert engines[engine] >= 4, engine
    causes = Counter(r["cause"] for r in rows)
    assert len(causes) >= 14
    for cause in (
        "kv_pool_oom",
        "cuda_graph_capture",
        "arch_unsupported",
        "watchdog_timeout",
        "host_oom",
        "startup_timeout",
        "nccl_error",
        "invalid_argument",
        "import_error",
    ):
        assert causes[cause] >= 4, cause


def test_split_is_the_recorded_deterministic_one(rows: list[dict[str, str]]) -> None:
    """Per cause, the 38% of ids first in sha256 order are held out (fixed before any rule)."""
    by_cause: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        by_cause[row["cause"]].append(row["id"])
    expected = {}
    for ids in by_cause.values():
        ids.sort(key=lambda i: hashlib.sha256(i.encode()).hexdigest())
        k = round(0.38 * len(ids))
        expected.update({i: ("heldout" if n < k else "tuning") for n, i in enumerate(ids)})
    assert {r["id"]: r["split"] for r in rows} == expected
    share = sum(r["split"] == "heldout" for r in rows) / len(rows)
    assert 0.35 <= share <= 0.40


def test_held_out_accuracy_floor() -> None:
    verdicts = [v for v in diagnose_all() if v.split == "heldout"]
    cause_acc, phase_acc = accuracy(verdicts)
    misses = [
        f"{v.id}: want {v.cause} got {v.got_cause}" for v in verdicts if v.got_cause != v.cause
    ]
    assert cause_acc >= HELD_OUT_FLOOR, misses
    assert phase_acc >= 0.75


def test_generic_rules_alone_meet_the_floor() -> None:
    """The `command` engine gets the common rules only; they must know every family."""
    verdicts = [v for v in diagnose_all(generic=True) if v.split == "heldout"]
    cause_acc, _ = accuracy(verdicts)
    assert cause_acc >= HELD_OUT_FLOOR


def test_tuning_accuracy() -> None:
    verdicts = [v for v in diagnose_all() if v.split == "tuning"]
    assert accuracy(verdicts)[0] >= HELD_OUT_FLOOR


def test_confusion_table_lists_every_cause() -> None:
    verdicts = diagnose_all()
    table = confusion_table(verdicts)
    for cause in {v.cause for v in verdicts}:
        assert f"| `{cause}` |" in table
