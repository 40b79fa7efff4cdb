from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from autotune.engines import ENGINES, Engine
from autotune.models import EngineSpec

PY = sys.executable


def spec_for(name: str, **extra: object) -> EngineSpec:
    """A valid spec for each engine (the command engine needs its template)."""
    base: dict[str, object] = {"name": name, "python": PY}
    if name == "command":
        base["command"] = [PY, "-m", "http.server", "{port}", "--bind", "{host}"]
    if name == "collective":
        base["options"] = {"iters": 3, "warmup": 1}
    return EngineSpec.model_validate({**base, **extra})


@pytest.fixture(params=sorted(ENGINES))
def any_engine(request: pytest.FixtureRequest) -> Engine:
    """Every registered engine, built the way get_engine builds it."""
    return ENGINES[request.param](spec_for(request.param))


@pytest.fixture(scope="session")
def model_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder shared by this session's tests, so the tiny model is built once."""
    return tmp_path_factory.mktemp("autotune-cache") / "models"


@pytest.fixture
def cache_env(model_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point AUTOTUNE_CACHE_DIR at the session cache (for code that reads the variable)."""
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(model_root.parent))
    return model_root


@pytest.fixture(scope="session")
def tiny_model(model_root: Path) -> Path:
    from autotune.engines.tinymodel import ensure_tiny_model

    return ensure_tiny_model("tiny-llama", model_root)


@pytest.fixture
def make_spec() -> Callable[..., EngineSpec]:
    """``make_spec(name, **fields)``: a valid EngineSpec for an engine (see ``spec_for``)."""
    return spec_for
