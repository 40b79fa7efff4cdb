"""The test tiers' order and workers: the files longest first (their recorded seconds), so
that xdist's workers start the long files at once and the short ones fill the end; two
workers a core for the fast tier, two in all with the slow one."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import (
    longest_files_first,
    pytest_xdist_auto_num_workers,
    recorded_durations,
    write_durations,
)


@dataclass
class Item:
    nodeid: str
    slow: bool = False

    def get_closest_marker(self, name: str) -> object:
        return object() if name == "slow" and self.slow else None


ITEMS = [
    Item("a.py::t1"),
    Item("b.py::t1"),
    Item("b.py::C::t2", slow=True),
    Item("b.py::t3"),
    Item("c.py::t1"),
    Item("c.py::t2"),
    Item("d.py::t1", slow=True),
    Item("e.py::t1"),
]


def order(items: list[Item], seconds: dict[str, list[float]]) -> list[str]:
    return [i.nodeid for i in longest_files_first(items, seconds)]  # type: ignore[arg-type]


def test_files_go_longest_first_by_their_recorded_seconds_each_whole_and_in_order() -> None:
    seconds = {"a.py": [9.0, 0.0], "b.py": [1.0, 30.0], "c.py": [4.0, 0.0], "d.py": [0.0, 5.0]}
    # Both tiers: b 31 s, a 9, d 5, c 4; e (not recorded) is guessed at 0.1 s.
    assert order(ITEMS, seconds) == [
        "b.py::t1",
        "b.py::C::t2",
        "b.py::t3",
        "a.py::t1",
        "d.py::t1",
        "c.py::t1",
        "c.py::t2",
        "e.py::t1",
    ]
    # The fast tier alone: b's slow seconds do not count (b 1 s, after a and c).
    fast = [i for i in ITEMS if not i.slow]
    assert order(fast, seconds) == [
        "a.py::t1",
        "c.py::t1",
        "c.py::t2",
        "b.py::t1",
        "b.py::t3",
        "e.py::t1",
    ]


def test_files_not_recorded_go_slow_ones_first_then_by_their_number_of_tests() -> None:
    # b's slow tier has no seconds recorded (only the fast tier ran): guessed, and first.
    assert order(ITEMS, {"b.py": [0.5, 0.0]}) == [
        "b.py::t1",
        "b.py::C::t2",
        "b.py::t3",
        "d.py::t1",
        "c.py::t1",
        "c.py::t2",
        "a.py::t1",
        "e.py::t1",
    ]


def test_recorded_seconds_are_merged_per_file_and_tier(tmp_path: Path) -> None:
    path = tmp_path / "durations.json"
    assert recorded_durations(path) == {}  # none yet: every file guessed
    write_durations(path, {"a.py": [2.04, 0.0], "b.py": [1.0, 20.0]})
    write_durations(path, {"a.py": [3.0, 0.0], "c.py": [0.5, 0.0]})  # a fast-tier run
    assert recorded_durations(path) == {
        "a.py": [3.0, 0.0],
        "b.py": [1.0, 20.0],
        "c.py": [0.5, 0.0],
    }
    path.write_text("{not json", encoding="utf-8")
    assert recorded_durations(path) == {}


class Config:
    def __init__(self, slow: bool) -> None:
        self.slow = slow

    def getoption(self, name: str) -> Any:
        assert name == "--slow"
        return self.slow


def test_auto_workers_are_two_a_core_for_the_fast_tier_and_two_with_the_slow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    assert pytest_xdist_auto_num_workers(Config(slow=False)) == 6  # type: ignore[arg-type]
    assert pytest_xdist_auto_num_workers(Config(slow=True)) == 2  # type: ignore[arg-type]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert pytest_xdist_auto_num_workers(Config(slow=False)) == 8  # type: ignore[arg-type]
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")  # xdist's own setting decides
    assert pytest_xdist_auto_num_workers(Config(slow=False)) is None  # type: ignore[arg-type]


def test_the_fast_tier_leaves_the_slow_tests_out_and_slow_puts_them_first(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        (Path(__file__).with_name("conftest.py")).read_text(encoding="utf-8")
    )
    (tmp_path / "test_a.py").write_text("def test_quick():\n    pass\n")
    (tmp_path / "test_b.py").write_text(
        "import pytest\n\n@pytest.mark.slow\ndef test_long():\n    pass\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")

    def collected(*args: str) -> list[str]:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                *args,
            ],
            cwd=tmp_path,
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            capture_output=True,
            text=True,
            check=False,
        )
        return [line for line in proc.stdout.splitlines() if "::" in line]

    assert collected() == ["test_a.py::test_quick"]  # the fast tier
    assert collected("--slow") == ["test_b.py::test_long", "test_a.py::test_quick"]
