"""A ``command`` engine's flags are checked against the command's own ``--help``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from autotune.cli import main
from autotune.engines.command import CommandEngine
from autotune.engines.preflight import engine_help, preflight
from autotune.models import EngineSpec

SERVER = Path(__file__).resolve().parents[1] / "study" / "servers" / "blackbox.py"


def _engine(command: list[str]) -> CommandEngine:
    return CommandEngine(EngineSpec(name="command", command=command))


def test_the_help_command_stops_before_options_and_placeholders() -> None:
    e = _engine([sys.executable, str(SERVER), "--port", "{port}"])
    assert e.help_command() == [sys.executable, str(SERVER), "--help"]
    e = _engine(["python", "-m", "pkg.server", "--port", "{port}"])
    assert e.help_command() == ["python", "-m", "pkg.server", "--help"]
    assert _engine(["{model}", "--port", "{port}"]).help_command() is None


def test_a_misspelled_flag_is_an_error_from_the_real_help() -> None:
    engine = _engine([sys.executable, str(SERVER), "--port", "{port}"])
    text = engine_help(engine)
    assert text is not None and "--max-batch" in text
    findings = preflight(engine, ["--max-batchh", "8", "--mem-fraction", "0.8"], help_text=text)
    assert [f.level for f in findings] == ["error"]
    assert "--max-batchh is not a flag of command" in findings[0].message
    assert "did you mean --max-batch" in findings[0].message


def test_validate_fails_on_a_misspelled_flag_in_a_command_space(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = {
        "engine": {"name": "command", "command": [sys.executable, str(SERVER), "--port", "{port}"]},
        "model": "m",
        "parameters": [{"name": "b", "type": "int", "low": 8, "high": 64, "flag": "--max-batchh"}],
    }
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(space))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "--max-batchh is not a flag of command" in err and "Traceback" not in err
    space["parameters"][0]["flag"] = "--max-batch"  # type: ignore[index]
    path.write_text(yaml.safe_dump(space))
    assert main(["validate", str(path)]) == 0
