"""docs/simulator.md shows the calibration table the model computes."""

from __future__ import annotations

from pathlib import Path

from autotune.sim.calibration import markdown_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def test_the_documented_calibration_table_is_what_the_model_computes() -> None:
    assert markdown_table() in DOC.read_text()
