"""Secret redaction for everything autotune stores or shows: env, argv, logs, JSON records.

Names are judged by their last word (``HF_TOKEN``, ``--api-key``, ``api_key``) rather than by
substring, so that tuning knobs such as ``--max-total-tokens``, ``--tokenizer-path``,
``TOKENIZERS_PARALLELISM`` or ``key_size``, and exception names such as ``KeyError``, survive
while real credentials do not. In free text a bare number is never taken for a token or key
(``#cached-token: 0``, ``KeyError: 12``): log lines are full of token counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"

# A name is secret when its last word (what it names: HF_TOKEN, API_KEY) is one of these...
_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "KEY",
        "APIKEY",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "PASSPHRASE",
    }
)
# ...or when it contains one of these anywhere (glued names such as PGPASSWORD, MYAPIKEY).
_SECRET_PARTS = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "APIKEY", "ACCESSKEY", "PRIVATEKEY")

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")

# Token shapes that are secret wherever they appear, whatever they are called.
_TOKEN_SHAPES = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),  # Hugging Face
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"),  # OpenAI, Anthropic
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key id
]
_BEARER = re.compile(r"(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/=-]{8,})")
_AUTH_HEADER = re.compile(
    r"""(?i)\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token)\s+)?)"""
    r"""([^\s"',;]+)"""
)
_URL_CREDENTIALS = re.compile(r"(://[^/\s:@]+:)([^/\s@]+)(@)")
# name=value / name: value / "name": "value"; the name decides (see is_secret_name).
_ASSIGNMENT = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<q1>["']?)(?P<sep>\s*[=:]\s*)"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^\s,;&()\]}]+)"""
)
_NOT_A_SECRET = frozenset(
    {
        "none",
        "null",
        "''",
        '""',
        MASK,
        "'***'",
        '"***"',
        "bearer",
        "basic",
        "token",
        "true",
        "false",
    }
)
_NUMBER = re.compile(r"^[+-]?\d[\d,_]*(?:\.\d+)?%?$")
# Names whose values are credentials however they look (a numeric password is still one).
_ALWAYS_SECRET = ("SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL")


# Words that only say what kind of thing a secret is, after its name: HF_TOKEN_VALUE.
_QUALIFIERS = frozenset({"VALUE", "STR", "STRING", "B64", "BASE64", "HEX", "RAW", "ENV"})


def is_secret_name(name: str) -> bool:
    """Whether an env var, flag (``--hf-token``) or field name (``api_key``) holds a secret.

    ``key_size``, ``token_count`` or ``KeyError`` do not: the last word decides.
    """
    bare = name.lstrip("-")
    words = [w.upper() for w in _WORD_SPLIT.split(bare) if w]
    while len(words) > 1 and words[-1] in _QUALIFIERS:
        words.pop()
    if words and words[-1] in _SECRET_WORDS:
        return True
    squashed = re.sub(r"[^A-Za-z0-9]", "", bare).upper()
    return any(part in squashed for part in _SECRET_PARTS)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with the values of secret-named variables masked."""
    return {k: (MASK if is_secret_name(k) and v else redact_text(str(v))) for k, v in env.items()}


def redact_argv(argv: Iterable[str]) -> list[str]:
    """A copy of ``argv`` with the values of secret flags masked.

    Handles ``--flag VALUE`` and ``--flag=VALUE``; every other element still goes through
    :func:`redact_text` (a token pasted into ``--header`` is caught by its shape).
    """
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            mask_next = False
            if not arg.startswith("-"):
                out.append(MASK)
                continue
        if arg.startswith("-") and len(arg) > 1:
            name, eq, value = arg.partition("=")
            if is_secret_name(name):
                if eq:
                    out.append(f"{name}={MASK}" if value else arg)
                else:
                    out.append(arg)
                    mask_next = True
                continue
        out.append(redact_text(arg))
    return out


def _assignment(match: re.Match[str]) -> str:
    value = match.group("value")
    name = match.group("name")
    if not is_secret_name(name) or value.lower() in _NOT_A_SECRET:
        return match.group(0)
    if _NUMBER.match(value) and not any(w in name.upper() for w in _ALWAYS_SECRET):
        return match.group(0)  # a count (#new-token: 7), an index (KeyError: 12)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('name')}{match.group('q1')}{match.group('sep')}{quote}{MASK}{quote}"


def redact_text(text: str) -> str:
    """``text`` with token shapes, bearer tokens, URL passwords and secret assignments masked."""
    if not text:
        return text
    for shape in _TOKEN_SHAPES:
        text = shape.sub(MASK, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    return _ASSIGNMENT.sub(_assignment, text)


def redact_obj(obj: Any) -> Any:
    """A redacted deep copy of a JSON-like value (dict keys decide; strings are scanned)."""
    if isinstance(obj, Mapping):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            if is_secret_name(str(key)) and isinstance(value, str | int | float) and value != "":
                out[str(key)] = MASK
            else:
                out[str(key)] = redact_obj(value)
        return out
    if isinstance(obj, list | tuple):
        if obj and all(isinstance(x, str) for x in obj):
            return redact_argv(obj)
        return [redact_obj(x) for x in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj
