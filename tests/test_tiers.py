"""The test tiers' order: with both tiers, the files holding a slow test go first, so that
xdist's workers start the long end-to-end files while the short ones are left to fill the end."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import slow_files_first


@dataclass
class Item:
    nodeid: str
    slow: bool = False

    def get_closest_marker(self, name: str) -> object:
        return object() if name == "slow" and self.slow else None


def test_files_with_a_slow_test_go_first_each_file_whole_and_in_order() -> None:
    items = [
        Item("a.py::t1"),
        Item("b.py::t1"),
        Item("b.py::C::t2", slow=True),
        Item("b.py::t3"),
        Item("c.py::t1"),
        Item("c.py::t2"),
        Item("d.py::t1", slow=True),
    ]
    got = [i.nodeid for i in slow_files_first(items)]  # type: ignore[arg-type]
    assert got == [
        "b.py::t1",
        "b.py::C::t2",
        "b.py::t3",
        "d.py::t1",
        "c.py::t1",
        "c.py::t2",
        "a.py::t1",
    ]


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
