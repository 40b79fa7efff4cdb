from __future__ import annotations

from typing import Any

import pytest

from autotune.errors import ConfigError
from autotune.space.expr import parse, topo_order

ACCEPT: list[tuple[str, dict[str, Any], Any, frozenset[str]]] = [
    ("a + 1", {"a": 2}, 3, frozenset({"a"})),
    ("a - b * 2", {"a": 10, "b": 3}, 4, frozenset({"a", "b"})),
    ("a / 4", {"a": 2}, 0.5, frozenset({"a"})),
    ("a // 4", {"a": 9}, 2, frozenset({"a"})),
    ("a % 4", {"a": 9}, 1, frozenset({"a"})),
    ("2 ** a", {"a": 10}, 1024, frozenset({"a"})),
    ("-a", {"a": 3}, -3, frozenset({"a"})),
    ("not a", {"a": False}, True, frozenset({"a"})),
    ("a and b", {"a": True, "b": 0}, 0, frozenset({"a", "b"})),
    ("a or b", {"a": 0, "b": 5}, 5, frozenset({"a", "b"})),
    ("1 <= a < 10", {"a": 10}, False, frozenset({"a"})),
    ("1 <= a < 10", {"a": 9}, True, frozenset({"a"})),
    ("p in ['LL', 'LL128']", {"p": "LL"}, True, frozenset({"p"})),
    ("p not in ('LL', 'LL128')", {"p": "Simple"}, True, frozenset({"p"})),
    ("a if c else b", {"a": 1, "b": 2, "c": False}, 2, frozenset({"a", "b", "c"})),
    ("max(a, b) - min(a, b)", {"a": 3, "b": 8}, 5, frozenset({"a", "b"})),
    ("abs(a) + int(2.7) + float(1)", {"a": -1}, 4.0, frozenset({"a"})),
    ("round(a, 1)", {"a": 2.345}, 2.3, frozenset({"a"})),
    ("log2(a)", {"a": 8}, 3.0, frozenset({"a"})),
    ("a == 'x'", {"a": "x"}, True, frozenset({"a"})),
    ("s == true", {"s": True}, True, frozenset({"s"})),
    ("s == False", {"s": False}, True, frozenset({"s"})),
    ("'ab' + s", {"s": "c"}, "abc", frozenset({"s"})),
    # the campaign's speculative constraints
    ("d - 1 <= k + (n - 1) * k ** 2", {"d": 8, "k": 2, "n": 3}, True, frozenset({"d", "k", "n"})),
    ("k != 1 or d == n + 1", {"d": 5, "k": 1, "n": 3}, False, frozenset({"d", "k", "n"})),
]


@pytest.mark.parametrize(("text", "values", "expected", "names"), ACCEPT)
def test_accepts_and_evaluates(
    text: str, values: dict[str, Any], expected: Any, names: frozenset[str]
) -> None:
    expr = parse(text)
    assert expr.names == names
    result = expr.evaluate(values)
    assert result == expected
    assert type(result) is type(expected)


REJECT = [
    ("a.b", "attribute access"),
    ("a.bit_length() < 3", "attribute access (methods)"),
    ("a[0]", "subscripts"),
    ("lambda: 1", "lambda"),
    ("[x for x in a]", "comprehensions"),
    ("{1: 2}", "dict literals"),
    ("__import__('os')", "a call to __import__"),
    ("__class__", "the dunder name"),
    ("open('f')", "a call to open"),
    ("eval('1')", "a call to eval"),
    ("(lambda: 1)()", "a computed function"),
    ("min", "the function 'min' without calling it"),
    ("max(a=1, b=2)", "keyword arguments"),
    ("abs(1, 2)", "abs() takes 1 arguments, got 2"),
    ("min(1)", "min() takes 2 to 64 arguments"),
    ("f'{a}'", "f-strings"),
    ("(a := 1)", "assignment"),
    ("a | b", "bitwise operators"),
    ("a << 2", "shift operators"),
    ("~a", "the ~ operator"),
    ("a is None", "'is'"),
    ("a @ b", "the @ operator"),
    ("a in b", "'in' with something other than a list literal"),
    ("[1, 2]", "a list outside"),
    ("a == [1]", "a list compared"),
    ("b'x'", "a bytes literal"),
    ("1j", "a complex literal"),
    ("...", "a ellipsis literal"),
    ("a +", "not valid syntax"),
    ("import os", "not valid syntax"),
    ("a = 1", "not valid syntax"),
    ("a; b", "not valid syntax"),
    ("1if a else 2", "invalid decimal literal"),
    ("a == '\\d'", "invalid escape sequence"),
    ("", "empty expression"),
    ("   ", "empty expression"),
    ("x" * 3000, "characters long"),
    ("-" * 200 + "a", "nested too deeply"),
    ("a\x00", "null bytes"),
]


@pytest.mark.parametrize(("text", "fragment"), REJECT)
def test_rejects_with_a_message_naming_the_construct(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_not_a_string() -> None:
    with pytest.raises(ConfigError, match="must be a string"):
        parse(3)  # type: ignore[arg-type]


UNSET = [
    # An unset name is None; comparisons with None are False, except explicit == / != None.
    ("x > 1", False),
    ("x < 1", False),
    ("x == 1", False),
    ("x != 1", False),
    ("x in [1, 2]", False),
    ("x not in [1, 2]", False),
    ("x == None", True),
    ("x != None", False),
    ("x == none", True),
    ("None == x", True),
    ("x + 1 > 0", False),
    ("max(x, 1) > 0", False),
    ("not x", True),
    ("x or 3", 3),
    ("y == None", False),
    ("y != None", True),
    ("y != 1", True),
]


@pytest.mark.parametrize(("text", "expected"), UNSET)
def test_unset_values(text: str, expected: Any) -> None:
    assert parse(text).evaluate({"y": 2}) == expected


UNDEFINED = ["a / 0", "a // 0", "a % 0", "log2(0)", "(-1) ** 0.5", "2.0 ** 2000", "int(a / 0)"]


@pytest.mark.parametrize("text", UNDEFINED)
def test_undefined_arithmetic_is_none(text: str) -> None:
    assert parse(text).evaluate({"a": 1}) is None


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("a < 3", {"a": "LL"}),
        ("a - 1", {"a": "x"}),
        ("a * 3", {"a": "x"}),
        ("-a", {"a": "x"}),
        ("9 ** 9 ** 9", {}),
        ("a ** 5000", {"a": 3}),
        ("1.5 ** 20000", {}),
    ],
)
def test_type_errors_and_huge_powers_are_config_errors(text: str, values: dict[str, Any]) -> None:
    expr = parse(text)
    with pytest.raises(ConfigError) as info:
        expr.evaluate(values)
    assert text in str(info.value)


def test_round_with_bad_digits_is_undefined_not_a_crash() -> None:
    assert parse("round(a, 1.5)").evaluate({"a": 1.25}) is None
    assert parse("round(a, 100)").evaluate({"a": 1}) is None  # 10**100 digits: refused


def test_no_python_evaluation_of_names() -> None:
    # A name is looked up in the values only, never in Python's builtins or globals.
    assert parse("print").evaluate({}) is None
    assert parse("print").names == frozenset({"print"})


def test_topo_order_puts_dependencies_first_and_finds_cycles() -> None:
    assert topo_order({"c": {"b"}, "b": {"a"}, "a": set(), "d": set()}) == ["a", "b", "c", "d"]
    assert topo_order({"a": {"unknown"}}) == ["a"]
    with pytest.raises(ValueError, match="a -> b -> a"):
        topo_order({"a": {"b"}, "b": {"a"}})
