"""The collective (NCCL all-reduce) space as a real study on the CPU: torchrun + gloo, job mode."""

from __future__ import annotations

import subprocess
from pathlib import Path

import optuna
import pytest
import yaml
from tests.conftest import AUTOTUNE, ROOT

pytestmark = pytest.mark.slow


def test_collective_space_runs_as_job_trials_with_nvls_forced_off(
    tmp_path: Path, cli_env: dict[str, str]
) -> None:
    space = yaml.safe_load((ROOT / "search_spaces" / "collective.yaml").read_text())
    space["engine"].update(gpus=0, options={"nproc": 2, "sizes": "42K", "iters": 20, "warmup": 3})
    # The symmetric-memory all-reduce needs CUDA GPUs: on the CPU only NCCL's (gloo's) runs.
    space["parameters"] = [p for p in space["parameters"] if p["name"] != "allreduce"]
    space["baseline"] = {}
    space_file = tmp_path / "collective.yaml"
    space_file.write_text(yaml.safe_dump(space))
    proc = subprocess.run(
        AUTOTUNE
        + [
            "start",
            "--space",
            str(space_file),
            "--study",
            "ar",
            "--n-trials",
            "3",
            "--executor",
            "local",
            "--no-mlflow",
            "--study-root",
            str(tmp_path / "s"),
            "--seed",
            "0",
            "--baseline-launches",  # 3 launches in all: no baseline repeats or confirmation
            "1",
            "--no-confirm",
        ],
        cwd=tmp_path,
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = optuna.load_study(study_name="ar", storage=f"sqlite:///{tmp_path / 's/ar/study.db'}")
    launched = [t for t in study.get_trials() if t.user_attrs.get("outcome") in ("ok", "crashed")]
    assert len(launched) == 3
    assert all(t.user_attrs["outcome"] == "ok" for t in launched), [
        t.user_attrs.get("message") for t in launched
    ]
    for t in launched:
        metrics = t.user_attrs["metrics"]
        assert (
            metrics["latency_p50_us"] > 0 and metrics["latency_p99_us"] >= metrics["latency_p50_us"]
        )
        assert t.value == metrics["latency_p50_us"]
        env = t.user_attrs["env"]
        assert env["NCCL_NVLS_ENABLE"] == "0"
    assert launched[0].user_attrs.get("baseline") is True
    assert not any(
        k.startswith("NCCL_") and k != "NCCL_NVLS_ENABLE" for k in launched[0].user_attrs["env"]
    )
