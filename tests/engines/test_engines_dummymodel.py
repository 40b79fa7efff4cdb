"""Production shapes with random weights: config, tokenizer, and the launch flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.engines import SGLangEngine, TransformersEngine, dummymodel
from autotune.errors import ConfigError
from autotune.models import PROMPT_WORDS
from autotune.space.schema import EngineSpec


@pytest.mark.parametrize(
    ("shape", "billions"),
    [("llama-3-8b", 8.03), ("llama-3.2-3b", 3.21), ("llama-3.2-1b", 1.24), ("qwen2.5-7b", 7.62)],
)
def test_shapes_have_the_published_parameter_counts(shape: str, billions: float) -> None:
    assert round(dummymodel.parameters(shape) / 1e9, 2) == billions


def test_the_tokenizer_reads_each_prompt_word_as_one_token_and_decodes_every_id(
    tmp_path: Path,
) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    folder = dummymodel.ensure("dummy:llama-3.2-1b", tmp_path)
    tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    words = list(PROMPT_WORDS[:50])
    ids = tok.encode(" ".join(words)).ids
    assert len(ids) == len(words) and 0 not in ids  # no <unk>: prompt lengths are exact
    assert tok.get_vocab_size() == 128256
    assert tok.decode([3, 128255]).split()[0] == PROMPT_WORDS[0]


def test_ensure_builds_once(tmp_path: Path) -> None:
    first = dummymodel.ensure("dummy:llama-3-8b", tmp_path)
    stamp = (first / "config.json").stat().st_mtime_ns
    assert dummymodel.ensure("dummy:llama-3-8b", tmp_path) == first
    assert (first / "config.json").stat().st_mtime_ns == stamp
    assert dummymodel.is_dummy(str(first))


def test_an_unknown_shape_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="llama-3-8b"):
        dummymodel.shape_of("dummy:llama-9")


def test_the_engine_launches_a_dummy_shape_with_random_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(tmp_path))
    engine = SGLangEngine(EngineSpec(name="sglang", version="0.5.17"))
    path = engine.prepare("dummy:llama-3-8b")
    argv, _ = engine.command(path, ["--attention-backend", "triton"], {})
    assert argv[argv.index("--model-path") + 1] == path
    assert argv[-2:] == ["--load-format", "dummy"]
    argv, _ = engine.command(path, ["--load-format", "auto"], {})
    assert argv.count("--load-format") == 1  # the space's own choice stands


def test_an_engine_without_random_weights_refuses_a_dummy_shape() -> None:
    engine = TransformersEngine(EngineSpec(name="transformers"))
    with pytest.raises(ConfigError, match="cannot load random weights"):
        engine.prepare("dummy:llama-3-8b")
