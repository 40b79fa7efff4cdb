"""The values an engine chose for the settings the baseline leaves unset, read from the
baseline's log, are where the search's screen starts (SGLang on an H100, 2026-12-06: from the
ranges' middles instead, 91 running requests under 256 streams, every move ran at half the
baseline's throughput)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.study.study_helpers import make_driver, toy_space

from autotune.engines.sglang import SGLangEngine
from autotune.engines.vllm import VLLMEngine
from autotune.models import EngineSpec, Outcome
from autotune.search import DEFAULTS
from autotune.study.ledger import Ledger

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(autouse=True)
def _node_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))


def test_sglang_says_what_it_chose_in_its_log() -> None:
    engine = SGLangEngine(EngineSpec(name="sglang", version="0.5.17"))
    h100 = (DATA / "gpu-crashlogs" / "sglang-0.5.17-healthy-baseline.log").read_text()
    chosen = engine.resolved_flags(h100)
    assert {k: chosen[k] for k in ("--mem-fraction-static", "--schedule-policy")} == {
        "--mem-fraction-static": "0.83",
        "--schedule-policy": "fcfs",
    }
    # decided after the arguments were printed (None there): the pool line, the graphs
    assert chosen["--max-running-requests"] == "4096"
    assert chosen["--chunked-prefill-size"] == "8192"
    assert chosen["--cuda-graph-max-bs-decode"] == "256"
    assert chosen["--enable-torch-compile"] == "False"
    # an older SGLang's pool line (2025): the same words
    older = (DATA / "log_lines.txt").read_text()
    assert engine.resolved_flags(older)["--max-running-requests"] == "2049"
    assert engine.resolved_flags("no such lines") == {}


def test_vllm_says_what_it_chose_in_its_log() -> None:
    engine = VLLMEngine(EngineSpec(name="vllm", version="0.26.0"))
    h100 = (DATA / "gpu-crashlogs" / "vllm-0.26.0-healthy-pruned.log").read_text()
    chosen = engine.resolved_flags(h100)
    assert chosen["--max-num-batched-tokens"] == "21571"  # the scheduler's line
    assert chosen["--max-cudagraph-capture-size"] == "8"  # the compilation config
    assert chosen["--enforce-eager"] == "False"  # the engine's config line
    assert engine.resolved_flags("no such lines") == {}


def test_the_baseline_records_what_the_engine_chose_and_the_screen_starts_there(
    tmp_path: Path,
) -> None:
    space = toy_space(tmp_path / "toy.yaml", baseline={"backend": "a"}, trials=4)
    driver = make_driver(space, tmp_path / "study", seed=0, baseline_launches=1, confirm=0)

    def toy_chosen(text: str) -> dict[str, str]:  # the toy prints what it runs with
        found = re.search(r"toy server: backend=\S+ x=(\S+) y=(\S+)", text)
        return {"--x": found[1], "--y": found[2]} if found else {}

    driver.engine.resolved_flags = toy_chosen
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    trials = driver.study.get_trials(deepcopy=False)
    assert trials[0].user_attrs[DEFAULTS] == {"x": 0.5, "y": 1}  # the toy's own defaults
    records = Ledger(driver.study).trials()
    first = next(t for t in records if not t.baseline and t.outcome is Outcome.OK)
    assert (first.config["x"], first.config["y"]) == (0.5, 1), first.config


def test_a_baseline_that_sets_nothing_is_not_launched_again_as_the_screen_start(
    tmp_path: Path,
) -> None:
    """SGLang at 512 streams on an H100 (2026-12-07): the space's baseline set nothing, and
    the second launch ran exactly what SGLang had chosen (8,116 against the baseline's 8,119
    tok/s; 2m50s of the GPU for nothing). The baseline ran at the chosen values: the search's
    first launch moves one setting from them."""
    space = toy_space(tmp_path / "toy.yaml", baseline={}, trials=4)
    driver = make_driver(space, tmp_path / "study", seed=0, baseline_launches=1, confirm=0)

    def toy_chosen(text: str) -> dict[str, str]:  # the toy prints what it runs with
        found = re.search(r"toy server: backend=(\S+) x=(\S+) y=(\S+)", text)
        return {"--backend": found[1], "--x": found[2], "--y": found[3]} if found else {}

    driver.engine.resolved_flags = toy_chosen
    try:
        driver.run()
    finally:
        driver.executor.shutdown()
    chosen = {"backend": "a", "x": 0.5, "y": 1}  # the toy's own defaults
    assert driver.study.get_trials(deepcopy=False)[0].user_attrs[DEFAULTS] == chosen
    searched = [t.config for t in Ledger(driver.study).trials() if not t.baseline]
    assert searched and chosen not in searched, searched
    assert sum(searched[0][k] != v for k, v in chosen.items()) == 1, searched[0]
