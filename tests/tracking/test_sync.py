"""The tracking server goes down mid-study: the study goes on, and ``autotune sync`` sends
what MLflow missed. A real ``mlflow server`` process is killed and restarted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import optuna
import pytest
from tests.study.study_helpers import toy_space

from autotune.node.process import free_port

SCRIPT = Path(sys.executable).with_name("autotune")
pytestmark = pytest.mark.slow  # two mlflow server boots and a study: about a minute


def _runs(url: str) -> list[object]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=url)
    exp = client.get_experiment_by_name("autotune")
    if exp is None:
        return []
    return list(client.search_runs([exp.experiment_id], max_results=1000))


def test_server_killed_mid_study_then_sync(
    tmp_path: Path, start_mlflow: Callable[[Path, int], AbstractContextManager[str]]
) -> None:
    from mlflow.tracking import MlflowClient

    root = tmp_path / "mlflow"
    root.mkdir()
    port = free_port()
    space = toy_space(tmp_path / "toy.yaml", trials=4)
    env = {**os.environ, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
    with start_mlflow(root, port) as url:
        study = subprocess.Popen(
            [
                str(SCRIPT),
                "start",
                "--space",
                str(space),
                "--executor",
                "local",
                "--mlflow-uri",
                url,
                "--seed",
                "3",
                "-q",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 180
        while not [r for r in _runs(url) if r.data.tags.get("autotune.role") == "trial"]:
            assert study.poll() is None, study.communicate()
            assert time.monotonic() < deadline, "no trial reached MLflow"
            time.sleep(0.5)
    # The server is gone (killed) while the study still has trials to run.
    out, err = study.communicate(timeout=600)
    assert study.returncode == 0, err
    assert "the study goes on" in err and "autotune sync --study toy" in err
    assert "pending" in out and "Traceback" not in err
    stored = optuna.load_study(
        study_name="toy", storage=f"sqlite:///{tmp_path / 'studies' / 'toy' / 'study.db'}"
    )
    numbers = sorted(t.number for t in stored.get_trials(deepcopy=False))
    any_ok = any(t.user_attrs.get("outcome") == "ok" for t in stored.trials)
    assert (
        len(
            [
                t
                for t in stored.trials
                if t.user_attrs.get("outcome") in ("ok", "crashed", "timeout", "slo_violated")
            ]
        )
        == 4
    )  # nothing lost

    # The server is back (slow on a busy machine: a generous timeout for the catch-up).
    env = {**env, "MLFLOW_HTTP_REQUEST_TIMEOUT": "120", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2"}
    with start_mlflow(root, port) as url:
        command = [str(SCRIPT), "sync", "--study", "toy", "--mlflow-uri", url]
        run = {"cwd": tmp_path, "env": env, "capture_output": True, "text": True, "timeout": 300}
        sync = subprocess.run(command, **run)
        assert sync.returncode == 0, sync.stderr
        assert "#/experiments/" in sync.stdout
        runs = _runs(url)
        children = [r for r in runs if r.data.tags.get("autotune.role") in ("trial", "skip")]
        logged = sorted(int(r.data.tags["autotune.trial"]) for r in children)
        assert logged == numbers  # every proposal, each once
        parent = next(r for r in runs if r.data.tags.get("autotune.role") == "study")
        assert parent.info.status == "FINISHED"
        files = {a.path for a in MlflowClient(url).list_artifacts(parent.info.run_id)}
        assert {"report.html", "optimization_history.png", "toy.yaml"} <= files or (
            {"report.html", "toy.yaml"} <= files and not any_ok
        )
        assert ("best.sh" in files) == any_ok  # the best launch script, when there is a best
        # A second sync sends nothing twice.
        again = subprocess.run(command, **run)
        assert again.returncode == 0, again.stderr
        assert len(
            [r for r in _runs(url) if r.data.tags.get("autotune.role") in ("trial", "skip")]
        ) == len(children)


def test_a_resend_keeps_each_scenario_and_its_sweep() -> None:
    from autotune.core.records import TrialRecord
    from autotune.models import Outcome
    from autotune.study.sync import _result

    scenario = {
        "name": "chat",
        "metrics": {"max_rate_under_slo": 2.0},
        "over": "rate",
        "steps": [{"load": 2.0, "metrics": {"output_tok_s": 10.0}, "meets_slo": True}],
    }
    record = TrialRecord(
        number=3,
        state="COMPLETE",
        outcome=Outcome.OK,
        metrics={"chat.max_rate_under_slo": 2.0},
        scenarios=[scenario, {"name": "old", "steps": "not a list"}],
    )
    result = _result("s", record)
    (only,) = result.scenarios  # the unreadable one is dropped, the rest kept
    assert only.name == "chat" and only.steps[0].load == 2.0 and only.steps[0].meets_slo
