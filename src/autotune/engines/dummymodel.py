"""Production model shapes with no weights, for engines that load random ones.

``model: dummy:llama-3-8b`` in a space names a real architecture and size (the layer count,
widths, heads and vocabulary of the published model) with nothing to download: autotune
writes its ``config.json`` and a tokenizer, and the engine launches with ``--load-format
dummy``, which fills the weights with random values on the GPU. Memory, compute and CUDA
graphs then behave as with the real checkpoint; only the text is nonsense.

The tokenizer is a word-level one whose vocabulary holds every word that generated prompts
are drawn from (``models.PROMPT_WORDS``) as one token, so a prompt of N words is N tokens, and
fills the rest of the model's vocabulary with placeholder tokens, so every id the random model
samples decodes. Files are written with the standard library only (no transformers needed).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from autotune.errors import ConfigError
from autotune.models import PROMPT_WORDS

PREFIX = "dummy:"
RECIPE_VERSION = 1  # bump when the files written below change
SPECIALS = ("<unk>", "<s>", "</s>")

_LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_act": "silu",
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "attention_bias": False,
    "mlp_bias": False,
    "initializer_range": 0.02,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
}

# The published configurations' shapes (config.json of each model card).
SHAPES: dict[str, dict[str, Any]] = {
    # Meta Llama 3 8B / 3.1 8B: 8.0 B parameters.
    "llama-3-8b": {
        **_LLAMA,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "tie_word_embeddings": False,
    },
    # Llama 3.2 3B: 3.2 B parameters (tied embeddings).
    "llama-3.2-3b": {
        **_LLAMA,
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_hidden_layers": 28,
        "num_attention_heads": 24,
        "num_key_value_heads": 8,
        "tie_word_embeddings": True,
    },
    # Llama 3.2 1B: 1.2 B parameters (tied embeddings); a draft model for llama-3-8b.
    "llama-3.2-1b": {
        **_LLAMA,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "tie_word_embeddings": True,
    },
    # Qwen2.5 7B: 7.6 B parameters.
    "qwen2.5-7b": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "initializer_range": 0.02,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "tie_word_embeddings": False,
        "use_sliding_window": False,
    },
}


def is_dummy(model: str) -> bool:
    """Whether ``model`` names a shape (``dummy:<shape>``) or is a folder built from one."""
    return model.startswith(PREFIX) or (Path(model) / "autotune-dummy.json").is_file()


def shape_of(model: str) -> str:
    """The shape ``dummy:<shape>`` asks for.

    Raises:
        ConfigError: an unknown shape (field ``model``).
    """
    shape = model[len(PREFIX) :]
    if shape not in SHAPES:
        raise ConfigError(
            f"unknown model shape {shape!r}; known: {', '.join(sorted(SHAPES))} "
            "(write model: dummy:<shape>)",
            field="model",
        )
    return shape


def parameters(shape: str) -> int:
    """Weights in ``shape`` (embeddings, attention, MLP, norms, head)."""
    c = SHAPES[shape]
    hidden, heads, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    head_dim = hidden // heads
    attention = hidden * head_dim * (2 * heads + 2 * kv)
    mlp = 3 * hidden * c["intermediate_size"]
    per_layer = attention + mlp + 2 * hidden
    embed = c["vocab_size"] * hidden
    head = 0 if c["tie_word_embeddings"] else embed
    return int(embed + c["num_hidden_layers"] * per_layer + hidden + head)


def model_dir(model: str, root: Path | None = None) -> Path:
    """Where ``model``'s files are (or will be) written under ``root``."""
    shape = shape_of(model)
    recipe = json.dumps({"recipe": RECIPE_VERSION, **SHAPES[shape]}, sort_keys=True)
    digest = hashlib.sha256(recipe.encode()).hexdigest()[:12]
    base = os.environ.get("AUTOTUNE_CACHE_DIR")
    cache = root or (Path(base) if base else Path.home() / ".cache" / "autotune") / "models"
    return cache / f"dummy-{shape}-{digest}"


def ensure(model: str, root: Path | None = None) -> Path:
    """Write ``model``'s config and tokenizer once (file-locked); return the folder."""
    if not model.startswith(PREFIX):
        return Path(model)
    target = model_dir(model, root)
    if (target / "autotune-dummy.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / "autotune-dummy.json").exists():
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            write(shape_of(model), staging)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return target


def vocabulary(size: int) -> list[str]:
    """Specials, then every prompt word, then placeholders up to ``size`` tokens."""
    words = list(dict.fromkeys(PROMPT_WORDS))
    fill = size - len(SPECIALS) - len(words)
    return [*SPECIALS, *words, *(f"<extra_{i}>" for i in range(fill))]


def write(shape: str, out: Path) -> None:
    """config.json, generation_config.json, tokenizer.json and tokenizer_config.json."""
    config = {
        **SHAPES[shape],
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "bfloat16",
    }
    vocab = vocabulary(config["vocab_size"])
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": i,
                "content": token,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for i, token in enumerate(SPECIALS)
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "WordLevel",
            "vocab": {t: i for i, t in enumerate(vocab)},
            "unk_token": "<unk>",
        },
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": config["max_position_embeddings"],
        "add_bos_token": False,
        "clean_up_tokenization_spaces": False,
    }
    files = {
        "config.json": config,
        "generation_config.json": {"bos_token_id": 1, "eos_token_id": 2},
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": tokenizer_config,
        "special_tokens_map.json": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
        "autotune-dummy.json": {
            "shape": shape,
            "parameters": parameters(shape),
            "note": "no weights: launch with --load-format dummy (random weights)",
        },
    }
    for name, content in files.items():
        (out / name).write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
