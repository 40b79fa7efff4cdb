from __future__ import annotations

from collections.abc import Callable

import pytest
from space_helpers import dedent

from autotune.errors import ConfigError
from autotune.space import load_text
from autotune.space.schema import StudySpec


@pytest.fixture
def space() -> Callable[[str], StudySpec]:
    """Load a space from (dedented) YAML text named ``t.yaml``."""

    def make(text: str) -> StudySpec:
        return load_text(dedent(text), "t.yaml")

    return make


@pytest.fixture
def failure() -> Callable[[str], ConfigError]:
    """The ConfigError a (dedented) YAML text named ``t.yaml`` raises."""

    def make(text: str) -> ConfigError:
        with pytest.raises(ConfigError) as info:
            load_text(dedent(text), "t.yaml")
        return info.value

    return make
