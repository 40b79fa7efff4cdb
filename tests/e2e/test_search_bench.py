"""The search benchmark runs end to end in its CI size and prints its tables.

``python -m bench.search --quick``: 3 landscapes x 2 seeds x 30 launches through the real
driver with the in-process executor (docs/benchmarks.md has the full figures).
"""

from __future__ import annotations

import pytest
from bench.search.__main__ import main

pytestmark = pytest.mark.slow


def test_quick_run_prints_both_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "Landscapes the defaults were chosen on" in out
    assert "Held-out landscapes" in out
    for name in ("box", "catnum", "five"):
        assert f"| {name} | autotune |" in out
        assert f"| {name} | random |" in out
