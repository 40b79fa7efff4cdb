"""The whole loop against a real engine: `transformers serve` on CPU, a real local Ray instance,
real Optuna storage (SQLite) and a real MLflow store."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import optuna
import pytest
import yaml
from tests.conftest import AUTOTUNE, ROOT

from autotune.node.process import free_port

pytestmark = pytest.mark.slow


def test_three_trial_quickstart_study_end_to_end(tmp_path: Path, cli_env: dict[str, str]) -> None:
    space = yaml.safe_load((ROOT / "search_spaces" / "quickstart.yaml").read_text())
    space["workload"].update(num_requests=16, concurrency=8)
    space_file = tmp_path / "quick.yaml"
    space_file.write_text(yaml.safe_dump(space))
    mlflow_db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{mlflow_db}"
    cmd = AUTOTUNE + [
        "start",
        "--space",
        str(space_file),
        "--study",
        "e2e",
        "--n-trials",
        "3",
        "--executor",
        "ray",
        "--mlflow-uri",
        uri,
        "--study-root",
        str(tmp_path / "studies"),
        "--seed",
        "7",
        # Three trials in all: one baseline launch, no confirmation rounds (the noise handling
        # is covered by tests/e2e/test_noise_e2e.py on the stand-in).
        "--baseline-launches",
        "1",
        "--no-confirm",
    ]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=cli_env, capture_output=True, text=True, timeout=480
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "best" in proc.stdout and "launch" in proc.stdout

    storage = f"sqlite:///{tmp_path / 'studies' / 'e2e' / 'study.db'}"
    study = optuna.load_study(study_name="e2e", storage=storage)
    trials = study.get_trials()
    launched = [t for t in trials if t.user_attrs.get("outcome") in {"ok", "crashed", "timeout"}]
    assert len(launched) == 3
    assert trials[0].user_attrs.get("baseline") is True
    assert trials[0].user_attrs["config"] == {
        "continuous_batching": False,
        "dtype": "float32",
        "attn_implementation": "sdpa",
    }
    ok = [t for t in launched if t.user_attrs["outcome"] == "ok"]
    assert ok, [t.user_attrs.get("message") for t in launched]
    for t in ok:
        assert t.value is not None and t.value > 0
        # Every measurement window (three by default) sends the workload's 16 requests; the
        # trial's metrics sum the counts over its windows.
        windows = t.user_attrs["windows"]
        assert len(windows) == 3
        assert t.user_attrs["metrics"]["completed"] == 16 * len(windows)
        assert Path(t.user_attrs["log_path"]).is_file()

    # MLflow: one parent run for the study, one child per launched trial.
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exps = client.search_experiments()
    runs = [r for e in exps for r in client.search_runs([e.experiment_id])]
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1
    # A trial the pruner stopped was launched too, but does not count against --n-trials.
    pruned = [t for t in trials if t.user_attrs.get("outcome") == "pruned"]
    assert len(children) == len(launched) + len(pruned)
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parents[0].info.run_id}
    assert all("autotune.outcome" in c.data.tags for c in children)

    # status --json and export agree with the storage.
    status = subprocess.run(
        AUTOTUNE
        + ["status", "--study", "e2e", "--study-root", str(tmp_path / "studies"), "--json"],
        cwd=tmp_path,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    # One launch each cannot beat the baseline beyond noise: the answer is the baseline.
    assert shown["best"] == shown["summary"]["best_trial"] == 0
    assert shown["summary"]["gain"] is None or not shown["summary"]["gain"]["significant"]

    port = free_port()
    exported = subprocess.run(
        AUTOTUNE
        + [
            "export",
            "--study",
            "e2e",
            "--study-root",
            str(tmp_path / "studies"),
            "--format",
            "sh",
            "--port",
            str(port),
        ],
        cwd=tmp_path,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert exported.returncode == 0, exported.stderr
    script = tmp_path / "best.sh"
    script.write_text(exported.stdout)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0

    # The exported command starts the same server.
    server = subprocess.Popen(
        ["bash", str(script)],
        cwd=tmp_path,
        env=cli_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        healthy = False
        while time.monotonic() < deadline and server.poll() is None:
            try:
                healthy = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                healthy = False
            if healthy:
                break
            time.sleep(0.5)
        assert healthy, "the exported command did not start a healthy server"
    finally:
        import os
        import signal

        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
