"""The black boxes that stand in for issue 13's hidden server are what they claim to be: the
baseline serves, each crash region dies with lines the command engine's rules name, and the
optimum is about three times the baseline (bench/search_blackbox.py measures the search on them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from autotune.engines import get_engine
from autotune.models import Phase
from autotune.node.failures import classify
from autotune.space.schema import EngineSpec

sys.path.insert(0, str(Path(__file__).parent / "servers"))

import blackbox3  # noqa: E402
import blackbox4  # noqa: E402
import blackbox5  # noqa: E402
import blackbox6  # noqa: E402
import blackbox7  # noqa: E402
import blackbox8  # noqa: E402
import blackbox9  # noqa: E402
import blackbox10  # noqa: E402
import blackbox11  # noqa: E402
import blackbox12  # noqa: E402

# one configuration inside each crash region (changed from the baseline), and the cause named
REGIONS: dict[Any, list[tuple[dict[str, Any], str]]] = {
    blackbox3: [
        ({"backend": "fa3", "graph_bs": 256}, "cuda_graph_capture"),
        ({"compile": True, "buffsize": 65536}, "cuda_oom"),
        ({"allreduce": "mscclpp", "backend": "flashinfer"}, "assertion"),
    ],
    blackbox4: [
        ({"moe_backend": "deep_gemm", "max_running": 256}, "cuda_oom"),
        ({"max_running": 512, "nchannels": 32}, "nccl_error"),
        ({"moe_backend": "deep_gemm", "compile": True}, "cuda_graph_capture"),
    ],
    blackbox5: [
        ({"mixed": True, "chunk": 12288}, "cuda_oom"),
        ({"sampling": "flashinfer", "decode_steps": 14}, "runtime_crash"),
        ({"decode_steps": 20}, "cuda_graph_capture"),
    ],
    blackbox6: [
        ({"algo": "EAGLE3", "draft": 12, "prefill": 16384}, "kv_pool_oom"),
        ({"algo": "NGRAM", "tbo": True}, "assertion"),
        ({"proto": "LL128", "prefill": 32768}, "nccl_error"),
    ],
    blackbox7: [
        ({"kv_dtype": "fp8_e4m3", "tokens": 491521, "dp": True}, "kv_pool_oom"),
        ({"kv_dtype": "fp8_e4m3", "page": 256}, "cuda_graph_capture"),
        ({"dp": True, "nthreads": 512}, "nccl_error"),
    ],
    blackbox8: [
        ({"dispatch": 16}, "runtime_crash"),
        ({"a2a": "mooncake", "eplb": True}, "assertion"),
        ({"a2a": "deepep", "redundant": 241, "dispatch": 22}, "cuda_oom"),
    ],
    blackbox9: [
        ({"steps": 3, "topk": 5}, "cuda_graph_capture"),
        ({"buffsize": 8388608}, "kv_pool_oom"),
        ({"quant": "awq_marlin", "spec_v2": True}, "assertion"),
    ],
    blackbox10: [
        ({"policy": "lpm", "running": 513}, "watchdog_timeout"),
        ({"nvls": True, "chunk": 16385}, "nccl_error"),
        ({"chunk": 32768, "running": 229}, "cuda_oom"),
    ],
    blackbox11: [
        ({"backend": "flashmla"}, "arch_unsupported"),
        ({"buffsize": 16777216}, "kv_pool_oom"),
        ({"dp_attention": True}, "cuda_graph_capture"),
    ],
    blackbox12: [
        ({"chunk": 16384, "running": 320}, "cuda_graph_capture"),
        ({"hicache": True, "policy": "dfs-weight"}, "assertion"),
        ({"clip": 100, "running": 16}, "kv_pool_oom"),
    ],
}


@pytest.mark.parametrize("box", list(REGIONS), ids=lambda m: m.__name__)
def test_a_black_box_serves_its_baseline_and_names_each_crash(box: Any) -> None:
    engine = get_engine(EngineSpec(name="command", command=["server", "--port", "{port}"]))
    rules = engine.failure_rules()
    assert box.crash_of(box.BASELINE) is None
    for change, cause in REGIONS[box]:
        lines = box.crash_of({**box.BASELINE, **change})
        assert lines is not None, change
        failure = classify(lines, rules, phase=Phase.LOAD, exit_code=1, argv=[], env={})
        assert failure.cause.value == cause, (change, failure.message)
    assert 2.9 <= box.optimum() / box.rate(box.BASELINE) <= 3.2


def test_a_black_box_reads_its_settings_from_flags_and_environment_variables() -> None:
    """``blackbox.serve`` takes each setting from its flag or variable, the baseline's value
    where none is given: compile (a variable) with deep_gemm (a flag) dies in graph capture."""
    script = Path(__file__).parent / "servers" / "blackbox4.py"
    env = {**os.environ, "BB4_ENABLE_TORCH_COMPILE": "1"}
    argv = [sys.executable, str(script), "--port", "1", "--moe-runner-backend", "deep_gemm"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=20)
    assert done.returncode != 0
    assert "'moe_backend': 'deep_gemm'" in done.stdout
    assert "'compile': True" in done.stdout
    assert "'max_running': 16" in done.stdout  # the baseline's, not given
    assert "Capture cuda graph failed" in done.stdout + done.stderr


@pytest.mark.parametrize("present", [True, False])
def test_a_black_box_reads_a_bool_flag_as_present_or_absent(present: bool) -> None:
    """A bool given as a flag is on where the flag is passed, with no value, and off where
    it is not (the command engine passes it so): with ``flashmla``, which always dies, the
    server logs the settings it read before it dies."""
    script = Path(__file__).parent / "servers" / "blackbox11.py"
    argv = [sys.executable, str(script), "--port", "1", "--attention-backend", "flashmla"]
    argv += ["--enable-dp-attention"] if present else []
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    assert done.returncode != 0
    assert f"'dp_attention': {present}" in done.stdout
    assert "'graph_bs': 512" in done.stdout  # the baseline's, not given
    assert "no kernel image is available" in done.stdout + done.stderr


def test_a_choice_that_crashed_at_the_baseline_is_launched_again_in_other_company() -> None:
    """``blackbox11`` in process, through the real driver: DP attention dies at the baseline's
    graph batch (512) and serves below 257. One crash cannot tell the choice from its company
    (the graph batch it came with), so the search launches it again at a smaller graph batch,
    where it serves."""
    from tests.search.blackboxes import landscape
    from tests.search.inprocess import run_study

    launches, _ = run_study(landscape("blackbox11", noise=0.01), 0, 30, windows=3)
    dp = [la for la in launches if la.config.get("dp_attention") and la.kind == "search"]
    assert dp and dp[0].crashed and dp[0].config["graph_bs"] == 512
    assert any(la.value is not None and la.config["graph_bs"] <= 256 for la in dp[1:])
