"""Each real engine's smallest study on the GPU: a baseline, one real crash, the GPU idle after.

Run on the GPU machine with the engine's offline part installed (tests/gpu/README.md):

    bash tests/gpu/run.sh tests/gpu/test_engines_gpu.py        # carry .carry/node + the engine

An engine whose part is not installed there is skipped with the reason. The study is the real
loop: `autotune start` with the engine's space (search_spaces/<engine>-gpu.yaml), a local Ray
head, the engine's own server, a configuration that fails for real queued after the baseline.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu
CLI = [sys.executable, "-m", "autotune.cli"]

# engine -> a setting its baseline leaves unset whose value the engine's log states (the
# search's screen starts from it: Engine.resolved_flags, autotune.search.DEFAULTS)
CHOSEN = {"sglang": "mem_fraction_static", "vllm": "max_num_batched_tokens"}

# engine -> (its module, a configuration that fails for real on the offline install, the cause)
CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "sglang": (
        "sglang",
        {"cuda_graph": True, "attention_backend": "triton", "speculative": "none",
         "mem_fraction_static": 0.1},
        "kv_pool_oom",
    ),
    "vllm": (
        "vllm",
        {"gpu_memory_utilization": 0.1, "enable_chunked_prefill": True, "enforce_eager": False,
         "attention_backend": "FLASH_ATTN", "speculative": "none"},
        "kv_pool_oom",
    ),
}  # fmt: skip


def engine_env(engine: str) -> dict[str, str]:
    """This process's environment with the engine's offline part alone on the path (and node's):
    SGLang's and vLLM's parts each bring their own dependencies at versions that differ (vLLM
    importing SGLang's ``openai`` failed at launch), so one machine with both unpacked runs each
    engine with its own. Unchanged where the part was not carried (an engine installed there)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not (ROOT / ".carry" / engine / "manifest.json").exists():
        return env
    exports = subprocess.run(
        [sys.executable, "tools/offline/install.py", "--env", "node", engine],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": ""}, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for line in exports.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env["PYTHONPATH"]])
    return env


@pytest.mark.parametrize("engine", sorted(CASES))
def test_the_smallest_real_study_runs_and_names_a_real_crash(engine: str, tmp_path: Path) -> None:
    module, failing, cause = CASES[engine]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{engine} is not installed here (tools/offline: build and carry its part)")
    out = Path(os.environ.get("AUTOTUNE_GPU_OUT", tmp_path))
    root = tmp_path / "studies"
    name = f"{engine}-gpu"
    common = [
        "start", "--space", str(ROOT / "search_spaces" / f"{name}.yaml"), "--study", name,
        "--study-root", str(root), "--executor", "ray", "--no-mlflow", "--seed", "1",
        "--baseline-launches", "1", "--no-confirm",
    ]  # fmt: skip
    env = {**engine_env(engine), "AUTOTUNE_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([*CLI, *common, "--n-trials", "1"], env=env, capture_output=True,
                           text=True, timeout=900, check=False)  # fmt: skip
    (out / f"{name}-first.log").write_text(first.stdout + first.stderr)
    assert first.returncode == 0, first.stderr[-3000:]
    storage = f"sqlite:///{root / name / 'study.db'}"
    optuna.load_study(study_name=name, storage=storage).enqueue_trial(failing)
    second = subprocess.run([*CLI, *common, "--n-trials", "2"], env=env, capture_output=True,
                            text=True, timeout=900, check=False)  # fmt: skip
    (out / f"{name}-second.log").write_text(second.stdout + second.stderr)
    assert second.returncode == 0, second.stderr[-3000:]

    trials = optuna.load_study(study_name=name, storage=storage).trials
    outcomes = [t.user_attrs.get("outcome") for t in trials]
    assert outcomes[:2] == ["ok", "crashed"], outcomes
    assert trials[0].user_attrs["metrics"]["output_tok_s"] > 0
    assert CHOSEN[engine] in trials[0].user_attrs.get("search:defaults", {}), trials[0].user_attrs
    assert trials[1].user_attrs["cause"] == cause, trials[1].user_attrs.get("evidence")
    for t in trials:  # the GPU back to idle after every trial, crashes included
        assert t.user_attrs["cleanup"]["gpu_clean"], (t.number, t.user_attrs["cleanup"])
