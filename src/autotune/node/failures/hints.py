"""The hint a failure carries and the flags it blames, the engine's own words first.

A failure's hint is its rule's (per phase), else that of the first rule of its cause, else a
generic one. Every failure of a log is made by :func:`_make`, which puts what the log says
first: the remedy an engine's message states, the flag an argument parser refused with what
it accepts, and the flags a refused setting's message names in other words
(:func:`named_flags`). The flags and variables blamed are those of the rule that the launch
holds (:func:`blamed`). A registry that refuses a model it lists as supported gets a hint of
its own: the model's class failed to load (an installation problem).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autotune.models import INFRA_CAUSES, Cause, Failure, Phase, Rule
from autotune.node.failures.log import _evidence, _Log, _trim
from autotune.node.failures.traces import _message

KILLED_HINT = (
    "The server was killed with SIGKILL. SGLang SIGKILLs itself when a child process fails, so "
    "look above in the log for the real error (the scheduler's traceback). If there is none, "
    "the host's OOM killer may have ended it: check `dmesg` and host memory."
)
TRACEBACK_HINT = "No rule recognises this error; read the traceback in the log."
ERROR_HINT = "No rule recognises this error; the evidence is the first error line of the log."
STOPPED_HINT = (
    "The log stops before the server was ready and shows no error: the server hung, was "
    "stopped from outside, or the log was cut. If start-up was progressing (weights, JIT, "
    "graph capture), raise the start-up timeout (autotune: limits.startup_s); otherwise look "
    "for a rank waiting on another."
)
_GENERIC_HINTS: dict[Cause, str] = {
    Cause.RUNTIME_CRASH: (
        "The server died after it was ready and no rule names why: look at the first error "
        "above; a kernel backend or feature enabled with this configuration is the usual cause."
    ),
    Cause.GPU_NOT_CLEAN: (
        "The GPU is held by another process (a second server, a leftover of an earlier run, or "
        "the device's exclusive compute mode): free it (nvidia-smi / npu-smi / hl-smi show "
        "who holds it) or give this server other devices (CUDA_VISIBLE_DEVICES and the like)."
    ),
    Cause.BENCHMARK_ERRORS: (
        "The benchmark client could not reach the server or its requests failed: the server "
        "died or stopped answering (look at the server's own log), or it is overloaded at this "
        "concurrency."
    ),
}


def blamed(names: Iterable[str], argv: Sequence[str], env: dict[str, str]) -> list[str]:
    """The ``names`` present in the launch: a flag in ``argv`` or a variable in ``env``."""
    out = []
    for name in names:
        if name.startswith("-"):
            present = any(arg == name or arg.startswith(name + "=") for arg in argv)
        else:
            present = name in env
        if present:
            out.append(name)
    return out


def _hint(rule: Rule, phase: Phase) -> str:
    return dict(rule.phase_hints).get(phase, rule.hint)


def _cause_hint(cause: Cause, phase: Phase, rules: Sequence[Rule]) -> tuple[str, bool]:
    """The hint of the first rule of ``cause`` (it carries the engine's advice for that cause)
    and whether a failure of that cause is permanent: the common rule named after the cause
    first (``common.kv_pool_oom``, not the serving pool's ``common.runtime_kv_oom`` of that
    cause)."""
    for rule in rules:
        if rule.cause == cause and rule.id == f"common.{cause.value}":
            return _hint(rule, phase), rule.permanent
    for rule in rules:
        if rule.cause == cause and rule.id.startswith("common."):
            return _hint(rule, phase), rule.permanent
    for rule in rules:
        if rule.cause == cause:
            return _hint(rule, phase), rule.permanent
    return _GENERIC_HINTS.get(cause, TRACEBACK_HINT), cause not in INFRA_CAUSES


@dataclass(frozen=True)
class _Context:
    """What every failure of one log carries besides its cause."""

    exit_code: int | None
    tail: list[str]
    engine: str | None
    refused: str = ""  # the flag an argument parser refused, in words (:func:`refused_flag`)
    flags: Mapping[str, Sequence[str]] = field(default_factory=dict)  # see :func:`named_flags`


# Failures whose message is about a setting: the flags it names lead the hint.
_ABOUT_SETTINGS = frozenset({Cause.INVALID_ARGUMENT, Cause.ASSERTION})


def _make(ctx: _Context, **fields: Any) -> Failure:
    """A failure of the log; the engine's own remedy, where its message states one, leads the
    hint (it is computed from this launch, so it comes before the family's general advice),
    and so do the flag its argument parser refused, with what it accepts, and the flags its
    message names in other words (:func:`named_flags`)."""
    advice = engine_advice(fields.get("message", ""))
    if advice and fields.get("cause") != Cause.UNKNOWN:
        fields["hint"] = f"The engine says: {advice} {fields.get('hint', '')}"
    if ctx.refused and fields.get("cause") == Cause.INVALID_ARGUMENT:
        fields["hint"] = f"{ctx.refused} {fields.get('hint', '')}"
    if ctx.flags and fields.get("cause") in _ABOUT_SETTINGS:
        said = " ".join([fields.get("message", ""), *fields.get("evidence", ())])
        hint = fields.get("hint", "")
        missing = [f for f in named_flags(said, ctx.flags) if not re.search(_whole(f), hint)]
        if missing:
            fields["hint"] = f"The message names {', '.join(missing)}. {hint}"
    return Failure(exit_code=ctx.exit_code, log_tail=ctx.tail, engine=ctx.engine, **fields)


def _whole(flag: str) -> str:
    return rf"(?<![\w-]){re.escape(flag)}(?![\w-])"


_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")  # max_model_len
_CONFIG_CLASS = re.compile(r"\b((?:[A-Z][a-z0-9]+)+)Config\b")  # SpeculativeConfig
_WORDS = re.compile(r"[A-Za-z][a-z0-9]*")
_VAGUE_VALUES = frozenset({"auto", "none", "true", "false", "default", "all", "off", "on"})
_MOST_NAMED = 3


def named_flags(text: str, flags: Mapping[str, Sequence[str]]) -> list[str]:
    """The flags of ``flags`` (flag -> the values it takes or was given) that ``text`` names,
    in the order it names them, at most three: a setting's own name (``max_model_len`` for
    ``--max-model-len``), a config class (``SpeculativeConfig`` for ``--speculative-config``),
    two or three words of a flag's name (``attention backend``), or a value only that flag
    takes (``awq`` for ``--quantization``). A word alone names nothing (``model``, ``port``):
    too many messages say it."""
    found: list[tuple[int, str]] = []

    def add(at: int, flag: str) -> None:
        if flag in flags and flag not in (f for _, f in found):
            found.append((at, flag))

    for m in _SNAKE.finditer(text):
        add(m.start(), "--" + m.group().replace("_", "-"))
    for m in _CONFIG_CLASS.finditer(text):
        add(m.start(), "--" + "-".join(w.lower() for w in _WORDS.findall(m.group(1))) + "-config")
    words = [(m.start(), m.group().lower()) for m in _WORDS.finditer(text)]
    for n in (3, 2):
        for i in range(len(words) - n + 1):
            add(words[i][0], "--" + "-".join(w for _, w in words[i : i + n]))
    owners: dict[str, set[str]] = {}
    for flag, values in flags.items():
        for value in values:
            if len(value) >= 3 and value.lower() not in _VAGUE_VALUES:
                owners.setdefault(value, set()).add(flag)
    for value, owning in owners.items():
        if len(owning) == 1:
            quoted = re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text)
            if quoted is not None:
                add(quoted.start(), next(iter(owning)))
    return [flag for _, flag in sorted(found)][:_MOST_NAMED]


def _family(
    ctx: _Context, rules: Sequence[Rule], cause: Cause, raw: Sequence[str], at: int, message: str
) -> Failure:
    """A failure of ``cause`` while serving, read from line ``at`` of ``raw``, with the hint
    and permanence of that cause's first rule."""
    hint, permanent = _cause_hint(cause, Phase.BENCHMARK, rules)
    return _make(
        ctx,
        cause=cause,
        phase=Phase.BENCHMARK,
        hint=hint,
        permanent=permanent,
        evidence=_evidence(raw, [at]),
        message=message,
    )


# An engine's own remedy in its message: an imperative that names a flag or a setting
# ("Raise --mem-fraction-static above 0.192", "Try increasing `gpu_memory_utilization`").
_ADVICE = re.compile(
    r"\b((?:Raise|Increase|Lower|Decrease|Reduce|Set|(?:Try|Consider|Please) (?:increasing|"
    r"decreasing|reducing|lowering|raising|setting|increase|decrease|reduce|lower|raise|set))"
    r"\s.*?)(?:\.(?:\s|$)|$)"
)
_SETTING = re.compile(r"--[\w-]+|`[\w.-]+`|'[\w.-]+'")


def engine_advice(message: str) -> str:
    """The remedy an engine's message states, with the setting it names, or ''."""
    for m in _ADVICE.finditer(message):
        if _SETTING.search(m.group(1)):
            return m.group(1).rstrip(" .") + "."
    return ""


# A registry's refusal that prints what it supports: "Model architectures ['X'] are not
# supported ... Supported architectures: ['A', 'X', ...]".
_REFUSED = re.compile(r"architectures? \[([^\]]*)\][^\[]*?[Ss]upported architectures:? \[([^\]]*)")
_LISTED_HINT = (
    "The engine refused a model architecture that its own registry lists as supported: the "
    "model's implementation failed to import or to be inspected (a missing or mismatched "
    "dependency, e.g. numpy, transformers or a compiled extension). Read the lines above the "
    "refusal or import the engine's model module by hand; reinstall the engine's requirements."
)


def _listed_refusal(lines: Sequence[str]) -> int | None:
    """The line where a model is refused by a registry that lists it as supported, if any: it
    was not refused for its architecture, its class failed to load (an installation error)."""
    for i, line in enumerate(lines):
        if "upported architectures" not in line:
            continue
        text = line if i + 1 == len(lines) else line + lines[i + 1]  # a list wrapped once
        found = _REFUSED.search(text)
        if found is None:
            continue
        refused = set(re.findall(r"[\w.]+", found.group(1)))
        if refused and refused <= set(re.findall(r"[\w.]+", found.group(2))):
            return i
    return None


# An argument parser's refusal that names the flag (or field) and, where it says, the value and
# what is accepted: argparse's "argument --x/-x: invalid choice: 'v' (choose from 'a', 'b')" and
# "invalid int value: 'v'", click's "Invalid value for '--x': 'v' is not one of 'a', 'b'.",
# pydantic's "1 validation error for M: field Input should be ..." (as :func:`_message` reads it).
_REFUSALS = (
    re.compile(
        r"\bargument (?P<flag>--[\w-]+)(?:/-\w+)?: invalid choice: (?P<value>'[^']*') "
        r"\(choose from (?P<accepts>.*?)\)?$"
    ),
    re.compile(
        r"\bargument (?P<flag>--[\w-]+)(?:/-\w+)?: invalid (?P<type>\w+) value: (?P<value>'[^']*')"
    ),
    re.compile(
        r"Invalid value for '(?P<flag>--[\w-]+)'(?: / '-\w+')?: (?P<value>'[^']*') is not one of "
        r"(?P<accepts>.*?)\.?$"
    ),
    re.compile(
        r"validation errors? for \w+: (?P<field>[a-z_][a-z0-9_]*) (?!Value error)(?P<accepts>\S.*)"
    ),
)
_REFUSAL_ANY = re.compile(r"argument --|Invalid value for '--|validation errors? for ")


def refused_flag(message: str) -> str:
    """Which flag (or config field) an argument parser's ``message`` refused and what it
    accepts, as the first sentence of a hint; '' when the message names none."""
    for regex in _REFUSALS:
        m = regex.search(message)
        if m is None:
            continue
        found = m.groupdict()
        if found.get("field"):
            flag = f"{found['field']} (--{found['field'].replace('_', '-')})"
            return _trim(f"The engine refused {flag}: {found['accepts'].rstrip(' .')}.")
        flag = f"{found['flag']} {found['value']}"
        accepts = found.get("accepts") or f"a{'n' if found['type'][0] in 'aeiou' else ''} " + (
            f"{found['type']} value"
        )
        return _trim(f"The engine refused {flag}; it accepts: {accepts.rstrip(' .)')}.")
    return ""


def _refusal(log: _Log) -> str:
    """The first refusal of a flag an argument parser wrote in the log, in words, or ''."""
    for i, text in enumerate(log.text):
        if _REFUSAL_ANY.search(text):
            said = refused_flag(_message(log, i) if "validation error" in text else text)
            if said:
                return said
    return ""
