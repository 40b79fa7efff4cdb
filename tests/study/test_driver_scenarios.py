"""The driver with scenarios: what a trial is asked to run, how its SLOs are judged, resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.study.study_helpers import make_driver, toy_space

from autotune.errors import StudyError
from autotune.models import Outcome
from autotune.study.ledger import Ledger


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


def _scenario_space(tmp_path: Path, slo: dict[str, float]) -> Path:
    path = toy_space(tmp_path / "toy.yaml", trials=1)
    space: dict[str, Any] = yaml.safe_load(path.read_text())
    workload = space.pop("workload")
    space["objective"] = {"metric": "output_tok_s", "direction": "maximize"}
    space["combine"] = {"how": "worst"}
    space["scenarios"] = [
        {"name": "short", "workload": {**workload, "windows": 1}, "slo": slo},
        {"name": "long", "workload": {**workload, "windows": 1, "output_len": 8}},
    ]
    path.write_text(yaml.safe_dump(space))
    return path


def test_a_trial_runs_every_scenario_and_each_scenarios_slo_is_judged(tmp_path: Path) -> None:
    space = _scenario_space(tmp_path, {"ttft_p99_ms": 1e-6})  # nothing is that fast
    driver = make_driver(space, tmp_path / "study", n_trials=1, seed=0)
    spec = driver.build_spec(0, {"backend": "a", "x": 0.5, "y": 2})
    assert [s.name for s in spec.scenarios] == ["short", "long"]
    assert all(s.workload.model is not None for s in spec.scenarios)
    assert spec.combine is not None and spec.combine.how == "worst"
    assert spec.combine.metrics == {"output_tok_s": "maximize"}
    driver.study.enqueue_trial({"backend": "a", "x": 0.5, "y": 2})
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    (trial,) = Ledger(driver.study).trials()
    assert trial.outcome is Outcome.SLO_VIOLATED  # short.ttft_p99_ms missed
    assert [s["name"] for s in trial.scenarios] == ["short", "long"]
    m = trial.metrics
    assert m["output_tok_s"] == min(m["short.output_tok_s"], m["long.output_tok_s"])
    assert trial.value == m["output_tok_s"]


def test_resume_refuses_changed_scenarios(tmp_path: Path) -> None:
    space = _scenario_space(tmp_path, {})
    make_driver(space, tmp_path / "study", n_trials=1, seed=0).executor.shutdown()
    data = yaml.safe_load(space.read_text())
    data["combine"] = {"how": "weighted_sum"}
    space.write_text(yaml.safe_dump(data))
    with pytest.raises(StudyError, match="combine differs"):
        make_driver(space, tmp_path / "study", n_trials=1, seed=0)


def test_a_study_stored_before_scenarios_existed_resumes(tmp_path: Path) -> None:
    space = toy_space(tmp_path / "toy.yaml", trials=1)
    first = make_driver(space, tmp_path / "study", n_trials=1, seed=0)
    first.executor.shutdown()
    ledger = Ledger(first.study)
    stored = ledger.study_record()
    old = {k: v for k, v in stored.space.items() if k not in ("scenarios", "sweep", "goodput")}
    old.pop("combine", None)
    ledger.write_study(stored.model_copy(update={"space": old}))  # as an older version wrote
    again = make_driver(space, tmp_path / "study", n_trials=1, seed=0)  # no StudyError
    again.executor.shutdown()
    assert "scenarios" not in Ledger(again.study).study_record().space


def test_resume_refuses_a_changed_workload_naming_the_field(tmp_path: Path) -> None:
    """The GPU space moved from 1,024 requests of fixed lengths to 768 of varied ones: a study
    resumed across that change would rank launches measured on different work."""
    space = toy_space(tmp_path / "toy.yaml", trials=1)
    make_driver(space, tmp_path / "study", n_trials=1, seed=0).executor.shutdown()
    data = yaml.safe_load(space.read_text())
    data["workload"]["num_requests"] = data["workload"]["num_requests"] + 1
    space.write_text(yaml.safe_dump(data))
    with pytest.raises(StudyError, match=r"another workload \(workload.num_requests: 2, now 3\)"):
        make_driver(space, tmp_path / "study", n_trials=1, seed=0)
    # put back, it resumes
    data["workload"]["num_requests"] -= 1
    space.write_text(yaml.safe_dump(data))
    make_driver(space, tmp_path / "study", n_trials=1, seed=0).executor.shutdown()
