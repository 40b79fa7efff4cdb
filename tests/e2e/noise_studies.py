"""Studies with launch noise on the stand-in SGLang server, through the whole CLI.

``run_study`` is one ``autotune start --simulate`` (a subprocess: real Optuna SQLite
storage, the local executor) on two SGLang flags, with the stand-in's launch-to-launch
noise; ``flags_ignored`` makes every configuration perform like the default (a claimed gain
is then a false claim). ``tests/e2e/test_noise_e2e.py`` runs one seed of each;
``bench/noise_claims.py`` runs many and counts the claims.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

AUTOTUNE = [sys.executable, "-m", "autotune.cli"]
BASELINE = {"max_running_requests": 2, "cuda_graph_max_bs": 512}
SPACE: dict[str, Any] = {
    "name": "noise",
    "engine": {"name": "sglang", "version": "0.5.9", "gpus": 8},
    "model": "/models/Kimi-K2.5-INT4",
    "fixed": {"args": ["--tp-size", "8", "--trust-remote-code", "--mem-fraction-static", "0.55"]},
    "parameters": [
        {
            "name": "max_running_requests",
            "type": "categorical",
            "choices": [2, 4, 8, 16],
            "flag": "--max-running-requests",
        },
        {
            "name": "cuda_graph_max_bs",
            "type": "categorical",
            "choices": [128, 256, 512],
            "flag": "--cuda-graph-max-bs",
        },
    ],
    "baseline": BASELINE,
    "workload": {
        "concurrency": 16,
        "num_requests": 16,
        "prompt_len": 64,
        "output_len": 32,
        "warmup_requests": 1,
        "windows": 2,
    },
    "budget": {"trials": 5},
}


def run_study(
    workdir: Path,
    env: dict[str, str],
    *,
    flags_ignored: bool,
    seed: int,
    noise: float = 0.08,
    confirm: int = 2,
    rounds: int = 3,
    executor: str = "local",
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """One study in ``workdir``: ``status --json``, ``export --format json``, start's stdout."""
    workdir.mkdir(parents=True, exist_ok=True)
    space_file = workdir / "noise.yaml"
    space_file.write_text(yaml.safe_dump(SPACE, sort_keys=False))
    env = {
        **env,
        "AUTOTUNE_SIM_LAUNCH_NOISE": str(noise),
        "AUTOTUNE_SIM_FLAGS_IGNORED": "1" if flags_ignored else "0",
        "AUTOTUNE_SIM_SEED": str(seed),
        "AUTOTUNE_SIM_LAUNCHES": str(workdir / "launches"),
    }
    start = ["--simulate", "--executor", executor, "--seed", str(seed)]
    start += ["--confirm", str(confirm), "--confirm-rounds", str(rounds)]
    start += ["--ablation-rounds", "0"]  # the claim is measured here, not the ablation after it
    return run_cli_study(workdir, env, space_file, start)


def run_cli_study(
    workdir: Path, env: dict[str, str], space_file: Path, start_args: list[str], timeout: int = 600
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """``autotune start --no-mlflow`` on ``space_file`` with ``start_args`` in ``workdir``:
    ``status --json``, ``export --format json`` and start's stdout."""
    where = ["--study", "s", "--study-root", str(workdir / "studies")]
    start = subprocess.run(
        [*AUTOTUNE, "start", "--space", str(space_file), *where, "--no-mlflow", *start_args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if start.returncode != 0:
        raise RuntimeError(start.stdout[-3000:] + start.stderr[-3000:])

    def cli(*args: str) -> dict[str, Any]:
        run = subprocess.run(
            [*AUTOTUNE, *args, *where],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        result: dict[str, Any] = json.loads(run.stdout)
        return result

    return cli("status", "--json"), cli("export", "--format", "json"), start.stdout
