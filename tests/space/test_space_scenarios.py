"""Scenarios, sweeps, goodput and combine in a space file: valid ones load, bad ones are one
``FILE:LINE: field: message`` through the CLI, and a trial's plan and SLO come from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.cli import main
from autotune.space import load, load_text
from autotune.space.scenarios import combine, plan, slo_bounds

GOOD = """\
engine: {name: sglang}
model: m
parameters:
  - {name: a, type: int, low: 1, high: 8, flag: --a}
objective: {metric: goodput_req_s}
slo: {long.ttft_p99_ms: 9000}
combine:
  how: weighted_mean
  weights: {chat: 3, long: 1}
scenarios:
  - name: chat
    workload: {concurrency: 8}
    goodput: {ttft_ms: 500, tpot_ms: 50}
    slo: {ttft_p99_ms: 1000}
  - name: long
    workload: {concurrency: 2, prompt_len: 4000}
    goodput: {ttft_ms: 5000}
    sweep: {mode: max_under_slo, low: 1, high: 64}
    slo: {e2e_p99_ms: 30000}
"""

IMPLICIT = """\
engine: {name: sglang}
model: m
parameters:
  - {name: a, type: int, low: 1, high: 8, flag: --a}
objective: {metric: max_concurrency_under_slo}
slo: {ttft_p99_ms: 500}
workload: {concurrency: 4}
sweep: {mode: max_under_slo, low: 1, high: 256, probes: 6}
"""


def test_a_space_with_scenarios_loads_into_a_plan() -> None:
    spec = load_text(GOOD, "good.yaml")
    scenarios = plan(spec)
    assert [s.name for s in scenarios] == ["chat", "long"]
    assert scenarios[1].sweep is not None and scenarios[1].workload.prompt_len == 4000
    c = combine(spec)
    assert c is not None and c.weights == {"chat": 3, "long": 1}
    assert c.metrics == {"goodput_req_s": "maximize"}
    assert slo_bounds(spec) == {
        "long.ttft_p99_ms": 9000,
        "chat.ttft_p99_ms": 1000,
        "long.e2e_p99_ms": 30000,
    }


def test_one_workload_with_a_sweep_is_one_unnamed_scenario() -> None:
    spec = load_text(IMPLICIT, "implicit.yaml")
    (only,) = plan(spec)
    assert only.name == "" and only.slo == {"ttft_p99_ms": 500}
    assert only.sweep is not None and only.sweep.probes == 6
    assert combine(spec) is None and slo_bounds(spec) == {"ttft_p99_ms": 500}


def test_todays_spaces_plan_nothing_new() -> None:
    spec = load(Path(__file__).resolve().parents[2] / "search_spaces" / "throughput.yaml")
    assert plan(spec) == [] and combine(spec) is None and slo_bounds(spec) == spec.slo


BAD = [
    # (what to replace in GOOD, with what, line, field, words of the message)
    (
        "slo: {ttft_p99_ms: 1000}",
        "slo: {ttft_p99: 1000}",
        14,
        "scenarios[0].slo.ttft_p99",
        "unknown metric 'ttft_p99'; did you mean 'ttft_p99_ms'?",
    ),
    (
        "weights: {chat: 3, long: 1}",
        "weights: {chat: 3, longg: 1}",
        9,
        "combine.weights.longg",
        "unknown scenario 'longg'; did you mean 'long'?",
    ),
    (
        "weights: {chat: 3, long: 1}",
        "weights: {chat: 3}",
        9,
        "combine.weights",
        "must name every scenario; missing ['long']",
    ),
    ("how: weighted_mean", "how: worst", 9, "combine.weights", "mean nothing to combine: worst"),
    (
        "    slo: {e2e_p99_ms: 30000}\n",
        "",
        18,
        "scenarios[1].sweep.mode",
        "max_under_slo bisects on the SLO, and there is none",
    ),
    (
        "slo: {long.ttft_p99_ms: 9000}",
        "slo: {ttft_p99_ms: 9000}",
        6,
        "slo.ttft_p99_ms",
        "with several scenarios an SLO names its scenario",
    ),
    (
        "slo: {long.ttft_p99_ms: 9000}",
        "slo: {lng.ttft_p99_ms: 9000}",
        6,
        "slo['lng.ttft_p99_ms']",
        "did you mean 'long'?",
    ),
    (
        "    goodput: {ttft_ms: 500, tpot_ms: 50}\n",
        "",
        5,
        "objective.metric",
        "objective metric 'goodput_req_s' is not reported by scenario 'chat'",
    ),
    (
        "    goodput: {ttft_ms: 500, tpot_ms: 50}\n    slo: {ttft_p99_ms: 1000}",
        "    slo: {goodput_miss_pct: 1}",
        13,
        "scenarios[0].slo.goodput_miss_pct",
        "need a 'goodput:' block",
    ),
    (
        "low: 1, high: 64",
        "low: 64, high: 8",
        18,
        "scenarios[1].sweep.low",
        "low (64) must be below high (8)",
    ),
    ("low: 1, high: 64", "low: 1", 18, "scenarios[1].sweep", "add 'high'"),
    (
        "mode: max_under_slo, low: 1, high: 64",
        "values: [1, 2.5]",
        18,
        "scenarios[1].sweep.values[1]",
        "a concurrency must be a whole number >= 1, got 2.5",
    ),
    ("  - name: long", "  - name: chat", 15, "scenarios[1].name", "duplicate scenario name"),
    (
        "objective: {metric: goodput_req_s}",
        "objective: {metric: goodput_req_s}\nworkload: {concurrency: 3}",
        6,
        "workload",
        "give either 'workload' (one scenario) or 'scenarios'",
    ),
    (
        "workload: {concurrency: 2, prompt_len: 4000}",
        "workload: {rate: 2, prompt_len: 4000}",
        18,
        "scenarios[1].sweep",
        "a sweep over concurrency runs a closed loop, but the workload has a rate",
    ),
    (
        "    goodput: {ttft_ms: 5000}",
        "    goodput: {}",
        17,
        "scenarios[1].goodput",
        "at least one bound",
    ),
]


@pytest.mark.parametrize(("old", "new", "line", "field", "words"), BAD, ids=[b[3] for b in BAD])
def test_bad_scenario_specs_are_one_located_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    line: int,
    field: str,
    words: str,
) -> None:
    assert old in GOOD
    space = tmp_path / "bad.yaml"
    space.write_text(GOOD.replace(old, new, 1))
    assert main(["validate", str(space)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("autotune: error: ") and "\n" not in err, err
    assert f"{space}:{line}: {field}: " in err, err
    assert words in err, err


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        ("sweep: {mode", "combine: {how: worst}\nsweep: {mode", "combine", "applies to several"),
        (
            "metric: max_concurrency_under_slo",
            "metric: max_rate_under_slo",
            "objective.metric",
            "not reported by the workload",
        ),
        ("slo: {ttft_p99_ms: 500}\n", "", "sweep.mode", "bisects on the SLO"),
    ],
)
def test_bad_implicit_sweeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str, words: str
) -> None:
    space = tmp_path / "bad.yaml"
    space.write_text(IMPLICIT.replace(old, new, 1))
    assert main(["validate", str(space)]) == 2
    err = capsys.readouterr().err.strip()
    assert f": {field}: " in err and words in err, err


def test_a_scenarios_prompt_file_is_read_relative_to_the_space(tmp_path: Path) -> None:
    (tmp_path / "docs.jsonl").write_text(
        '{"prompt": "what is in the contract?", "output_len": 16}\n'
    )
    text = GOOD.replace(
        "workload: {concurrency: 8}",
        "workload: {concurrency: 8, prompt_len: dataset, "
        "prompts: {source: jsonl, path: docs.jsonl}}",
    )
    space = tmp_path / "s.yaml"
    space.write_text(text)
    spec = load(space)
    assert spec.scenarios is not None
    items = spec.scenarios[0].workload.prompts.items
    assert [i.turns for i in items] == [("what is in the contract?",)]
    space.write_text(text.replace("docs.jsonl", "missing.jsonl"))
    with pytest.raises(Exception, match=r"s\.yaml:12: scenarios\[0\]\.workload"):
        load(space)


def test_the_examples_in_docs_workloads_load() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "workloads.md").read_text()
    section = text.split("## Scenarios, sweeps and SLOs", 1)[1].split("## Field reference")[0]
    blocks = [b.split("```")[0] for b in section.split("```yaml\n")[1:]]
    assert len(blocks) >= 4
    base = GOOD.split("objective:")[0]  # engine, model, parameters
    for block in blocks:
        load_text(base + block, "docs/workloads.md")
