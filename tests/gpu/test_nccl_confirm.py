"""NCCL tuning on 2+ GPUs with confirmation: a gain beyond noise, or NCCL's defaults kept.

The study searches NCCL's channel, buffer, thread, protocol and algorithm settings and the
all-reduce implementation (search_spaces/collective.yaml) for 42 KB bf16 all-reduce latency.
NCCL's defaults are launched several times first (launch-to-launch noise), and the top
candidates are relaunched interleaved with them before a winner is named. Both endings are
honest: a confirmed gain with its interval, or "not beaten beyond noise" with the defaults
exported. What it found is written to $AUTOTUNE_GPU_OUT for docs/gpu-results.md:

    bash tests/gpu/run.sh tests/gpu/test_nccl_confirm.py     # on a machine with 2+ GPUs
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu
CLI = [sys.executable, "-m", "autotune.cli"]


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, text=True)
    sys.stdout.write(proc.stdout[-20000:])
    sys.stderr.write(proc.stderr[-5000:])
    return proc


def test_nccl_study_with_confirmation_names_a_confirmed_winner_or_keeps_the_defaults(
    tmp_path: Path, gpus: int
) -> None:
    if gpus < 2:
        pytest.skip("an all-reduce between GPUs needs 2 or more of them")
    out = Path(os.environ.get("AUTOTUNE_GPU_OUT", tmp_path))
    space = yaml_space(tmp_path, gpus)
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "AUTOTUNE_NODE_STATE": str(tmp_path / "node-state"),
        # NVLink multicast stays off in every launch (the engine enforces it too).
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }
    where = ["--study", "nccl-confirm", "--study-root", str(tmp_path / "studies")]
    start = _cli(
        [
            "start",
            "--space",
            str(space),
            *where,
            "--executor",
            "local",
            "--no-mlflow",
            "--seed",
            "7",
            "--n-trials",
            os.environ.get("AUTOTUNE_GPU_TRIALS", "16"),
            "--baseline-launches",
            "3",
            "--confirm",
            "3",
            "--confirm-rounds",
            os.environ.get("AUTOTUNE_GPU_ROUNDS", "4"),
        ],
        env,
        tmp_path,
    )
    (out / "nccl-confirm-console.txt").write_text(start.stdout + start.stderr[-5000:])
    assert start.returncode == 0
    status = _cli(["status", *where, "--json"], env, tmp_path)
    (out / "nccl-confirm-status.json").write_text(status.stdout)
    assert status.returncode == 0
    exported = _cli(["export", *where, "--format", "env"], env, tmp_path)
    (out / "nccl-confirm-export.txt").write_text(exported.stdout)
    assert exported.returncode == 0

    summary = json.loads(status.stdout)["summary"]
    gain = summary["gain"]
    assert gain is not None and set(gain) >= {"pct", "ci95_pct", "significant", "launches"}
    assert summary["confirmed"] and summary["confirmation"]["launches"] >= 4
    assert gain["launches"]["baseline"] >= 3
    lo, hi = gain["ci95_pct"]
    assert lo is not None and hi is not None and lo <= gain["pct"] <= hi
    if not gain["significant"]:
        # Nothing beat NCCL's defaults beyond noise: the defaults are what is exported.
        assert "NCCL_MAX_NCHANNELS" not in exported.stdout, exported.stdout


def yaml_space(tmp: Path, gpus: int) -> Path:
    """search_spaces/collective.yaml with this machine's GPU count."""
    import yaml

    data = yaml.safe_load((ROOT / "search_spaces" / "collective.yaml").read_text())
    data["engine"]["gpus"] = gpus
    path = tmp / "collective.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
