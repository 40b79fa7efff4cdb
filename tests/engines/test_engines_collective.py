"""CollectiveEngine argv/env and the all-reduce benchmark, run for real on gloo."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from autotune.engines import CollectiveEngine
from autotune.engines.collective_bench import METRICS_PREFIX, parse_size, percentile, size_label
from autotune.errors import ConfigError
from autotune.space.schema import EngineSpec

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
        "--sizes", "42K", "--dtype", "bf16", "--iters", "200", "--warmup", "20",
        "--iters", "500",
    ]  # fmt: skip
    assert env == {"OMP_NUM_THREADS": "1", "NCCL_NVLS_ENABLE": "0", "NCCL_PROTO": "LL128"}


def test_options_and_cpu_process_count() -> None:
    argv, _ = collective(0, nproc=3, sizes="42K,1M", dtype="fp32", iters=9, warmup=0).command(
        "m", [], {}
    )
    assert argv[argv.index("--nproc-per-node") + 1] == "3"
    assert argv[argv.index("--sizes") + 1] == "42K,1M"
    assert argv[argv.index("--dtype") + 1] == "fp32"
    assert argv[argv.index("--warmup") + 1] == "0"


def test_nvls_stays_off_whatever_the_space_says() -> None:
    _, env = collective(2).command("m", [], {"NCCL_NVLS_ENABLE": "1", "NCCL_ALGO": "NVLS"})
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["NCCL_ALGO"] == "NVLS"  # other variables pass through untouched


def test_mode_and_gpus() -> None:
    assert collective(4).mode() == "job"
    assert collective(4).gpus([]) == 4 and collective(0).gpus([]) == 0


def test_unknown_option_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        collective(0, size="42K")
    assert info.value.field == "engine.options"


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


def test_bench_runs_on_gloo_and_prints_one_metrics_line() -> None:
    engine = collective(0, nproc=2, sizes="42K,64K", dtype="fp32", iters=5, warmup=1)
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
