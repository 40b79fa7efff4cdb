"""The README's commands are the ones that work: the quickstart's space loads, CI runs the
README's full test command, and the tiers CONTRIBUTING.md names exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(text: str, lang: str = "bash") -> list[list[str]]:
    return [
        [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
        for block in re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)
    ]


def test_the_first_block_is_the_two_quickstart_commands() -> None:
    from autotune.space.load import load

    install, start = _blocks(README)[0]
    assert install.startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert "-e '.[quickstart]'" in install
    argv = shlex.split(start)
    assert argv[:2] == [".venv/bin/autotune", "start"]
    spec = load(ROOT / argv[argv.index("--space") + 1])
    assert spec.name == "quickstart" and spec.engine.name == "transformers"


def test_the_first_screen_says_where_to_look_next() -> None:
    first = README[: README.index("## Run the tests")]
    assert "studies/quickstart/report/report.html" in first
    assert "autotune export --study quickstart" in first
    assert "mlflow ui --backend-store-uri sqlite:///mlflow/mlflow.db" in first
    assert "docs/img/quickstart-report.png" in first
    assert (ROOT / "docs" / "img" / "quickstart-report.png").is_file()


def test_ci_runs_the_readmes_full_test_command_and_lint_and_types() -> None:
    tests = [line for block in _blocks(README) for line in block if "pytest" in line]
    full = [line.split("#")[0].strip() for line in tests if "--slow" in line]
    fast = [line.split("#")[0].strip() for line in tests if "--slow" not in line]
    assert full == [".venv/bin/python -m pytest -q --slow"]
    assert fast == [".venv/bin/python -m pytest -q"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert full[0] in ci
    assert ".venv/bin/mypy" in ci
    assert ".venv/bin/ruff check src tests bench" in ci


def test_contributing_gives_a_command_for_each_tier() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    for command in (
        ".venv/bin/python -m pytest -q`",
        ".venv/bin/python -m pytest -q --slow`",
        "bash tests/gpu/run.sh",
        ".venv/bin/ruff check src tests bench",
        ".venv/bin/mypy`",
    ):
        assert command in text, command
    assert (ROOT / "tests" / "gpu" / "run.sh").is_file()


def test_the_readmes_installs_byte_compile() -> None:
    """A user's install keeps pip's byte-compiling. Without it, on a machine that sets
    PYTHONDONTWRITEBYTECODE (this project's 2-core machines do) no module is ever cached, and
    every server launch of the quickstart compiled torch and transformers again: 21-24 s a
    launch instead of 10-12, the study 295 s instead of 140-170 (2026-12-06). ``.ci/run``
    may skip it because it unsets that variable first."""
    installs = [line for b in _blocks(README) for line in b if "pip install" in line]
    assert installs and not any("--no-compile" in line for line in installs)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "--no-compile" not in ci or "unset PYTHONDONTWRITEBYTECODE" in ci
