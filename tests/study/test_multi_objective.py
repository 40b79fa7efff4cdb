"""A study with two objectives: a true Optuna multi-objective study, its Pareto front shown
and exported, crashes and SLO misses kept off the front; the real driver and a real server.

The server (tests/study/servers/scenario.py) streams faster with a higher ``--level`` and
answers later: throughput against time to first token, a real trade-off where every level
is on the front.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from tests.study.study_helpers import make_driver

from autotune.cli import main
from autotune.export import formats as export
from autotune.models import Outcome
from autotune.report import tables as report
from autotune.report import write_report
from autotune.study.ledger import Ledger

SERVER = Path(__file__).parent / "servers" / "scenario.py"
OBJECTIVES = [
    {"metric": "output_tok_s", "direction": "maximize"},
    {"metric": "ttft_p99_ms", "direction": "minimize"},
]


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


def space(path: Path, ttft_ms: float = 40, output_len: int = 40, **extra: Any) -> Path:
    data: dict[str, Any] = {
        "name": "mo",
        "engine": {
            "name": "command",
            "command": [sys.executable, str(SERVER), "--port", "{port}", "--ttft-ms", str(ttft_ms)],
            "startup_timeout_s": 30,
        },
        "model": "scenario",
        "parameters": [
            {"name": "level", "type": "categorical", "choices": [1, 2, 3, 4], "flag": "--level"}
        ],
        "baseline": {"level": 1},
        "objective": {"metrics": OBJECTIVES},
        "workload": {
            "concurrency": 2,
            "num_requests": 2,
            "windows": 1,
            "prompt_len": 4,
            "output_len": output_len,
            "warmup_requests": 0,
        },
        "budget": {"trials": 4},
        **extra,
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run(tmp_path: Path, levels: list[int], **extra: Any) -> Any:
    driver = make_driver(
        space(tmp_path / "mo.yaml", **extra),
        tmp_path / "study",
        n_trials=1 + len(levels),
        seed=0,
        baseline_launches=1,
        confirm=0,
    )
    for level in levels:
        driver.study.enqueue_trial({"level": level})
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    return driver


def test_two_objectives_make_a_pareto_front_shown_and_exported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Wide steps on both axes, so that a loaded machine's delays (tens of ms) reorder neither:
    # 100 ms of first-token delay a level, and 400 tokens at 100 tok/s a level, so a request
    # takes 4.1, 2.2 and 1.6 s at levels 1-3. (With 40 ms and 40 tokens, 0.44, 0.28 and 0.25 s:
    # levels 2 and 3 were 10% apart in throughput, and one was once read as dominated.)
    driver = run(tmp_path, [2, 3, 4], ttft_ms=100, output_len=400)
    study = driver.study
    assert study.directions == [
        optuna.study.StudyDirection.MAXIMIZE,
        optuna.study.StudyDirection.MINIMIZE,
    ]
    trials = Ledger(study).trials()
    crashed = [t for t in trials if t.config == {"level": 4}]
    assert crashed and crashed[0].outcome is Outcome.CRASHED
    # Told as infeasible (PRUNED with a violated constraint), as in a single-objective study.
    frozen = study.trials[crashed[0].number]
    assert frozen.state == optuna.trial.TrialState.PRUNED and frozen.constraints["crash"] > 0
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert all(len(t.values) == 2 for t in done) and len(done) == 3

    summary = Ledger(study).summary()
    assert summary.objectives == OBJECTIVES
    assert summary.pareto is not None
    levels = {trials[p.trial].config["level"] for p in summary.pareto}
    assert levels == {1, 2, 3}  # each level trades throughput for TTFT; the crash is off
    by_level = {trials[p.trial].config["level"]: p.values for p in summary.pareto}
    assert by_level[3]["output_tok_s"] > by_level[1]["output_tok_s"]
    assert by_level[3]["ttft_p99_ms"] > by_level[1]["ttft_p99_ms"]

    listed = json.loads(export.export(study, "json", pareto=True))
    assert [d["trial"] for d in listed] == [p.trial for p in summary.pareto]
    assert all(set(d["pareto"]) == {"output_tok_s", "ttft_p99_ms"} for d in listed)
    script = export.export(study, "sh", pareto=True)
    assert "on the Pareto front" in script and "rank3()" in script
    assert "Pareto front, first member of study" in script

    table = report.pareto_table(Ledger(study).view())
    assert table is not None and len(table.rows) == 3
    written = write_report(study, tmp_path / "report")
    assert tmp_path / "report" / "pareto_front.png" in written.plots
    page = written.page.read_text()
    assert "<h2>Pareto front</h2>" in page

    # The CLI: status (console and --json) shows the front without being asked.
    where = ["--study", "toy", "--storage", f"sqlite:///{tmp_path / 'study' / 'study.db'}"]
    capsys.readouterr()
    assert main(["status", *where, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["summary"]
    front = [p.model_dump(mode="json") for p in summary.pareto]
    assert shown["pareto"] == front and shown["objectives"] == OBJECTIVES
    assert main(["status", *where]) == 0
    out = capsys.readouterr().out
    assert "Pareto front" in out and "ttft_p99_ms (minimize)" in out


def test_an_slo_miss_is_recorded_and_kept_off_the_front(tmp_path: Path) -> None:
    # Level 3 waits 600 ms for its first token: over a 500 ms bound, which level 2 (400 ms)
    # meets, 100 ms from the bound either way. (With 40 ms a level, 80 and 120 ms against
    # 110 ms, level 2 missed at load 9 with four test workers beside it.) 120 tokens at
    # 100 tok/s a level: level 2 streams faster than level 1 (1.0 s to 1.4 s a request).
    driver = run(tmp_path, [2, 3], slo={"ttft_p99_ms": 500.0}, ttft_ms=200, output_len=120)
    trials = Ledger(driver.study).trials()
    missed = next(t for t in trials if t.config == {"level": 3})
    assert missed.outcome is Outcome.SLO_VIOLATED and missed.constraints["slo"] > 0
    front = Ledger(driver.study).summary().pareto or []
    assert {trials[p.trial].config["level"] for p in front} == {1, 2}


def test_export_pareto_of_a_single_objective_study_says_why_not(tmp_path: Path) -> None:
    driver = run(tmp_path, [], objective={"metric": "output_tok_s"})
    with pytest.raises(Exception, match="has one objective"):
        export.export(driver.study, "json", pareto=True)


@pytest.mark.slow  # a whole study with confirmation rounds on toy servers (8-11 s)
def test_confirmation_takes_its_candidates_from_the_front(tmp_path: Path) -> None:
    # Level 2 answering after 200 ms is dominated (by level 2 at 40 ms, and by the baseline),
    # though it is third by throughput: it is not confirmed.
    path = space(tmp_path / "mo.yaml")
    data = yaml.safe_load(path.read_text())
    data["parameters"].append(
        {"name": "ttft", "type": "categorical", "choices": [40, 200], "flag": "--ttft-ms"}
    )
    data["baseline"] = {"level": 1, "ttft": 40}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    driver = make_driver(
        path,
        tmp_path / "study",
        n_trials=4,
        seed=0,
        baseline_launches=1,
        confirm=3,
        confirm_rounds=(2, 2),
    )
    for config in ({"level": 3, "ttft": 40}, {"level": 2, "ttft": 40}, {"level": 2, "ttft": 200}):
        driver.study.enqueue_trial(config)
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    ledger = Ledger(driver.study)
    record = ledger.confirmation()
    assert record is not None
    confirmed = [c.config for c in record.candidates]
    assert confirmed == [{"level": 3, "ttft": 40}, {"level": 2, "ttft": 40}]
    on_front = {p.trial for p in ledger.summary().pareto or []}
    assert all(c.trial in on_front for c in record.candidates)


def test_maximise_subject_to_an_slo_exports_the_fastest_that_meets_it(tmp_path: Path) -> None:
    # One objective and a bound: level 3 streams fastest but misses the 500 ms TTFT bound.
    # 200 ms of first-token delay a level (400, 600 ms at levels 2, 3): 100 ms from the bound
    # either way, which a loaded machine's delays do not cross (with 40 ms a level, 80 and
    # 120 ms against 100 ms, level 2 once missed it at a load of 6); 400 tokens, so that a
    # request still takes less time at level 3 (1.9 s) than at level 2 (2.4 s).
    driver = run(
        tmp_path,
        [3, 2],
        ttft_ms=200,
        output_len=400,
        objective={"metric": "output_tok_s"},
        slo={"ttft_p99_ms": 500.0},
    )
    trials = Ledger(driver.study).trials()
    fastest = next(t for t in trials if t.config == {"level": 3})
    assert fastest.outcome is Outcome.SLO_VIOLATED and fastest.value is not None
    # (each trial's level, outcome and value in the message: it failed twice in full runs
    # with two workers, 2026-12-08, and never alone)
    seen = [(t.config, t.outcome.value, t.value) for t in trials]
    assert all(fastest.value > t.value for t in trials if t.value and t is not fastest), seen
    summary = Ledger(driver.study).summary()
    assert trials[summary.search_best_trial or 0].config == {"level": 2}
    # One launch each and no confirmation: no gain can be claimed, the baseline is the
    # answer; the SLO miss is never among the exportable configurations.
    ranked = json.loads(export.export(driver.study, "json", top=3))
    assert {"level": 3} not in [d["config"] for d in ranked]


def test_validate_names_every_objective(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(space(tmp_path / "mo.yaml"))]) == 0
    assert "objective maximize output_tok_s and minimize ttft_p99_ms" in capsys.readouterr().out
