"""The ledger over a real SQLite Optuna storage: records round-trip, old studies still read."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial

from autotune.core.records import SkipKind, SkipRecord, StudyRecord, TrialRecord
from autotune.models import Cleanup, Outcome, Timings
from autotune.study.deadends import DeadEnd
from autotune.study.ledger import Ledger, decode_trial, trial_attrs

DIST = {"bs": IntDistribution(1, 64)}
# Fields Optuna keeps or the ledger derives on reading; every other field is stored.
DERIVED = {"number", "state", "value", "duration_s", "constraints"}


def _study(tmp_path: Path, name: str = "s") -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(
        storage=f"sqlite:///{tmp_path / 'study.db'}", study_name=name, direction="maximize"
    )


def _add(
    study: optuna.Study,
    user_attrs: dict[str, Any],
    state: TrialState = TrialState.COMPLETE,
    value: float | None = 1.0,
) -> None:
    study.add_trial(
        create_trial(
            state=state,
            value=value if state == TrialState.COMPLETE else None,
            params={"bs": 8},
            distributions=DIST,
            user_attrs=user_attrs,
        )
    )


FULL = TrialRecord(
    number=0,
    state="COMPLETE",
    outcome=Outcome.OK,
    config={"bs": 8, "mode": "x"},
    metrics={"output_tok_s": 120.5, "ttft_p99_ms": 30.0},
    cause="kv_pool_oom",
    phase="memory_pool",
    hint="lower it",
    message="m",
    evidence=["line"],
    blame=["bs=8"],
    skip=SkipRecord(kind=SkipKind.REPEAT, reason="same as 3", same_as=3),
    baseline=True,
    chosen={"mem": 0.83, "policy": "fcfs"},
    simulated=True,
    node="n1",
    log_path="/tmp/x.log",
    argv=["srv", "--bs", "8"],
    env={"NCCL_PROTO": "LL"},
    attempts=2,
    timings=Timings(total_s=12.0),
    cleanup=Cleanup(processes_left=1),
    retry_of=7,
    proposed_by="model",
    windows=[{"output_tok_s": 120.0}, {"output_tok_s": 121.0}],
    peak={"concurrency": 16, "survived": True},
    repeat_of=2,
    confirm_round=1,
    confirm_key="trial 2",
    ablation_round=2,
    ablation_key="mode",
    pruned_saved_s=3.5,
    gpu="8x NVIDIA H200",
    engine_version="0.5.9",
    scenarios=[{"name": "chat", "metrics": {"output_tok_s": 10.0}, "over": "concurrency"}],
)


def test_every_stored_field_round_trips(tmp_path: Path) -> None:
    # A field added to TrialRecord must be set here too, or this fails: it proves the new
    # field is stored and read back with no change in the ledger.
    unset = [
        n for n in TrialRecord.model_fields if n not in DERIVED and n not in FULL.model_fields_set
    ]
    assert not unset, f"set these fields in FULL: {unset}"
    study = _study(tmp_path)
    _add(study, trial_attrs(FULL), value=120.5)
    back = Ledger(study).trials()[0]
    assert back.model_dump(exclude=DERIVED) == FULL.model_dump(exclude=DERIVED)
    assert back.value == 120.5 and back.duration_s == 12.0


def test_defaults_are_not_stored() -> None:
    attrs = trial_attrs(
        TrialRecord(number=1, state="RUNNING", outcome=Outcome.PRUNED, config={"bs": 1})
    )
    assert attrs == {"outcome": "pruned", "config": {"bs": 1}}


def test_skip_kind_is_stored_and_read_without_parsing_the_reason(tmp_path: Path) -> None:
    study = _study(tmp_path)
    for kind in SkipKind:
        skip = SkipRecord(kind=kind, reason="breaks constraint bs < 4")  # the text never decides
        record = TrialRecord(number=0, state="PRUNED", outcome=Outcome.PRUNED, skip=skip)
        _add(study, trial_attrs(record), state=TrialState.PRUNED)
    trials = Ledger(study).trials()
    assert [t.skip.kind for t in trials if t.skip] == list(SkipKind)
    # A skip's cause is its kind (a repeat reuses a measurement: it has none).
    assert [t.cause for t in trials] == ["constraint", "dead_end", "predicted_crash", None]


def test_a_study_written_before_skip_kinds_still_reads(tmp_path: Path) -> None:
    """Trials as the earlier driver stored them: the kind is inferred as that version did."""
    study = _study(tmp_path)
    old = [
        {"outcome": "pruned", "cause": "constraint", "skipped": "breaks constraint bs < 4"},
        {"outcome": "pruned", "cause": "dead_end", "skipped": "bs=8 caused cuda_oom in trial 0"},
        {
            "outcome": "pruned",
            "cause": "dead_end",
            "skipped": "predicted crash p=0.61 (nearest of 9 launched configurations crashed)",
        },
        {
            "outcome": "pruned",
            "skipped": "same configuration as trial 0: its measurement is reused",
        },
    ]
    for ua in old:
        _add(study, {**ua, "config": {"bs": 8}}, state=TrialState.PRUNED)
    kinds = [t.skip.kind for t in Ledger(study).trials() if t.skip]
    assert kinds == [
        SkipKind.CONSTRAINT,
        SkipKind.DEAD_END,
        SkipKind.PREDICTED_CRASH,
        SkipKind.REPEAT,
    ]
    assert Ledger(study).trials()[2].cause == "predicted_crash"


def test_study_record_round_trips_under_the_old_names(tmp_path: Path) -> None:
    study = _study(tmp_path, "kimi")
    ledger = Ledger(study)
    record = StudyRecord(
        name="kimi",
        metric="ttft_p99_ms",
        direction="minimize",
        engine="sglang",
        space={"model": "m"},
        space_file="a.yaml",
        simulated=True,
        tracker_run="abc",
        objectives=[
            {"metric": "ttft_p99_ms", "direction": "minimize"},
            {"metric": "output_tok_s", "direction": "maximize"},
        ],
    )
    ledger.write_study(record)
    assert (
        Ledger(optuna.load_study(study_name="kimi", storage=study._storage)).study_record()
        == record
    )
    # Earlier versions (and their resumes) read these keys.
    ua = study.user_attrs
    assert ua["objective"] == {"metric": "ttft_p99_ms", "direction": "minimize"}
    assert ua["mlflow_parent_run_id"] == "abc" and ua["simulated"] is True


def test_study_without_records_falls_back_to_optuna(tmp_path: Path) -> None:
    record = Ledger(_study(tmp_path)).study_record()
    # A study written before several objectives existed has one: its metric.
    assert record.objectives == [] and record.objective_pairs() == [("value", "maximize")]
    assert (record.name, record.metric, record.direction, record.simulated) == (
        "s",
        "value",
        "maximize",
        False,
    )


def test_unreadable_field_is_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    study = _study(tmp_path)
    _add(study, {"outcome": "ok", "timings": "not a timings record", "metrics": {"x": 1.0}})
    with caplog.at_level(logging.WARNING, logger="autotune.study.ledger"):
        (trial,) = Ledger(study).trials()
    assert trial.outcome is Outcome.OK and trial.timings is None and trial.metrics == {"x": 1.0}
    assert "timings" in caplog.text


def test_value_is_the_measured_metric_never_a_told_penalty(tmp_path: Path) -> None:
    study = _study(tmp_path)
    ledger = Ledger(study)
    ledger.write_study(StudyRecord(name="s", metric="output_tok_s"))
    _add(study, {"outcome": "crashed", "metrics": {"output_tok_s": 5.0}}, value=1e9)
    _add(study, {"outcome": "slo_violated", "metrics": {"output_tok_s": 7.0}}, value=7.0)
    crashed, slo = ledger.trials()
    assert crashed.value is None and slo.value == 7.0
    frozen = study.get_trials()[1]
    assert decode_trial(frozen, "output_tok_s").value == 7.0


def test_recover_interrupted_fails_running_and_queues_once(tmp_path: Path) -> None:
    study = _study(tmp_path)
    ledger = Ledger(study)
    ledger.enqueue({"bs": 4}, baseline=True)
    trial = study.ask()  # the baseline; its driver dies here
    assert ledger.fixed_params(trial._trial_id) == {"bs": 4}
    assert ledger.recover_interrupted() == 1
    assert ledger.recover_interrupted() == 0  # queued once, even when recovery runs again
    first, again = ledger.trials()
    assert first.outcome is Outcome.INTERRUPTED and first.state == "FAIL"
    assert again.state == "WAITING" and again.baseline and again.retry_of == first.number


def test_an_interrupted_confirmation_launch_is_failed_but_not_queued(tmp_path: Path) -> None:
    study = _study(tmp_path)
    ledger = Ledger(study)
    ledger.enqueue({"bs": 4}, baseline=True, confirm_round=1, confirm_key="baseline")
    study.ask()  # Ctrl-C while it runs
    # Not queued again: the confirmation goes on from its stored progress instead.
    assert ledger.recover_interrupted() == 0
    (only,) = ledger.trials()
    assert only.outcome is Outcome.INTERRUPTED and only.state == "FAIL"
    assert only.confirm_round == 1


def test_an_interrupted_ablation_launch_is_failed_but_not_queued(tmp_path: Path) -> None:
    study = _study(tmp_path)
    ledger = Ledger(study)
    ledger.enqueue({"bs": 4}, baseline=False, ablation_round=2, ablation_key="bs")
    study.ask()  # Ctrl-C while it runs
    assert ledger.recover_interrupted() == 0  # not a search trial: the ablation says it was cut
    (only,) = ledger.trials()
    assert only.outcome is Outcome.INTERRUPTED and only.state == "FAIL"
    assert only.ablation_round == 2


def test_measured_finds_only_successful_measurements(tmp_path: Path) -> None:
    study = _study(tmp_path)
    _add(study, {"outcome": "crashed", "config": {"bs": 8}})
    assert Ledger(study).measured({"bs": 8}) is None
    _add(study, {"outcome": "ok", "config": {"bs": 8}}, value=3.0)
    found = Ledger(study).measured({"bs": 8})
    assert found is not None and found.number == 1


def test_dead_ends_round_trip(tmp_path: Path) -> None:
    ledger = Ledger(_study(tmp_path))
    assert ledger.dead_ends() == []
    record = DeadEnd(trial=2, cause="cuda_oom", config={"bs": 64}, blame={"bs": 64}, memory=True)
    ledger.write_dead_ends([record])
    assert ledger.dead_ends() == [record]


def test_tracker_run_is_kept_for_resume(tmp_path: Path) -> None:
    study = _study(tmp_path)
    Ledger(study).set_tracker_run("run-1")
    assert Ledger(study).study_record().tracker_run == "run-1"


def test_only_the_ledger_names_stored_attributes() -> None:
    """Every read and write of Optuna user or system attributes goes through the ledger (the
    search's sampler reads and writes its own, for any Optuna user: autotune.search)."""
    src = Path(__file__).resolve().parents[2] / "src" / "autotune"
    words = ("user_attr", "system_attr")
    offenders = [
        str(path.relative_to(src))
        for path in sorted(src.rglob("*.py"))
        if path.name != "ledger.py"
        and path.parent.name != "search"
        and any(w in path.read_text() for w in words)
    ]
    assert offenders == []


def test_a_skip_kind_from_a_newer_version_is_read_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    study = _study(tmp_path)
    ua = {"outcome": "pruned", "cause": "constraint", "skipped": "why", "skip_kind": "future"}
    _add(study, ua, state=TrialState.PRUNED)
    with caplog.at_level(logging.WARNING, logger="autotune.study.ledger"):
        (trial,) = Ledger(study).trials()
    assert trial.skip is not None and trial.skip.kind is SkipKind.CONSTRAINT
    assert "future" in caplog.text


def test_a_confirmed_study_shows_the_baseline_from_its_confirmation_launches(
    tmp_path: Path,
) -> None:
    """The winner's figure is its confirmed median; the baseline beside it must come from the
    same rounds, or "1,095 vs baseline 66" would not match the +1249% printed next to it."""
    from autotune.study.confirm import BASELINE, Candidate, Confirmation, Launch, decide

    study = _study(tmp_path)
    ledger = Ledger(study)
    ledger.write_study(StudyRecord(name="s", metric="tok_s"))
    base, best = {"bs": 8}, {"bs": 16}

    def add(config: dict[str, Any], value: float, **extra: Any) -> None:
        record = TrialRecord(
            number=0,
            state="COMPLETE",
            outcome=Outcome.OK,
            config=config,
            metrics={"tok_s": value},
            **extra,
        )
        _add(study, trial_attrs(record), value=value)

    for v in (60.0, 62.0, 64.0):
        add(base, v, baseline=True)
    add(best, 1300.0)
    candidates = [Candidate(key="trial 3", config=best, trial=3)]
    record = Confirmation(direction="maximize", candidates=candidates)
    for r, (b, a) in enumerate([(100.0, 1200.0), (90.0, 1100.0), (80.0, 1000.0)], start=1):
        add(base, b, baseline=True, confirm_round=r, confirm_key=BASELINE)
        add(best, a, confirm_round=r, confirm_key="trial 3")
        record.launches += [
            Launch(round=r, key=BASELINE, value=b, server_s=1.0),
            Launch(round=r, key="trial 3", value=a, server_s=1.0),
        ]
    decide(record, ["trial 3"], 1, 0.95)
    ledger.write_confirmation(record)
    s = ledger.summary()
    assert s.confirmed and (s.best_value, s.baseline_value) == (1100.0, 90.0)


def test_budget_launches_count_the_search_and_the_baseline_once() -> None:
    from autotune.core.records import TrialRecord, budget_launches
    from autotune.models import Outcome

    def rec(n: int, outcome: Outcome | None, **kw: object) -> TrialRecord:
        return TrialRecord(number=n, state="COMPLETE", outcome=outcome, **kw)  # type: ignore[arg-type]

    trials = [
        *(rec(n, Outcome.OK, baseline=True) for n in range(3)),  # the baseline, three times
        rec(3, Outcome.OK),
        rec(4, Outcome.CRASHED),
        rec(5, Outcome.OK, repeat_of=3),  # proposed again, relaunched: a search launch
        rec(6, Outcome.PRUNED),  # a skipped proposal: not launched
        rec(7, Outcome.PRUNED, windows=[{"output_tok_s": 1.0}]),  # stopped early: launched
        rec(8, Outcome.OK, baseline=True, confirm_round=1, confirm_key="baseline"),
        rec(9, Outcome.OK, confirm_round=1, confirm_key="trial 3"),
    ]
    assert budget_launches(trials) == 1 + 4
    assert budget_launches(trials[3:]) == 4  # no baseline ran


def test_reading_a_study_imports_no_scipy() -> None:
    """The commands that read a study (status, report, export) start without scipy, which
    takes most of a second to import: it comes only with a search or an interval."""
    code = (
        "import sys, autotune.study.ledger, autotune.cli.status, autotune.cli.report, "
        "autotune.cli.export, autotune.report, autotune.export; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'); "
        "assert not bad, bad[:3]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
