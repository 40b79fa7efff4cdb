"""Tests stand alone: no test imports ``bench/``; what tests and benchmarks share lives in the
test tree (``tests/<part>/*_helpers.py``, ``tests/e2e/*_studies.py``, ``tests/sim/sim_shapes.py``)
and ``bench/`` imports it from there, never the other way round."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def bench_uses(path: Path, root: Path) -> list[str]:
    """Where ``path`` imports ``bench`` or builds a path into ``bench/`` (``root``-relative)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            # ROOT / "bench" / "x.py", loaded with importlib
            sides = [node.left, node.right]
            names = [s.value for s in sides if isinstance(s, ast.Constant) and s.value == "bench"]
        else:
            continue
        if any(n == "bench" or n.startswith("bench.") for n in names):
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_the_check_sees_an_import_and_a_path(tmp_path: Path) -> None:
    cases = {
        "a.py": "from bench.steering import toy_space\n",
        "b.py": "import os\nimport bench.noise_claims as nc\n",
        "c.py": 'spec = ROOT / "bench" / "x.py"\n',
        "d.py": "from autotune.node import bench\nPlan(w, 'bench')\nimport benchmark\n",
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    hits = {name: bench_uses(tmp_path / name, tmp_path) for name in cases}
    assert hits == {"a.py": ["a.py:1"], "b.py": ["b.py:2"], "c.py": ["c.py:1"], "d.py": []}


def test_no_test_imports_bench() -> None:
    hits = [hit for path in sorted(TESTS.rglob("*.py")) for hit in bench_uses(path, TESTS)]
    assert hits == [], "move what the test needs into the test tree:\n" + "\n".join(hits)
