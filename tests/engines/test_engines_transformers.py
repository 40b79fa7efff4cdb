"""TransformersEngine and the tiny-llama builder; one real `transformers serve` run."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from autotune.engines import TransformersEngine, tinymodel
from autotune.errors import ConfigError
from autotune.models import EngineSpec, Workload
from autotune.node.bench import request_body

PY = sys.executable


def engine(**extra: object) -> TransformersEngine:
    return TransformersEngine(
        EngineSpec.model_validate({"name": "transformers", "python": PY, **extra})
    )


def test_argv_and_env_table() -> None:
    argv, env = engine().command(
        "org/model", ["--continuous-batching", "--dtype", "bfloat16"], {"X": "1"}
    )
    assert argv == [
        PY, "-m", "transformers.cli.transformers", "serve", "org/model",
        "--host", "{host}", "--port", "{port}", "--continuous-batching", "--dtype", "bfloat16",
    ]  # fmt: skip
    assert env == {
        "HF_HUB_DISABLE_UPDATE_CHECK": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "X": "1",
    }
    assert engine().gpus(["--continuous-batching"]) == 0 and engine(gpus=1).gpus([]) == 1


def test_tiny_names_resolve_to_the_cache_folder(cache_env: Path) -> None:
    e = engine()
    expected = str(tinymodel.model_dir("tiny-llama"))
    assert expected.startswith(str(cache_env))
    assert e.request_model("tiny-llama") == expected
    assert e.command("tiny-llama", [], {})[0][4] == expected
    # Different presets, different folders; the name is stable across calls.
    assert tinymodel.model_dir("tiny-llama:gpu") != tinymodel.model_dir("tiny-llama")
    assert tinymodel.model_dir("tiny-llama:cpu") == tinymodel.model_dir("tiny-llama")


def test_unknown_preset() -> None:
    with pytest.raises(ConfigError) as info:
        tinymodel.model_dir("tiny-llama:huge")
    assert info.value.field == "model" and "gpu" in info.value.message


@pytest.mark.slow  # builds the tiny model (torch, a tokenizer trained)
def test_tiny_model_is_small_and_has_no_eos(tiny_model: Path) -> None:
    config = json.loads((tiny_model / "config.json").read_text())
    generation = json.loads((tiny_model / "generation_config.json").read_text())
    assert config["eos_token_id"] is None and generation.get("eos_token_id") is None
    assert config["vocab_size"] == len(
        json.loads((tiny_model / "tokenizer.json").read_text())["model"]["vocab"]
    )
    h, i, n, v = (
        config[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size")
    )
    params = 2 * v * h + n * (4 * h * h + 3 * h * i)
    assert 500_000 < params < 2_000_000


@pytest.mark.slow  # builds the tiny model (torch, a tokenizer trained)
def test_cached_second_call_does_not_rebuild(tiny_model: Path, model_root: Path) -> None:
    weights = tiny_model / "model.safetensors"
    before = weights.stat().st_mtime_ns
    start = time.perf_counter()
    again = tinymodel.ensure_tiny_model("tiny-llama", model_root)
    elapsed = time.perf_counter() - start
    assert again == tiny_model
    assert weights.stat().st_mtime_ns == before
    assert elapsed < 1.0  # a cache hit reads no model code at all; a build takes seconds
    assert [p.name for p in model_root.iterdir() if not p.name.startswith(".")] == [tiny_model.name]


def test_waiter_on_the_lock_uses_the_finished_build(tmp_path: Path) -> None:
    target = tinymodel.model_dir("tiny-llama", tmp_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    result: list[Path] = []
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another builder holds the lock
        worker = threading.Thread(
            target=lambda: result.append(tinymodel.ensure_tiny_model("tiny-llama", tmp_path))
        )
        worker.start()
        target.mkdir()  # ...and finishes its build
        (target / "config.json").write_text("{}")
    worker.join(timeout=60)
    assert result == [target]
    assert sorted(p.name for p in target.iterdir()) == ["config.json"]  # not built twice


@pytest.mark.slow
def test_real_transformers_serve_streams_exactly_max_tokens(
    tiny_model: Path, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = engine()
    argv, env = e.command(str(tiny_model), [], {})
    argv = [a.replace("{host}", "127.0.0.1").replace("{port}", str(port)) for a in argv]
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        argv,
        env={**os.environ, **env},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        ready = False
        with httpx.Client(timeout=5) as client:
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    ready = client.get(base + e.health_path).status_code == 200
                except httpx.TransportError:
                    ready = False
                if ready:
                    break
                time.sleep(0.2)
        assert ready, (tmp_path / "server.log").read_text()[-3000:]
        # The load generator's own body: the server must count what it is asked for.
        workload = Workload(model=e.request_model(str(tiny_model)), output_len=16)
        body = request_body(workload, "Hello there")
        chunks, usage = 0, None
        with httpx.stream("POST", base + "/v1/completions", json=body, timeout=60) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[len("data: ") :])
                chunks += bool(event["choices"] and event["choices"][0].get("text"))
                usage = event.get("usage") or usage
        assert usage is not None and usage["completion_tokens"] == 16
        assert 1 <= chunks <= 16
        text = (tmp_path / "server.log").read_text()
        import re

        labels = [m.label for m in e.milestones() if re.search(m.pattern, text)]
        assert labels == [m.label for m in e.milestones()]
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
