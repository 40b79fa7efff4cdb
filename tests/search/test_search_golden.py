"""Golden traces: the exact proposals and outcomes of the default search, for fixed seeds.

The real driver runs in-process (``tests/search/inprocess.py``) on three of the search
benchmark's landscapes (``box``: a crash region whose edge holds the optimum; ``five``: five
settings, three crash regions; ``conditional``: settings that exist only when another is on)
and on search_spaces/verify.yaml through the stand-in's model. Every trial the study holds is
compared with the recorded one: its number, the kind of proposal that made it, its
configuration, its outcome and value. A change to the search that changes a trace must come
with the benchmark figures that justify it (docs/benchmarks.md), in the same commit as the
re-recorded trace:

    AUTOTUNE_RECORD_GOLDEN=1 .venv/bin/python -m pytest -q -p no:xdist -o addopts='' \\
        tests/search/test_search_golden.py
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
from tests.search.inprocess import run_study
from tests.search.landscapes import Landscape, by_name

GOLDEN = Path(__file__).parent / "golden"
RECORD = os.environ.get("AUTOTUNE_RECORD_GOLDEN") == "1"
# (landscape, seed, measurement windows per launch: 3 lets the driver's pruner stop a launch)
CASES = [
    ("box", 0, 0),
    ("box", 1, 0),
    ("five", 0, 0),
    ("five", 1, 0),
    ("five", 2, 3),
    ("conditional", 0, 0),
    ("verify", 0, 0),
]
TRIALS = 30


def _landscape(name: str) -> Landscape:
    if name == "verify":
        from tests.search.verify_space import VERIFY

        return VERIFY
    return by_name(name)


def _rounded(x: Any) -> Any:
    """A value as the trace keeps it: floats to 9 significant digits."""
    if isinstance(x, float) and math.isfinite(x) and x != 0.0:
        return float(f"{x:.9g}")
    return x


def trace(name: str, seed: int, windows: int = 0) -> list[dict[str, Any]]:
    """Every trial of the study, in number order, as the trace keeps it."""
    from autotune.study.ledger import Ledger

    _, driver = run_study(_landscape(name), seed, TRIALS, windows=windows)
    out = []
    for t in Ledger(driver.study).trials():
        out.append(
            {
                "number": t.number,
                "by": t.proposed_by
                or ("baseline" if t.baseline else None)
                or ("confirm" if t.confirm_round is not None else None)
                or ("relaunch" if t.repeat_of is not None else None),
                "config": {k: _rounded(v) for k, v in sorted(t.config.items())},
                "outcome": t.outcome.value if t.outcome else t.state,
                "skip": t.skip.kind.value if t.skip is not None else None,
                "value": _rounded(t.value),
            }
        )
    return out


@pytest.mark.parametrize(
    ("name", "seed", "windows"), CASES, ids=[f"{n}-{s}-w{w}" for n, s, w in CASES]
)
def test_the_default_search_makes_the_recorded_proposals(
    name: str, seed: int, windows: int
) -> None:
    path = GOLDEN / f"{name}-{seed}{'-pruned' if windows else ''}.json"
    got = trace(name, seed, windows)
    if RECORD:
        path.write_text(json.dumps(got, indent=1) + "\n")
    want = json.loads(path.read_text())
    for mine, theirs in zip(got, want, strict=False):
        assert mine == theirs, f"{name} seed {seed}: trial {theirs['number']} differs"
    assert len(got) == len(want), f"{name} seed {seed}: {len(got)} trials, {len(want)} recorded"
