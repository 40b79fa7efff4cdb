"""argv helpers: both flag forms, negative numbers as values, last occurrence wins."""

from __future__ import annotations

import pytest

from autotune.engines._args import flag_value, has_flag, int_flag, is_flag, iter_flags


@pytest.mark.parametrize(
    ("token", "flag"),
    [("--tp-size", True), ("-tp", True), ("--x=1", True), ("-1", False), ("-0.5", False),
     ("-1e3", False), ("8", False), ("-", False)],
)  # fmt: skip
def test_is_flag(token: str, flag: bool) -> None:
    assert is_flag(token) is flag


@pytest.mark.parametrize(
    ("args", "value"),
    [
        (["--tp-size", "8"], "8"),
        (["--tp-size=8"], "8"),
        (["--tensor-parallel-size", "4"], "4"),
        (["--tp-size", "2", "--tp-size=8"], "8"),
        (["--tp-size"], ""),
        (["--tp-size", "--other"], ""),
        (["--other", "8"], None),
        (["--chunked", "-1", "--tp-size", "-1"], "-1"),
    ],
)
def test_flag_value(args: list[str], value: str | None) -> None:
    assert flag_value(args, ("--tp-size", "--tensor-parallel-size")) == value


def test_int_flag_and_has_flag() -> None:
    assert int_flag(["--tp-size", "x"], ("--tp-size",)) is None
    assert int_flag(["--tp-size=3"], ("--tp-size",)) == 3
    assert has_flag(["--a=1", "b"], ("--a",)) and not has_flag(["b", "--a-b"], ("--a",))
    assert list(iter_flags(["--a=1", "v", "--b", "-2"])) == [(0, "--a", "1"), (2, "--b", None)]
