"""Errors of ``space.load``: each names ``FILE:LINE: field:`` exactly.

In the YAML of each case the expected line carries the marker ``#<``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from space_helpers import BASE, dedent

from autotune.errors import ConfigError
from autotune.space import check, check_text, json_schema, known_engines, load, load_text
from autotune.space.schema import StudySpec

P = "  - {name: a, type: int, low: 1, high: 8, flag: --a}\n"
# The same space in block style, for cases that mark a line inside a parameter.
BLOCK = BASE.replace(P, "  - name: a\n    type: int\n    low: 1\n    high: 8\n    flag: --a\n")

CASES: list[tuple[str, str, str | None, str]] = [
    # id, yaml (with #< on the expected line), field, message fragment
    ("yaml-syntax", BASE + "fixed: {args: [--x}  #<\n", None, "invalid YAML"),
    ("yaml-indent", "engine:\n  name: sglang\n model: m  #<\n", None, "invalid YAML"),
    ("yaml-tab", "engine:\n\tname: sglang  #<\n", None, "invalid YAML"),
    ("not-a-mapping", "- a  #<\n- b\n", None, "not a mapping"),
    ("scalar-document", "just text  #<\n", None, "not a mapping"),
    ("null-document", "null  #<\n", None, "not a mapping"),
    ("two-documents", BASE + "---  #<\nmodel: n\n", None, "more than one YAML document"),
    (
        "python-tag",
        BASE.replace("model: m", "model: !!python/object:os.system x  #<"),
        "model",
        "YAML tag 'tag:yaml.org,2002:python/object:os.system' is not allowed",
    ),
    (
        "custom-tag",
        BASE.replace("model: m", "model: !foo x  #<"),
        "model",
        "YAML tag '!foo' is not allowed",
    ),
    ("set-tag", BASE + "rules: !!set {a, b}  #<\n", "rules", "is not allowed"),
    ("binary-tag", BASE + "description: !!binary aGVsbG8=  #<\n", "description", "is not allowed"),
    ("tag-on-key", BASE + "!foo x: 1  #<\n", None, "is not allowed"),
    ("duplicate-key", BASE + "model: n  #<\n", "model", "duplicate key 'model', first on line 2"),
    (
        "duplicate-nested-key",
        BLOCK.replace("  - name: a\n", "  - name: a\n    name: b  #<\n"),
        "parameters[0].name",
        "duplicate key 'name'",
    ),
    (
        "int-key",
        BASE + "1: x  #<\n",
        None,
        "key '1' is a number in YAML, not a string (quote it: '1')",
    ),
    ("bool-key", BASE + "yes: x  #<\n", None, "key 'yes' is a boolean in YAML"),
    ("null-key", BASE + "~: x  #<\n", None, "key '~' is null in YAML"),
    ("list-key", BASE + "? [a, b]  #<\n: x\n", None, "a key must be a plain string"),
    (
        "recursive-alias",
        BASE + "description: &a [*a]  #<\n",
        "description[0]",
        "contains it (recursive)",
    ),
    ("merge-not-mapping", BASE + "fixed:\n  <<: 3  #<\n", "fixed", "'<<' needs a mapping"),
    (
        "unknown-top-key",
        BASE + "paramters: []  #<\n",
        "paramters",
        "unknown key 'paramters'; did you mean 'parameters'?",
    ),
    (
        "unknown-param-key",
        BASE.replace("flag: --a}", "flag: --a,\n      lo: 0}  #<"),
        "parameters[0].lo",
        "unknown key 'lo'; did you mean 'low'?",
    ),
    (
        "unknown-engine-key",
        "engine: {name: sglang, gpu: 8}  #<\nmodel: m\nparameters:\n" + P,
        "engine.gpu",
        "did you mean 'gpus'?",
    ),
    (
        "unknown-workload-key",
        BASE + "workload:\n  concurency: 4  #<\n",
        "workload.concurency",
        "did you mean 'concurrency'?",
    ),
    ("source-key", BASE + "source: x.yaml  #<\n", "source", "'source' is set by autotune"),
    (
        "missing-model",
        "engine: {name: sglang}  #<\nparameters:\n" + P,
        "model",
        "required key 'model' is missing (add it: Model path or hub id",
    ),
    (
        "missing-type",
        BASE + "  - {name: b, flag: --b}  #<\n",
        "parameters[1].type",
        "required key 'type' is missing",
    ),
    (
        "wrong-scalar-type",
        BLOCK.replace("low: 1", "low: abc  #<"),
        "parameters[0].low",
        "Input should be a valid number",
    ),
    (
        "wrong-literal",
        BLOCK.replace("type: int", "type: integer  #<"),
        "parameters[0].type",
        "(got 'integer'; did you mean 'int'?)",
    ),
    (
        "bad-pattern",
        BLOCK.replace("name: a", "name: 2a  #<"),
        "parameters[0].name",
        "does not match",
    ),
    (
        "mapping-expected",
        "engine: sglang  #<\nmodel: m\nparameters:\n" + P,
        "engine",
        "expected a mapping of keys here: name, version",
    ),
    (
        "list-expected",
        BASE.replace("parameters:\n" + P, "parameters: a  #<\n"),
        "parameters",
        "expected a list",
    ),
    (
        "empty-parameters",
        BASE.replace("parameters:\n" + P, "parameters: []  #<\n"),
        "parameters",
        "at least 1 item",
    ),
    (
        "union-choice",
        BASE + "  - {name: c, type: categorical, flag: --c, choices: [[1]]}  #<\n",
        "parameters[1].choices[0]",
        "a valid string or a valid integer",
    ),
    ("nan", BLOCK.replace("high: 8", "high: .nan  #<"), "parameters[0].high", "finite number"),
    (
        "two-targets",
        BASE + "  - {name: b, type: int, low: 1, high: 2, flag: --b, env: B}  #<\n",
        "parameters[1]",
        "give exactly one of 'flag', 'env' or 'map'",
    ),
    (
        "low-above-high",
        BASE + "  - name: b\n    type: int\n    low: 9  #<\n    high: 2\n    flag: --b\n",
        "parameters[1].low",
        "low (9) is greater than high (2) (swap them)",
    ),
    (
        "step-not-dividing",
        BASE + "  - name: b\n    type: int\n    low: 64\n    high: 500  #<\n"
        "    step: 32\n    flag: --b\n",
        "parameters[1].high",
        "(use high: 480)",
    ),
    (
        "float-step",
        BASE + "  - name: b\n    type: float\n    low: 0.1\n    high: 0.95  #<\n"
        "    step: 0.1\n    flag: --b\n",
        "parameters[1].high",
        "(use high: 0.9)",
    ),
    (
        "log-low-zero",
        BASE + "  - name: b\n    type: float\n    low: 0  #<\n    high: 1\n"
        "    log: true\n    flag: --b\n",
        "parameters[1].low",
        "log scale needs low > 0",
    ),
    (
        "int-fraction",
        BASE + "  - name: b\n    type: int\n    low: 1\n    high: 2.5  #<\n    flag: --b\n",
        "parameters[1].high",
        "must be a whole number",
    ),
    (
        "choices-on-int",
        BASE + "  - name: b\n    type: int\n    low: 1\n    high: 2\n"
        "    choices: [1]  #<\n    flag: --b\n",
        "parameters[1].choices",
        "'choices' is for",
    ),
    (
        "equal-choices",
        BASE + "  - name: b\n    type: categorical\n    choices:\n      - 1\n"
        "      - true  #<\n    flag: --b\n",
        "parameters[1].choices[1]",
        "which are equal",
    ),
    (
        "map-missing",
        BASE + "  - name: b\n    type: categorical\n    choices: [x, y]\n"
        "    map:  #<\n      x: {args: [--x]}\n",
        "parameters[1].map",
        "missing ['y']",
    ),
    (
        "map-on-int",
        BASE + "  - name: b\n    type: int\n    low: 1\n    high: 2\n    map: {}  #<\n",
        "parameters[1].map",
        "'map' applies to categorical and bool",
    ),
    (
        "bool-style-on-env",
        BASE + "  - name: b\n    type: bool\n    env: B\n    bool_style: value  #<\n",
        "parameters[1].bool_style",
        "applies to a bool parameter",
    ),
    (
        "reserved-name",
        BASE + "  - {name: max, type: bool, flag: --m}  #<\n",
        "parameters[1].name",
        "'max' is reserved",
    ),
    (
        "duplicate-param",
        BASE + "  - {name: a, type: bool, flag: --b}  #<\n",
        "parameters[1].name",
        "duplicate parameter name 'a'",
    ),
    (
        "when-unknown",
        BASE + "  - {name: b, type: bool, flag: --b, when: aa > 1}  #<\n",
        "parameters[1].when",
        "condition names unknown parameter 'aa'; did you mean 'a'?",
    ),
    (
        "when-unquoted-string",
        BASE + "  - {name: b, type: bool, flag: --b, when: a == x}  #<\n",
        "parameters[1].when",
        "quote strings",
    ),
    (
        "when-self",
        BASE + "  - {name: b, type: bool, flag: --b, when: not b}  #<\n",
        "parameters[1].when",
        "refers to 'b' itself",
    ),
    (
        "when-cycle",
        BASE + "  - {name: b, type: bool, flag: --b, when: c}  #<\n"
        "  - {name: c, type: bool, flag: --c, when: b}\n",
        "parameters[1].when",
        "conditions and bounds form a cycle: b -> c -> b",
    ),
    (
        "when-syntax",
        BASE + "  - {name: b, type: bool, flag: --b, when: 'a >'}  #<\n",
        "parameters[1].when",
        "is not valid syntax",
    ),
    (
        "when-attribute",
        BASE + "  - {name: b, type: bool, flag: --b, when: a.real}  #<\n",
        "parameters[1].when",
        "uses attribute access",
    ),
    (
        "constraint-call",
        BASE + "constraints:\n  - a < 4\n  - __import__('os')  #<\n",
        "constraints[1]",
        "a call to __import__",
    ),
    (
        "constraint-unknown",
        BASE + "constraints: [b < 4]  #<\n",
        "constraints[0]",
        "constraint names unknown parameter 'b'",
    ),
    (
        "baseline-range",
        BASE + "baseline:\n  a: 9  #<\n",
        "baseline.a",
        "baseline value 9 of 'a' is outside its range 1..8",
    ),
    (
        "baseline-unknown",
        BASE + "baseline:\n  a: 2\n  aa: 1  #<\n",
        "baseline.aa",
        "baseline names unknown parameter 'aa'; did you mean 'a'?",
    ),
    (
        "baseline-type",
        BASE + "  - {name: b, type: bool, flag: --b}\nbaseline:\n  b: 1  #<\n",
        "baseline.b",
        "values [False, True]",
    ),
    (
        "baseline-off-grid",
        BASE + "  - {name: b, type: int, low: 0, high: 8, step: 2, env: B}\n"
        "baseline:\n  b: 3  #<\n",
        "baseline.b",
        "range 0..8 step 2",
    ),
    (
        "unknown-engine",
        "engine:\n  name: sglangx  #<\nmodel: m\nparameters:\n" + P,
        "engine.name",
        "unknown engine 'sglangx'; did you mean 'sglang'?",
    ),
    (
        "bad-rule-regex",
        BASE + "rules:\n  - id: r\n    pattern: '(('  #<\n    cause: unknown\n",
        "rules[0].pattern",
        "not a valid regular expression",
    ),
    (
        "bad-rule-cause",
        BASE + "rules:\n  - {id: r, pattern: x, cause: oom}  #<\n",
        "rules[0].cause",
        "Input should be",
    ),
    (
        "bad-workload",
        BASE + "workload:\n  concurrency: 0  #<\n",
        "workload.concurrency",
        "greater than or equal to 1",
    ),
    (
        "bad-direction",
        BASE + "objective: {direction: maximise}  #<\n",
        "objective.direction",
        "did you mean 'maximize'?",
    ),
    (
        "objectives-duplicate",
        BASE + "objective:\n  metrics:\n    - {metric: output_tok_s, direction: maximize}\n"
        "    - {metric: output_tok_s, direction: minimize}  #<\n",
        "objective.metrics[1].metric",
        "listed twice",
    ),
    (
        "objectives-bad-direction",
        BASE + "objective:\n  metrics:\n    - {metric: output_tok_s, direction: maximize}\n"
        "    - {metric: ttft_p99_ms, direction: lower}  #<\n",
        "objective.metrics[1].direction",
        "maximize",
    ),
    (
        "objectives-missing-direction",
        BASE + "objective:\n  metrics:\n    - {metric: output_tok_s, direction: maximize}\n"
        "    - {metric: ttft_p99_ms}  #<\n",
        "objective.metrics[1].direction",
        "required",
    ),
    (
        "objectives-empty",
        BASE + "objective:\n  metrics: []  #<\n",
        "objective.metrics",
        "metrics is empty",
    ),
    (
        "objectives-disagree",
        BASE + "objective:\n  metric: request_s  #<\n  metrics:\n"
        "    - {metric: output_tok_s, direction: maximize}\n",
        "objective.metric",
        "disagrees with the first of metrics",
    ),
]


def _expected_line(text: str) -> int:
    lines = [i for i, line in enumerate(text.splitlines(), 1) if "#<" in line]
    assert len(lines) == 1, "a case marks exactly one line"
    return lines[0]


@pytest.mark.parametrize(
    ("text", "field", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_error_names_file_line_and_field(text: str, field: str | None, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(text, "t.yaml")
    err = info.value
    line = _expected_line(text)
    prefix = f"t.yaml:{line}: " + (f"{field}: " if field else "")
    message = str(err)
    assert message.startswith(prefix), message
    assert fragment in message
    assert "\n" not in message
    assert (err.file, err.line, err.field) == ("t.yaml", line, field)


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n"])
def test_empty_file(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_text(text, "t.yaml")
    assert str(info.value).startswith("t.yaml:1: the file is empty")


def test_billion_laughs_is_refused() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    with pytest.raises(ConfigError, match="expands to more than"):
        load_text("\n".join(lines) + "\n", "t.yaml")


def test_many_aliases_are_refused() -> None:
    text = BASE + "x: &v 1\n" + "".join(f"y{i}: *v\n" for i in range(101))
    with pytest.raises(ConfigError) as info:
        load_text(text, "t.yaml")
    assert str(info.value).startswith(f"t.yaml:{6 + 100}: more than 100 aliases")


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(ConfigError, match="nesting is too deep"):
        load_text(BASE + "description: " + "[" * 100 + "]" * 100 + "\n", "t.yaml")


def test_very_deep_nesting_does_not_crash_the_parser() -> None:
    with pytest.raises(ConfigError):
        load_text(BASE + "description: " + "[" * 5000 + "]" * 5000 + "\n", "t.yaml")


def test_aliases_and_merge_keys_work(space: Callable[[str], StudySpec]) -> None:
    spec = space(
        """
        engine: {name: sglang}
        model: m
        parameters:
          - &first {name: a, type: int, low: 1, high: 8, flag: --a}
          - {<<: *first, name: b, flag: --b, high: 4}
        """
    )
    b = spec.parameter("b")
    assert (b.type, b.low, b.high, b.flag) == ("int", 1, 4, "--b")


def test_merge_does_not_move_own_key_lines(failure: Callable[[str], ConfigError]) -> None:
    err = failure(
        """
        engine: {name: sglang}
        model: m
        parameters:
          - &first {name: a, type: int, low: 1, high: 8, flag: --a}
          - <<: *first
            name: b
            low: 9
        """
    )
    assert (err.line, err.field) == (7, "parameters[1].low")


def test_map_keys_may_be_bools_and_numbers(space: Callable[[str], StudySpec]) -> None:
    spec = space(
        """
        engine: {name: sglang}
        model: m
        parameters:
          - name: s
            type: bool
            map:
              true: {args: [--on]}
              false: {env: {X: 0}}
          - name: n
            type: categorical
            choices: [1, 2.5]
            map: {1: {args: [--one]}, 2.5: {}}
        """
    )
    assert spec.parameter("s").map is not None
    assert spec.parameter("s").map["false"].env == {"X": "0"}
    assert set(spec.parameter("n").map or {}) == {"1", "2.5"}


def test_dates_stay_text(space: Callable[[str], StudySpec]) -> None:
    spec = space(BASE + "description: 2024-01-01\n")
    assert spec.description == "2024-01-01"


def test_valid_space_gets_its_source(space: Callable[[str], StudySpec]) -> None:
    spec = space(BASE)
    assert spec.source == "t.yaml"
    assert spec.parameter("a").high == 8


def test_load_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "baseline: {a: 2}\n")
    spec = load(path)
    assert spec.source == str(path)
    assert spec.baseline == {"a": 2}


def test_load_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: cannot read the file")


def test_load_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(BASE.encode() + b"description: \xff\xfe\n")
    with pytest.raises(ConfigError) as info:
        load(path)
    assert str(info.value) == f"{path}:5: not UTF-8 text (save the file as UTF-8)"


def test_load_too_large(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(BASE + "description: " + "x" * (1 << 20) + "\n")
    with pytest.raises(ConfigError, match="at most"):
        load(path)


def test_control_characters_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_text(BASE + "description: \x07\n", "t.yaml")


def test_check_lists_every_problem_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        dedent(
            """
            engine: {name: nope}
            model: m
            parameters:
              - {name: a, type: int, low: 1, high: 8, flag: --a, lo: 1}
              - {name: b, type: float, low: x, high: 1, env: B}
            """
        )
    )
    errors = check(path)
    assert [(e.line, e.field) for e in errors] == [
        (1, "engine.name"),
        (4, "parameters[0].lo"),
        (5, "parameters[1].low"),
    ]
    assert check_text(BASE, "t.yaml") == []
    assert [e.message for e in check(tmp_path / "missing.yaml")][0].startswith("cannot read")


def test_unknown_engine_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        load_text(BASE.replace("sglang", "zzz"), "t.yaml")
    for name in known_engines():
        assert name in info.value.message


def test_known_engines_include_the_main_ones() -> None:
    assert {"sglang", "vllm", "transformers", "command"} <= known_engines()


def test_json_schema_describes_the_file() -> None:
    schema = json_schema()
    assert schema["title"] == "autotune search space"
    assert schema["$id"].startswith("urn:autotune")
    assert "source" not in schema["properties"]
    assert {"engine", "model", "parameters"} <= set(schema["required"])
    parameter = schema["$defs"]["Parameter"]["properties"]
    assert parameter["when"]["description"].startswith("Condition over other parameters")
    yaml.safe_dump(schema)  # plain JSON types only


def test_several_objectives_set_the_primary_and_one_metric_still_works() -> None:
    multi = load_text(
        BASE + "objective:\n  metrics:\n    - {metric: output_tok_s, direction: maximize}\n"
        "    - {metric: ttft_p99_ms, direction: minimize}\n",
        "t.yaml",
    )
    assert multi.objective.multi and multi.objective.metric == "output_tok_s"
    assert multi.objective.objectives == [
        ("output_tok_s", "maximize"),
        ("ttft_p99_ms", "minimize"),
    ]
    one = load_text(BASE + "objective: {metric: ttft_p99_ms, direction: minimize}\n", "t.yaml")
    assert not one.objective.multi
    assert one.objective.objectives == [("ttft_p99_ms", "minimize")]
    # A study keeps its space as JSON and a resume compares it: one objective dumps as it did
    # before ``metrics`` existed, so older studies resume.
    assert one.model_dump(mode="json")["objective"] == {
        "metric": "ttft_p99_ms",
        "direction": "minimize",
    }
    # A dumped spec loads back (the study keeps its space as JSON).
    again = StudySpec.model_validate(multi.model_dump(mode="json"))
    assert again.objective == multi.objective
