"""The Kimi-K2.5 campaign (search_spaces/verify.yaml) end to end against the stand-in server.

`autotune start --simulate` (the CLI, in a subprocess) with the local executor, a real Optuna
SQLite study and a real MLflow SQLite store. The campaign's experiments are enqueued on the
study (Optuna's enqueue API) so each of its crashes is exercised in a short test; the sampler
then proposes more. Checked: a configuration faster than the baseline is found, every crash is
classified by its right cause (and blames the right value), custom allreduce runs but slowly,
and no known dead end is launched twice.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from tests.conftest import AUTOTUNE, ROOT

from autotune.space.load import load
from autotune.study.deadends import DeadEnd, DeadEnds

pytestmark = pytest.mark.slow

LAUNCHED = {"ok", "crashed", "timeout", "slo_violated"}
BASE = {
    "cuda_graph_max_bs": 512,
    "mem_fraction_static": 0.55,
    "allreduce": "nccl",
    "moe_a2a_backend": "none",
    "speculative": False,
}
STARVED_NCCL = {
    "NCCL_MIN_NCHANNELS": 1,
    "NCCL_MAX_NCHANNELS": 2,
    "NCCL_BUFFSIZE": 131072,
    "NCCL_NTHREADS": 64,
}
# The campaign, one experiment at a time, as it was run by hand (trial numbers 1..7).
EXPERIMENTS: list[dict[str, Any]] = [
    {**BASE, "cuda_graph_max_bs": 128},  # 1 the win (+9% in the article)
    {**BASE, "cuda_graph_max_bs": 256, **STARVED_NCCL},  # 2 kv_pool_oom
    {**BASE, "allreduce": "flashinfer_fusion"},  # 3 no SM120 kernel
    {**BASE, "allreduce": "custom"},  # 4 runs, 38 tok/s
    {**BASE, "allreduce": "symm_mem"},  # 5 KeyError: 12
    {**BASE, "moe_a2a_backend": "flashinfer"},  # 6 assertion, then OOM
    {
        **BASE,
        "speculative": True,
        "spec_steps": 2,
        "spec_topk": 1,
        "spec_draft_tokens": 3,
    },  # 7 EAGLE-3: slower (60 tok/s)
]
# What a person might try next; every one is a known dead end by then (trial numbers 8..11).
PROBES: list[dict[str, Any]] = [
    {**BASE, "cuda_graph_max_bs": 128, "allreduce": "flashinfer_fusion"},  # blamed value
    {**BASE, "cuda_graph_max_bs": 256, **STARVED_NCCL},  # exact repeat
    {**BASE, **STARVED_NCCL},  # bigger graphs, same starved NCCL: dominated
    {**BASE, "mem_fraction_static": 0.6, "moe_a2a_backend": "flashinfer"},  # blamed value
]
N_TRIALS = 12  # baseline + 7 experiments + 4 proposed by TPE


def _start(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        AUTOTUNE + ["start", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def test_verify_campaign_simulated_end_to_end(tmp_path: Path, cli_env: dict[str, str]) -> None:
    space = yaml.safe_load((ROOT / "search_spaces" / "verify.yaml").read_text())
    # Single-stream decode, as the campaign measured it; few tokens so a trial takes seconds.
    space["workload"].update(
        concurrency=1, num_requests=2, prompt_len=32, output_len=48, warmup_requests=1
    )
    space_file = tmp_path / "verify.yaml"
    space_file.write_text(yaml.safe_dump(space, sort_keys=False))
    root = tmp_path / "studies"
    mlflow_uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    env = {**cli_env, "AUTOTUNE_SIM_SEED": "5"}
    # One baseline launch and no confirmation: this test follows the campaign's trial numbers
    # (tests/e2e/test_noise_e2e.py covers repeated baselines and confirmation).
    common = [
        "--space",
        str(space_file),
        "--study",
        "camp",
        "--simulate",
        "--executor",
        "local",
        "--mlflow-uri",
        mlflow_uri,
        "--study-root",
        str(root),
        "--seed",
        "11",
        "--baseline-launches",
        "1",
        "--no-confirm",
    ]

    # 1. Create the study: the first trial is the baseline the space names.
    _start(common + ["--n-trials", "1"], tmp_path, env)
    storage = f"sqlite:///{(root / 'camp' / 'study.db').resolve()}"
    study = optuna.load_study(study_name="camp", storage=storage)
    for config in EXPERIMENTS + PROBES:
        study.enqueue_trial(config)

    # 2. Resume it: the queued experiments run first, then the sampler proposes.
    out = _start(common + ["--n-trials", str(N_TRIALS)], tmp_path, env)
    assert "SIMULATED" in out

    study = optuna.load_study(study_name="camp", storage=storage)
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    attrs = [t.user_attrs for t in trials]
    launched = [t for t in trials if t.user_attrs.get("outcome") in LAUNCHED]
    assert len(launched) == N_TRIALS

    # The baseline and the campaign's runs that worked.
    assert attrs[0]["baseline"] is True and attrs[0]["outcome"] == "ok"
    baseline = trials[0].value
    assert baseline is not None
    assert attrs[1]["outcome"] == "ok" and trials[1].value is not None
    assert trials[1].value > baseline  # smaller CUDA graph batch: faster
    assert study.best_value > baseline
    custom = trials[4].value  # custom allreduce over PCIe: runs, but saturates the bus
    assert attrs[4]["outcome"] == "ok" and custom is not None
    assert 30 < custom < 46 and 0.40 < custom / baseline < 0.53, (custom, baseline)
    assert attrs[7]["outcome"] == "ok" and trials[7].value is not None
    assert trials[7].value < baseline  # EAGLE-3 with default NCCL: slower

    # Each crash by its right cause, blaming the right value.
    expected = {
        2: ("kv_pool_oom", None),
        3: ("arch_unsupported", ["allreduce='flashinfer_fusion'"]),
        5: ("arch_unsupported", ["allreduce='symm_mem'"]),
        6: ("assertion", ["moe_a2a_backend='flashinfer'"]),
    }
    for number, (cause, blame) in expected.items():
        a = attrs[number]
        assert a["outcome"] == "crashed", (number, a.get("message"))
        assert a["cause"] == cause, (number, a["cause"], a.get("message"))
        assert a.get("blame") == blame, (number, a.get("blame"))
        assert a["hint"] and a["evidence"]
    assert "Not enough memory" in attrs[2]["message"]
    assert attrs[6]["message"] == "AssertionError"  # the first failure, not the later OOM

    # The probes were never launched, each for its reason.
    reasons = [attrs[n].get("skipped", "") for n in range(8, 12)]
    assert "allreduce='flashinfer_fusion' caused arch_unsupported in trial 3" in reasons[0]
    assert "same configuration as trial 2" in reasons[1]
    assert "at least as much memory as trial 2" in reasons[2]
    assert "moe_a2a_backend='flashinfer' caused assertion in trial 6" in reasons[3]
    assert all(attrs[n]["outcome"] == "pruned" for n in range(8, 12))

    # No known dead end was launched after it became known (what TPE proposed included).
    spec = load(space_file)
    records = [DeadEnd.model_validate(r) for r in study.user_attrs["dead_ends"]]
    assert {r.trial for r in records} >= {2, 3, 5, 6}
    for r in records:
        memory = DeadEnds(spec, [r])
        for t in launched:
            if t.number > r.trial:
                assert memory.why(t.user_attrs["config"]) is None, (r, t.number)

    # MLflow: one child run per launched trial, with the outcome and the cause.
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=mlflow_uri)
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    # Skipped proposals are child runs too (KILLED, role "skip"), never counted as launched.
    skipped = [r for r in children if r.data.tags.get("autotune.role") == "skip"]
    children = [r for r in children if r.data.tags.get("autotune.role") == "trial"]
    assert len(children) == N_TRIALS
    assert len(skipped) == sum(1 for a in attrs if a.get("skipped"))
    causes = sorted(
        r.data.tags["autotune.cause"]
        for r in children
        if r.data.tags.get("autotune.outcome") == "crashed"
    )
    assert {"kv_pool_oom", "arch_unsupported", "assertion"} <= set(causes)
