"""Bundled flag tables: which launch flags an engine version accepts, with their types.

Tables live in ``engines/flags/<engine>-<version>.json``. A table may ``extend`` an older one,
adding flags, removing some (``remove``) and marking others deprecated. Most older tables are
curated subsets of the engine's real flags (names and types only, read from the engine's
sources); a table captured from the engine's own parser (``engines/flagdump.py``) says
``"complete": true``, and preflight then refuses a flag it lacks, as argparse would.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from autotune.errors import ConfigError

FlagType = Literal["int", "float", "str", "store_true", "list", "json"]
_TYPES = frozenset({"int", "float", "str", "store_true", "list", "json"})


@dataclass(frozen=True)
class FlagInfo:
    """One flag of one engine version.

    Attributes:
        name: the primary spelling, e.g. ``--tp-size``.
        type: ``store_true`` takes no value; ``list`` takes one or more values.
        choices: allowed values, when argparse restricts them.
        aliases: other spellings of the same flag, e.g. ``--tensor-parallel-size``.
        deprecated: the flag that replaces it, when the engine warns about it.
    """

    name: str
    type: FlagType
    choices: tuple[str, ...] | None = None
    aliases: tuple[str, ...] = ()
    deprecated: str | None = None


@dataclass(frozen=True)
class FlagTable:
    """The flags of one engine version, by every spelling."""

    engine: str
    version: str
    flags: dict[str, FlagInfo]  # spelling (primary or alias) -> info
    complete: bool = False  # captured from the engine's parser: every flag it accepts

    def names(self) -> set[str]:
        """Every accepted spelling."""
        return set(self.flags)

    def get(self, flag: str) -> FlagInfo | None:
        return self.flags.get(flag)


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.5.9.post1"`` -> ``(0, 5, 9)``; the leading dotted numbers only.

    Raises:
        ConfigError: no leading number (``engine.version``).
    """
    match = re.match(r"^v?(\d+(?:\.\d+)*)", text.strip())
    if not match:
        raise ConfigError(
            f"cannot read version {text!r}; write it as numbers, e.g. 0.5.9",
            field="engine.version",
        )
    return tuple(int(part) for part in match.group(1).split("."))


def available_versions(engine: str) -> list[str]:
    """Versions with a bundled table for ``engine``, oldest first."""
    prefix = f"{engine}-"
    found = [
        entry.name[len(prefix) : -len(".json")]
        for entry in resources.files("autotune.engines").joinpath("flags").iterdir()
        if entry.name.startswith(prefix) and entry.name.endswith(".json")
    ]
    return sorted(found, key=parse_version)


def table_version(engine: str, version: str | None) -> str | None:
    """The bundled table that describes ``version``: the newest one not newer than it.

    ``None`` (version unknown) picks the oldest table; a version older than every table
    picks the oldest too. Returns None when the engine has no tables.
    """
    versions = available_versions(engine)
    if not versions:
        return None
    if version is None:
        return versions[0]
    wanted = parse_version(version)
    chosen = versions[0]
    for candidate in versions:
        if parse_version(candidate) <= wanted:
            chosen = candidate
    return chosen


@functools.cache
def load_table(engine: str, version: str | None) -> FlagTable | None:
    """The flag table for ``engine`` at ``version`` (see ``table_version``), or None."""
    chosen = table_version(engine, version)
    if chosen is None:
        return None
    raw = _resolve(f"{engine}-{chosen}.json", depth=0)
    flags: dict[str, FlagInfo] = {}
    for name, entry in raw.items():
        info = _info(name, entry)
        for spelling in (info.name, *info.aliases):
            flags[spelling] = info
    doc = json.loads(_text(f"{engine}-{chosen}.json"))
    return FlagTable(engine=engine, version=chosen, flags=flags, complete=bool(doc.get("complete")))


def _text(filename: str) -> str:
    return resources.files("autotune.engines").joinpath("flags", filename).read_text("utf-8")


def _resolve(filename: str, depth: int) -> dict[str, Any]:
    """A table's flags with its ``extends`` chain applied (primary name -> raw entry)."""
    if depth > 8:
        raise RuntimeError(f"flag table {filename}: 'extends' chain too deep")
    doc = json.loads(_text(filename))
    flags: dict[str, Any] = {}
    if doc.get("extends"):
        flags.update(_resolve(doc["extends"], depth + 1))
    for name in doc.get("remove", []):
        flags.pop(name, None)
    for name, replacement in doc.get("deprecate", {}).items():
        if name in flags:
            entry = flags[name] if isinstance(flags[name], dict) else {"type": flags[name]}
            flags[name] = {**entry, "deprecated": replacement}
    flags.update(doc.get("flags", {}))
    return flags


def _info(name: str, entry: dict[str, Any] | str) -> FlagInfo:
    if isinstance(entry, str):  # shorthand: "--flag": "int"
        entry = {"type": entry}
    kind = entry.get("type", "str")
    if kind not in _TYPES:
        raise RuntimeError(f"flag table: {name} has unknown type {kind!r}")
    choices = entry.get("choices")
    return FlagInfo(
        name=name,
        type=kind,
        choices=tuple(str(c) for c in choices) if choices is not None else None,
        aliases=tuple(entry.get("aliases", ())),
        deprecated=entry.get("deprecated"),
    )


_NAME_LIKE = re.compile(r"[A-Z_0-9]")


def message_flags(table: FlagTable | None) -> dict[str, tuple[str, ...]]:
    """The flags of ``table`` ({} without one), each with the choices an error message may
    quote: only a choice spelt like a name (``FLASH_ATTN``, ``fp8_e4m3``), as a plain word
    (``error``, ``lpm``) says nothing of the flag. For the classifier's hints
    (``node/failures/hints.py``: ``named_flags``)."""
    if table is None:
        return {}
    return {
        name: tuple(c for c in info.choices or () if len(c) >= 4 and _NAME_LIKE.search(c))
        for name, info in table.flags.items()
    }
