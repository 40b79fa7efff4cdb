"""A new engine is one Python module plus one rule file: nothing else is edited.

The test writes an engine the project has never seen (``echo``, launching the toy server of
``tests/study/servers``) as a package of two files, ``echo_engine/__init__.py`` and
``echo_engine/echo.yaml``, installed the way a plug-in is (an ``autotune.engines`` entry
point in its ``.dist-info``). Then ``validate`` accepts a space naming it, ``diagnose``
recognises its log and explains it with its rule, and ``start`` runs a study with it whose
failures are classified by its rules and milestones.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
import yaml

from autotune.cli import main
from autotune.engines import ENGINES, get_engine
from autotune.models import EngineSpec

TOY = Path(__file__).resolve().parents[1] / "study" / "servers" / "toy.py"

ENGINE_MODULE = f'''
"""The echo engine: the toy server, as a plug-in."""

from typing import ClassVar

from autotune.engines.base import ENGINES, Engine


@ENGINES.register
class EchoEngine(Engine):
    name: ClassVar[str] = "echo"
    rules_package: ClassVar[str] = "echo_engine"  # echo.yaml lives next to this module

    def base_command(self, model: str) -> list[str]:
        return [self.spec.python, {str(TOY)!r}, "--host", "{{host}}", "--port", "{{port}}"]
'''

RULE_FILE = r"""
marks: ['toy server:']
ready: 'toy server ready'
milestones:
  - {phase: load, pattern: 'toy server: backend=', label: started}
rules:
  - id: echo.tile_too_large
    pattern: 'toy: tile x\*y=[\d.]+ too large'
    cause: assertion
    hint: echo says the tile is too large; lower --x or --y
"""

CRASH_LOG = """\
toy server: backend=a x=3.0 y=2 buf=1
Traceback (most recent call last):
  File "toy.py", line 1, in <module>
RuntimeError: toy: tile x*y=6.00 too large
"""


@pytest.fixture
def echo_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The echo plug-in on sys.path, as pip would leave it; the registry as it was after."""
    site = tmp_path / "site"
    package = site / "echo_engine"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(ENGINE_MODULE)
    (package / "echo.yaml").write_text(RULE_FILE)
    info = site / "echo_engine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-engine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[autotune.engines]\necho = echo_engine:EchoEngine\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    # A fresh process finds the plug-in on its first lookup; this one has looked already.
    monkeypatch.setattr(ENGINES, "_classes", dict(ENGINES._classes))
    monkeypatch.setattr(ENGINES, "_scanned", False)
    yield site
    sys.modules.pop("echo_engine", None)


def space_file(tmp_path: Path) -> Path:
    space = {
        "name": "echo",
        "engine": {"name": "echo", "startup_timeout_s": 30},
        "model": "toy",
        "fixed": {"args": ["--y", "2"]},
        "parameters": [{"name": "x", "type": "categorical", "choices": [0.5, 3.0], "flag": "--x"}],
        "baseline": {"x": 3.0},  # 3.0 x 2 > 5: the toy server refuses the tile and exits
        "objective": {"metric": "output_tok_s", "direction": "maximize"},
        "workload": {
            "concurrency": 1,
            "num_requests": 2,
            "prompt_len": 4,
            "output_len": 8,
            "warmup_requests": 0,
        },
        "budget": {"trials": 2},
    }
    path = tmp_path / "echo.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    return path


def test_the_engine_is_found_with_its_log_description(echo_installed: Path) -> None:
    assert "echo" in ENGINES
    engine = get_engine(EngineSpec(name="echo"))
    assert engine.ready_pattern == "toy server ready"
    assert [m.label for m in engine.milestones()] == ["started", "ready"]
    assert engine.failure_rules()[0].id == "echo.tile_too_large"


def test_validate_diagnose_and_start_pick_the_new_engine_up(
    echo_installed: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOTUNE_NODE_STATE", str(tmp_path / "node-state"))
    space = space_file(tmp_path)

    assert main(["validate", str(space)]) == 0
    assert "engine echo" in capsys.readouterr().out

    log = tmp_path / "crash.log"
    log.write_text(CRASH_LOG)
    assert main(["diagnose", str(log), "--json"]) == 0  # no --engine: guessed from its marks
    found = json.loads(capsys.readouterr().out)
    assert (found["rule"], found["cause"]) == ("echo.tile_too_large", "assertion")

    root = tmp_path / "studies"
    # One launch of the baseline and no confirmation: the plug-in is what is tested here.
    args = ["start", "--space", str(space), "--executor", "local", "--no-mlflow"]
    args += ["--baseline-launches", "1", "--no-confirm"]
    assert main([*args, "--n-trials", "2", "--study-root", str(root), "--seed", "1"]) == 0
    storage = f"sqlite:///{root / 'echo' / 'study.db'}"
    trials = optuna.load_study(study_name="echo", storage=storage).get_trials()
    by_outcome = {t.user_attrs.get("outcome"): t for t in trials}
    crashed = by_outcome["crashed"]  # the baseline: the echo rule and milestones explain it
    assert crashed.params == {"x": 3.0}
    # (Not invalid_argument: a baseline failing so means a wrong command, and the study stops
    # at once, deadends.Doom; this one must go on to the next trial.)
    assert crashed.user_attrs["cause"] == "assertion"
    assert crashed.user_attrs["hint"].startswith("echo says the tile is too large")
    assert crashed.user_attrs["phase"] == "load"  # reached through the echo milestone
    ok = by_outcome["ok"]  # served, ready by the echo ready line
    assert ok.params == {"x": 0.5} and ok.value is not None and ok.value > 0


def test_a_broken_plug_in_is_logged_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    site = tmp_path / "site"
    (site / "broken_engine").mkdir(parents=True)
    (site / "broken_engine" / "__init__.py").write_text("raise ImportError('no such lib')\n")
    info = site / "broken_engine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-engine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[autotune.engines]\nbroken = broken_engine:X\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setattr(ENGINES, "_classes", dict(ENGINES._classes))
    monkeypatch.setattr(ENGINES, "_scanned", False)
    with caplog.at_level("WARNING", logger="autotune"):
        names = set(ENGINES)
    assert "broken" not in names and {"sglang", "vllm"} <= names
    assert "skipping engine plug-in 'broken' (broken_engine:X)" in caplog.text
    assert "no such lib" in caplog.text  # the traceback is in the log


def test_two_engines_cannot_share_a_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from autotune.engines.base import Engine

    monkeypatch.setattr(ENGINES, "_classes", dict(ENGINES._classes))

    class Impostor(Engine):
        name = "vllm"

        def base_command(self, model: str) -> list[str]:
            return []

    with pytest.raises(TypeError, match="engine 'vllm' is registered twice"):
        ENGINES.register(Impostor)
