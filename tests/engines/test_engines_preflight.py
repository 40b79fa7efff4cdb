"""Preflight: flags checked against the engine's own --help or the bundled table."""

from __future__ import annotations

import sys

import pytest

from autotune.engines import (
    CollectiveEngine,
    Finding,
    SGLangEngine,
    TransformersEngine,
    engine_help,
    preflight,
)
from autotune.engines.preflight import parse_help_flags
from autotune.models import EngineSpec

PY = sys.executable

ARGPARSE_HELP = """\
usage: launch_server.py [-h] --model-path MODEL_PATH [--tp-size TP_SIZE]

options:
  -h, --help            show this help message and exit
  --model-path MODEL_PATH, --model MODEL_PATH
                        The path of the model weights.
  --tp-size TP_SIZE, --tensor-parallel-size TP_SIZE
                        The tensor parallelism size.
  --mem-fraction-static MEM_FRACTION_STATIC
                        The fraction of the memory used for static allocation
                        (see --max-total-tokens).
  --disable-cuda-graph  Disable cuda graph.
  --moe-a2a-backend {none,deepep,mooncake}
"""

BOXED_HELP = """\
│ --continuous-batching  --no-continuous-batching   Enable continuous batching. │
│ --port                 INTEGER                    Server listen port.         │
"""


@pytest.fixture(scope="module")
def transformers_help() -> str:
    text = engine_help(TransformersEngine(EngineSpec(name="transformers", python=PY)))
    assert text is not None  # transformers[serving] is installed in the project venv
    return text


def sglang(version: str | None = None) -> SGLangEngine:
    return SGLangEngine(EngineSpec(name="sglang", python=PY, version=version))


def by_flag(findings: list[Finding]) -> dict[str, Finding]:
    return {f.flag: f for f in findings}


def test_parse_argparse_help() -> None:
    flags = parse_help_flags(ARGPARSE_HELP)
    assert {
        "--model-path",
        "--model",
        "--tp-size",
        "--tensor-parallel-size",
        "-h",
        "--help",
    } <= flags
    assert {"--mem-fraction-static", "--disable-cuda-graph", "--moe-a2a-backend"} <= flags
    # Flags named inside descriptions are not options of their own line.
    assert "--max-total-tokens" not in flags


def test_parse_click_help_boxed_or_not(transformers_help: str) -> None:
    assert {"--continuous-batching", "--no-continuous-batching", "--port"} <= parse_help_flags(
        BOXED_HELP
    )
    real = parse_help_flags(transformers_help)
    assert {
        "--continuous-batching",
        "--cb-use-cuda-graph",
        "--attn-implementation",
        "--dtype",
    } <= real


def test_the_bundled_transformers_table_matches_the_real_help(transformers_help: str) -> None:
    known = TransformersEngine(EngineSpec(name="transformers", python=PY)).known_flags()
    assert known is not None
    assert known <= parse_help_flags(transformers_help)


def test_unknown_flag_against_real_help_is_an_error_with_a_suggestion(
    transformers_help: str,
) -> None:
    engine = TransformersEngine(EngineSpec(name="transformers", python=PY))
    findings = preflight(
        engine, ["--continous-batching", "--dtype", "bfloat16"], help_text=transformers_help
    )
    assert [f.flag for f in findings] == ["--continous-batching"]
    assert findings[0].level == "error"
    assert "--continuous-batching" in findings[0].message


def test_good_flags_pass_clean(transformers_help: str) -> None:
    engine = TransformersEngine(EngineSpec(name="transformers", python=PY))
    args = ["--continuous-batching", "--cb-num-blocks", "512", "--attn-implementation=sdpa"]
    assert preflight(engine, args, help_text=transformers_help) == []
    assert preflight(engine, args) == []


def test_unknown_flag_against_the_table_is_a_warning() -> None:
    findings = by_flag(
        preflight(sglang("0.5.9"), ["--tp-size", "8", "--mem-fraction-statc", "0.8"])
    )
    assert set(findings) == {"--mem-fraction-statc"}
    assert findings["--mem-fraction-statc"].level == "warning"
    assert "--mem-fraction-static" in findings["--mem-fraction-statc"].message


def test_renames_are_reported_and_checked_after_rewriting() -> None:
    findings = by_flag(
        preflight(sglang("0.5.23"), ["--cuda-graph-max-bs", "64", "--disable-cuda-graph"])
    )
    assert set(findings) == {"--cuda-graph-max-bs", "--disable-cuda-graph"}
    assert all(f.level == "warning" for f in findings.values())
    assert "--cuda-graph-max-bs-decode" in findings["--cuda-graph-max-bs"].message


def test_unknown_version_is_a_warning() -> None:
    findings = by_flag(preflight(sglang(None), ["--tp-size", "8"]))
    assert set(findings) == {"engine.version"}
    assert "0.5.9" in findings["engine.version"].message


def test_store_true_with_a_value_is_an_error() -> None:
    findings = by_flag(
        preflight(sglang("0.5.9"), ["--enable-torch-symm-mem", "true", "--tp-size", "8"])
    )
    assert findings["--enable-torch-symm-mem"].level == "error"
    assert "takes no value" in findings["--enable-torch-symm-mem"].message


def test_bad_choice_is_a_warning_and_negative_numbers_are_values() -> None:
    findings = by_flag(
        preflight(sglang("0.5.9"), ["--moe-a2a-backend", "deepepp", "--chunked-prefill-size", "-1"])
    )
    assert set(findings) == {"--moe-a2a-backend"}
    assert "deepep" in findings["--moe-a2a-backend"].message


def test_errors_sort_first(transformers_help: str) -> None:
    engine = TransformersEngine(EngineSpec(name="transformers", python=PY))
    findings = preflight(engine, ["--bogus-flag", "--compile"], help_text=transformers_help)
    assert findings and findings[0].level == "error"


def test_engine_help_is_none_where_the_engine_is_not_installed() -> None:
    assert engine_help(sglang("0.5.9")) is None  # sglang cannot be installed on this machine


def test_collective_help_is_real() -> None:
    engine = CollectiveEngine(EngineSpec(name="collective", python=PY))
    text = engine_help(engine)
    assert text is not None
    known = engine.known_flags()
    assert known is not None and known <= parse_help_flags(text)


@pytest.mark.slow  # transformers imported in a subprocess again (the fixture did it once)
def test_engine_help_runs_the_installed_engine_with_this_interpreter() -> None:
    """The ``{python}`` placeholder is filled, so the real ``--help`` is read when installed."""
    from autotune.engines import get_engine
    from autotune.engines.preflight import engine_help
    from autotune.models import EngineSpec

    text = engine_help(get_engine(EngineSpec(name="transformers")))
    assert text is not None and "--continuous-batching" in text
