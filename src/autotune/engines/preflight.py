"""Check a space's launch flags against the engine before the first trial is paid for.

The engine's own ``--help`` is the authority when it can be run here; otherwise the bundled
flag table (a curated subset, so an unknown flag is then only a warning). Renamed flags are
reported with what autotune rewrites them to.
"""

from __future__ import annotations

import difflib
import re
import subprocess
import sys
from typing import Literal

from pydantic import BaseModel, ConfigDict

from autotune.engines._args import is_flag, iter_flags
from autotune.engines.base import Engine
from autotune.engines.flagtable import FlagTable, load_table

HELP_TIMEOUT_S = 60.0
# Option spellings in argparse and click help: --tp-size, --no-compile, -tp.
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9_.-]*)")


class Finding(BaseModel):
    """One preflight result: ``error`` stops the study, ``warning`` is shown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Literal["error", "warning"]
    flag: str
    message: str  # says what to do


def parse_help_flags(help_text: str) -> set[str]:
    """Option names in ``--help`` output (argparse or click/typer, boxed or not)."""
    flags: set[str] = set()
    for raw in help_text.splitlines():
        line = raw.strip().strip("│|┃").strip()
        if not line.startswith("-"):
            continue
        # Columns are separated by two or more spaces; option columns come first (rich-styled
        # click help puts ``--no-x`` in a column of its own), then the type or description.
        for column in re.split(r"\s{2,}", line):
            if not column.startswith("-"):
                break
            for match in _OPTION.finditer(column):
                flags.add(match.group(1).rstrip(".-"))
    return flags


def engine_help(engine: Engine, *, timeout_s: float = HELP_TIMEOUT_S) -> str | None:
    """The engine's ``--help`` output, or None if the engine cannot be run on this host."""
    argv = engine.help_command()
    if not argv:
        return None
    # Run where trials run: the interpreter placeholder is this host's interpreter.
    argv = [a.replace("{python}", sys.executable) for a in argv]
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):  # cannot run here: the flag table decides
        return None
    text = proc.stdout + proc.stderr
    if proc.returncode != 0 or not parse_help_flags(text):
        return None
    return text


def preflight(engine: Engine, args: list[str], *, help_text: str | None = None) -> list[Finding]:
    """Check ``args`` (fixed args plus every searched flag) for ``engine``.

    Args:
        engine: the engine of the space.
        args: launch arguments; values may be included (``--flag value`` / ``--flag=value``).
        help_text: the engine's ``--help`` output (see ``engine_help``); None: use the table.

    Returns:
        Findings, errors first.
    """
    findings: list[Finding] = []
    if getattr(engine, "versioned", False) and engine.spec.version is None:
        assumed = getattr(engine, "version", None) or "the oldest known"
        findings.append(
            Finding(
                level="warning",
                flag="engine.version",
                message=(
                    f"{engine.name} version not set; assuming {assumed} flag names. "
                    "Set engine.version (flags were renamed between releases)"
                ),
            )
        )
    translated, renames = engine.translate(list(args))
    for note in renames:
        findings.append(Finding(level="warning", flag=note.split(" ", 1)[0], message=note))

    if help_text is not None:
        known: set[str] | None = parse_help_flags(help_text)
        source, level = "its --help", "error"
    else:
        known = engine.known_flags()
        table = engine.flag_table()
        if table is not None and table.complete and _same_version(engine, table):
            # Captured from the engine's own parser: what it lacks, argparse refuses.
            source, level = f"{engine.name} {table.version}'s flag table", "error"
        else:
            source, level = "autotune's bundled flag table", "warning"
    if known:
        findings.extend(_unknown(engine, translated, known, source, level))
    findings.extend(_values(engine, translated))
    return sorted(findings, key=lambda f: f.level != "error")


def _unknown(
    engine: Engine, args: list[str], known: set[str], source: str, level: str
) -> list[Finding]:
    out: list[Finding] = []
    seen: set[str] = set()
    for _, flag, _ in iter_flags(args):
        if flag in known or flag in seen or flag in ("-h", "--help"):
            continue
        seen.add(flag)
        close = difflib.get_close_matches(flag, sorted(known), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else "; check the spelling"
        name = "sglang" if engine.name == "sim" else engine.name
        elsewhere = _engines_with(flag, besides=name)
        if elsewhere:
            twin = COUNTERPARTS.get((flag, name))
            hint = f"; it is a flag of {' and '.join(elsewhere)}" + (
                f": {name}'s counterpart is {twin}" if twin else " (wrong engine?)"
            )
        out.append(
            Finding(
                level="error" if level == "error" else "warning",
                flag=flag,
                message=f"{flag} is not a flag of {engine.name} (per {source}){hint}",
            )
        )
    return out


def _values(engine: Engine, args: list[str]) -> list[Finding]:
    """Values the bundled table can judge: store_true flags given a value, bad choices."""
    table = engine.flag_table()
    if table is None:
        return []
    out: list[Finding] = []
    for i, flag, inline in iter_flags(args):
        info = table.get(flag)
        if info is None:
            continue
        following = args[i + 1] if i + 1 < len(args) and not is_flag(args[i + 1]) else None
        if info.type == "store_true" and (inline is not None or following is not None):
            value = inline if inline is not None else following
            out.append(
                Finding(
                    level="error",
                    flag=flag,
                    message=(
                        f"{flag} takes no value but got {value!r} (argparse: unrecognized "
                        "arguments); use a bool parameter with bool_style: store_true"
                    ),
                )
            )
        value = inline if inline is not None else following
        if info.choices and value is not None and "{" not in value and value not in info.choices:
            # A warning: the bundled choices may lag behind the installed version.
            out.append(
                Finding(
                    level="warning",
                    flag=flag,
                    message=(
                        f"{flag} {value!r} is not one of {list(info.choices)} in {engine.name} "
                        f"{table.version} (argparse would say: invalid choice)"
                    ),
                )
            )
        if info.deprecated:
            out.append(
                Finding(
                    level="warning",
                    flag=flag,
                    message=(
                        f"{flag} is deprecated in {engine.name} {table.version}; "
                        f"use {info.deprecated}"
                    ),
                )
            )
    return out


# The same knob under each engine's name: (flag, the engine it was written for) -> the
# counterpart, for the message when a space names another engine's flag.
_PAIRS = (
    ("--mem-fraction-static", "--gpu-memory-utilization"),
    ("--max-running-requests", "--max-num-seqs"),
    ("--chunked-prefill-size", "--max-num-batched-tokens"),
    ("--cuda-graph-max-bs", "--max-cudagraph-capture-size"),
    ("--cuda-graph-max-bs-decode", "--max-cudagraph-capture-size"),
    ("--disable-cuda-graph", "--enforce-eager"),
    ("--context-length", "--max-model-len"),
    ("--schedule-policy", "--scheduling-policy"),
    ("--speculative-algorithm", "--speculative-config"),
)
COUNTERPARTS: dict[tuple[str, str], str] = {
    **{(vllm, "sglang"): sglang for sglang, vllm in _PAIRS},
    **{(sglang, "vllm"): vllm for sglang, vllm in _PAIRS},
}


def _engines_with(flag: str, besides: str) -> list[str]:
    """Other engines whose newest captured (complete) table has ``flag``: ``sglang 0.5.17``."""
    from autotune.engines.flagtable import available_versions

    found = []
    for other in ("sglang", "vllm", "transformers"):
        versions = available_versions(other) if other != besides else []
        table = load_table(other, versions[-1]) if versions else None
        if table is not None and table.complete and flag in table.names():
            found.append(f"{other} {table.version}")
    return found


def _same_version(engine: Engine, table: FlagTable) -> bool:
    """Whether ``table`` was captured from the very version the space names."""
    from autotune.engines.flagtable import parse_version

    wanted = engine.spec.version
    return wanted is not None and parse_version(wanted)[:3] == parse_version(table.version)[:3]
