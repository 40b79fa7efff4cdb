"""docs/simulator.md shows the calibration table the model computes."""

from __future__ import annotations

from pathlib import Path

from tests.sim.sim_shapes import KNOBS, row, shapes

from autotune.sim.calibration import markdown_table
from autotune.sim.replay import run_open, scheduler_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def test_the_documented_calibration_table_is_what_the_model_computes() -> None:
    assert markdown_table() in DOC.read_text()


def test_the_documented_shape_table_is_what_the_scheduler_computes() -> None:
    shape = "RAG 16 groups x 2k prefix @ 6 req/s"
    prompts, rate = shapes(256)[shape]
    doc = (DOC.parent / "benchmarks.md").read_text()
    for knob in ("default", "--mem-fraction-static 0.03 --schedule-policy lpm"):
        result = run_open(scheduler_for(KNOBS[knob]), prompts, rate, seed=0)
        assert row(shape, knob, result) in doc
