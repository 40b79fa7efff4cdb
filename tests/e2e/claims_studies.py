"""Studies of a user's own server (the ``command`` engine) through the whole CLI.

``tests/study/servers/scenario.py`` is a small stdlib streaming server; ``run_study`` runs
``autotune start`` with every default but the ablation on it: ``ignore_flags`` makes
``--level`` change nothing (a claimed gain is a false claim), else ``--level 3`` streams 3x
faster than the baseline's ``--level 1``, under the same launch noise.
``tests/e2e/test_claims_command.py`` runs one seed of each; ``bench/claims_command.py`` runs
many.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from tests.e2e.noise_studies import run_cli_study

SERVER = Path(__file__).resolve().parents[1] / "study" / "servers" / "scenario.py"
RATE = 400.0  # tokens per second of one stream at --level 1


def space(workdir: Path, *, ignore_flags: bool, seed: int, noise: float = 0.08) -> Path:
    """The space file of a ``null`` or ``real`` study in ``workdir``."""
    command = [sys.executable, str(SERVER), "--port", "{port}", "--rate", str(RATE)]
    command += ["--noise", str(noise), "--seed", str(seed), "--launches", str(workdir / "n")]
    if ignore_flags:
        command.append("--ignore-flags")
    data: dict[str, Any] = {
        "name": "claims",
        "engine": {"name": "command", "command": command, "startup_timeout_s": 60},
        "model": "scenario",
        "parameters": [
            {"name": "level", "type": "categorical", "choices": [1, 2, 3], "flag": "--level"}
        ],
        "baseline": {"level": 1},
        "workload": {
            "concurrency": 4,
            "num_requests": 8,
            "prompt_len": 8,
            "output_len": 16,
            "warmup_requests": 1,
        },
        "budget": {"trials": 6},
    }
    path = workdir / "claims.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_study(
    workdir: Path, env: dict[str, str], *, ignore_flags: bool, seed: int, noise: float = 0.08
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """One study with ``start``'s defaults: ``status --json``, ``export --format json``, its
    output."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = space(workdir, ignore_flags=ignore_flags, seed=seed, noise=noise)
    # The claim is measured here: no ablation after it (it would only add launches).
    start = ["--executor", "local", "--seed", str(seed), "-q", "--ablation-rounds", "0"]
    return run_cli_study(workdir, env, path, start, timeout=900)
