"""The stand-in server as a real subprocess: argparse exits, the campaign's crashes, startup."""

from __future__ import annotations

import re

import pytest
from tests.sim.conftest import run_to_exit

SIGKILL_RC = -9
SCHEDULER = "Scheduler hit an exception"
SIGQUIT = "Received sigquit from a child process. It usually means the child failed."
SMALL_NCCL = {
    "NCCL_MIN_NCHANNELS": "1",
    "NCCL_MAX_NCHANNELS": "2",
    "NCCL_BUFFSIZE": "131072",
    "NCCL_NTHREADS": "64",
}


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--bogus-flag"], "unrecognized arguments: --bogus-flag"),
        (["--schedule-policy", "sjf"], "argument --schedule-policy: invalid choice: 'sjf'"),
        (["--moe-a2a-backend", "nccl"], "argument --moe-a2a-backend: invalid choice: 'nccl'"),
        (["--speculative-algorithm", "MEDUSA"], "invalid choice: 'MEDUSA'"),
        (["--cuda-graph-max-bs", "big"], "argument --cuda-graph-max-bs: invalid int value: 'big'"),
        (["--mem-fraction-static", "most"], "invalid float value: 'most'"),
        (["--speculative-num", "3"], "ambiguous option: --speculative-num could match"),
    ],
)
def test_bad_flags_exit_2_like_argparse(flags: list[str], message: str) -> None:
    done = run_to_exit(*flags)
    assert done.returncode == 2
    assert message in done.stderr


def test_abbreviated_flags_are_accepted_as_argparse_does() -> None:
    done = run_to_exit(
        "--cuda-graph-max", "64", "--enable-torch-symm", AUTOTUNE_SIM_PROFILE="pcie-blackwell"
    )
    assert done.returncode == SIGKILL_RC  # parsed (abbreviations expand), then symm-mem fails


def test_help_exits_0() -> None:
    done = run_to_exit("--help")
    assert done.returncode == 0 and "--speculative-algorithm" in done.stdout


def test_speculative_topk_without_steps_is_an_assertion_in_the_main_process() -> None:
    done = run_to_exit("--speculative-algorithm", "EAGLE3", "--speculative-eagle-topk", "4")
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith("AssertionError")
    assert "Load weight begin" not in done.stderr


# (flags, env, error string, a milestone that must appear, one that must not)
CRASHES = {
    "flashinfer_fusion_sm120": (
        ["--enable-flashinfer-allreduce-fusion"],
        {},
        "RuntimeError: No supported CUDA architectures found for major versions [9, 10]",
        "Capture cuda graph begin",
        "Capture cuda graph end",
    ),
    "torch_symm_mem_sm120": (
        ["--enable-torch-symm-mem"],
        {},
        "KeyError: 12",
        "Init torch distributed begin",
        "Load weight begin",
    ),
    "moe_a2a_flashinfer": (
        ["--moe-a2a-backend", "flashinfer"],
        {},
        "torch.OutOfMemoryError: CUDA out of memory",
        "Load weight begin",
        "Load weight end",
    ),
    "few_nccl_channels_oom_paradox": (
        [],
        SMALL_NCCL,
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=",
        "Load weight end",
        "Memory pool end",
    ),
    "nccl_bad_proto_token": (
        [],
        {"NCCL_PROTO": "LL,fast"},
        "RuntimeError: NCCL error: invalid usage",
        "Init torch distributed begin",
        "Load weight begin",
    ),
    "mem_fraction_too_high_for_graphs": (
        ["--mem-fraction-static", "0.97"],
        {},
        "Exception: Capture cuda graph failed: CUDA out of memory",
        "Memory pool end",
        "Capture cuda graph end",
    ),
}


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_campaign_crash_logs_sglangs_error_and_dies_with_sigkill(name: str) -> None:
    flags, env, error, reached, not_reached = CRASHES[name]
    done = run_to_exit(*flags, **env)
    log = done.stderr
    assert done.returncode == SIGKILL_RC, log[-2000:]
    assert error in log
    assert SCHEDULER in log and log.rstrip().endswith(SIGQUIT)
    assert reached in log and not_reached not in log
    assert "The server is fired up" not in log
    assert (
        log.splitlines()[0]
        == "autotune.sim: SIMULATED SGLang server, figures are modelled, not measured"
    )


def test_moe_a2a_flashinfer_asserts_before_the_oom() -> None:
    log = run_to_exit("--moe-a2a-backend", "flashinfer").stderr
    assert log.index("AssertionError") < log.index("OutOfMemoryError")


def test_oom_paradox_reports_more_free_memory_than_the_working_baseline(launch_sim) -> None:  # type: ignore[no-untyped-def]
    def after_load(log: str) -> float:
        match = re.search(r"Load weight end\..*avail mem=([\d.]+) GB", log)
        assert match is not None
        return float(match.group(1))

    bad = run_to_exit(**SMALL_NCCL).stderr
    good = launch_sim("--mem-fraction-static", "0.55").log()
    assert after_load(bad) > after_load(good)


def test_nccl_warn_names_the_unrecognized_token() -> None:
    log = run_to_exit(NCCL_ALGO="Rnig").stderr
    assert 'NCCL WARN Unrecognized element token "Rnig" when parsing "Rnig"' in log


def test_h200_profile_survives_the_sm120_dead_ends(launch_sim) -> None:  # type: ignore[no-untyped-def]
    server = launch_sim(
        "--enable-flashinfer-allreduce-fusion",
        "--enable-torch-symm-mem",
        AUTOTUNE_SIM_PROFILE="h200-nvlink",
    )
    info = server.info()
    assert info["simulated"] is True
    assert info["simulation"]["profile"] == "h200-nvlink"  # type: ignore[index]
