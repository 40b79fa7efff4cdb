"""SGLangEngine: exact argv, version translation, milestones, GPU count."""

from __future__ import annotations

import re
import sys

import pytest

from autotune.engines import SGLangEngine, SimEngine, get_engine
from autotune.engines.flagtable import load_table, parse_version, table_version
from autotune.engines.sglang import renames_for
from autotune.errors import ConfigError
from autotune.models import EngineSpec, Phase

PY = sys.executable


def sglang(version: str | None = None, **extra: object) -> SGLangEngine:
    return SGLangEngine(
        EngineSpec.model_validate({"name": "sglang", "python": PY, "version": version, **extra})
    )


def test_exact_argv_and_env() -> None:
    argv, env = sglang("0.5.9").command(
        "moonshotai/Kimi-K2.5",
        ["--tp-size", "8", "--cuda-graph-max-bs", "64"],
        {"NCCL_PROTO": "LL"},
    )
    assert argv == [
        PY, "-m", "sglang.launch_server", "--model-path", "moonshotai/Kimi-K2.5",
        "--host", "{host}", "--port", "{port}", "--tp-size", "8", "--cuda-graph-max-bs", "64",
    ]  # fmt: skip
    assert env == {"NCCL_PROTO": "LL"}


def test_simulate_swaps_only_the_module() -> None:
    real, _ = sglang("0.5.9").command("m", ["--tp-size", "2"], {})
    fake, _ = SGLangEngine(sglang("0.5.9").spec, simulate=True).command("m", ["--tp-size", "2"], {})
    assert fake[2] == "autotune.sim" and real[2] == "sglang.launch_server"
    assert fake[:2] + fake[3:] == real[:2] + real[3:]
    assert (
        get_engine(EngineSpec(name="sim", python=PY)).command("m", [], {})[0][2] == "autotune.sim"
    )
    assert isinstance(get_engine(EngineSpec(name="sim", python=PY)), SimEngine)


ARGS_059 = [
    "--cuda-graph-max-bs", "128", "--disable-cuda-graph", "--enable-flashinfer-allreduce-fusion",
    "--mem-fraction-static=0.85", "--cuda-graph-bs", "1", "2", "4", "--tp-size", "8",
]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "expected", "n_warnings"),
    [
        (None, ARGS_059, 0),
        ("0.5.9", ARGS_059, 0),
        ("0.5.13", ARGS_059, 0),
        (
            "0.5.14",
            [
                "--cuda-graph-max-bs-decode", "128",
                "--cuda-graph-backend-decode", "disabled",
                "--cuda-graph-backend-prefill", "disabled",
                "--flashinfer-allreduce-fusion-backend", "auto",
                "--mem-fraction-static=0.85", "--cuda-graph-bs", "1", "2", "4", "--tp-size", "8",
            ],
            3,
        ),
        (
            "0.5.23.post1",
            [
                "--cuda-graph-max-bs-decode", "128",
                "--cuda-graph-backend-decode", "disabled",
                "--cuda-graph-backend-prefill", "disabled",
                "--flashinfer-allreduce-fusion-backend", "auto",
                "--mem-fraction-static=0.85", "--cuda-graph-bs-decode", "1", "2", "4",
                "--tp-size", "8",
            ],
            4,
        ),
    ],
)  # fmt: skip
def test_translate_by_version(version: str | None, expected: list[str], n_warnings: int) -> None:
    args, warnings = sglang(version).translate(ARGS_059)
    assert args == expected
    assert len(warnings) == n_warnings


def test_translate_handles_equals_form_and_says_why() -> None:
    args, warnings = sglang("0.5.23").translate(["--cuda-graph-max-bs=256", "--log-level", "info"])
    assert args == ["--cuda-graph-max-bs-decode", "256", "--log-level", "info"]
    assert len(warnings) == 1
    assert "--cuda-graph-max-bs-decode" in warnings[0] and "ambiguous option" in warnings[0]


def test_translate_is_applied_by_command() -> None:
    argv, _ = sglang("0.5.19").command("m", ["--disable-cuda-graph"], {})
    assert argv[-4:] == [
        "--cuda-graph-backend-decode", "disabled", "--cuda-graph-backend-prefill", "disabled",
    ]  # fmt: skip


def test_translated_flags_exist_in_that_versions_table() -> None:
    for version in ("0.5.14", "0.5.19", "0.5.23"):
        args, _ = sglang(version).translate(ARGS_059)
        known = sglang(version).known_flags()
        assert known is not None
        assert {a.split("=")[0] for a in args if a.startswith("--")} - known == set()


def test_flag_tables_by_version() -> None:
    assert table_version("sglang", None) == "0.5.9"
    assert table_version("sglang", "0.5.1") == "0.5.9"
    assert table_version("sglang", "0.5.18") == "0.5.17"
    assert table_version("sglang", "0.6.0") == "0.5.23"
    old, new = load_table("sglang", "0.5.9"), load_table("sglang", "0.5.23")
    assert old is not None and new is not None
    assert "--cuda-graph-max-bs" in old.names() and "--cuda-graph-max-bs" not in new.names()
    assert old.flags["--tensor-parallel-size"].name == "--tp-size"
    assert old.flags["--disable-cuda-graph"].type == "store_true"
    assert "deepep" in (old.flags["--moe-a2a-backend"].choices or ())
    mid = load_table("sglang", "0.5.14")
    assert (
        mid is not None
        and mid.flags["--cuda-graph-max-bs"].deprecated == "--cuda-graph-max-bs-decode"
    )


def test_bad_version_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        parse_version("latest")
    assert info.value.field == "engine.version"
    assert parse_version("v0.5.9rc1") == (0, 5, 9)


def test_renames_none_before_0_5_14() -> None:
    assert renames_for(None) == {} and renames_for("0.5.13") == {}
    assert set(renames_for("0.5.14")) == {
        "--cuda-graph-max-bs", "--disable-cuda-graph", "--enable-flashinfer-allreduce-fusion",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("args", "spec_gpus", "gpus"),
    [
        ([], 0, 1),
        ([], 4, 4),
        (["--tp-size", "8"], 1, 8),
        (["--tensor-parallel-size=4", "--dp-size", "2"], 0, 8),
        (["--tp", "2"], 0, 1),  # not an SGLang spelling: defaults
        (["--tp-size", "4", "--data-parallel-size", "2", "--enable-dp-attention"], 0, 4),
        (["--tp-size", "2", "--pp-size", "2"], 0, 4),
    ],
)
def test_gpus(args: list[str], spec_gpus: int, gpus: int) -> None:
    assert sglang("0.5.9", gpus=spec_gpus).gpus(args) == gpus


LOG = """\
[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=139.20 GB
[2026-01-01 10:00:40 TP0] Load weight end. type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=60.1 GB, mem usage=79.10 GB.
[2026-01-01 10:00:41 TP0] KV Cache is allocated. #tokens: 400000, K size: 20 GB, V size: 20 GB
[2026-01-01 10:00:41 TP0] Memory pool end. avail mem=15.3 GB
[2026-01-01 10:00:42 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=15.0 GB
[2026-01-01 10:01:30 TP0] Capture cuda graph end. Time elapsed: 48.0 s. mem usage=2.1 GB. avail mem=12.9 GB.
[2026-01-01 10:01:31 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, context_len=262144
[2026-01-01 10:01:40] The server is fired up and ready to roll!
"""  # noqa: E501


def test_milestones_match_a_startup_log_in_order() -> None:
    engine = sglang("0.5.9")
    lines = LOG.splitlines()
    hits = [
        next(i for i, line in enumerate(lines) if re.search(m.pattern, line))
        for m in engine.milestones()
    ]
    assert hits == sorted(hits) and len(set(hits)) == len(hits)
    phases = [m.phase for m in engine.milestones()]
    assert phases[0] == Phase.LOAD and phases[-1] == Phase.READY
    assert engine.ready_pattern and re.search(engine.ready_pattern, lines[-1])
    assert engine.health_path == "/health"


def test_help_command_and_unknown_help() -> None:
    assert sglang().help_command() == [PY, "-m", "sglang.launch_server", "--help"]
