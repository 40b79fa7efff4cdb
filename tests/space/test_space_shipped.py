"""Every space file shipped in search_spaces/ loads, renders its baseline, and uses real flags."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from space_helpers import ROOT, SPACES

from autotune.space import load, load_text, render, violations
from autotune.space.schema import StudySpec

FILES = sorted(SPACES.glob("*.yaml"))
FLAGS = ROOT / "src" / "autotune" / "engines" / "flags"


def test_there_are_space_files() -> None:
    assert {"verify.yaml", "throughput.yaml", "vllm-throughput.yaml"} <= {f.name for f in FILES}


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_loads_and_renders_its_baseline(path: Path) -> None:
    spec = load(path)
    assert spec.source == str(path)
    if spec.baseline is not None:
        args, env = render(spec, spec.baseline)
        assert args[: len(spec.fixed.args)] == spec.fixed.args
        assert violations(spec, spec.baseline) == []


def _table(spec: StudySpec) -> set[str] | None:
    """The engine's flag names from the bundled table, if there is one for this version."""
    from autotune.engines.flagtable import load_table

    table = load_table(spec.engine.name, spec.engine.version)
    return None if table is None else set(table.flags)


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_uses_only_real_flags(path: Path) -> None:
    spec = load(path)
    known = _table(spec)
    if known is None:
        pytest.skip(f"no flag table for {spec.engine.name} {spec.engine.version}")
    used = [a for a in spec.fixed.args if a.startswith("--")]
    for p in spec.parameters:
        if p.flag:
            used.append(p.flag)
        for launch in (p.map or {}).values():
            used += [a for a in launch.args if a.startswith("--")]
    assert sorted(set(used) - known) == []


def test_verify_is_the_campaign() -> None:
    spec = load(SPACES / "verify.yaml")
    assert (spec.engine.name, spec.engine.version, spec.engine.gpus) == ("sglang", "0.5.9", 8)
    assert spec.baseline is not None
    args, env = render(spec, spec.baseline)
    assert args == [
        "--tp-size",
        "8",
        "--trust-remote-code",
        "--cuda-graph-max-bs",
        "512",
        "--mem-fraction-static",
        "0.55",
        "--disable-custom-all-reduce",
        "--moe-a2a-backend",
        "none",
    ]
    assert env == {}  # NCCL defaults in the baseline
    # the campaign's 9% win and its fewer-channels experiment are inside the space
    assert spec.parameter("cuda_graph_max_bs").contains(128)
    campaign = {
        "NCCL_MIN_NCHANNELS": 1,
        "NCCL_MAX_NCHANNELS": 2,
        "NCCL_BUFFSIZE": 131072,
        "NCCL_NTHREADS": 64,
    }
    assert all(spec.parameter(k).contains(v) for k, v in campaign.items())
    assert violations(spec, campaign) == []
    # the minimum channel count is bounded by the maximum (a dependent range, no constraint
    # for the search to be refused by)
    assert spec.parameter("NCCL_MIN_NCHANNELS").ref() == ("high", "NCCL_MAX_NCHANNELS")
    assert not any("NCHANNELS" in c for c in spec.constraints)
    eagle = {"speculative": True, "spec_steps": 3, "spec_topk": 1, "spec_draft_tokens": 4}
    args, _ = render(spec, eagle)
    assert args[args.index("--speculative-algorithm") + 1] == "EAGLE3"
    assert violations(spec, eagle) == []
    assert violations(spec, {**eagle, "spec_draft_tokens": 3}) == [
        "spec_topk != 1 or spec_draft_tokens == spec_steps + 1"
    ]


def test_the_documented_examples_load() -> None:
    text = (ROOT / "docs" / "search-space.md").read_text()
    blocks = [b.split("```")[0] for b in text.split("```yaml\n")[1:]]
    whole = [b for b in blocks if b.startswith("name:")]
    assert whole, "the reference has a complete example"
    for block in whole:
        load_text(block, "docs/search-space.md")
    for block in blocks:  # fragments are valid YAML
        assert yaml.safe_load(block) is not None
