"""Logs of real engines on the GPU test machine: `autotune diagnose` names each one right.

tests/data/gpu-crashlogs holds every server log the GPU studies produced that is worth keeping
(labels.csv: engine, version, GPU, flags, the cause a serving engineer names, the flag that
fixes it, and which study and trial produced it). Healthy logs are kept too: they end with the
engine's own shutdown messages after autotune's SIGTERM, which are not a crash.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "data" / "gpu-crashlogs"
with (CORPUS / "labels.csv").open(encoding="utf-8", newline="") as fh:
    ROWS = list(csv.DictReader(fh))


def test_every_log_is_labelled_with_its_source() -> None:
    assert {r["id"] for r in ROWS} == {p.stem for p in CORPUS.glob("*.log")}
    for row in ROWS:
        assert row["engine"] and row["version"] and row["gpu"] and row["source"], row


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_diagnose_names_the_cause_and_the_flag_that_fixes_it(row: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "diagnose", str(CORPUS / f"{row['id']}.log"),
         "--engine", row["engine"], "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    answer = json.loads(proc.stdout)
    assert answer["cause"] == row["cause"], answer
    if row["cause"] != "ok":
        assert answer["phase"] == row["phase"], answer
        assert row["fix_flag"] in answer["hint"], answer["hint"]
