"""The tracker contract (``tracking/base.py``), run against every registered tracker.

Like Optuna's storage suite: one set of tests, one set-up per back end -- the local MLflow
store (SQLite), a real ``mlflow server`` process, and no tracking. A tracker registered
without a set-up here fails ``test_every_registered_tracker_has_a_setup``.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from autotune.core.records import StudyInfo, TrialLog
from autotune.core.summary import StudySummary
from autotune.errors import TrackingError
from autotune.models import Failure, Metrics, Outcome, Phase, TrialResult
from autotune.tracking import TRACKERS, Tracker, TrackerOptions

SECRET = "hf_" + "Zx9" * 12


@dataclass(frozen=True)
class Setup:
    """How the suite drives one back end.

    ``make(where)``: a tracker on the back end (``where``: a folder for local state).
    ``recorded(tracker, study)``: the ``(trial, attempt)`` pairs the store holds for the
    study, or None for a tracker that records nothing. ``stored_text``: everything the store
    holds about the study, as text. ``broken``: a tracker whose back end is unreachable.
    """

    name: str  # the registry name it exercises
    make: Callable[[Path], Tracker]
    recorded: Callable[[Tracker, str], list[tuple[int, int]]] | None
    stored_text: Callable[[Tracker, str, Path], str]
    broken: Callable[[Path], Tracker] | None


def _mlflow_runs(tracker: Tracker, study: str) -> list[object]:
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

    assert isinstance(tracker, MlflowTracker)
    client = MlflowClient(tracking_uri=tracker.uri)
    return list(
        client.search_runs(
            [str(tracker.experiment_id)], filter_string=f"tags.`autotune.study` = '{study}'"
        )
    )


def _mlflow_recorded(tracker: Tracker, study: str) -> list[tuple[int, int]]:
    pairs = []
    for run in _mlflow_runs(tracker, study):
        tags = run.data.tags  # type: ignore[attr-defined]
        if tags.get("autotune.role") == "trial" and tags.get("autotune.logged") == "true":
            pairs.append((int(tags["autotune.trial"]), int(tags["autotune.attempt"])))
    return sorted(pairs)


def _mlflow_text(tracker: Tracker, study: str, dst: Path) -> str:
    from mlflow.tracking import MlflowClient

    from autotune.tracking.mlflow import MlflowTracker

    assert isinstance(tracker, MlflowTracker)
    client = MlflowClient(tracking_uri=tracker.uri)
    parts = []
    for run in _mlflow_runs(tracker, study):
        data = run.data  # type: ignore[attr-defined]
        parts.append(json.dumps([data.params, data.tags, data.metrics]))
        run_id = run.info.run_id  # type: ignore[attr-defined]
        local = Path(client.download_artifacts(run_id, "", str(dst / run_id)))
        parts += [f.read_text(errors="replace") for f in local.rglob("*") if f.is_file()]
    return "\n".join(parts)


def _unreachable(tmp: Path) -> Tracker:
    from autotune.tracking.mlflow import MlflowTracker

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return MlflowTracker(f"http://127.0.0.1:{port}")


def _blocked_store(tmp: Path) -> Tracker:
    from autotune.tracking.mlflow import MlflowTracker

    (tmp / "file").write_text("not a folder")
    return MlflowTracker(f"sqlite:///{tmp / 'file' / 'mlflow.db'}")


def _none_text(tracker: Tracker, study: str, dst: Path) -> str:
    return ""


# Set-up id -> the registered tracker it exercises.
SETUPS = {"mlflow-local": "mlflow", "mlflow-server": "mlflow", "none": "none"}


# A real `mlflow server` subprocess boots slowly: the slow tier.
@pytest.fixture(
    params=[pytest.param(k, marks=pytest.mark.slow) if k == "mlflow-server" else k for k in SETUPS]
)
def setup(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Setup:
    kind = request.param
    if kind == "mlflow-local":
        uri = f"sqlite:///{tmp_path_factory.getbasetemp() / 'contract-store' / 'mlflow.db'}"
        return Setup(
            "mlflow",
            lambda where: TRACKERS["mlflow"].create(TrackerOptions(uri=uri, cwd=where)),
            _mlflow_recorded,
            _mlflow_text,
            _blocked_store,
        )
    if kind == "mlflow-server":
        url = request.getfixturevalue("mlflow_server")
        return Setup(
            "mlflow",
            lambda where: TRACKERS["mlflow"].create(TrackerOptions(uri=url, cwd=where)),
            _mlflow_recorded,
            _mlflow_text,
            _unreachable,
        )
    return Setup(
        "none", lambda where: TRACKERS["none"].create(TrackerOptions()), None, _none_text, None
    )


def _info(study: str, **fields: object) -> StudyInfo:
    base = StudyInfo(
        study=study, engine="sglang", model="m", metric="output_tok_s", direction="maximize"
    )
    return base.model_copy(update=fields)


def _log(study: str, number: int, attempt: int = 0, **fields: object) -> TrialLog:
    result = TrialResult(
        study=study,
        number=number,
        attempt=attempt,
        outcome=Outcome.OK,
        metrics=Metrics(output_tok_s=100.0 + number),
    )
    return TrialLog(study=study, result=result, config={"bs": number}).model_copy(update=fields)


def _summary(study: str) -> StudySummary:
    return StudySummary(study=study, metric="output_tok_s", direction="maximize", trials=1)


def _name() -> str:
    return f"contract-{uuid.uuid4().hex[:8]}"


def test_every_registered_tracker_has_a_setup() -> None:
    assert set(TRACKERS) == set(SETUPS.values())


def test_resume_reopens_the_same_record(setup: Setup, tmp_path: Path) -> None:
    study = _name()
    first = setup.make(tmp_path)
    run_id = first.start_study(_info(study))
    first.log_trial(_log(study, 0))
    first.finish(_summary(study))
    again = setup.make(tmp_path)  # a new process resumes with the id the ledger kept
    assert again.start_study(_info(study, run_id=run_id)) == run_id
    again.finish(_summary(study))
    if setup.recorded is None:
        assert run_id is None  # nothing to reopen
        return
    assert run_id
    roles = [r.data.tags.get("autotune.role") for r in _mlflow_runs(again, study)]  # type: ignore[attr-defined]
    assert roles.count("study") == 1
    # Another study is never given this one's record.
    other = setup.make(tmp_path).start_study(_info(_name(), run_id=run_id))
    assert other != run_id


def test_connect_first_changes_nothing_the_study_records(setup: Setup, tmp_path: Path) -> None:
    study = _name()
    tracker = setup.make(tmp_path)
    tracker.connect()  # the CLI opens the store while the executor starts
    tracker.connect()  # and again is harmless
    run_id = tracker.start_study(_info(study))
    tracker.log_trial(_log(study, 0))
    tracker.finish(_summary(study))
    if setup.recorded is None:
        assert run_id is None
        return
    assert run_id
    roles = [r.data.tags.get("autotune.role") for r in _mlflow_runs(tracker, study)]  # type: ignore[attr-defined]
    assert sorted(roles) == ["study", "trial"]


def test_a_trial_logged_again_is_recorded_once(setup: Setup, tmp_path: Path) -> None:
    study = _name()
    first = setup.make(tmp_path)
    run_id = first.start_study(_info(study))
    first.log_trial(_log(study, 0))
    again = setup.make(tmp_path)
    again.start_study(_info(study, run_id=run_id))
    again.log_trial(_log(study, 0))  # cut short last time: logged again on resume
    again.log_trial(_log(study, 1))
    again.log_trial(_log(study, 1, attempt=1))  # an infrastructure retry is its own record
    if setup.recorded is not None:
        assert setup.recorded(again, study) == [(0, 0), (1, 0), (1, 1)]


def test_log_before_start_is_a_tracking_error(setup: Setup, tmp_path: Path) -> None:
    with pytest.raises(TrackingError, match="before start_study"):
        setup.make(tmp_path).log_trial(_log(_name(), 0))


def test_secrets_never_reach_the_store(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # a tracker that records nothing writes nothing either
    log_file = tmp_path / "trial-0.log"
    log_file.write_text(f"starting with token {SECRET}\nready\n")
    study = _name()
    tracker = setup.make(work)
    tracker.start_study(_info(study, storage=f"postgresql://u:{SECRET}@db/optuna"))
    failure = Failure(
        cause="unknown",
        phase=Phase.LOAD,
        evidence=[f"bad {SECRET}"],
        message=f"bad {SECRET}",
        hint=f"token {SECRET}",
    )
    result = TrialResult(
        study=study, number=0, outcome=Outcome.CRASHED, failure=failure, log_path=str(log_file)
    )
    tracker.log_trial(
        TrialLog(
            study=study,
            result=result,
            config={"bs": 1},
            argv=["srv", "--api-key", SECRET],
            env={"HF_TOKEN": SECRET},
        )
    )
    tracker.finish(_summary(study))
    text = setup.stored_text(tracker, study, tmp_path / "download")
    assert SECRET not in text
    if setup.recorded is None:
        assert list(work.iterdir()) == []
    else:
        assert "ready" in text  # the log itself was kept, redacted


def test_backend_failure_is_a_tracking_error(
    setup: Setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if setup.broken is None:
        pytest.skip("records nothing: it has no back end to fail")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    with pytest.raises(TrackingError):
        setup.broken(tmp_path).start_study(_info(_name()))


def test_unknown_tracker_is_a_config_error() -> None:
    from autotune.errors import ConfigError

    with pytest.raises(ConfigError, match="known trackers: mlflow, none"):
        TRACKERS.get_class("wandb")


def test_a_skip_logged_again_is_recorded_once(setup: Setup, tmp_path: Path) -> None:
    from autotune.core.records import SkipKind, SkipLog, SkipRecord

    study = _name()
    tracker = setup.make(tmp_path)
    with pytest.raises(TrackingError, match="before start_study"):
        tracker.log_skip(
            SkipLog(
                study=study,
                number=0,
                skip=SkipRecord(kind=SkipKind.REPEAT, reason="same as 1", same_as=1),
            )
        )
    tracker.start_study(_info(study))
    skip = SkipLog(
        study=study,
        number=2,
        config={"bs": 2},
        skip=SkipRecord(kind=SkipKind.CONSTRAINT, reason="breaks bs <= 1"),
    )
    tracker.log_skip(skip)
    tracker.log_skip(skip)  # autotune sync sends it again
    tracker.log_artifacts([tmp_path / "absent.html"])  # a missing file is not an error
    if setup.recorded is not None:
        runs = _mlflow_runs(tracker, study)
        skips = [r for r in runs if r.data.tags.get("autotune.role") == "skip"]  # type: ignore[attr-defined]
        assert len(skips) == 1 and skips[0].info.status == "KILLED"  # type: ignore[attr-defined]
