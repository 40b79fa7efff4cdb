"""The ``workload:`` section: every form it takes, and each mistake as ``FILE:LINE: field``.

Prompt files are read by the loader (relative to the space file's folder) into a capped
sample carried in the spec, so a trial on a node without the file still has its prompts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from space_helpers import BASE

from autotune.errors import ConfigError
from autotune.models import MAX_ITEMS, LengthDist, Workload
from autotune.space import load, load_text


def _workload(body: str) -> str:
    return BASE + "workload:\n" + body


# (id, workload body with #< on the expected line, field, message fragment)
CASES: list[tuple[str, str, str, str]] = [
    (
        "uniform-missing-high",
        "  prompt_len: {dist: uniform, low: 8}  #<\n",
        "workload.prompt_len.high",
        "a uniform length needs high",
    ),
    (
        "normal-missing-std",
        "  output_len:  #<\n    dist: normal\n    mean: 100\n",
        "workload.output_len.std",
        "a normal length needs std",
    ),
    (
        "uniform-low-above-high",
        "  prompt_len: {dist: uniform, low: 9, high: 3}  #<\n",
        "workload.prompt_len.low",
        "low 9 is above high 3",
    ),
    (
        "unknown-dist",
        "  prompt_len: {dist: zipf, low: 1, high: 3}  #<\n",
        "workload.prompt_len.dist",
        "is not uniform or normal",
    ),
    ("length-word", "  prompt_len: long  #<\n", "workload.prompt_len", "'long' is not a length"),
    ("length-zero", "  output_len: 0  #<\n", "workload.output_len", "below 1"),
    (
        "dataset-without-file",
        "  output_len: dataset  #<\n",
        "workload.output_len",
        "needs prompts from a file",
    ),
    (
        "arrival-without-rate",
        "  arrival: gamma  #<\n",
        "workload.arrival",
        "is for an open loop (set rate",
    ),
    (
        "concurrency-with-rate",
        "  rate: 4\n  concurrency: 8  #<\n",
        "workload.concurrency",
        "max_concurrency",
    ),
    (
        "burstiness-with-poisson",
        "  rate: 4\n  burstiness: 0.5  #<\n",
        "workload.burstiness",
        "set arrival: gamma",
    ),
    (
        "count-and-duration",
        "  num_requests: 10  #<\n  duration_s: 30\n",
        "workload.num_requests",
        "not both",
    ),
    (
        "peak-with-rate",
        "  rate: 2\n  peak_concurrency: 64  #<\n",
        "workload.peak_concurrency",
        "closed-loop",
    ),
    (
        "jsonl-without-path",
        "  prompts: {source: jsonl}  #<\n",
        "workload.prompts.path",
        "needs path",
    ),
    (
        "path-on-generated",
        "  prompts:\n    path: x.jsonl  #<\n",
        "workload.prompts.path",
        "path is for source jsonl or sharegpt",
    ),
    (
        "field-of-another-source",
        "  prompts:\n    source: shared_prefix\n    min_len: 3  #<\n",
        "workload.prompts.min_len",
        "not used by source shared_prefix",
    ),
    (
        "unknown-source",
        "  prompts: {source: parquet}  #<\n",
        "workload.prompts.source",
        "got 'parquet'",
    ),
    (
        "unknown-endpoint",
        "  endpoint: /v1/chat  #<\n",
        "workload.endpoint",
        "/v1/chat/completions",
    ),
    (
        "items-by-hand",
        "  prompts:\n    source: jsonl\n    path: p.jsonl\n    items: []  #<\n",
        "workload.prompts.items",
        "set by autotune",
    ),
    (
        "duration-too-long",
        "  duration_s: 3600  #<\n",
        "workload.duration_s",
        "less than or equal to 600",
    ),
    (
        "missing-file",
        "  prompts: {source: jsonl, path: nowhere.jsonl}  #<\n",
        "workload.prompts.path",
        "cannot read",
    ),
]


def _line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if "#<" in line)


@pytest.mark.parametrize(
    ("body", "field", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_workload_errors_name_file_line_and_field(body: str, field: str, fragment: str) -> None:
    text = _workload(body)
    with pytest.raises(ConfigError) as info:
        load_text(text, "t.yaml")
    err = info.value
    message = str(err)
    assert message.startswith(f"t.yaml:{_line(text)}: {field}: "), message
    assert fragment in message, message
    assert "\n" not in message


def test_simple_form_is_todays_workload() -> None:
    spec = load_text(_workload("  concurrency: 16\n  prompt_len: 32\n  output_len: 8\n"), "t.yaml")
    w = spec.workload
    assert (w.concurrency, w.prompt_len, w.output_len, w.rate, w.prompts.source) == (
        16,
        32,
        8,
        None,
        "generated",
    )
    assert not w.open_loop


def test_every_form_loads() -> None:
    text = _workload(
        "  endpoint: /v1/chat/completions\n"
        "  rate: 2.5\n  arrival: gamma\n  burstiness: 0.25\n  max_concurrency: 64\n"
        "  duration_s: 30\n  turns: 3\n"
        "  prompt_len: {dist: normal, mean: 200, std: 50, low: 16, high: 400}\n"
        "  output_len: {dist: uniform, low: 10, high: 20}\n"
        "  prompts: {source: shared_prefix, prefix_len: 300, groups: 4, per_group: 8}\n"
    )
    w = load_text(text, "t.yaml").workload
    assert w.open_loop and w.rate == 2.5 and w.burstiness == 0.25
    assert w.prompt_len == LengthDist(dist="normal", mean=200, std=50, low=16, high=400)
    assert (w.prompts.groups, w.prompts.per_group, w.turns) == (4, 8, 3)
    # It crosses hosts as JSON and comes back the same.
    assert Workload.model_validate_json(w.model_dump_json()) == w


def test_jsonl_file_is_read_relative_to_the_space_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    lines = [{"text": f"question {i} " * 3, "n": 5 + i} for i in range(10)]
    (data / "p.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    space = tmp_path / "space.yaml"
    space.write_text(
        _workload(
            "  output_len: dataset\n"
            "  prompts: {source: jsonl, path: data/p.jsonl, prompt_field: text, output_field: n}\n"
        )
    )
    w = load(space).workload
    assert w.prompt_len == "dataset" and w.prompts.path == str(data / "p.jsonl")
    assert sorted(i.output_len or 0 for i in w.prompts.items) == [5 + i for i in range(10)]
    assert {i.turns[0] for i in w.prompts.items} == {x["text"] for x in lines}


def test_jsonl_bad_line_names_the_data_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"prompt": "a b c"}\n{"prompt": 3}\n')
    space = tmp_path / "space.yaml"
    space.write_text(_workload("  output_len: 9\n  prompts: {source: jsonl, path: p.jsonl}\n"))
    with pytest.raises(ConfigError) as info:
        load(space)
    message = str(info.value)
    assert message.startswith(f"{space}:7: workload.prompts.path: "), message
    assert f"{tmp_path / 'p.jsonl'}:2: no text under 'prompt'" in message


def test_jsonl_dataset_lengths_need_the_field_on_every_line(tmp_path: Path) -> None:
    (tmp_path / "p.jsonl").write_text('{"prompt": "a b c", "output_len": 4}\n{"prompt": "d"}\n')
    space = tmp_path / "space.yaml"
    space.write_text(_workload("  prompts: {source: jsonl, path: p.jsonl}\n"))
    with pytest.raises(ConfigError, match=r"p.jsonl:2: no 'output_len'"):
        load(space)
    space.write_text(_workload("  output_len: 32\n  prompts: {source: jsonl, path: p.jsonl}\n"))
    assert len(load(space).workload.prompts.items) == 2


def _conv(*turns: str) -> dict[str, object]:
    roles = ["human", "gpt"] * len(turns)
    return {
        "id": "x",
        "conversations": [{"from": r, "value": v} for r, v in zip(roles, turns, strict=False)],
    }


def test_sharegpt_conversations_are_filtered_like_the_peer_tools(tmp_path: Path) -> None:
    long = "word " * 2000  # 2500 estimated tokens: over max_prompt_len
    data = [
        _conv(
            "how do I sort a list in python?",
            "use sorted(x) or x.sort() in place",
            "and reversed?",
            "sorted(x, reverse=True)",
        ),
        _conv("hi"),  # one turn: nothing to answer
        _conv("ok", "a fine answer that is long enough"),  # prompt under min_len
        _conv(long, "short answer here"),
        {"id": "bad", "conversations": "not a list"},
    ]
    (tmp_path / "sg.json").write_text(json.dumps(data))
    space = tmp_path / "space.yaml"
    space.write_text(_workload("  turns: 2\n  prompts: {source: sharegpt, path: sg.json}\n"))
    items = load(space).workload.prompts.items
    assert len(items) == 1
    item = items[0]
    assert item.turns == ("how do I sort a list in python?", "and reversed?")
    assert item.output_len == item.answer_lens[0] == 9  # 35 characters, 4 a token
    assert len(item.answer_lens) == 2


def test_a_large_file_travels_as_a_capped_sample(tmp_path: Path) -> None:
    lines = [json.dumps({"prompt": f"p{i} x y z"}) for i in range(MAX_ITEMS + 500)]
    (tmp_path / "p.jsonl").write_text("\n".join(lines))
    space = tmp_path / "space.yaml"
    space.write_text(_workload("  output_len: 16\n  prompts: {source: jsonl, path: p.jsonl}\n"))
    w = load(space).workload
    assert len(w.prompts.items) == MAX_ITEMS
    # Seeded: the same sample every load.
    assert load(space).workload.prompts.items == w.prompts.items


def test_docs_field_reference_is_the_models() -> None:
    from autotune.space.workload import reference

    doc = (Path(__file__).resolve().parents[2] / "docs" / "workloads.md").read_text()
    assert doc.endswith(reference()), "regenerate: docs/workloads.md's field reference"


def test_a_swept_copy_crosses_hosts() -> None:
    # A load sweep sets rate on a copy of a closed-loop workload; the node validates the
    # JSON it gets without the space file's strictness.
    closed = Workload(concurrency=16, peak_concurrency=32, num_requests=10)
    swept = closed.model_copy(update={"rate": 4.0})
    back = Workload.model_validate_json(swept.model_dump_json())
    assert back.open_loop and back.concurrency == 16
