"""Space file (YAML) -> ``StudySpec``, with every error as ``FILE:LINE: field: message (fix)``.

The YAML is composed by PyYAML's safe composer and constructed here rather than by PyYAML,
so that each value keeps its line, and so that what a config file should never hold is
refused: custom tags, duplicate keys, non-string keys, alias bombs, several documents.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from autotune.errors import ConfigError
from autotune.models import WRITTEN, FieldError
from autotune.space.located import LocatedError
from autotune.space.scenarios import materialise_scenarios
from autotune.space.schema import StudySpec
from autotune.space.workload import DatasetError, materialise

__all__ = ["check", "check_text", "json_schema", "known_engines", "load", "load_text"]

MAX_BYTES = 1 << 20  # a space file is a page of YAML, not a data set
MAX_ALIASES = 100  # alias uses (*name) in one file
MAX_NODES = 100_000  # values after expanding aliases: stops "billion laughs"
MAX_DEPTH = 64  # nesting of mappings and lists
SCHEMA_ID = "urn:autotune:search-space:v1"

_Path = tuple[str | int, ...]
_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_TAG}{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")}


def load(path: str | Path) -> StudySpec:
    """Read and validate a space file.

    Raises:
        ConfigError: the file cannot be read or is not a valid space; the first problem,
            ``FILE:LINE: field: message (fix)``.
    """
    spec, errors = _run(*_read(path))
    if errors:
        raise errors[0]
    assert spec is not None
    return spec


def load_text(text: str, source: str) -> StudySpec:
    """Validate a space given as text; ``source`` names it in errors and in ``spec.source``.

    Raises:
        ConfigError: as ``load``.
    """
    spec, errors = _run(text, source)
    if errors:
        raise errors[0]
    assert spec is not None
    return spec


def check(path: str | Path) -> list[ConfigError]:
    """Every problem of a space file, in file order; empty when valid (``autotune validate``)."""
    try:
        text, source = _read(path)
    except ConfigError as exc:
        return [exc]
    return _run(text, source)[1]


def check_text(text: str, source: str) -> list[ConfigError]:
    """Every problem of a space given as text, in file order."""
    return _run(text, source)[1]


def json_schema() -> dict[str, Any]:
    """The JSON Schema of space files (``autotune schema``), for editors and CI."""
    schema = StudySpec.model_json_schema()
    schema.get("properties", {}).pop("source", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "title": "autotune search space",
    }


def known_engines() -> frozenset[str]:
    """Engine names the space may use: every engine registered in ``autotune.engines``."""
    from autotune.engines.base import ENGINES

    return frozenset(ENGINES)


# --- reading ---------------------------------------------------------------------------


def _read(path: str | Path) -> tuple[str, str]:
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"cannot read the file: {exc.strerror} (check the path)", file=source
        ) from None
    if len(raw) > MAX_BYTES:
        raise ConfigError(
            f"file is {len(raw)} bytes (a space file is at most {MAX_BYTES})", file=source
        )
    try:
        return raw.decode("utf-8"), source
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            "not UTF-8 text (save the file as UTF-8)", file=source, line=line
        ) from None


def _run(text: str, source: str) -> tuple[StudySpec | None, list[ConfigError]]:
    try:
        data, lines = _parse_yaml(text, source)
    except ConfigError as exc:
        return None, [exc]
    errors = _engine_errors(data, lines, source)
    if "source" in data:
        errors.append(_error("'source' is set by autotune (remove it)", ("source",), lines, source))
    workload = data.get("workload")
    prompts = workload.get("prompts") if isinstance(workload, dict) else None
    if isinstance(prompts, dict) and "items" in prompts:
        at = ("workload", "prompts", "items")
        errors.append(_error("'items' is set by autotune from path (remove it)", at, lines, source))
    try:
        spec = StudySpec.model_validate(data, context={WRITTEN: True})
    except ValidationError as exc:
        errors.extend(_translate(exc, data, lines, source))
        spec = None
    if spec is not None and not errors:
        try:
            # Relative prompt files start from the space file's folder, not the cwd.
            workload = materialise(spec.workload, Path(source).parent)
        except DatasetError as exc:
            at = ("workload", "prompts", "path")
            errors.append(_error(str(exc), at, lines, source))
        else:
            spec = spec.model_copy(update={"workload": workload})
    if spec is not None and not errors and spec.scenarios:
        # Each scenario's prompt file too (space/scenarios.py).
        spec, problems = materialise_scenarios(spec, Path(source).parent)
        errors.extend(_error(message, at, lines, source) for message, at in problems)
    if errors:
        return None, sorted(errors, key=lambda e: e.line or 0)
    assert spec is not None
    return spec.model_copy(update={"source": source}), []


# --- YAML -> plain data, with lines --------------------------------------------------


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's safe composer with a cap on aliases; construction is ``_Builder``'s."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_uses = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.alias_uses += 1
            if self.alias_uses > MAX_ALIASES:
                event = self.peek_event()
                raise ConfigError(
                    f"more than {MAX_ALIASES} aliases (*name) (write the values out)",
                    line=event.start_mark.line + 1,
                )
        return super().compose_node(parent, index)


def _parse_yaml(text: str, source: str) -> tuple[dict[str, Any], dict[_Path, int]]:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise ConfigError(
            f"text is over {MAX_BYTES} bytes (a space file is a page of YAML)", file=source
        )
    loader: _Loader | None = None
    try:
        loader = _Loader(text)  # the reader refuses control characters right here
        node = loader.get_single_node()
    except ConfigError as exc:
        raise ConfigError(exc.message, file=source, line=exc.line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        if exc.problem == "but found another document":
            raise ConfigError(
                "the file holds more than one YAML document (keep one; remove the '---')",
                file=source,
                line=line,
            ) from None
        problem = " ".join(filter(None, [exc.context, exc.problem]))
        raise ConfigError(
            f"invalid YAML: {problem} (check indentation, colons and quotes on this line)",
            file=source,
            line=line,
        ) from None
    except yaml.YAMLError as exc:  # reader errors: control characters, bad encoding
        raise ConfigError(f"invalid YAML: {exc}".replace("\n", " "), file=source) from None
    except RecursionError:
        raise ConfigError(
            f"nesting is too deep (at most {MAX_DEPTH} levels)", file=source
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        raise ConfigError(
            "the file is empty (a space file is a mapping with engine:, model:, parameters:)",
            file=source,
            line=1,
        )
    builder = _Builder(source)
    data = builder.build(node, (), 0)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else "null" if data is None else repr(data)
        raise ConfigError(
            f"the document is {kind}, not a mapping (start with keys such as 'engine:', "
            "'model:', 'parameters:')",
            file=source,
            line=node.start_mark.line + 1,
        )
    return data, builder.lines


class _Builder:
    """Builds plain Python values from YAML nodes and records each value's line.

    ``lines[path]`` is the 1-based line of a mapping key (for values under a key) or of a
    list item; ``path`` is like ``("parameters", 2, "low")``.
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[_Path, int] = {}
        self.nodes = 0
        self.open: set[int] = set()  # nodes being built: a node inside itself is recursive
        self.constructor = yaml.SafeLoader("")  # only for its scalar constructors

    def fail(self, message: str, node: yaml.Node, path: _Path) -> ConfigError:
        return ConfigError(
            message, file=self.source, line=node.start_mark.line + 1, field=_field(path) or None
        )

    def build(self, node: yaml.Node, path: _Path, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(
                f"the document expands to more than {MAX_NODES} values (too many aliases)",
                node,
                path,
            )
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting is too deep (at most {MAX_DEPTH} levels)", node, path)
        if id(node) in self.open:
            raise self.fail("an alias refers to a value that contains it (recursive)", node, path)
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        self.open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                if node.tag != f"{_TAG}seq":
                    raise self._tag_error(node, path)
                out: list[Any] = []
                for i, item in enumerate(node.value):
                    self.lines[(*path, i)] = item.start_mark.line + 1
                    out.append(self.build(item, (*path, i), depth + 1))
                return out
            assert isinstance(node, yaml.MappingNode)
            if node.tag != f"{_TAG}map":
                raise self._tag_error(node, path)
            return self._mapping(node, path, depth)
        finally:
            self.open.discard(id(node))

    def _scalar(self, node: yaml.ScalarNode, path: _Path) -> Any:
        tag = node.tag
        if tag not in _SCALAR_TAGS:
            raise self._tag_error(node, path)
        if tag in (f"{_TAG}str", f"{_TAG}timestamp"):  # a date stays the text it was
            return str(node.value)
        try:
            if tag.endswith(":int"):
                return self.constructor.construct_yaml_int(node)
            if tag.endswith(":float"):
                return self.constructor.construct_yaml_float(node)
            if tag.endswith(":bool"):
                return self.constructor.construct_yaml_bool(node)
            return None
        except (ValueError, KeyError) as exc:
            raise self.fail(
                f"{node.value!r} is not a valid {tag[len(_TAG) :]}: {exc}", node, path
            ) from None

    def _tag_error(self, node: yaml.Node, path: _Path) -> ConfigError:
        return self.fail(
            f"YAML tag {node.tag!r} is not allowed (space files hold plain mappings, lists, "
            "strings, numbers and booleans; remove the tag)",
            node,
            path,
        )

    def _mapping(self, node: yaml.MappingNode, path: _Path, depth: int) -> dict[str, Any]:
        # '<<: *defaults' merges the keys the mapping does not set itself; merged first so
        # that the mapping's own keys keep their own lines.
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag != f"{_TAG}merge":
                continue
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            for source_node in sources:
                if not isinstance(source_node, yaml.MappingNode):
                    raise self.fail("'<<' needs a mapping or a list of mappings", value_node, path)
                for key, value in self.build(source_node, path, depth + 1).items():
                    merged.setdefault(key, value)
        own: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == f"{_TAG}merge":
                continue
            key = self._key(key_node, path)
            if key in own:
                raise ConfigError(
                    f"duplicate key {key!r}, first on line {self.lines[(*path, key)]} (keep one)",
                    file=self.source,
                    line=key_node.start_mark.line + 1,
                    field=_field((*path, key)),
                )
            self.lines[(*path, key)] = key_node.start_mark.line + 1
            own[key] = self.build(value_node, (*path, key), depth + 1)
        return {**merged, **own}

    def _key(self, node: yaml.Node, path: _Path) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail("a key must be a plain string, not a mapping or list", node, path)
        if node.tag not in _SCALAR_TAGS:
            raise self._tag_error(node, path)
        value = self._scalar(node, path)
        if isinstance(value, str):
            return value
        # Under 'map:' the keys are values of the parameter: true/false, numbers.
        if path and path[-1] == "map" and isinstance(value, bool | int | float):
            if isinstance(value, bool):
                return "true" if value else "false"
            return str(value)
        kind = "a boolean" if isinstance(value, bool) else "null" if value is None else "a number"
        raise self.fail(
            f"key {node.value!r} is {kind} in YAML, not a string (quote it: '{node.value}')",
            node,
            path,
        )


# --- pydantic errors -> ConfigError --------------------------------------------------


def _translate(
    exc: ValidationError, data: dict[str, Any], lines: dict[_Path, int], source: str
) -> list[ConfigError]:
    grouped: dict[_Path, list[tuple[dict[str, Any], _Path]]] = {}
    for details in exc.errors():
        err: dict[str, Any] = dict(details)
        loc: _Path = tuple(err["loc"])
        error = (err.get("ctx") or {}).get("error")
        if isinstance(error, LocatedError | FieldError):
            loc = (*loc, *error.at)
        path, rest = _split(data, loc)
        # A missing key is named though it has no line (the enclosing value's line is used).
        if (err["type"] == "missing" or isinstance(error, FieldError)) and rest:
            path, rest = (*path, rest[0]), rest[1:]
        grouped.setdefault(path, []).append((err, rest))
    out = []
    for path, errs in grouped.items():
        err, _ = errs[0]
        if len(errs) > 1 and all(
            e["type"].endswith("_type") or "parsing" in e["type"] for e, _ in errs
        ):
            # One value failed every member of a union (str | int | float | bool).
            wanted = " or ".join(e["msg"].removeprefix("Input should be ") for e, _ in errs)
            message = f"Input should be {wanted} (got {_show(err['input'])})"
        else:
            message = _message(err, path)
        out.append(_error(message, path, lines, source))
    return out


def _split(data: Any, loc: _Path) -> tuple[_Path, _Path]:
    """The longest prefix of ``loc`` that exists in ``data``, and the rest."""
    current = data
    for i, part in enumerate(loc):
        if isinstance(current, dict) and isinstance(part, str) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        else:
            return loc[:i], loc[i:]
    return loc, ()


def _message(err: dict[str, Any], path: _Path) -> str:
    kind, msg, value = err["type"], err["msg"], err.get("input")
    if kind == "missing":
        doc = _field_doc(path)
        return f"required key {path[-1]!r} is missing (add it{': ' + doc if doc else ''})"
    if kind == "extra_forbidden":
        known = _known_keys(path[:-1])
        key = str(path[-1])
        hint = ""
        close = difflib.get_close_matches(key, known, n=1)
        if close:
            hint = f"; did you mean {close[0]!r}?"
        listed = f" (known keys: {', '.join(known)})" if known else ""
        return f"unknown key {key!r}{hint}{listed}"
    if kind == "value_error":
        error = (err.get("ctx") or {}).get("error")
        return str(error) if error is not None else msg.removeprefix("Value error, ")
    if kind in ("literal_error", "enum"):  # a Literal, or a StrEnum such as Direction
        allowed = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
        close = difflib.get_close_matches(str(value), allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"{msg} (got {_show(value)}{hint})"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        known = _known_keys(path)
        listed = f": {', '.join(known)}" if known else ""
        return f"expected a mapping of keys here{listed} (got {_show(value)})"
    if kind == "list_type":
        return f"expected a list (got {_show(value)}; write [a, b] or one '- item' per line)"
    if kind == "string_pattern_mismatch":
        return f"{_show(value)} does not match {err['ctx']['pattern']} (letters, digits, _ only)"
    return f"{msg} (got {_show(value)})"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _error(message: str, path: _Path, lines: dict[_Path, int], source: str) -> ConfigError:
    line = None
    for n in range(len(path), -1, -1):  # the nearest enclosing value with a line
        if path[:n] in lines:
            line = lines[path[:n]]
            break
    return ConfigError(message, file=source, line=line, field=_field(path) or None)


def _field(path: _Path) -> str:
    """``("parameters", 2, "low")`` -> ``parameters[2].low``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _model_at(path: _Path) -> type[BaseModel] | None:
    """The pydantic model that validates the mapping at ``path`` (None if not a model)."""
    model: Any = StudySpec
    for part in path:
        if isinstance(part, str):
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                # a dict value: dict[str, Model]
                model = _container_item(model)
                continue
            info = model.model_fields.get(part)
            if info is None:
                return None
            model = info.annotation
        else:
            model = _container_item(model)
        model = _unwrap(model)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``; ``Annotated[X, ...]`` -> ``X``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(members[0]) if len(members) == 1 else annotation
    return annotation


def _container_item(annotation: Any) -> Any:
    args = typing.get_args(_unwrap(annotation))
    return _unwrap(args[-1]) if args else None


def _known_keys(path: _Path) -> list[str]:
    model = _model_at(path)
    if model is None:
        return []
    return [name for name in model.model_fields if name != "source"]


def _field_doc(path: _Path) -> str:
    model = _model_at(path[:-1])
    if model is None or not isinstance(path[-1], str):
        return ""
    info = model.model_fields.get(path[-1])
    doc = (info.description or "") if info else ""
    return doc.rstrip(".")


def _engine_errors(data: dict[str, Any], lines: dict[_Path, int], source: str) -> list[ConfigError]:
    engine = data.get("engine")
    name = engine.get("name") if isinstance(engine, dict) else None
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        return []  # pydantic reports missing or malformed names
    known = sorted(known_engines())
    if name in known:
        return []
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return [
        _error(
            f"unknown engine {name!r}{hint} (known: {', '.join(known)})",
            ("engine", "name"),
            lines,
            source,
        )
    ]
