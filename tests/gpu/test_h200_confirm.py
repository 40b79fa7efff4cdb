"""A study with confirmation on an H200: `transformers serve`, real launch noise, real rounds.

The baseline (`transformers serve` defaults) is launched three times, the search runs over
`tests/gpu/h200-confirm.yaml`, and the top two candidates are relaunched interleaved with the
baseline until the ranking settles.
What it found (rounds, medians, the gain with its 95% interval, the cost) is written to
$AUTOTUNE_GPU_OUT for docs/gpu-results.md. Run with tests/gpu/run.sh on the H200:

    bash tests/gpu/run.sh tests/gpu/test_h200_confirm.py
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


def _cli(
    args: list[str], env: dict[str, str], cwd: Path, console: Path | None = None
) -> subprocess.CompletedProcess[str]:
    if console is None:
        proc = subprocess.run(
            CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1500
        )
    else:  # written as it runs: a run cut short by a time limit still leaves its console
        with console.open("w") as f:
            code = subprocess.run(
                CLI + args, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=1500
            ).returncode
        proc = subprocess.CompletedProcess(CLI + args, code, console.read_text(), "")
    sys.stdout.write(proc.stdout[-20000:])
    sys.stderr.write(proc.stderr[-5000:])
    return proc


def test_h200_study_with_confirmation_reports_a_gain_with_its_interval(tmp_path: Path) -> None:
    out = Path(os.environ.get("AUTOTUNE_GPU_OUT", tmp_path))
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "AUTOTUNE_NODE_STATE": str(tmp_path / "node-state"),
    }
    where = ["--study", "h200-confirm", "--study-root", str(tmp_path / "studies")]
    # 6: the baseline once and 5 proposals (its two extra launches and the rounds come on top)
    n = os.environ.get("AUTOTUNE_GPU_TRIALS", "6")
    start = _cli(
        [
            "start",
            "--space",
            str(ROOT / "tests" / "gpu" / "h200-confirm.yaml"),
            *where,
            "--executor",
            "local",
            "--no-mlflow",
            "--seed",
            "5",
            "--n-trials",
            n,
            "--baseline-launches",
            "3",
            "--confirm",
            "2",
            "--confirm-rounds",
            "4",
            *os.environ.get("AUTOTUNE_GPU_START_ARGS", "").split(),
        ],
        env,
        tmp_path,
        out / "h200-confirm-console.txt",
    )
    assert start.returncode == 0
    status = _cli(["status", *where, "--json"], env, tmp_path)
    assert status.returncode == 0
    (out / "h200-confirm-status.json").write_text(status.stdout)
    exported = _cli(["export", *where, "--format", "sh"], env, tmp_path)
    assert exported.returncode == 0
    (out / "h200-confirm-export.sh").write_text(exported.stdout)

    summary = json.loads(status.stdout)["summary"]
    gain = summary["gain"]
    assert gain is not None and set(gain) >= {"pct", "ci95_pct", "significant", "launches"}
    assert summary["confirmed"] and summary["confirmation"]["launches"] >= 4
    assert gain["launches"]["baseline"] >= 3 and gain["launches"]["best"] >= 3
    lo, hi = gain["ci95_pct"]
    assert lo is not None and hi is not None and lo <= gain["pct"] <= hi
    # Continuous batching on the H200 is several times faster than the defaults (see
    # test_h200.py): a real gain that must survive confirmation, interval above zero.
    assert gain["significant"] and lo > 0, summary["verdict"]
    assert "95% CI" in exported.stdout
