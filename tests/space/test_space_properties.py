"""Whatever the input, the loader and the expression parser fail only with ConfigError."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from space_helpers import BASE

from autotune.errors import ConfigError
from autotune.space import load_text, render, violations
from autotune.space.expr import parse
from autotune.space.schema import StudySpec

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

YAML_ALPHABET = st.sampled_from(
    list("abcxyz019 -:_.,'\"[]{}#&*!|>%@`\n\t?~=<")
    + [
        "engine",
        "name",
        "sglang",
        "model",
        "parameters",
        "type",
        "int",
        "low",
        "high",
        "flag",
        "--a",
        "when",
        "baseline",
        "true",
        "null",
        "!!python/object",
        "<<",
        "---",
        "  - ",
        ": ",
        "\n  ",
        "&a",
        "*a",
        "!!binary",
        "1e9",
        ".nan",
    ]
)


def _outcome(text: str) -> StudySpec | None:
    try:
        return load_text(text, "h.yaml")
    except ConfigError as exc:
        assert str(exc).startswith("h.yaml")
        assert "\n" not in str(exc)
        return None


@SETTINGS
@given(st.text(max_size=300))
def test_any_text_loads_or_is_a_config_error(text: str) -> None:
    _outcome(text)


@SETTINGS
@given(st.lists(YAML_ALPHABET, max_size=60).map("".join))
def test_yaml_like_text_loads_or_is_a_config_error(text: str) -> None:
    _outcome(text)


@SETTINGS
@given(st.lists(YAML_ALPHABET, max_size=30).map("".join))
def test_base_plus_noise_loads_or_is_a_config_error(noise: str) -> None:
    _outcome(BASE + noise)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(
        [
            "int",
            "float",
            "categorical",
            "bool",
            "--a",
            "a",
            "b",
            "a > 1",
            "increasing",
            "sglang",
            "vllm",
            "value",
            "store_true",
        ]
    ),
)
KEYS = st.sampled_from(
    [
        "name",
        "type",
        "flag",
        "env",
        "map",
        "low",
        "high",
        "step",
        "log",
        "choices",
        "when",
        "memory",
        "bool_style",
        "args",
        "true",
        "false",
        "x",
    ]
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=12,
)
PARAMETER = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["a", "b", "c"]),
        "type": st.sampled_from(["int", "float", "categorical", "bool"]),
    },
    optional={
        "flag": st.sampled_from(["--a", "--b", "-x", "bad flag"]),
        "env": st.sampled_from(["A", "B"]),
        "low": SCALARS,
        "high": SCALARS,
        "step": SCALARS,
        "log": st.booleans(),
        "choices": st.lists(SCALARS, max_size=4),
        "when": st.sampled_from(["a", "b > 1", "not c", "a.b", "a >", "zz"]),
        "map": st.dictionaries(
            st.sampled_from(["true", "false", "x", "1"]),
            st.fixed_dictionaries(
                {},
                optional={
                    "args": st.lists(st.text(max_size=4), max_size=2),
                    "env": st.dictionaries(st.sampled_from(["E"]), SCALARS),
                },
            ),
            max_size=3,
        ),
        "memory": st.sampled_from(["increasing", "decreasing", "up"]),
        "extra": VALUES,
    },
)
DOCUMENT = st.fixed_dictionaries(
    {
        "engine": st.one_of(
            st.fixed_dictionaries({"name": st.sampled_from(["sglang", "vllm", "nope", "SG"])}),
            VALUES,
        ),
        "model": st.one_of(st.just("m"), SCALARS),
        "parameters": st.lists(PARAMETER, max_size=4),
    },
    optional={
        "constraints": st.lists(
            st.sampled_from(["a < b", "a +", "c", "x.y", "a ** 99"]), max_size=2
        ),
        "baseline": st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), SCALARS, max_size=3),
        "workload": st.dictionaries(
            st.sampled_from(["concurrency", "num_requests", "x"]), SCALARS, max_size=2
        ),
        "slo": VALUES,
        "unknown": VALUES,
    },
)


@SETTINGS
@given(DOCUMENT)
def test_generated_documents_load_or_are_config_errors(doc: dict[str, Any]) -> None:
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:
        return
    spec = _outcome(text)
    if spec is None:
        return
    # A valid space renders its baseline and evaluates its constraints without surprises.
    try:
        render(spec, spec.baseline or {})
        violations(spec, spec.baseline or {})
    except ConfigError:
        pass


EXPR_ALPHABET = st.sampled_from(
    list("ab1 0.+-*/%<>=!()[],'\"ifelsnotandor_x")
    + [
        " and ",
        " or ",
        " not ",
        " in ",
        " if ",
        " else ",
        "**",
        "//",
        "==",
        "!=",
        "<=",
        "min(",
        "max(",
        "abs(",
        "int(",
        "float(",
        "round(",
        "log2(",
        "__",
        "lambda",
        ".",
        "None",
        "True",
        "9" * 5,
        "1e308",
        "[1, 2]",
        "(1,)",
        ":=",
        "~",
        "@",
    ]
)
VALUES_FOR_EXPR = st.dictionaries(
    st.sampled_from(["a", "b", "x"]),
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-1000, 1000),
        st.floats(allow_nan=False, allow_infinity=True, width=32),
        st.text(max_size=3),
    ),
)


@SETTINGS
@given(st.text(max_size=100))
def test_any_expression_text_parses_or_is_a_config_error(text: str) -> None:
    try:
        parse(text)
    except ConfigError:
        pass


@SETTINGS
@given(st.lists(EXPR_ALPHABET, max_size=25).map("".join), VALUES_FOR_EXPR)
def test_expressions_parse_and_evaluate_or_are_config_errors(
    text: str, values: dict[str, Any]
) -> None:
    try:
        expr = parse(text)
    except ConfigError:
        return
    try:
        expr.evaluate(values)
    except ConfigError:
        pass
