"""Secret redaction: credentials go, tuning knobs that merely look alike stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.core.redact import (
    MASK,
    is_secret_name,
    redact_argv,
    redact_env,
    redact_obj,
    redact_text,
)

HF = "hf_" + "aB3" * 12  # the shape of a Hugging Face token
SK = "sk-" + "Zq9_" * 8


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "hf_token",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "PGPASSWORD",
        "DB_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AUTH",
        "--api-key",
        "--hf-token",
        "--admin-api-key",
        "--password",
        "--client-secret",
        "api_key",
        "apiKey",
        "HUGGING_FACE_HUB_TOKEN",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "TOKENIZERS_PARALLELISM",
        "--max-total-tokens",
        "--tokenizer-path",
        "--max-prefill-tokens",
        "--ssl-keyfile",
        "NCCL_PROTO",
        "PWD",
        "--kv-cache-dtype",
        "SGLANG_TORCH_PROFILER_DIR",
        "--skip-tokenizer-init",
        "max_running_requests",
    ],
)
def test_not_secret_names(name: str) -> None:
    assert not is_secret_name(name)


def test_redact_env_masks_only_secret_names() -> None:
    env = {
        "HF_TOKEN": HF,
        "NCCL_PROTO": "LL,LL128",
        "TOKENIZERS_PARALLELISM": "false",
        "PGPASSWORD": "hunter2",
        "EMPTY_TOKEN": "",
    }
    out = redact_env(env)
    assert out == {
        "HF_TOKEN": MASK,
        "NCCL_PROTO": "LL,LL128",
        "TOKENIZERS_PARALLELISM": "false",
        "PGPASSWORD": MASK,
        "EMPTY_TOKEN": "",
    }
    assert env["HF_TOKEN"] == HF  # the input is not modified


def test_redact_env_masks_token_shapes_in_other_values() -> None:
    assert redact_env({"EXTRA_ARGS": f"--x {HF}"}) == {"EXTRA_ARGS": f"--x {MASK}"}


def test_redact_argv_both_flag_styles() -> None:
    argv = [
        "python3",
        "-m",
        "sglang.launch_server",
        "--api-key",
        "s3cret",
        "--hf-token=abc",
        "--max-total-tokens",
        "4096",
        "--tokenizer-path",
        "/models/tok",
        "--tp",
        "8",
        "--client-secret",
        "zz",
        "--password=",
        "--header",
        f"Authorization: Bearer {SK}",
    ]
    assert redact_argv(argv) == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--api-key",
        MASK,
        "--hf-token=" + MASK,
        "--max-total-tokens",
        "4096",
        "--tokenizer-path",
        "/models/tok",
        "--tp",
        "8",
        "--client-secret",
        MASK,
        "--password=",
        "--header",
        f"Authorization: Bearer {MASK}",
    ]


def test_redact_argv_secret_flag_followed_by_flag() -> None:
    # A store_true style secret flag must not swallow the next flag.
    assert redact_argv(["--use-auth", "--tp", "2"]) == ["--use-auth", "--tp", "2"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"token is {HF} ok", f"token is {MASK} ok"),
        (f"OPENAI said {SK}.", f"OPENAI said {MASK}."),
        ("Authorization: Bearer abcdefghijklmnop", f"Authorization: Bearer {MASK}"),
        ('-H "Authorization: Basic dXNlcjpwYXNz"', f'-H "Authorization: Basic {MASK}"'),
        ("HF_TOKEN=abc123 python -m x", f"HF_TOKEN={MASK} python -m x"),
        (
            "ServerArgs(api_key='k-123', max_total_tokens=4096, tokenizer_path=None)",
            f"ServerArgs(api_key='{MASK}', max_total_tokens=4096, tokenizer_path=None)",
        ),
        ('{"password": "pw", "tp": 8}', f'{{"password": "{MASK}", "tp": 8}}'),
        ("postgresql://autotune:pw@db:5432/optuna", f"postgresql://autotune:{MASK}@db:5432/optuna"),
        ("api_key=None", "api_key=None"),
        ("max_total_num_tokens=123456, token limitation reached", None),
        ("", None),
    ],
)
def test_redact_text(text: str, expected: str | None) -> None:
    assert redact_text(text) == (text if expected is None else expected)


def test_redact_obj_walks_nested_records() -> None:
    record = {
        "env": {"HF_TOKEN": HF, "NCCL_ALGO": "Ring"},
        "argv": ["sglang", "--api-key", "k"],
        "evidence": [f"loaded with {HF}", "ok"],
        "api_key": 12345,
        "n": 3,
        "nested": [{"password": "x"}],
    }
    out = redact_obj(record)
    assert out == {
        "env": {"HF_TOKEN": MASK, "NCCL_ALGO": "Ring"},
        "argv": ["sglang", "--api-key", MASK],
        "evidence": [f"loaded with {MASK}", "ok"],
        "api_key": MASK,
        "n": 3,
        "nested": [{"password": MASK}],
    }
    assert HF not in repr(out)


CORPUS = Path(__file__).parent / "data" / "log_lines.txt"


def _corpus() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("line", _corpus())
def test_real_log_lines_stay_unchanged(line: str) -> None:
    assert redact_text(line) == line


@pytest.mark.parametrize(
    "name",
    [
        "key_size",
        "KeyError",
        "token_count",
        "prompt_tokens",
        "eos_token_id",
        "AUTH_TYPE",
        "num_key_value_heads",
        "TOKEN_TYPE",
    ],
)
def test_words_that_merely_contain_a_secret_word(name: str) -> None:
    assert not is_secret_name(name)


OPENAI = "sk-proj-" + "Xy7_" * 10
PLANTED = {
    "HF_TOKEN": HF,
    "OPENAI_API_KEY": OPENAI,
    "--api-key": "Swordfish-42-secret",
    "Bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "url": "p4ssw0rd-in-url",
}


def test_planted_secrets_never_survive() -> None:
    # Every place a secret can reach a record: env, argv, a log with all of them, a JSON record.
    log = "\n".join(
        [
            f"HF_TOKEN={PLANTED['HF_TOKEN']} python -m sglang.launch_server",
            f"export OPENAI_API_KEY='{PLANTED['OPENAI_API_KEY']}'",
            f"server_args=ServerArgs(api_key='{PLANTED['--api-key']}', max_total_tokens=4096)",
            f"curl -H 'Authorization: Bearer {PLANTED['Bearer']}' http://127.0.0.1:30000",
            f"storage=postgresql://optuna:{PLANTED['url']}@db:5432/studies",
            "password: 123456",
            *_corpus(),
        ]
    )
    env = {"HF_TOKEN": PLANTED["HF_TOKEN"], "OPENAI_API_KEY": PLANTED["OPENAI_API_KEY"]}
    argv = ["sglang", "--api-key", PLANTED["--api-key"], "--max-total-tokens", "4096"]
    out = repr(
        [redact_text(log), redact_env(env), redact_argv(argv), redact_obj({"log": log, "env": env})]
    )
    for secret in [*PLANTED.values(), "123456"]:
        assert secret not in out, secret
    assert "KeyError: 12" in out and "#cached-token: 0" in out and "max_total_tokens=4096" in out
