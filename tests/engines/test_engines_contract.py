"""The Engine contract, run against every registered engine."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

import pytest

from autotune.engines import ENGINES, Engine, get_engine, guess_engine
from autotune.errors import ConfigError
from autotune.models import EngineSpec, Phase, Rule

PY = sys.executable


SHELLS = {"sh", "bash", "zsh", "/bin/sh", "/bin/bash", "cmd", "powershell"}
PHASE_ORDER = list(Phase)


def test_registry_names_match_classes() -> None:
    # Found by module listing: a new engine module joins without an edit here.
    assert set(ENGINES) >= {"sglang", "sim", "vllm", "transformers", "command", "collective"}
    for name, cls in ENGINES.items():
        assert cls.name == name


def test_log_description_is_well_formed(any_engine: Engine) -> None:
    profile = any_engine.log_profile()
    assert profile.rules and profile.rules == tuple(any_engine.failure_rules())
    if profile.ready is not None:  # the ready line is also the last milestone
        assert any_engine.milestones()[-1].pattern == profile.ready
    if profile.marks and (any_engine.rules_name or any_engine.name) == any_engine.name:
        # diagnose recognises a log of this engine from any one of its marks
        for mark in profile.marks:
            assert guess_engine(f"some line\n{mark} ...\n") == any_engine.name, mark


def test_command_types_and_placeholders(any_engine: Engine) -> None:
    argv, env = any_engine.command("some/model", ["--x", "1"], {"A_VAR": "v"})
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
    assert isinstance(env, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    )
    assert env["A_VAR"] == "v"
    # User arguments come last, untouched (no translation applies to them).
    assert argv[-2:] == ["--x", "1"]
    if any_engine.mode() == "server":
        assert argv.count("{port}") + sum("{port}" in a and a != "{port}" for a in argv) == 1
    else:
        assert any_engine.mode() == "job"


def test_no_shell_strings(any_engine: Engine) -> None:
    argv = any_engine.base_command("some/model")
    assert argv[0] not in SHELLS and "-c" not in argv[:2]
    for token in argv:
        assert not re.search(r"&&|\|\||[;|`]|\$\(", token), token


def test_metadata_is_well_formed(any_engine: Engine) -> None:
    assert any_engine.health_path.startswith("/")
    assert any_engine.mode() in ("server", "job")
    if any_engine.ready_pattern is not None:
        re.compile(any_engine.ready_pattern)
    milestones = any_engine.milestones()
    for m in milestones:
        re.compile(m.pattern)
        assert m.pattern
    # Milestones are listed in log order, so their phases never go backwards.
    orders = [PHASE_ORDER.index(m.phase) for m in milestones]
    assert orders == sorted(orders)
    assert len({m.label for m in milestones}) == len(milestones)


def test_failure_rules_are_rules(any_engine: Engine) -> None:
    rules = any_engine.failure_rules()
    assert rules and all(isinstance(r, Rule) for r in rules)


def test_gpus_and_flags(any_engine: Engine) -> None:
    assert isinstance(any_engine.gpus([]), int) and any_engine.gpus([]) >= 0
    known = any_engine.known_flags()
    if known is not None and any_engine.mode() == "server":
        # The flags autotune itself passes must be flags the engine knows.
        base = any_engine.base_command("m")
        passed = {t for t in base if t.startswith("--")}
        assert passed <= known, passed - known


def test_translate_empty_is_empty(any_engine: Engine) -> None:
    assert any_engine.translate([]) == ([], [])


def test_prepare_and_request_model_pass_hub_ids_through(any_engine: Engine) -> None:
    assert any_engine.prepare("org/model") == "org/model"
    assert any_engine.request_model("org/model") == "org/model"


def test_get_engine_builds_each(any_engine: Engine) -> None:
    engine = get_engine(any_engine.spec)
    assert type(engine) is type(any_engine)


def test_unknown_engine_names_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        get_engine(EngineSpec(name="tgi", python=PY))
    assert info.value.field == "engine.name"
    for name in ENGINES:
        assert name in info.value.message


@pytest.mark.parametrize("name", ["vllm", "transformers", "command", "collective"])
def test_simulate_only_for_sglang(name: str, make_spec: Callable[..., EngineSpec]) -> None:
    with pytest.raises(ConfigError) as info:
        get_engine(make_spec(name), simulate=True)
    assert info.value.field == "engine.name"


@pytest.mark.parametrize("name", ["sglang", "sim"])
def test_simulate_runs_the_stand_in(name: str, make_spec: Callable[..., EngineSpec]) -> None:
    argv, _ = get_engine(make_spec(name), simulate=True).command("m", [], {})
    assert argv[:3] == [PY, "-m", "autotune.sim"]
