"""The pydantic mypy plugin is set so that a wrongly typed field is a type error, not Any."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BAD = """\
from autotune.models import Workload
from autotune.core.records import SkipKind, SkipRecord

Workload(concurrency="eight")
SkipRecord(kind=SkipKind.REPEAT, reason="r", same_as="three")
Workload(unknown_field=1)
"""
GOOD = """\
from autotune.models import Workload
from autotune.core.records import SkipKind, SkipRecord

Workload(concurrency=8)
SkipRecord(kind=SkipKind.REPEAT, reason="r", same_as=3)
"""


@pytest.mark.slow  # a mypy run: tens of seconds from a cold cache
def test_mypy_rejects_a_wrongly_typed_model_field(tmp_path: Path) -> None:
    mypy = Path(sys.executable).with_name("mypy")
    if not mypy.exists() and shutil.which("mypy") is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    # One run over both files (mypy starts slowly), with the project's configuration and
    # cache (warm after .ci/run's types step).
    proc = subprocess.run(
        [
            str(mypy) if mypy.exists() else "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "bad.py",
            "good.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert proc.returncode == 1, proc.stdout
    assert all(line.startswith("bad.py:") for line in errors), errors
    assert any(line.startswith("bad.py:4:") and '"concurrency"' in line for line in errors), errors
    assert any(line.startswith("bad.py:5:") and '"same_as"' in line for line in errors), errors
    assert any(line.startswith("bad.py:6:") and "unknown_field" in line for line in errors), errors
