"""MlflowTracker against real MLflow stores: a SQLite file, and a real ``mlflow server``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from autotune.core.records import StudyInfo, TrialLog
from autotune.core.summary import StudySummary
from autotune.errors import TrackingError
from autotune.models import Cleanup, Failure, Metrics, Outcome, Stats, Timings, TrialResult
from autotune.tracking import NullTracker, make_tracker

if TYPE_CHECKING:  # mlflow is imported where used: every xdist worker collects this file,
    # and the one that runs it pays for the import (1.4 s of CPU)
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

SECRET = "hf_" + "Qw3" * 12

INFO = StudyInfo(
    study="demo",
    engine="sglang",
    model="moonshotai/Kimi-K2.5",
    metric="output_tok_s",
    direction="maximize",
    simulated=True,
    parameters=["chunked_prefill_size", "attention_backend"],
    engine_version="0.5.9",
)
LAUNCHED_AT = 1_780_000_000.0  # an epoch instant: the run's start, never a metric


def info(study: str, **fields: Any) -> StudyInfo:
    return INFO.model_copy(update={"study": study, **fields})


def log(result: TrialResult, config: dict[str, Any], **fields: Any) -> TrialLog:
    return TrialLog(study="demo", result=result, config=config, **fields)


def ok_result(number: int, log_path: Path | None = None, *, attempt: int = 0) -> TrialResult:
    stats = Stats(mean=10.0, p50=9.0, p90=15.0, p99=20.0)
    return TrialResult(
        study="demo",
        number=number,
        outcome=Outcome.OK,
        attempt=attempt,
        metrics=Metrics(
            output_tok_s=1000.0 + number,
            request_s=4.0,
            ttft_ms=stats,
            completed=32,
            output_tokens=2048,
            duration_s=8.0,
        ),
        timings=Timings(
            launch_to_ready_s=40.0,
            benchmark_s=8.0,
            teardown_s=2.0,
            total_s=55.0,
            launched_at=LAUNCHED_AT,
            clean_at=LAUNCHED_AT + 55.0,
        ),
        cleanup=Cleanup(
            gpu_mem_before_mib=[1.0, 2.0], gpu_mem_after_mib=[3.0, 5.0], gpu_clean=True
        ),
        log_path=str(log_path) if log_path else None,
        node="node-a",
    )


def crashed_result(number: int, log_path: Path | None = None) -> TrialResult:
    return TrialResult(
        study="demo",
        number=number,
        outcome=Outcome.CRASHED,
        failure=Failure(
            cause="kv_pool_oom",
            phase="memory_pool",
            hint="lower --mem-fraction " * 60,
            evidence=[f"RuntimeError: Not enough memory {SECRET}"],
            message="KV cache pool could not be allocated",
        ),
        timings=Timings(total_s=12.0),
        log_path=str(log_path) if log_path else None,
    )


def _children(client: MlflowClient, tracker: MlflowTracker) -> list[Any]:
    return client.search_runs(
        [str(tracker.experiment_id)],
        filter_string=f"tags.`mlflow.parentRunId` = '{tracker.parent_run_id}'",
        order_by=["attributes.start_time ASC"],
    )


def _artifact_text(client: MlflowClient, run_id: str, path: str, dst: Path) -> str:
    local = client.download_artifacts(run_id, path, str(dst))
    return Path(local).read_text(encoding="utf-8")


def _study_roundtrip(uri: str, tmp_path: Path, server_log: Path, study: str) -> None:
    """Log a study with two trials and check every part of it through a fresh client."""
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

    space = tmp_path / "space.yaml"
    space.write_text("engine: {name: sglang}\n")
    tracker = MlflowTracker(uri, cwd=tmp_path)
    storage = "postgresql://optuna:pw-123@db:5432/optuna"
    run_id = tracker.start_study(info(study, space_file=str(space), storage=storage))
    assert run_id == tracker.parent_run_id
    tracker.log_trial(
        log(
            ok_result(0, server_log),
            {"chunked_prefill_size": 8192, "attention_backend": "fa3"},
            baseline=True,
            argv=["sglang", "--api-key", "k-123"],
            env={"HF_TOKEN": SECRET},
        )
    )
    tracker.log_trial(log(crashed_result(1), {"chunked_prefill_size": 16384}, proposed_by="model"))
    tracker.finish(
        StudySummary(
            study=study,
            metric="output_tok_s",
            direction="maximize",
            best_value=1000.0,
            baseline_value=800.0,
            gain_pct=25.0,
            trials=2,
            outcomes={"ok": 1, "crashed": 1},
            causes={"kv_pool_oom": 1},
            best_trial=0,
            best_config={"chunked_prefill_size": 8192},
            gain={
                "pct": 25.0,
                "ci95_pct": [12.5, 38.9],
                "significant": True,
                "launches": {"baseline": 4, "best": 3},
            },
            verdict="gain over the baseline +25.0% (95% CI +12.5% .. +38.9%, 3 vs 4 launches)",
            confirmation={"rounds": 3, "launches": 12, "server_s": 360.0},
        )
    )

    client = MlflowClient(tracking_uri=tracker.uri)
    parent = client.get_run(str(tracker.parent_run_id))
    assert parent.info.run_name == study and parent.info.status == "FINISHED"
    assert parent.data.tags["autotune.study"] == study
    assert parent.data.tags["autotune.simulated"] == "true"
    assert parent.data.tags["autotune.engine"] == "sglang"
    # Study settings apart from the configuration params (which every child shows).
    assert parent.data.params["study.model"] == "moonshotai/Kimi-K2.5"
    assert parent.data.params["study.objective_metric"] == "output_tok_s"
    assert parent.data.params["study.storage"] == "postgresql://optuna:***@db:5432/optuna"
    assert "model" not in parent.data.params
    assert parent.data.tags["autotune.version.engine"] == "0.5.9"
    assert parent.data.tags["autotune.version.mlflow"]
    assert parent.data.metrics["best_output_tok_s"] == 1000.0
    assert parent.data.metrics["baseline_output_tok_s"] == 800.0
    assert parent.data.metrics["gain_pct"] == 25.0
    # The gain with its 95% interval over launches, and what confirmation cost.
    assert parent.data.metrics["gain_ci95_lo_pct"] == 12.5
    assert parent.data.metrics["gain_ci95_hi_pct"] == 38.9
    assert parent.data.metrics["gain_significant"] == 1.0
    assert parent.data.metrics["gain_launches_baseline"] == 4.0
    assert parent.data.metrics["confirm_launches"] == 12.0
    assert parent.data.tags["autotune.verdict"].startswith("gain over the baseline +25.0%")
    assert parent.data.metrics["n_cause_kv_pool_oom"] == 1.0
    assert parent.data.tags["autotune.best_trial"] == "0"
    artifacts = [a.path for a in client.list_artifacts(parent.info.run_id)]
    assert "space.yaml" in artifacts
    # The whole summary, the one the report and `status --json` read.
    summary = json.loads(_artifact_text(client, parent.info.run_id, "summary.json", tmp_path / "s"))
    assert summary["best_value"] == 1000.0 and summary["gain"]["ci95_pct"] == [12.5, 38.9]
    # The UI opens the experiment on its runs, not on the GenAI traces page.
    exp = client.get_experiment(str(tracker.experiment_id))
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    assert tracker.runs_url().split(" ")[0].endswith(f"#/experiments/{exp.experiment_id}/runs")

    ok, crashed = _children(client, tracker)
    assert ok.info.run_name == "baseline · trial 0 · ok · 1,000 output_tok_s"
    assert crashed.info.run_name == "trial 1 · crashed: kv_pool_oom"
    assert ok.info.status == "FINISHED" and crashed.info.status == "FAILED"
    # Real start and end: the trial ran 55 s.
    assert ok.info.start_time == int(LAUNCHED_AT * 1000)
    assert ok.info.end_time - ok.info.start_time == 55_000
    assert ok.data.params == {"chunked_prefill_size": "8192", "attention_backend": "fa3"}
    # A parameter the configuration leaves unset shows as the engine's default.
    assert crashed.data.params == {
        "chunked_prefill_size": "16384",
        "attention_backend": "(default)",
    }
    assert ok.data.metrics["output_tok_s"] == 1000.0
    assert ok.data.metrics["ttft_p99_ms"] == 20.0
    assert ok.data.metrics["time_launch_to_ready_s"] == 40.0
    assert ok.data.metrics["cleanup_gpu_mem_after_mib"] == 5.0
    assert not [m for m in ok.data.metrics if m.endswith("_at")]  # no epoch instants
    assert ok.data.tags["autotune.outcome"] == "ok"
    assert ok.data.tags["autotune.baseline"] == "true"
    assert ok.data.tags["autotune.trial"] == "0"
    assert ok.data.tags["autotune.simulated"] == "true"
    assert crashed.data.tags["autotune.cause"] == "kv_pool_oom"
    assert crashed.data.tags["autotune.phase"] == "memory_pool"
    # Why it was tried: the kind of proposal that made it (the baseline is no proposal).
    assert crashed.data.tags["autotune.proposed_by"] == "model"
    assert "autotune.proposed_by" not in ok.data.tags
    # Cause, phase, message and the whole hint in the run's description.
    note = crashed.data.tags["mlflow.note.content"]
    assert "kv_pool_oom at memory_pool" in note and "KV cache pool could not" in note
    assert ("lower --mem-fraction " * 60).strip() in note and SECRET not in note
    assert "autotune.hint" not in ok.data.tags

    text = _artifact_text(client, ok.info.run_id, "logs/trial-0.log", tmp_path / "dl")
    assert "ready to roll" in text and "#tokens: 123456" in text
    assert SECRET not in text and "k-123" not in text
    record = json.loads(_artifact_text(client, ok.info.run_id, "trial.json", tmp_path / "dl2"))
    assert record["result"]["number"] == 0
    assert record["argv"] == ["sglang", "--api-key", "***"]
    assert record["env"] == {"HF_TOKEN": "***"}
    crash_record = _artifact_text(client, crashed.info.run_id, "trial.json", tmp_path / "dl3")
    assert SECRET not in crash_record and "Not enough memory" in crash_record


def test_sqlite_store_roundtrip(store_uri: str, tmp_path: Path, server_log: Path) -> None:
    _study_roundtrip(store_uri, tmp_path, server_log, "roundtrip")
    artifacts = Path(store_uri.removeprefix("sqlite:///")).parent / "artifacts"
    assert any(artifacts.rglob("trial-0.log"))


@pytest.mark.slow  # a real `mlflow server` subprocess
def test_mlflow_server_roundtrip(mlflow_server: str, tmp_path: Path, server_log: Path) -> None:
    _study_roundtrip(mlflow_server, tmp_path, server_log, "served")


def test_default_store_is_under_cwd(tmp_path: Path) -> None:
    from autotune.tracking.mlflow import resolve_uri

    uri, artifacts = resolve_uri(None, tmp_path)
    assert uri == f"sqlite:///{tmp_path.resolve() / 'mlflow' / 'mlflow.db'}"
    assert artifacts == (tmp_path.resolve() / "mlflow" / "artifacts").as_uri()
    assert resolve_uri("http://tracking:5000", tmp_path) == ("http://tracking:5000", None)
    assert resolve_uri("sqlite:///rel/x.db", tmp_path)[0] == (
        f"sqlite:///{tmp_path.resolve() / 'rel' / 'x.db'}"
    )


def test_resume_reuses_parent_and_skips_logged_trials(store_uri: str, server_log: Path) -> None:
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

    uri = store_uri
    first = MlflowTracker(uri)
    first.start_study(info("resumed"))
    first.log_trial(log(ok_result(0, server_log), {"x": 1}))
    parent = first.parent_run_id

    # A new process resumes: found by tag without the id, then by the id the driver kept.
    for hint in (None, parent):
        again = MlflowTracker(uri)
        assert again.start_study(info("resumed", run_id=hint)) == parent
        again.log_trial(log(ok_result(0, server_log), {"x": 1}))  # already there
        if hint is None:
            again.log_trial(log(ok_result(1), {"x": 2}))  # new
            again.log_trial(log(ok_result(1, attempt=1), {"x": 2}))  # an infra retry: new
    client = MlflowClient(tracking_uri=again.uri)
    names = sorted(r.info.run_name for r in _children(client, again))
    assert names == [
        "trial 0 · ok · 1,000 output_tok_s",
        "trial 1 · attempt 1 · ok · 1,001 output_tok_s",
        "trial 1 · ok · 1,001 output_tok_s",
    ]
    studies = client.search_runs([str(again.experiment_id)], "tags.`autotune.role` = 'study'")
    assert [r.data.tags["autotune.study"] for r in studies].count("resumed") == 1

    other = MlflowTracker(uri)
    # Another study's id: not reused.
    assert other.start_study(info("other-study", run_id=parent)) != parent


def test_interrupted_child_is_replaced(store_uri: str) -> None:
    from autotune.tracking.mlflow import MlflowTracker

    tracker = MlflowTracker(store_uri)
    tracker.start_study(info("interrupted"))
    # A child created but never completed (the driver died mid-log).
    tracker.client.create_run(
        str(tracker.experiment_id),
        run_name="trial-0",
        tags={
            "mlflow.parentRunId": str(tracker.parent_run_id),
            "autotune.trial": "0",
            "autotune.attempt": "0",
        },
    )
    tracker.log_trial(log(ok_result(0), {"x": 1}))
    runs = _children(tracker.client, tracker)
    assert len(runs) == 1 and runs[0].data.tags["autotune.logged"] == "true"


def test_unreachable_store_is_a_tracking_error(tmp_path: Path) -> None:
    from autotune.tracking.mlflow import MlflowTracker

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(TrackingError, match="MLflow: opening the tracking store failed"):
        MlflowTracker(f"sqlite:///{blocker / 'mlflow.db'}")


def test_server_down_is_a_tracking_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from autotune.tracking.mlflow import MlflowTracker

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tracker = MlflowTracker(f"http://127.0.0.1:{port}")
    with pytest.raises(TrackingError, match="starting study 'demo' failed"):
        tracker.start_study(INFO)


def test_connect_creates_the_store_and_its_experiment(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

    db = tmp_path / "fresh" / "mlflow.db"
    tracker = MlflowTracker(f"sqlite:///{db}")
    tracker.connect()
    assert db.is_file()
    assert MlflowClient(tracking_uri=tracker.uri).get_experiment_by_name("autotune") is not None


def test_a_server_down_at_connect_is_told_once_and_the_study_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autotune.tracking.mlflow import MlflowTracker
    from autotune.tracking.resilient import ResilientTracker

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    told: list[str] = []
    tracker = ResilientTracker(MlflowTracker(f"http://127.0.0.1:{port}"), on_error=told.append)
    tracker.connect()
    assert tracker.start_study(INFO) is None  # not tried again: counted for `autotune sync`
    assert len(told) == 1 and "opening the tracking store failed" in told[0]
    assert tracker.down and tracker.missed == 2


def test_the_runs_line_says_how_to_open_the_ui(
    store_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from autotune.tracking import mlflow as tracking_mlflow
    from autotune.tracking.mlflow import MlflowTracker

    tracker = MlflowTracker(store_uri)
    tracker.start_study(INFO)
    assert tracking_mlflow._has_ui()  # the test extra installs the whole mlflow
    assert f"(after: mlflow ui --backend-store-uri {tracker.uri})" in tracker.runs_url()
    monkeypatch.setattr(tracking_mlflow, "_has_ui", lambda: False)  # mlflow-skinny alone
    assert "(after: pip install mlflow, then mlflow ui" in tracker.runs_url()


def test_make_tracker(store_uri: str) -> None:
    from autotune.tracking.mlflow import MlflowTracker

    assert isinstance(make_tracker(None, enabled=False), NullTracker)
    tracker = make_tracker(store_uri)
    assert isinstance(tracker, MlflowTracker)


def test_no_tracking_does_not_import_mlflow() -> None:
    code = (
        "import sys; from autotune.tracking import make_tracker; "
        "make_tracker(None, enabled=False); assert 'mlflow' not in sys.modules, 'mlflow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_importing_tracking_does_not_import_mlflow() -> None:
    code = (
        "import sys, autotune.tracking, autotune.report, autotune.export, autotune.core.redact; "
        "assert 'mlflow' not in sys.modules, 'mlflow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_quiet_on_stdout(tmp_path: Path) -> None:
    """Logging a study prints nothing on stdout (no banners, no 'View run' lines)."""
    code = (
        "from autotune.tracking.mlflow import MlflowTracker\n"
        "from autotune.core.records import StudyInfo\n"
        "from autotune.core.summary import StudySummary\n"
        "t = MlflowTracker(None)\n"
        "t.start_study(StudyInfo(study='demo', engine='sglang', model='m', metric='x',"
        " direction='maximize'))\n"
        "t.finish(StudySummary(study='demo', metric='x', direction='maximize'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert proc.stdout == ""
    assert "INFO" not in proc.stderr
    assert (tmp_path / "mlflow" / "mlflow.db").is_file()


def test_skipped_proposals_and_study_files(store_uri: str, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from autotune.core.records import SkipKind, SkipLog, SkipRecord
    from autotune.tracking.mlflow import MlflowTracker

    tracker = MlflowTracker(store_uri)
    tracker.start_study(info("skips"))
    skip = SkipRecord(kind=SkipKind.CONSTRAINT, reason="breaks constraint x * y <= 5")
    for _ in range(2):  # a resend (autotune sync) keeps it once
        tracker.log_skip(SkipLog(study="skips", number=3, config={"x": 2}, skip=skip))
    report = tmp_path / "report.html"
    report.write_text("<html></html>")
    tracker.log_artifacts([report, tmp_path / "missing.png"])
    client = MlflowClient(tracking_uri=tracker.uri)
    (run,) = _children(client, tracker)
    assert run.info.run_name == "trial 3 · skipped: constraint"
    assert run.info.status == "KILLED"
    assert "breaks constraint x * y <= 5" in run.data.tags["mlflow.note.content"]
    assert run.data.tags["autotune.role"] == "skip"
    assert run.data.params["x"] == "2" and run.data.params["attention_backend"] == "(default)"
    files = [a.path for a in client.list_artifacts(str(tracker.parent_run_id))]
    assert "report.html" in files


def test_each_window_is_a_step_of_a_stepped_metric(store_uri: str) -> None:
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

    tracker = MlflowTracker(store_uri)
    tracker.start_study(info("windows"))
    windows = [{"output_tok_s": v, "ttft_p50_ms": 5.0} for v in (900.0, 1000.0, 1100.0)]
    result = ok_result(0).model_copy(update={"windows": windows})
    tracker.log_trial(log(result, {"x": 1}))
    client = MlflowClient(tracking_uri=tracker.uri)
    (run,) = _children(client, tracker)
    history = client.get_metric_history(run.info.run_id, "output_tok_s_by_window")
    assert [(m.step, m.value) for m in sorted(history, key=lambda m: m.step)] == [
        (0, 900.0),
        (1, 1000.0),
        (2, 1100.0),
    ]
    # The aggregate keeps its own name, one value.
    assert len(client.get_metric_history(run.info.run_id, "output_tok_s")) == 1


def test_each_sweep_load_is_a_step_and_each_scenario_is_named(store_uri: str) -> None:
    from mlflow.tracking import MlflowClient

    from autotune.models import ScenarioResult, SweepStep
    from autotune.tracking.mlflow import MlflowTracker

    tracker = MlflowTracker(store_uri)
    tracker.start_study(info("sweeps"))
    steps = [  # in the order a bisection measured them
        SweepStep(load=load, metrics={"output_tok_s": 10.0 * load}, meets_slo=load <= 8)
        for load in (1.0, 32.0, 6.0, 8.0)
    ]
    scenario = ScenarioResult(name="chat", over="concurrency", steps=steps)
    metrics = Metrics(extra={"chat.output_tok_s": 80.0, "chat.max_concurrency_under_slo": 8.0})
    result = ok_result(0).model_copy(update={"scenarios": [scenario], "metrics": metrics})
    tracker.log_trial(log(result, {"x": 1}))
    client = MlflowClient(tracking_uri=tracker.uri)
    (run,) = _children(client, tracker)

    def history(name: str) -> list[tuple[int, float]]:
        got = client.get_metric_history(run.info.run_id, name)
        return [(m.step, m.value) for m in sorted(got, key=lambda m: m.step)]

    # Steps in ascending load, whatever order they were measured in.
    assert history("chat.sweep_load") == [(0, 1.0), (1, 6.0), (2, 8.0), (3, 32.0)]
    assert history("chat.sweep_output_tok_s") == [(0, 10.0), (1, 60.0), (2, 80.0), (3, 320.0)]
    assert history("chat.sweep_meets_slo") == [(0, 1.0), (1, 1.0), (2, 1.0), (3, 0.0)]
    assert run.data.metrics["chat.max_concurrency_under_slo"] == 8.0


def test_a_multi_objective_study_leaves_its_pareto_front_on_the_parent(
    store_uri: str, tmp_path: Path
) -> None:
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

    tracker = MlflowTracker(store_uri)
    tracker.start_study(info("mo"))
    objectives = [
        {"metric": "output_tok_s", "direction": "maximize"},
        {"metric": "ttft_p99_ms", "direction": "minimize"},
    ]
    front = [
        {"trial": 3, "values": {"output_tok_s": 900.0, "ttft_p99_ms": 80.0}, "launches": 1},
        {"trial": 5, "values": {"output_tok_s": 600.0, "ttft_p99_ms": 40.0}, "launches": 2},
    ]
    tracker.finish(
        StudySummary(
            study="mo",
            metric="output_tok_s",
            direction="maximize",
            objectives=objectives,
            pareto=front,
        )
    )
    client = MlflowClient(tracking_uri=tracker.uri)
    parent = client.get_run(tracker.parent_run_id)
    assert parent.data.tags["autotune.pareto_trials"] == "3,5"
    assert parent.data.tags["autotune.objectives"] == "maximize output_tok_s, minimize ttft_p99_ms"
    assert parent.data.metrics["pareto_size"] == 2.0
    stored = json.loads(_artifact_text(client, tracker.parent_run_id, "pareto.json", tmp_path))
    assert stored == {"objectives": objectives, "front": [{**p, "baseline": False} for p in front]}
