"""The ``autotune.space`` package's lazy exports (they need Optuna; the space itself does not)."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    # A fresh interpreter: in this one another test may already have imported the submodule,
    # which hides the lazy path.
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_lazy_exports_resolve_without_recursion() -> None:
    proc = _run(
        "import sys, autotune.space as space\n"
        "assert 'optuna' not in sys.modules, 'importing the space imported optuna'\n"
        "from autotune.space import distributions\n"
        "import autotune.space.suggest as module\n"
        "assert distributions is module.distributions\n"
        "assert space.suggest is module and space.suggest.suggest is module.suggest\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_suggest_reached_first_as_an_attribute() -> None:
    proc = _run(
        "import autotune.space as space, autotune.space.suggest as module\n"
        "assert space.suggest is module\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = _run("import autotune.space as space; space.suggest.suggest; space.distributions")
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_unknown_name_is_an_attribute_error() -> None:
    proc = _run("import autotune.space as space; space.nothing_here")
    assert "AttributeError" in proc.stderr and "nothing_here" in proc.stderr
