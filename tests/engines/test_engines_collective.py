"""CollectiveEngine argv/env and the all-reduce benchmark, run for real on gloo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.engines import CollectiveEngine
from autotune.engines.collective_bench import METRICS_PREFIX, parse_size, percentile, size_label
from autotune.errors import ConfigError
from autotune.models import Cause, EngineSpec, Phase

PY = sys.executable


def collective(gpus: int = 0, **options: object) -> CollectiveEngine:
    return CollectiveEngine(
        EngineSpec.model_validate(
            {"name": "collective", "python": PY, "gpus": gpus, "options": options}
        )
    )


def test_argv_table() -> None:
    argv, env = collective(8).command("ignored", ["--iters", "500"], {"NCCL_PROTO": "LL128"})
    assert argv == [
        PY, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "8",
        "-m", "autotune.engines.collective_bench",
        "--sizes", "42K", "--dtype", "bf16", "--samples", "20",
        "--warmup", "20", "--mode", "eager", "--allreduce", "nccl",
        "--iters", "500",
    ]  # fmt: skip
    # A searched option replaces the default instead of following it (each said once).
    assert argv.count("--iters") == 1
    assert env == {
        "OMP_NUM_THREADS": "1",
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
        "NCCL_PROTO": "LL128",
    }


def test_options_and_cpu_process_count() -> None:
    argv, _ = collective(0, nproc=3, sizes="42K,1M", dtype="fp32", iters=9, warmup=0).command(
        "m", [], {}
    )
    assert argv[argv.index("--nproc-per-node") + 1] == "3"
    assert argv[argv.index("--sizes") + 1] == "42K,1M"
    assert argv[argv.index("--dtype") + 1] == "fp32"
    assert argv[argv.index("--warmup") + 1] == "0"


def test_nvls_stays_off_whatever_the_space_says() -> None:
    space_env = {
        "NCCL_NVLS_ENABLE": "1",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "0",
        "NVSHMEM_DISABLE_NVLS": "0",
        "NCCL_ALGO": "NVLS",
    }
    _, env = collective(2).command("m", [], space_env)
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert env["NCCL_ALGO"] == "NVLS"  # other variables pass through untouched


def test_mode_and_gpus() -> None:
    assert collective(4).mode() == "job"
    assert collective(4).gpus([]) == 4 and collective(0).gpus([]) == 0


def test_unknown_option_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        collective(0, size="42K")
    assert info.value.field == "engine.options"


@pytest.mark.parametrize(
    ("gpus", "options", "field", "words"),
    [
        (2, {"allreduce": "custom"}, "engine.options.allreduce", "not one of nccl"),
        (2, {"mode": "lazy"}, "engine.options.mode", "not one of eager, graph"),
        (0, {"allreduce": "symm_mem_one_shot"}, "engine.options.allreduce", "needs CUDA GPUs"),
        (0, {"mode": "graph"}, "engine.options.mode", "needs CUDA GPUs"),
    ],
)
def test_bad_or_cpu_impossible_options(
    gpus: int, options: dict[str, str], field: str, words: str
) -> None:
    with pytest.raises(ConfigError, match=words) as info:
        collective(gpus, **options)
    assert info.value.field == field
    collective(2, allreduce="symm_mem_two_shot", mode="graph")  # fine with GPUs


@pytest.mark.parametrize(
    ("text", "nbytes", "label"),
    [("42K", 43008, "42k"), ("1M", 1048576, "1m"), ("4096", 4096, "4096"), ("2MB", 2097152, "2m")],
)
def test_sizes(text: str, nbytes: int, label: str) -> None:
    assert parse_size(text) == nbytes
    assert size_label(text) == label


def test_percentile() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile([7.0], 99) == 7.0


@pytest.mark.slow  # two torch.distributed processes (gloo): seconds of imports
def test_bench_runs_on_gloo_and_prints_one_metrics_line() -> None:
    engine = collective(0, nproc=2, sizes="42K,64K", dtype="fp32", iters=5, samples=4, warmup=1)
    argv, env = engine.command("none", [], {})
    proc = subprocess.run(
        argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith(METRICS_PREFIX)]
    assert len(lines) == 1, proc.stdout  # rank 0 only
    metrics = json.loads(lines[0][len(METRICS_PREFIX) :])
    assert metrics["world_size"] == 2
    for key in ("42k", "64k"):
        p50, p99 = metrics[f"allreduce_{key}_p50_us"], metrics[f"allreduce_{key}_p99_us"]
        assert 0 < p50 <= p99
    assert metrics["latency_p50_us"] == metrics["allreduce_42k_p50_us"]
    assert metrics["latency_p99_us"] == metrics["allreduce_42k_p99_us"]
    # The harness's own floor: a 16-byte all-reduce timed the same way.
    assert 0 < metrics["floor_p50_us"] <= metrics["floor_p99_us"]
    assert metrics["iters_per_sample"] == 5
    assert "nccl, eager, 5 per sample" in proc.stdout


@pytest.mark.slow  # two torch.distributed processes (gloo): seconds of imports
def test_symm_mem_on_cpu_fails_with_a_classified_error(tmp_path: Path) -> None:
    # No CUDA here: the symmetric-memory all-reduce must refuse at once, in words the
    # collective rules classify and blame on the --allreduce value.
    from autotune.node.failures import classify
    from autotune.rules import load_rules

    engine = collective(0, nproc=2, sizes="42K", iters=2, samples=2, warmup=0)
    argv, env = engine.command("none", ["--allreduce", "symm_mem_one_shot"], {})
    proc = subprocess.run(
        argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode != 0
    assert "--allreduce symm_mem_one_shot needs CUDA GPUs" in proc.stderr
    failure = classify(
        (proc.stdout + proc.stderr).splitlines(),
        load_rules("collective"),
        phase=Phase.LAUNCH,
        exit_code=proc.returncode,
        argv=argv,
        env=env,
    )
    assert failure.cause == Cause.ARCH_UNSUPPORTED
    assert failure.rule == "collective.symm_mem_needs_cuda"
    assert "--allreduce" in failure.blame


def test_bench_rejects_bad_size() -> None:
    proc = subprocess.run(
        [PY, "-m", "autotune.engines.collective_bench", "--sizes", "42Q"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "bad size" in proc.stderr


def test_bench_module_stays_light() -> None:
    # It runs on GPU nodes: never optuna, ray or mlflow (and torch only once it runs).
    code = (
        "import sys, autotune.engines.collective_bench as b; "
        "print(sorted(m for m in ('optuna', 'ray', 'mlflow', 'torch') if m in sys.modules))"
    )
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"
