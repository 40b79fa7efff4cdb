"""The GPU half for real: `transformers serve` on an H200, real GPU crashes, real memory release.

Run with tests/gpu/run.sh on the H200 test machine; docs/gpu-results.md holds what it measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import optuna
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu
CLI = [sys.executable, "-m", "autotune.cli"]

# The two configurations that fail for real on the GPU, queued so a short study meets both.
FAILING = [
    {"continuous_batching": False, "dtype": "bfloat16", "attn_implementation": "nonexistent_attn"},
    {
        "continuous_batching": True,
        "cb_use_cuda_graph": False,
        "cb_num_blocks": 100000000,
        "dtype": "bfloat16",
        "attn_implementation": "sdpa",
    },
]


def _start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    sys.stdout.write(proc.stdout[-20000:])
    sys.stderr.write(proc.stderr[-5000:])
    return proc


def test_h200_study_finds_a_far_faster_configuration_and_classifies_real_crashes(
    tmp_path: Path,
) -> None:
    out = Path(os.environ.get("AUTOTUNE_GPU_OUT", tmp_path))
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "AUTOTUNE_NODE_STATE": str(tmp_path / "node-state"),
    }
    root = tmp_path / "studies"
    common = [
        "--space",
        str(ROOT / "search_spaces" / "h200.yaml"),
        "--study",
        "h200",
        "--study-root",
        str(root),
        "--executor",
        "local",
        "--no-mlflow",
        "--seed",
        "3",
        # One baseline launch, no confirmation: this test is about real crashes and cleanup
        # (tests/gpu/test_h200_confirm.py runs a study with both).
        "--baseline-launches",
        "1",
        "--no-confirm",
    ]
    first = _start(["start", *common, "--n-trials", "1"], env, tmp_path)  # the baseline
    assert first.returncode == 0
    storage = f"sqlite:///{root / 'h200' / 'study.db'}"
    study = optuna.load_study(study_name="h200", storage=storage)
    for config in FAILING:
        study.enqueue_trial(config)
    n = int(os.environ.get("AUTOTUNE_GPU_TRIALS", "12"))
    second = _start(["start", *common, "--n-trials", str(n)], env, tmp_path)
    assert second.returncode == 0

    study = optuna.load_study(study_name="h200", storage=storage)
    trials = study.get_trials()
    records = [
        {
            "number": t.number,
            "outcome": t.user_attrs.get("outcome"),
            "value": t.value,
            "cause": t.user_attrs.get("cause"),
            "config": t.user_attrs.get("config"),
            "message": t.user_attrs.get("message"),
            "skipped": t.user_attrs.get("skipped"),
            "timings": t.user_attrs.get("timings"),
            "cleanup": t.user_attrs.get("cleanup"),
            "metrics": t.user_attrs.get("metrics"),
        }
        for t in trials
    ]
    (out / "h200-trials.json").write_text(json.dumps(records, indent=2, default=str))
    for log in (root / "h200" / "logs").glob("*.log"):
        (out / "logs").mkdir(exist_ok=True)
        (out / "logs" / log.name).write_text(log.read_text(errors="replace")[-200000:])

    launched = [r for r in records if r["outcome"] in ("ok", "crashed", "timeout")]
    # A configuration proposed again is relaunched (a new sample), at most 3 times in all.
    per_config = Counter(json.dumps(r["config"], sort_keys=True) for r in launched)
    assert max(per_config.values()) <= 3, per_config

    attn = [r for r in launched if r["config"].get("attn_implementation") == "nonexistent_attn"]
    assert len(attn) == 1 and attn[0]["outcome"] == "crashed"
    assert attn[0]["cause"] == "invalid_argument"
    cache = [r for r in launched if r["config"].get("cb_num_blocks") == 100000000]
    assert len(cache) == 1 and cache[0]["outcome"] == "crashed"
    assert cache[0]["cause"] in ("kv_pool_oom", "cuda_oom")

    # Every launched trial left the GPU as it found it, and no process behind.
    for r in launched:
        c = r["cleanup"]
        assert c["processes_left"] == 0 and c["port_free"], r
        assert c["gpu_clean"] is True, r
        assert c["gpu_mem_before_mib"] and c["gpu_mem_after_mib"], r

    base = next(r for r in records if r["number"] == 0)
    best = max((r for r in launched if r["outcome"] == "ok"), key=lambda r: r["value"])
    assert base["outcome"] == "ok"
    assert best["value"] >= 5 * base["value"], (best, base)
