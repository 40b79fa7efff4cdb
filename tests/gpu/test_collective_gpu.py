"""The collective engine on real GPUs with real NCCL (one process per GPU of this machine).

On one GPU the all-reduce moves no data between GPUs, so the figures only prove the path
(torchrun, NCCL, job metrics, classification); tuning needs a node with 2 or more GPUs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu
CLI = [sys.executable, "-m", "autotune.cli"]


def test_bad_nccl_token_is_classified_nccl_error_from_the_real_log(
    tmp_path: Path, gpus: int
) -> None:
    if gpus < 2:
        # Seen on one H200 (NCCL 2.28.9): a 1-rank communicator never parses NCCL_PROTO, so a
        # bad token runs fine there; the failure needs a real multi-GPU communicator.
        pytest.skip("NCCL parses NCCL_PROTO/NCCL_ALGO only with 2 or more ranks; needs 2+ GPUs")
    out = Path(os.environ.get("AUTOTUNE_GPU_OUT", tmp_path))
    log = out / "nccl-bad-token.log"
    env = {**os.environ, "NCCL_PROTO": "LL129", "NCCL_NVLS_ENABLE": "0", "NCCL_DEBUG": "WARN"}
    with log.open("w") as fh:
        rc = subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc-per-node",
                str(gpus),
                "-m",
                "autotune.engines.collective_bench",
                "--sizes",
                "42K",
                "--iters",
                "5",
                "--warmup",
                "1",
            ],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            timeout=300,
        ).returncode
    diag = subprocess.run(
        CLI + ["diagnose", str(log), "--engine", "collective", "--json", "--exit-code", str(rc)],
        capture_output=True,
        text=True,
    )
    assert diag.returncode == 0, diag.stderr
    result = json.loads(diag.stdout)
    (out / "nccl-bad-token-diagnosis.json").write_text(json.dumps({"rc": rc, **result}, indent=2))
    assert rc != 0
    assert result["cause"] == "nccl_error", result


def test_collective_study_runs_on_the_gpus_with_nccl(tmp_path: Path, gpus: int) -> None:
    out = Path(os.environ.get("AUTOTUNE_GPU_OUT", tmp_path))
    space = yaml.safe_load((ROOT / "search_spaces" / "collective.yaml").read_text())
    space["engine"]["gpus"] = gpus
    space["engine"]["options"].update(sizes="42K", iters=200, warmup=20)
    space_file = tmp_path / "collective.yaml"
    space_file.write_text(yaml.safe_dump(space))
    n = int(os.environ.get("AUTOTUNE_GPU_COLLECTIVE_TRIALS", "6"))
    env = {**os.environ, "AUTOTUNE_NODE_STATE": str(tmp_path / "node-state")}
    proc = subprocess.run(
        CLI
        + [
            "start",
            "--space",
            str(space_file),
            "--study",
            "nccl",
            "--n-trials",
            str(n),
            "--executor",
            "local",
            "--no-mlflow",
            "--study-root",
            str(tmp_path / "s"),
            "--seed",
            "0",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    sys.stdout.write(proc.stdout[-8000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    study = optuna.load_study(
        study_name="nccl", storage=f"sqlite:///{tmp_path / 's/nccl/study.db'}"
    )
    rows = [
        {
            "number": t.number,
            "outcome": t.user_attrs.get("outcome"),
            "value": t.value,
            "config": t.user_attrs.get("config"),
            "metrics": t.user_attrs.get("metrics"),
            "cause": t.user_attrs.get("cause"),
            "message": t.user_attrs.get("message"),
        }
        for t in study.get_trials()
    ]
    (out / "nccl-trials.json").write_text(json.dumps(rows, indent=2, default=str))
    ok = [r for r in rows if r["outcome"] == "ok"]
    assert ok and all(r["metrics"]["latency_p50_us"] > 0 for r in ok)
    assert all(r["metrics"]["world_size"] == gpus for r in ok)
