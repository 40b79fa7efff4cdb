"""A small random-weight Llama and byte-level BPE tokenizer, built offline and cached.

``tiny-llama`` (about 1 M parameters, for the CPU) and ``tiny-llama:gpu`` (about 140 M, for
the H200) are real Hugging Face checkpoints that ``transformers serve`` loads like any
other. Outputs have a fixed length: no EOS token is configured, so generation always runs
to ``max_tokens`` (the server rejects ``ignore_eos``).

The folder name holds a hash of the recipe, so a changed recipe builds a new folder; a
file lock makes parallel trials wait for one build instead of racing.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

PREFIX = "tiny-llama"
RECIPE_VERSION = 1  # bump when the build below changes in a way the presets do not show

PRESETS: dict[str, dict[str, int | str]] = {
    # ~1.0 M parameters: fast on a 2-core CPU.
    "cpu": {
        "vocab_size": 2000,
        "hidden_size": 128,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "max_position_embeddings": 2048,
        "corpus_words": 40_000,
        "distinct_words": 4000,
        "dtype": "float32",  # the server's --dtype auto follows the saved weights
    },
    # ~140 M parameters: big enough that batching and CUDA graphs matter on an H200.
    "gpu": {
        "vocab_size": 16000,
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "num_key_value_heads": 12,
        "max_position_embeddings": 4096,
        "corpus_words": 400_000,
        "distinct_words": 40_000,  # BPE stops merging once every word is one token
        "dtype": "bfloat16",
    },
}


def is_tiny(model: str) -> bool:
    """Whether ``model`` names a tiny model to build (``tiny-llama`` or ``tiny-llama:<preset>``)."""
    return model == PREFIX or model.startswith(PREFIX + ":")


def preset_of(model: str) -> str:
    """The preset a tiny model name asks for (``cpu`` by default).

    Raises:
        ConfigError: an unknown preset (field ``model``).
    """
    from autotune.errors import ConfigError

    _, _, preset = model.partition(":")
    preset = preset or "cpu"
    if preset not in PRESETS:
        raise ConfigError(
            f"unknown tiny model preset {preset!r}; known: {sorted(PRESETS)}", field="model"
        )
    return preset


def cache_root() -> Path:
    """``$AUTOTUNE_CACHE_DIR/models`` or ``~/.cache/autotune/models``."""
    base = os.environ.get("AUTOTUNE_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "autotune"
    return root / "models"


def recipe(preset: str) -> dict[str, Any]:
    """Everything that decides the built files (hashed into the folder name)."""
    return {"recipe": RECIPE_VERSION, "preset": preset, **PRESETS[preset], "seed": 0}


def model_dir(model: str, root: Path | None = None) -> Path:
    """Where ``model`` is (or will be) built under ``root`` (default ``cache_root()``)."""
    preset = preset_of(model)
    digest = hashlib.sha256(json.dumps(recipe(preset), sort_keys=True).encode()).hexdigest()
    return (root or cache_root()) / f"{PREFIX}-{preset}-{digest[:12]}"


def ensure_tiny_model(model: str, root: Path | None = None) -> Path:
    """Build ``model`` once (file-locked) under ``root`` and return its folder."""
    target = model_dir(model, root)
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / "config.json").exists():  # another process built it meanwhile
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            _build(recipe(preset_of(model)), staging)
            staging.rename(target)  # atomic: readers see a whole folder or none
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return target


def _corpus(words: int, distinct: int, rng: random.Random) -> list[str]:
    """Generated text with word-like structure so BPE finds many merges."""
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in "aeiouy"] + list("aeiou")
    vocab = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(distinct)]
    lines = []
    for _ in range(max(1, words // 12)):
        sentence = " ".join(rng.choice(vocab) for _ in range(12))
        lines.append(sentence.capitalize() + rng.choice([".", ",", "!", "?", ";"]))
    return lines


def _build(spec: dict[str, Any], out: Path) -> None:
    # Heavy imports stay here: the rest of autotune must not need torch.
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    rng = random.Random(spec["seed"])
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec["vocab_size"],
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(
        _corpus(spec["corpus_words"], spec["distinct_words"], rng), trainer=trainer
    )
    fast = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(out)

    torch.manual_seed(spec["seed"])
    config = LlamaConfig(
        # The model's vocabulary is exactly the tokenizer's: every sampled id decodes.
        vocab_size=len(fast),
        hidden_size=spec["hidden_size"],
        intermediate_size=spec["intermediate_size"],
        num_hidden_layers=spec["num_hidden_layers"],
        num_attention_heads=spec["num_attention_heads"],
        num_key_value_heads=spec["num_key_value_heads"],
        max_position_embeddings=spec["max_position_embeddings"],
        bos_token_id=fast.bos_token_id,
        eos_token_id=None,
        pad_token_id=None,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(getattr(torch, spec["dtype"]))
    # No EOS: every request generates exactly max_tokens tokens.
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = None
    model.save_pretrained(out)
