"""Flag tables captured from the real engines' parsers, and spaces for real GPUs refused early."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.engines import SGLangEngine, preflight
from autotune.engines.flagdump import entry
from autotune.engines.flagtable import load_table
from autotune.space.schema import EngineSpec

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "autotune.cli"]


def test_a_captured_table_is_complete_and_knows_each_deprecated_alias() -> None:
    table = load_table("sglang", "0.5.17")
    assert table is not None and table.complete and table.version == "0.5.17"
    assert len(table.names()) > 400
    info = table.get("--cuda-graph-max-bs")
    assert info is not None and info.deprecated == "--cuda-graph-max-bs-decode"
    assert table.get("--tensor-parallel-size") is table.get("--tp-size")


def test_a_curated_table_is_not_complete() -> None:
    table = load_table("sglang", "0.5.9")
    assert table is not None and not table.complete


def test_flagdump_reads_argparse_actions() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--tp-size", "--tensor-parallel-size", type=int)
    parser.add_argument("--flag", action="store_true")
    parser.add_argument("--mode", choices=["a", "b"])
    parser.add_argument("--sizes", type=int, nargs="+")
    parser.add_argument("--share", type=float)
    got = dict(e for a in parser._actions if (e := entry(a)) is not None)
    assert got["--tp-size"] == {"type": "int", "aliases": ["--tensor-parallel-size"]}
    assert got["--flag"] == {"type": "store_true"}
    assert got["--mode"] == {"type": "str", "choices": ["a", "b"]}
    assert got["--sizes"]["type"] == "list" and got["--share"]["type"] == "float"
    assert "--help" not in got


def test_a_flag_the_version_lacks_is_an_error_against_a_complete_table() -> None:
    engine = SGLangEngine(EngineSpec(name="sglang", version="0.5.17"))
    findings = preflight(engine, ["--mem-fraction-static", "0.8", "--no-such-flag"])
    errors = [f for f in findings if f.level == "error"]
    assert [f.flag for f in errors] == ["--no-such-flag"]


def test_a_newer_version_than_the_captured_table_only_warns() -> None:
    engine = SGLangEngine(EngineSpec(name="sglang", version="0.5.20"))
    findings = preflight(engine, ["--no-such-flag"])
    assert [f.level for f in findings if f.flag == "--no-such-flag"] == ["warning"]


@pytest.mark.parametrize(
    "space", ["sglang-gpu.yaml", "vllm-gpu.yaml", "sglang-tp2.yaml", "vllm-tp2.yaml"]
)
def test_the_gpu_spaces_pass_preflight(space: str) -> None:
    proc = subprocess.run(
        [*CLI, "validate", str(ROOT / "search_spaces" / space)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_a_flag_of_another_engine_is_refused_naming_the_file_line(tmp_path: Path) -> None:
    text = (ROOT / "search_spaces" / "sglang-gpu.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("flag: --max-running-requests", "flag: --max-num-seqs"))
    lines = bad.read_text().splitlines()
    line = next(i for i, text_line in enumerate(lines, 1) if "--max-num-seqs" in text_line)
    proc = subprocess.run([*CLI, "validate", str(bad)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"bad.yaml:{line}: flag --max-num-seqs" in proc.stderr
    assert "not a flag of sglang" in proc.stderr
    assert "sglang's counterpart is --max-running-requests" in proc.stderr


def test_the_captured_tables_are_valid_json_with_a_source() -> None:
    for path in (ROOT / "src/autotune/engines/flags").glob("*.json"):
        doc = json.loads(path.read_text())
        if doc.get("complete"):
            assert "captured from" in doc["source"] and doc["flags"]


def test_every_rename_lands_on_a_flag_the_captured_version_has() -> None:
    from autotune.engines.sglang import renames_for

    table = load_table("sglang", "0.5.17")
    assert table is not None
    for rename in renames_for("0.5.17").values():
        for token in rename.new:
            if token.startswith("--"):
                assert token in table.names(), (rename.old, token)


@pytest.mark.parametrize("space", ["sglang-tp2.yaml", "vllm-tp2.yaml"])
def test_tp2_spaces_keep_multicast_off_and_nccl_knobs_where_nccl_carries_the_allreduce(
    space: str,
) -> None:
    import optuna

    from autotune.engines import get_engine
    from autotune.space.load import load
    from autotune.space.render import render
    from autotune.space.suggest import suggest

    spec = load(ROOT / "search_spaces" / space)
    engine = get_engine(spec.engine)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen_nccl = False
    for _ in range(60):
        config = suggest(study.ask(), spec)
        args, env = render(spec, config)
        argv, full_env = engine.command(spec.model, args, env)
        assert engine.gpus(argv) == 2
        assert full_env["NCCL_NVLS_ENABLE"] == "0"
        assert full_env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
        assert full_env["NVSHMEM_DISABLE_NVLS"] == "1"
        nccl_env = {k for k in env if k.startswith("NCCL_") and k != "NCCL_NVLS_ENABLE"}
        assert bool(nccl_env) == (config["allreduce"] == "nccl"), (config, env)
        if nccl_env:
            seen_nccl = True
            assert int(env["NCCL_MIN_NCHANNELS"]) <= int(env["NCCL_MAX_NCHANNELS"])
    assert seen_nccl
