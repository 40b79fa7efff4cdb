"""Requests that hold every configuration to the same work: ignore_eos where the engine has it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from autotune.dispatch.local import LocalExecutor
from autotune.engines import get_engine
from autotune.models import EngineSpec
from autotune.space.load import load
from autotune.study.driver import Driver, DriverOptions
from autotune.tracking.none import NullTracker

SPACES = Path(__file__).resolve().parents[2] / "search_spaces"


@pytest.mark.parametrize(
    ("engine", "fields"),
    [("sglang", {"ignore_eos": True}), ("vllm", {"ignore_eos": True}), ("transformers", {})],
)
def test_engines_say_which_request_fields_fix_the_output_length(
    engine: str, fields: dict[str, Any]
) -> None:
    assert get_engine(EngineSpec(name=engine)).request_fields() == fields


def _driver(tmp_path: Path, extra_body: dict[str, Any] | None) -> Driver:
    space = yaml.safe_load((SPACES / "verify.yaml").read_text())
    if extra_body is not None:
        space["workload"]["extra_body"] = extra_body
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(space))
    spec = load(path)
    return Driver(
        spec,
        engine=get_engine(spec.engine, simulate=True),
        real_engine=get_engine(spec.engine),
        executor=LocalExecutor(0, 1),
        tracker=NullTracker(),
        options=DriverOptions(study="fields", study_dir=tmp_path / "study", simulate=True),
    )


@pytest.mark.parametrize(
    ("extra_body", "sent"),
    [
        (None, {"ignore_eos": True}),  # the engine's field
        ({"ignore_eos": False, "top_k": 1}, {"ignore_eos": False, "top_k": 1}),  # the user's wins
    ],
)
def test_every_trial_sends_the_engines_fields_unless_the_space_sets_them(
    tmp_path: Path, extra_body: dict[str, Any] | None, sent: dict[str, Any]
) -> None:
    driver = _driver(tmp_path, extra_body)
    try:
        spec = driver.build_spec(0, dict(driver.spec.baseline or {}))
    finally:
        driver.executor.shutdown()
    assert spec.workload.extra_body == sent
    assert all(s.workload.extra_body == sent for s in spec.scenarios)
    assert driver.spec.workload.extra_body == (extra_body or {})  # the space is not changed


def test_every_trial_carries_the_engines_flags_for_its_hints(tmp_path: Path) -> None:
    """A crash's hint names the flags its message speaks of from the engine's flag table
    (node/failures/hints.py named_flags): the driver hands the table to every trial; the stand-in
    (``--simulate``) takes SGLang's."""
    driver = _driver(tmp_path, None)
    try:
        spec = driver.build_spec(0, dict(driver.spec.baseline or {}))
    finally:
        driver.executor.shutdown()
    assert "--context-length" in spec.flags and "--mem-fraction-static" in spec.flags
    # a choice spelt like a name may be quoted by a message; a plain word (triton) says nothing
    backends = spec.flags["--attention-backend"]
    assert "torch_native" in backends and "triton" not in backends
    assert spec.flags == get_engine(EngineSpec(name="sglang")).message_flags()
